"""The ``skill`` tool: what it renders for directory and data skills, its file list and
``sample_limit``, and its errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolnexus import ConfigError, ToolResult
from toolnexus.tools.skills import (
    SkillDef,
    validate_sample_limit,
)

from .skill_files import RELATIVE_NOTE, toolkit, write_file, write_skill

# --- the skill tool -------------------------------------------------------------------------------


async def test_directory_skill_output_is_byte_exact(tmp_path: Path) -> None:
    skill_dir = tmp_path / "skills" / "demo"
    write_skill(
        skill_dir, "demo", description="Demo skill", body="\n\nRun the demo.\n\nThen stop.\n\n"
    )
    write_file(skill_dir / "scripts" / "hi.sh", "echo hi\n")
    write_file(skill_dir / "reference" / "notes.md", "notes\n")

    tk = await toolkit(skills_dir=str(tmp_path / "skills"))
    result = await tk.execute("skill", {"name": "demo"})

    base = skill_dir.as_uri()
    expected = (
        '<skill_content name="demo">\n'
        "# Skill: demo\n"
        "\n"
        "Run the demo.\n"
        "\n"
        "Then stop.\n"
        "\n"
        f"Base directory for this skill: {base}\n"
        "Relative paths in this skill (e.g., scripts/, reference/) are relative to this base "
        "directory.\n"
        "Note: file list is sampled.\n"
        "\n"
        "<skill_files>\n"
        f"<file>{skill_dir}/reference/notes.md</file>\n"
        f"<file>{skill_dir}/scripts/hi.sh</file>\n"
        "</skill_files>\n"
        "</skill_content>"
    )
    assert result.output == expected
    assert result.is_error is False
    assert result.metadata == {"name": "demo", "dir": str(skill_dir)}


async def test_directory_skill_without_files_renders_an_empty_block(tmp_path: Path) -> None:
    write_skill(tmp_path / "lone", "lone", body="Only me.")

    tk = await toolkit(skills_dir=tmp_path)
    result = await tk.execute("skill", {"name": "lone"})

    assert result.output.endswith(
        "Note: file list is sampled.\n\n<skill_files>\n\n</skill_files>\n</skill_content>"
    )


async def test_skill_file_list_follows_walk_rules_and_keeps_symlink_paths(tmp_path: Path) -> None:
    skill_dir = tmp_path / "skills" / "walk"
    write_skill(skill_dir, "walk")
    write_file(skill_dir / "node_modules" / "dep.js")
    write_file(skill_dir / ".git" / "HEAD")
    shared = write_file(tmp_path / "shared" / "data.txt")
    (skill_dir / "linked").symlink_to(shared.parent, target_is_directory=True)
    (skill_dir / "alias.txt").symlink_to(shared)
    (skill_dir / "dangling.txt").symlink_to(tmp_path / "missing.txt")
    (skill_dir / "loop").symlink_to(skill_dir, target_is_directory=True)

    tk = await toolkit(skills_dir=str(tmp_path / "skills"))
    result = await tk.execute("skill", {"name": "walk"})

    files = [line for line in result.output.splitlines() if line.startswith("<file>")]
    assert files == [
        f"<file>{skill_dir}/alias.txt</file>",
        f"<file>{skill_dir}/linked/data.txt</file>",
    ]


async def test_unknown_skill_names_the_sorted_available_skills(tmp_path: Path) -> None:
    write_skill(tmp_path / "one", "b")
    write_skill(tmp_path / "two", "a")

    tk = await toolkit(skills_dir=str(tmp_path))
    result = await tk.execute("skill", {"name": "zzz"})

    assert result == ToolResult('Skill "zzz" not found. Available skills: a, b', is_error=True)


async def test_unknown_skill_with_no_skills_says_none(tmp_path: Path) -> None:
    tk = await toolkit(skills_dir=str(tmp_path))

    result = await tk.execute("skill", {"name": "zzz"})

    assert result == ToolResult('Skill "zzz" not found. Available skills: none', is_error=True)


@pytest.mark.parametrize("args", [{}, {"name": 7}, {"name": None}])
async def test_skill_tool_rejects_a_missing_or_non_string_name_without_raising(
    args: dict[str, object],
) -> None:
    tk = await toolkit(skills=[SkillDef(name="a", content="A")])
    tool = tk.get("skill")
    assert tool is not None

    result = await tool.execute(args, None)

    assert result.is_error is True
    assert "Available skills: a" in result.output


async def test_data_skill_renders_logical_base_and_resources_verbatim() -> None:
    data = [
        SkillDef(
            name="web",
            content="  Use the API.  ",
            description="Web things",
            resources=["docs/api.md", "scripts/run.py"],
        ),
        SkillDef(name="custom", content="C", base="mem://custom/", resources=["a.txt"]),
    ]

    tk = await toolkit(skills=data)
    web = await tk.execute("skill", {"name": "web"})
    custom = await tk.execute("skill", {"name": "custom"})

    assert web.output == "\n".join(
        [
            '<skill_content name="web">',
            "# Skill: web",
            "",
            "Use the API.",
            "",
            "Base directory for this skill: skill://web/",
            RELATIVE_NOTE,
            "Note: file list is sampled.",
            "",
            "<skill_files>",
            "<file>docs/api.md</file>",
            "<file>scripts/run.py</file>",
            "</skill_files>",
            "</skill_content>",
        ]
    )
    assert web.metadata == {"name": "web", "dir": "skill://web/"}
    assert "Base directory for this skill: mem://custom/\n" in custom.output
    assert custom.metadata == {"name": "custom", "dir": "mem://custom/"}


async def test_data_skill_without_resources_omits_the_note_and_the_block() -> None:
    tk = await toolkit(skills=[SkillDef(name="bare", content="Just text.")])

    result = await tk.execute("skill", {"name": "bare"})

    assert result.output == "\n".join(
        [
            '<skill_content name="bare">',
            "# Skill: bare",
            "",
            "Just text.",
            "",
            "Base directory for this skill: skill://bare/",
            RELATIVE_NOTE,
            "</skill_content>",
        ]
    )


@pytest.mark.parametrize(("sample_limit", "listed"), [(0, 10), (2, 2), (12, 12), (50, 12)])
async def test_sample_limit_caps_the_file_list(
    tmp_path: Path, sample_limit: int, listed: int
) -> None:
    skill_dir = tmp_path / "many"
    write_skill(skill_dir, "many")
    for i in range(12):
        write_file(skill_dir / f"f{i:02d}.txt")
    resources = [f"r{i:02d}" for i in range(12)]

    tk = await toolkit(
        skills_dir=str(tmp_path),
        skills=[SkillDef(name="data", content="D", resources=resources)],
        sample_limit=sample_limit,
    )
    on_disk = await tk.execute("skill", {"name": "many"})
    in_data = await tk.execute("skill", {"name": "data"})

    disk_files = [line for line in on_disk.output.splitlines() if line.startswith("<file>")]
    assert disk_files == [f"<file>{skill_dir}/f{i:02d}.txt</file>" for i in range(listed)]
    data_files = [line for line in in_data.output.splitlines() if line.startswith("<file>")]
    assert data_files == [f"<file>r{i:02d}</file>" for i in range(listed)]


async def test_sample_limit_minus_one_omits_the_file_block_for_every_skill(
    tmp_path: Path,
) -> None:
    write_skill(tmp_path / "disk", "disk", body="Disk body.")
    write_file(tmp_path / "disk" / "x.txt")

    tk = await toolkit(
        skills_dir=str(tmp_path),
        skills=[SkillDef(name="data", content="D", resources=["a"])],
        sample_limit=-1,
    )
    disk = await tk.execute("skill", {"name": "disk"})
    data = await tk.execute("skill", {"name": "data"})

    base = (tmp_path / "disk").as_uri()
    assert disk.output == "\n".join(
        [
            '<skill_content name="disk">',
            "# Skill: disk",
            "",
            "Disk body.",
            "",
            f"Base directory for this skill: {base}",
            RELATIVE_NOTE,
            "</skill_content>",
        ]
    )
    assert "<skill_files>" not in data.output
    assert "Note: file list is sampled." not in data.output


@pytest.mark.parametrize("bad", [-2, -10])
async def test_other_negative_sample_limits_raise_value_error(tmp_path: Path, bad: int) -> None:
    with pytest.raises(ValueError, match="sample_limit") as info:
        await toolkit(skills_dir=str(tmp_path), sample_limit=bad)
    assert isinstance(info.value, ConfigError)


def test_validate_sample_limit_accepts_minus_one_zero_and_positive_counts() -> None:
    for ok in (-1, 0, 1, 25):
        validate_sample_limit(ok)
    with pytest.raises(ConfigError, match="sample_limit"):
        validate_sample_limit(True)
    with pytest.raises(ConfigError, match="-3"):
        validate_sample_limit(-3)
