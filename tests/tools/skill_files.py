"""Writing skill directories for the skills tests, and a toolkit of skills alone."""

from __future__ import annotations

from pathlib import Path

import toolnexus
from toolnexus.tools.skills import SkillInfo

RELATIVE_NOTE = (
    "Relative paths in this skill (e.g., scripts/, reference/) are relative to this base directory."
)


def write_skill(
    directory: Path, name: str | None, description: str | None = None, body: str = "Body.\n"
) -> Path:
    """Create ``directory/SKILL.md`` with simple frontmatter and return the file's path."""
    directory.mkdir(parents=True, exist_ok=True)
    header = ""
    if name is not None:
        header += f"name: {name}\n"
    if description is not None:
        header += f"description: {description}\n"
    path = directory / "SKILL.md"
    path.write_text(f"---\n{header}---\n{body}", encoding="utf-8")
    return path


def write_file(path: Path, text: str = "x\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def names(skills: list[SkillInfo]) -> list[str]:
    return [s.name for s in skills]


async def toolkit(**options: object) -> toolnexus.Toolkit:
    return await toolnexus.create_toolkit(builtins=False, **options)  # type: ignore[arg-type]
