"""Skills source (SPEC §1.5): discovery, parsing, merging, filtering, the skill tool, the prompt."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

import toolnexus
from toolnexus import ConfigError, ToolResult
from toolnexus.tools.skills import (
    NO_SKILLS_TEXT,
    SKILL_TOOL_DESCRIPTION,
    SKILLS_PROMPT_PREAMBLE,
    SkillDef,
    SkillInfo,
    SkillSkip,
    list_skills,
    load_skills,
    validate_sample_limit,
)

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


# --- discovery (A15) -------------------------------------------------------------------------


def test_discovery_finds_nested_symlinked_dir_and_symlinked_file_and_survives_a_loop(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    write_skill(root / "a" / "b", "nested")
    write_skill(outside / "linked-dir-target", "via-dir-link")
    target_file = write_skill(outside / "file-target", "via-file-link")
    (root / "linked").symlink_to(outside / "linked-dir-target", target_is_directory=True)
    (root / "single").mkdir()
    (root / "single" / "SKILL.md").symlink_to(target_file)
    (root / "a" / "loop").symlink_to(root, target_is_directory=True)

    inventory = list_skills(str(root))

    assert names(inventory.skills) == ["nested", "via-dir-link", "via-file-link"]
    assert inventory.skipped == []
    by_name = {s.name: s for s in inventory.skills}
    assert by_name["via-dir-link"].location == str(root / "linked" / "SKILL.md")
    assert by_name["via-file-link"].location == str(root / "single" / "SKILL.md")
    assert by_name["nested"].origin == "fs"


def test_discovery_skips_node_modules_and_git_directories(tmp_path: Path) -> None:
    write_skill(tmp_path / "node_modules" / "pkg", "from-node-modules")
    write_skill(tmp_path / ".git" / "hooks", "from-git")
    write_skill(tmp_path / "deep" / "node_modules" / "x", "deep-node-modules")
    write_skill(tmp_path / "kept", "kept")

    assert names(list_skills(tmp_path).skills) == ["kept"]


def test_discovery_orders_by_relative_path_within_a_root_and_keeps_root_order(
    tmp_path: Path,
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    write_skill(second / "b", "second-b")
    write_skill(second / "a", "second-a")
    write_skill(first / "z", "first-z")
    write_skill(first / "m" / "deeper", "first-m")
    write_skill(first, "first-top")

    inventory = list_skills([str(second), first])

    assert names(inventory.skills) == ["second-a", "second-b", "first-top", "first-m", "first-z"]


def test_missing_root_is_warned_and_contributes_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_skill(tmp_path / "present" / "s", "present")
    missing = tmp_path / "absent"

    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        inventory = list_skills([missing, tmp_path / "present"])

    assert names(inventory.skills) == ["present"]
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert warnings[0].name == "toolnexus"
    assert str(missing) in warnings[0].getMessage()


def test_relative_root_gives_absolute_locations(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_skill(tmp_path / "skills" / "rel", "rel")
    monkeypatch.chdir(tmp_path)

    [info] = list_skills("skills").skills

    assert info.location == str(tmp_path / "skills" / "rel" / "SKILL.md")


# --- parsing (A16) ---------------------------------------------------------------------------


def test_folded_and_literal_descriptions_are_parsed_and_stripped(tmp_path: Path) -> None:
    write_file(
        tmp_path / "folded" / "SKILL.md",
        "---\nname: folded\ndescription: >\n  Folded line one\n  and line two.\n---\nF body\n",
    )
    write_file(
        tmp_path / "literal" / "SKILL.md",
        "---\nname: literal\ndescription: |\n  Line one.\n  Line two.\n\n---\nL body\n",
    )

    by_name = {s.name: s for s in list_skills(tmp_path).skills}

    assert by_name["folded"].description == "Folded line one and line two."
    assert by_name["literal"].description == "Line one.\nLine two."
    assert by_name["folded"].content == "F body\n"


def test_scalar_header_values_are_converted_and_other_values_ignored(tmp_path: Path) -> None:
    write_file(
        tmp_path / "num" / "SKILL.md",
        "---\nname: 42\ndescription: [not, a, scalar]\n---\nbody",
    )
    write_file(
        tmp_path / "padded" / "SKILL.md", "---\nname: '  padded  '\ndescription: true\n---\n"
    )

    by_name = {s.name: s for s in list_skills(tmp_path).skills}

    assert set(by_name) == {"42", "padded"}
    assert by_name["42"].description is None
    assert by_name["padded"].description == "True"
    assert by_name["padded"].content == ""


def test_crlf_frontmatter_is_recognised(tmp_path: Path) -> None:
    (tmp_path / "crlf").mkdir()
    (tmp_path / "crlf" / "SKILL.md").write_bytes(
        b"---\r\nname: crlf\r\ndescription: Windows\r\n---\r\nline\r\n"
    )

    [info] = list_skills(tmp_path).skills

    assert (info.name, info.description, info.content) == ("crlf", "Windows", "line\r\n")


def test_malformed_yaml_and_missing_name_skip_the_file_without_raising(tmp_path: Path) -> None:
    bad_yaml = write_file(tmp_path / "bad" / "SKILL.md", "---\nname: [unclosed\n---\nbody\n")
    not_a_mapping = write_file(tmp_path / "list" / "SKILL.md", "---\n- a\n- b\n---\nbody\n")
    no_name = write_skill(tmp_path / "noname", None, description="Has no name")
    blank_name = write_file(tmp_path / "blank" / "SKILL.md", "---\nname: '   '\n---\nbody\n")
    no_frontmatter = write_file(tmp_path / "plain" / "SKILL.md", "# Just markdown\n")
    write_skill(tmp_path / "ok", "ok")

    inventory = list_skills(tmp_path)

    assert names(inventory.skills) == ["ok"]
    assert sorted((s.location, s.reason) for s in inventory.skipped) == sorted(
        [
            (str(bad_yaml), "malformed-frontmatter"),
            (str(not_a_mapping), "malformed-frontmatter"),
            (str(no_name), "missing-name"),
            (str(blank_name), "missing-name"),
            (str(no_frontmatter), "missing-name"),
        ]
    )


# --- merging (A17) and the inventory (A24) ---------------------------------------------------


def test_duplicate_names_keep_the_first_in_sorted_order_and_warn(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    winner = write_skill(tmp_path / "x", "dup", description="from x")
    loser = write_skill(tmp_path / "y", "dup", description="from y")

    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        inventory = list_skills(tmp_path)

    assert [(s.name, s.location) for s in inventory.skills] == [("dup", str(winner))]
    assert inventory.skipped == [SkillSkip(str(loser), "duplicate-name")]
    [warning] = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert "dup" in warning.getMessage()
    assert str(loser) in warning.getMessage()


def test_list_skills_reports_every_skip_reason(tmp_path: Path) -> None:
    write_skill(tmp_path / "a", "alpha")
    write_skill(tmp_path / "b", "alpha")
    write_skill(tmp_path / "c", None)
    write_file(tmp_path / "d" / "SKILL.md", "---\nname: : :\n---\n")
    (tmp_path / "e").mkdir()
    (tmp_path / "e" / "SKILL.md").write_bytes(b"---\nname: latin\n---\n\xff\xfe caf\xe9\n")
    (tmp_path / "f").mkdir()
    (tmp_path / "f" / "SKILL.md").symlink_to(tmp_path / "nowhere.md")

    inventory = list_skills(tmp_path, skills=[SkillDef(name="", content="x", base="mem://x/")])

    assert names(inventory.skills) == ["alpha"]
    assert [(s.location, s.reason) for s in inventory.skipped] == [
        (str(tmp_path / "c" / "SKILL.md"), "missing-name"),
        (str(tmp_path / "d" / "SKILL.md"), "malformed-frontmatter"),
        (str(tmp_path / "e" / "SKILL.md"), "unreadable"),
        (str(tmp_path / "f" / "SKILL.md"), "unreadable"),
        (str(tmp_path / "b" / "SKILL.md"), "duplicate-name"),
        ("mem://x/", "missing-name"),
    ]


def test_list_skills_includes_data_skills_after_directory_skills_unfiltered(
    tmp_path: Path,
) -> None:
    write_skill(tmp_path / "s", "shared", description="disk")
    data = [
        SkillDef(name="shared", content="data", base="mem://shared/"),
        SkillDef(name="extra", content="E", description="Extra"),
        SkillDef(name="", content="nameless"),
    ]

    inventory = list_skills(tmp_path, skills=data)

    assert [(s.name, s.origin, s.location) for s in inventory.skills] == [
        ("shared", "fs", str(tmp_path / "s" / "SKILL.md")),
        ("extra", "data", "skill://extra/"),
    ]
    assert [(s.location, s.reason) for s in inventory.skipped] == [
        ("mem://shared/", "duplicate-name"),
        ("skill:///", "missing-name"),
    ]


async def test_list_skills_ignores_the_filter_that_a_toolkit_applies(tmp_path: Path) -> None:
    write_skill(tmp_path / "a", "a", description="A")
    write_skill(tmp_path / "b", "b", description="B")

    tk = await toolkit(skills_dir=str(tmp_path), skill_filter={"a": True})

    assert names(list_skills(tmp_path).skills) == ["a", "b"]
    assert "**b**" not in tk.skills_prompt()


# --- the skill tool (A18, A19, A21, A22) -----------------------------------------------------


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


# --- the prompt (A20) ------------------------------------------------------------------------


async def test_skills_prompt_lists_described_skills_sorted_by_name(tmp_path: Path) -> None:
    write_skill(tmp_path / "1", "b", description="B")
    write_skill(tmp_path / "2", "c")
    write_skill(tmp_path / "3", "a", description="A")

    tk = await toolkit(skills_dir=str(tmp_path))

    assert tk.skills_prompt() == (
        SKILLS_PROMPT_PREAMBLE + "\n\n## Available Skills\n- **a**: A\n- **b**: B"
    )


async def test_skills_prompt_without_described_skills_is_the_no_skills_text(
    tmp_path: Path,
) -> None:
    write_skill(tmp_path / "quiet", "quiet")

    tk = await toolkit(skills_dir=str(tmp_path), skills=[SkillDef(name="d", content="x")])

    assert tk.skills_prompt() == NO_SKILLS_TEXT


async def test_without_a_skill_source_there_is_no_prompt_and_no_tool() -> None:
    tk = await toolkit()

    assert tk.skills_prompt() == ""
    assert tk.get("skill") is None


async def test_skill_tool_exists_when_configured_even_without_skills(tmp_path: Path) -> None:
    tk = await toolkit(skills_dir=str(tmp_path / "does-not-exist"))
    tool = tk.get("skill")

    assert tool is not None
    assert (tool.name, tool.source, tool.description) == ("skill", "skill", SKILL_TOOL_DESCRIPTION)
    assert tool.input_schema["required"] == ["name"]
    assert tool.input_schema["properties"]["name"]["type"] == "string"
    assert tool.input_schema["additionalProperties"] is False
    assert tk.skills_prompt() == NO_SKILLS_TEXT


# --- filter and disable_skills (A23) ---------------------------------------------------------


@pytest.fixture
def abc_dir(tmp_path: Path) -> Path:
    for name in "abc":
        write_skill(tmp_path / name, name, description=name.upper())
    return tmp_path


async def served(tk: toolnexus.Toolkit, name: str) -> bool:
    return not (await tk.execute("skill", {"name": name})).is_error


def prompt_names(tk: toolnexus.Toolkit) -> list[str]:
    return [line[4:5] for line in tk.skills_prompt().splitlines() if line.startswith("- **")]


@pytest.mark.parametrize(
    ("skill_filter", "disable", "expected"),
    [
        ({"a": True, "c": True, "b": False}, None, ["a", "c"]),
        ({"b": False}, None, ["a", "c"]),
        (None, ["a"], ["b", "c"]),
        ({"a": True}, ["a", "b"], ["a"]),
        ({"a": False}, ["b"], ["c"]),
        ({}, None, ["a", "b", "c"]),
    ],
)
async def test_filter_and_disable_skills_agree_in_prompt_and_tool(
    abc_dir: Path,
    skill_filter: dict[str, bool] | None,
    disable: list[str] | None,
    expected: list[str],
) -> None:
    tk = await toolkit(skills_dir=str(abc_dir), skill_filter=skill_filter, disable_skills=disable)

    assert prompt_names(tk) == expected
    assert [n for n in "abc" if await served(tk, n)] == expected
    missing = await tk.execute("skill", {"name": "zzz"})
    assert missing.output.endswith(f"Available skills: {', '.join(expected)}")


async def test_filter_names_matching_no_skill_are_warned_once(
    abc_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        tk = await toolkit(
            skills_dir=str(abc_dir), skill_filter={"ghost": False}, disable_skills=["phantom"]
        )

    assert prompt_names(tk) == ["a", "b", "c"]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "ghost" in warnings[0]
    assert "phantom" in warnings[0]


async def test_filter_applies_after_duplicates_are_resolved(tmp_path: Path) -> None:
    write_skill(tmp_path / "x", "dup", description="first")
    write_skill(tmp_path / "y", "dup", description="second")

    tk = await toolkit(skills_dir=str(tmp_path), skill_filter={"dup": False})

    assert tk.skills_prompt() == NO_SKILLS_TEXT
    assert await served(tk, "dup") is False


# --- providers and merge order ---------------------------------------------------------------


async def test_sync_and_async_providers_contribute_after_dirs_and_data(tmp_path: Path) -> None:
    write_skill(tmp_path / "d", "shared", description="from disk")

    def sync_provider() -> list[SkillDef]:
        return [
            SkillDef(name="shared", content="p"),
            SkillDef(name="p", content="P", description="P"),
        ]

    async def async_provider() -> list[SkillDef]:
        return [SkillDef(name="q", content="Q", description="Q")]

    tk1 = await toolkit(
        skills_dir=str(tmp_path),
        skills=[SkillDef(name="data", content="D", description="D")],
        skill_provider=sync_provider,
    )
    tk2 = await toolkit(skill_provider=async_provider)

    assert tk1.skills_prompt().endswith(
        "## Available Skills\n- **data**: D\n- **p**: P\n- **shared**: from disk"
    )
    assert tk2.skills_prompt().endswith("## Available Skills\n- **q**: Q")


async def test_raising_provider_is_warned_and_contributes_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def broken() -> list[SkillDef]:
        raise RuntimeError("provider down")

    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        tk = await toolkit(
            skills=[SkillDef(name="a", content="A", description="A")], skill_provider=broken
        )

    assert tk.skills_prompt().endswith("## Available Skills\n- **a**: A")
    assert tk.get("skill") is not None
    [warning] = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert warning.name == "toolnexus"
    assert "provider down" in warning.getMessage()


async def test_load_skills_exposes_the_tool_and_prompt(tmp_path: Path) -> None:
    write_skill(tmp_path / "s", "s", description="S")

    source = await load_skills(
        skills_dir=tmp_path,
        skills=None,
        skill_provider=None,
        skill_filter=None,
        disable_skills=None,
        sample_limit=0,
    )

    assert source.tool.name == "skill"
    assert source.prompt() == SKILLS_PROMPT_PREAMBLE + "\n\n## Available Skills\n- **s**: S"
    assert [s.name for s in source.skills] == ["s"]
    result = await source.tool.execute({"name": "s"}, None)
    assert result.metadata == {"name": "s", "dir": str(tmp_path / "s")}


def test_importing_the_skills_module_does_not_load_yaml() -> None:
    code = (
        "import sys, toolnexus, toolnexus.tools.skills\n"
        "assert 'yaml' not in sys.modules, 'yaml imported eagerly'\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=os.environ
    )
    assert done.returncode == 0, done.stderr
