"""Agent skills: instructions in ``SKILL.md`` folders (or given as data) behind one ``skill`` tool.

A ``SKILL.md`` starts with YAML frontmatter naming the skill (``name``, optional
``description``); the rest of the file is the skill's content. The system prompt lists the
described skills and the model loads one with the ``skill`` tool, which returns the content,
the skill's base directory and a sample of its files.
"""

from __future__ import annotations

from .catalog import SkillDirs, list_skills
from .model import (
    NO_SKILLS_TEXT,
    SKILL_TOOL_DESCRIPTION,
    SKILLS_PROMPT_PREAMBLE,
    SkillDef,
    SkillInfo,
    SkillInventory,
    SkillSkip,
    SkipReason,
)
from .source import SkillSource, load_skills, validate_sample_limit

__all__ = [
    "NO_SKILLS_TEXT",
    "SKILLS_PROMPT_PREAMBLE",
    "SKILL_TOOL_DESCRIPTION",
    "SkillDef",
    "SkillDirs",
    "SkillInfo",
    "SkillInventory",
    "SkillSkip",
    "SkillSource",
    "SkipReason",
    "list_skills",
    "load_skills",
    "validate_sample_limit",
]
