"""The texts a model sees: the ``skill`` tool's output block and the system-prompt section."""

from __future__ import annotations

from collections.abc import Sequence

from .model import NO_SKILLS_TEXT, SKILLS_PROMPT_PREAMBLE, Skill

__all__ = ["available_names", "not_found", "render_prompt", "render_skill"]

_RELATIVE_NOTE = (
    "Relative paths in this skill (e.g., scripts/, reference/) are relative to this base directory."
)


def render_skill(skill: Skill, files: Sequence[str] | None) -> str:
    """The ``skill`` tool's output for one skill.

    ``files`` is the already sampled file list; ``None`` omits the sampling note and the
    ``<skill_files>`` block, an empty list renders an empty block.
    """
    name = skill.name
    lines = [
        f'<skill_content name="{name}">',
        f"# Skill: {name}",
        "",
        skill.info.content.strip(),
        "",
        f"Base directory for this skill: {skill.base}",
        _RELATIVE_NOTE,
    ]
    if files is not None:
        lines += ["Note: file list is sampled.", "", "<skill_files>"]
        lines += [f"<file>{path}</file>" for path in files] or [""]
        lines.append("</skill_files>")
    lines.append("</skill_content>")
    return "\n".join(lines)


def render_prompt(skills: Sequence[Skill]) -> str:
    """The skills section of a system prompt: described skills sorted by name."""
    described = sorted((s.name, s.info.description) for s in skills if s.info.description)
    if not described:
        return NO_SKILLS_TEXT
    lines = [f"- **{name}**: {description}" for name, description in described]
    return SKILLS_PROMPT_PREAMBLE + "\n\n## Available Skills\n" + "\n".join(lines)


def available_names(skills: Sequence[Skill]) -> str:
    """The loaded skill names, sorted and comma-separated, or ``none``."""
    return ", ".join(sorted(s.name for s in skills)) or "none"


def not_found(name: str, skills: Sequence[Skill]) -> str:
    """The error text for a skill name that is not loaded."""
    return f'Skill "{name}" not found. Available skills: {available_names(skills)}'
