"""Skills source: discovery, parsing, merging, filtering, the prompt and the providers."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

import toolnexus
from toolnexus.tools.skills import (
    NO_SKILLS_TEXT,
    SKILL_TOOL_DESCRIPTION,
    SKILLS_PROMPT_PREAMBLE,
    SkillDef,
    SkillSkip,
    list_skills,
    load_skills,
)

from .skill_files import names, toolkit, write_file, write_skill

# --- discovery ------------------------------------------------------------------------------------


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


# --- parsing --------------------------------------------------------------------------------------


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


# --- merging and the inventory --------------------------------------------------------------------


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


# --- the prompt -----------------------------------------------------------------------------------


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


# --- filter and disable_skills --------------------------------------------------------------------


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


# --- providers and merge order --------------------------------------------------------------------


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
