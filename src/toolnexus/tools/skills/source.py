"""The skill tool source: loading skills for a toolkit and the ``skill`` tool itself."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ..._callbacks import maybe_await
from ...errors import ConfigError
from ...types import JSONObject, Tool, ToolContext, ToolResult
from .catalog import SkillDirs, apply_filter, data_skill, merge, normalize_dirs, skill_defs
from .discovery import discover, list_skill_files
from .model import (
    SKILL_NAME_DESCRIPTION,
    SKILL_TOOL_DESCRIPTION,
    Skill,
    SkillDef,
    SkillInfo,
    SkillSkip,
)
from .render import available_names, not_found, render_prompt, render_skill

__all__ = ["DEFAULT_SAMPLE_SIZE", "SkillSource", "load_skills", "validate_sample_limit"]

logger = logging.getLogger("toolnexus")

DEFAULT_SAMPLE_SIZE = 10
"""How many files a skill's output lists when ``sample_limit`` is ``0``."""


def skill_tool_schema() -> JSONObject:
    """A fresh input schema of the ``skill`` tool (each toolkit owns its own)."""
    return {
        "type": "object",
        "properties": {"name": {"type": "string", "description": SKILL_NAME_DESCRIPTION}},
        "required": ["name"],
        "additionalProperties": False,
    }


def validate_sample_limit(sample_limit: int) -> None:
    """Accept ``-1`` (no file list), ``0`` (the default of 10) or a positive count.

    Raises ``ConfigError`` (a ``ValueError``) for anything else.
    """
    if isinstance(sample_limit, bool) or not isinstance(sample_limit, int):
        raise ConfigError(
            f"sample_limit must be an int (-1, 0 or a positive count), "
            f"not {type(sample_limit).__name__}"
        )
    if sample_limit < -1:
        raise ConfigError(
            f"sample_limit must be -1 (no file list), 0 (default of {DEFAULT_SAMPLE_SIZE}) "
            f"or a positive count, not {sample_limit}"
        )


class SkillSource:
    """Loaded (and filtered) skills, the ``skill`` tool that serves them and their prompt."""

    def __init__(
        self, skills: Sequence[Skill], *, sample_limit: int = 0, problems: Sequence[str] = ()
    ) -> None:
        validate_sample_limit(sample_limit)
        self.problems = list(problems)
        """What failed to load (skipped files, missing folders, a raising provider), one line
        each; ``create_toolkit(strict=True)`` raises when there is any."""
        self._skills: dict[str, Skill] = {s.name: s for s in skills}
        self._sample_limit = sample_limit
        self._prompt: str | None = None
        self.tool = Tool(
            name="skill",
            description=SKILL_TOOL_DESCRIPTION,
            input_schema=skill_tool_schema(),
            source="skill",
            execute=self._execute,
        )
        """The ``skill`` tool (``source="skill"``)."""

    @property
    def skills(self) -> list[SkillInfo]:
        """The skills the tool serves, in load order."""
        return [s.info for s in self._skills.values()]

    def prompt(self) -> str:
        """The system-prompt section listing the described skills (``Toolkit.skills_prompt``)."""
        if self._prompt is None:  # the skills never change once loaded
            self._prompt = render_prompt(list(self._skills.values()))
        return self._prompt

    async def _execute(self, args: JSONObject, ctx: ToolContext | None = None) -> ToolResult:
        try:
            return await self._load(args)
        except Exception as exc:
            return ToolResult(f"skill: {str(exc) or type(exc).__name__}", is_error=True)

    async def _load(self, args: JSONObject) -> ToolResult:
        loaded = list(self._skills.values())
        name = args.get("name") if isinstance(args, Mapping) else None
        if not isinstance(name, str):
            return ToolResult(
                'The "name" argument must be a string naming a skill. '
                f"Available skills: {available_names(loaded)}",
                is_error=True,
            )
        skill = self._skills.get(name)
        if skill is None:
            return ToolResult(not_found(name, loaded), is_error=True)
        files = await self._sampled_files(skill)
        metadata: JSONObject = {"name": skill.name, "dir": skill.directory or skill.base}
        return ToolResult(render_skill(skill, files), metadata=metadata)

    async def _sampled_files(self, skill: Skill) -> list[str] | None:
        if self._sample_limit == -1:
            return None
        count = self._sample_limit or DEFAULT_SAMPLE_SIZE
        if skill.directory is None:
            return list(skill.resources[:count]) if skill.resources else None
        files = await asyncio.to_thread(list_skill_files, skill.directory)
        return files[:count]

    def __repr__(self) -> str:
        return f"SkillSource({', '.join(self._skills)})"


async def load_skills(
    *,
    skills_dir: SkillDirs | None = None,
    skills: Sequence[SkillDef] | None = None,
    skill_provider: Callable[[], Any] | None = None,
    skill_filter: Mapping[str, bool] | None = None,
    disable_skills: Iterable[str] | None = None,
    sample_limit: int = 0,
) -> SkillSource:
    """Load skills for a toolkit: folders, then ``skills`` data, then the provider's result.

    Duplicate names keep the first skill (with a warning); the filter then applies to both the
    tool and the prompt. Folder discovery runs in a worker thread. A provider may be sync or
    async; if it raises, a warning is logged and it contributes nothing.
    """
    validate_sample_limit(sample_limit)
    roots = normalize_dirs(skills_dir)
    found, skipped, problems = await asyncio.to_thread(_discover, roots) if roots else ([], [], [])
    defs = skill_defs(skills, origin="skills")
    defs += skill_defs(
        await _call_provider(skill_provider, problems), origin="skill_provider result"
    )
    accepted = merge([*found, *(data_skill(d) for d in defs)], skipped)
    for skip in skipped:
        reason = SKIP_REASONS.get(skip.reason, skip.reason)
        if skip.reason != "duplicate-name":  # duplicates were logged by merge()
            logger.warning("skill file %s skipped: %s", skip.location, reason)
        problems.append(f"skill file {skip.location}: {reason}")  # strict=True raises on these
    return SkillSource(
        apply_filter(accepted, skill_filter, disable_skills),
        sample_limit=sample_limit,
        problems=problems,
    )


SKIP_REASONS: dict[str, str] = {
    "missing-name": "no frontmatter with a non-empty name (a SKILL.md starts with a --- block "
    "holding name: and description:)",
    "malformed-frontmatter": "the frontmatter is not valid YAML mapping keys to values",
    "unreadable": "the file cannot be read as UTF-8 text",
    "duplicate-name": "a skill loaded before it has the same name, so it was skipped",
}
"""A sentence per skip reason, for warnings."""


def _discover(roots: list[str]) -> tuple[list[Skill], list[SkillSkip], list[str]]:
    """``discover`` plus a problem line per root that is not a folder (in a worker thread)."""
    problems = [f"skills directory {r} does not exist" for r in roots if not os.path.isdir(r)]
    found, skipped = discover(roots)
    return found, skipped, problems


async def _call_provider(provider: Callable[[], Any] | None, problems: list[str]) -> object:
    if provider is None:
        return None
    try:
        return await maybe_await(provider)
    except Exception as exc:
        logger.warning(
            "skill_provider raised %s: %s; continuing without its skills",
            type(exc).__name__,
            exc,
        )
        problems.append(f"skill_provider raised {type(exc).__name__}: {exc}")
        return None
