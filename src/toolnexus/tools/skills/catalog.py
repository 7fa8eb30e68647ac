"""Turning skill candidates into one set: data skills, first-wins merging and the filter."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .discovery import discover
from .model import Skill, SkillDef, SkillInfo, SkillInventory, SkillSkip

__all__ = [
    "SkillDirs",
    "apply_filter",
    "data_skill",
    "list_skills",
    "merge",
    "normalize_dirs",
    "skill_defs",
]

logger = logging.getLogger("toolnexus")

SkillDirs = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]
"""One skills root, or several searched in order."""


def normalize_dirs(dirs: SkillDirs | None) -> list[str]:
    """The roots of a ``skills_dir`` option as a list of path strings."""
    if dirs is None:
        return []
    if isinstance(dirs, (str, os.PathLike)):
        return [os.fspath(dirs)]
    return [os.fspath(d) for d in dirs]


def skill_defs(items: object, *, origin: str) -> list[SkillDef]:
    """Validate a list of data skills. ``SkillDef``s and mappings with the same keys are
    accepted; anything else is logged (naming ``origin``) and ignored."""
    if items is None:
        return []
    if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Iterable):
        logger.warning(
            "%s must be a list of SkillDef, not %s; ignored", origin, type(items).__name__
        )
        return []
    out: list[SkillDef] = []
    for index, item in enumerate(items):
        converted = _as_skill_def(item)
        if converted is None:
            logger.warning(
                "%s[%d] is not a SkillDef (got %s); ignored", origin, index, type(item).__name__
            )
        else:
            out.append(converted)
    return out


def _as_skill_def(item: object) -> SkillDef | None:
    if isinstance(item, SkillDef):
        return item
    if not isinstance(item, Mapping):
        return None
    resources = item.get("resources")
    return SkillDef(
        name=_text(item.get("name")) or "",
        content=_text(item.get("content")) or "",
        description=_text(item.get("description")),
        resources=[str(r) for r in resources] if isinstance(resources, list) else None,
        base=_text(item.get("base")),
    )


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def data_skill(definition: SkillDef) -> Skill | SkillSkip:
    """A data skill, or a ``missing-name`` skip when its name is empty."""
    name = definition.name if isinstance(definition.name, str) else ""
    base = definition.base or f"skill://{name}/"
    if not name.strip():
        return SkillSkip(base, "missing-name")
    description = definition.description
    if not isinstance(description, str) or not description.strip():
        description = None
    content = definition.content if isinstance(definition.content, str) else ""
    info = SkillInfo(name, description, base, content, "data")
    resources = tuple(str(r) for r in definition.resources or ())
    return Skill(info, base, resources=resources)


def merge(candidates: Iterable[Skill | SkillSkip], skipped: list[SkillSkip]) -> list[Skill]:
    """Keep the first skill of each name; later ones are logged and added to ``skipped``.

    ``SkillSkip`` entries among the candidates are appended to ``skipped`` in order.
    """
    kept: dict[str, Skill] = {}
    for candidate in candidates:
        if isinstance(candidate, SkillSkip):
            skipped.append(candidate)
            continue
        first = kept.get(candidate.name)
        if first is None:
            kept[candidate.name] = candidate
            continue
        logger.warning(
            "duplicate skill name %r: keeping %s, skipping %s",
            candidate.name,
            first.info.location,
            candidate.info.location,
        )
        skipped.append(SkillSkip(candidate.info.location, "duplicate-name"))
    return list(kept.values())


def apply_filter(
    skills: list[Skill],
    skill_filter: Mapping[str, bool] | None,
    disable_skills: Iterable[str] | None,
) -> list[Skill]:
    """Apply ``skill_filter`` and ``disable_skills``.

    Each disabled name counts as ``False`` unless the filter already has that key. If any
    value is true, exactly the true-mapped names are kept; otherwise the false-mapped names
    are dropped. Filter names that match no skill are warned about once.
    """
    toggles = dict(skill_filter or {})
    for name in disable_skills or ():
        toggles.setdefault(name, False)
    if not toggles:
        return skills
    known = {s.name for s in skills}
    unknown = sorted(name for name in toggles if name not in known)
    if unknown:
        logger.warning("skill filter names no loaded skill: %s", ", ".join(unknown))
    if any(toggles.values()):
        return [s for s in skills if toggles.get(s.name)]
    return [s for s in skills if s.name not in toggles]


def list_skills(
    dirs: SkillDirs | None = None, *, skills: Sequence[SkillDef] | None = None
) -> SkillInventory:
    """Discover and validate skills without building a toolkit.

    Applies the same discovery, parsing and first-wins rules as ``create_toolkit`` but no
    filter: every accepted skill is returned, plus every skipped candidate with its reason.
    """
    found, skipped = discover(normalize_dirs(dirs))
    data = [data_skill(d) for d in skill_defs(skills, origin="skills")]
    accepted = merge([*found, *data], skipped)
    return SkillInventory([s.info for s in accepted], skipped)
