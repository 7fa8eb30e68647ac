"""Skill data: what callers pass in, what discovery reports, and the texts shown to a model."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypeAlias

__all__ = [
    "NO_SKILLS_TEXT",
    "SKILLS_PROMPT_PREAMBLE",
    "SKILL_TOOL_DESCRIPTION",
    "Skill",
    "SkillDef",
    "SkillInfo",
    "SkillInventory",
    "SkillSkip",
    "SkipReason",
]

SKILL_TOOL_DESCRIPTION = (
    "Load a skill: its full instructions plus the files that come with it. Call this with the "
    "skill's name when the task matches one of the skills listed in the system prompt."
)
"""Description of the ``skill`` tool."""

SKILLS_PROMPT_PREAMBLE = (
    "Skills are packaged instructions for specialised tasks. When a task matches one of the "
    "skills below, load it with the `skill` tool before you start."
)
"""First paragraph of ``Toolkit.skills_prompt()`` when at least one skill has a description."""

NO_SKILLS_TEXT = "No skills are currently available."
"""``Toolkit.skills_prompt()`` when a skill source is configured but no skill is described."""

SKILL_NAME_DESCRIPTION = "Name of the skill to load, exactly as listed in the system prompt."

SkipReason: TypeAlias = Literal[
    "missing-name", "malformed-frontmatter", "duplicate-name", "unreadable"
]


@dataclass(slots=True)
class SkillDef:
    """A skill given as data instead of a ``SKILL.md`` folder.

    ``resources`` are listed to the model verbatim; ``base`` is the skill's logical base
    directory (``skill://<name>/`` when omitted).
    """

    name: str
    content: str
    description: str | None = None
    resources: list[str] | None = None
    base: str | None = None


@dataclass(slots=True)
class SkillInfo:
    """One accepted skill.

    ``location`` is the absolute ``SKILL.md`` path for a folder skill (``origin="fs"``) and
    the base for a data skill (``origin="data"``).
    """

    name: str
    description: str | None
    location: str
    content: str
    origin: Literal["fs", "data"]


@dataclass(slots=True)
class SkillSkip:
    """A skill candidate that was not loaded, and why.

    ``location`` is the ``SKILL.md`` path, or the data skill's base.
    """

    location: str
    reason: SkipReason


@dataclass(slots=True)
class SkillInventory:
    """What ``list_skills`` found: accepted skills in load order, and every skip."""

    skills: list[SkillInfo] = field(default_factory=list)
    skipped: list[SkillSkip] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Skill:
    """An accepted skill plus what rendering it needs.

    ``directory`` is the absolute skill folder (folder skills only); ``resources`` are the
    data skill's listed files; ``base`` is what the model is told to resolve paths against.
    """

    info: SkillInfo
    base: str
    directory: str | None = None
    resources: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.info.name
