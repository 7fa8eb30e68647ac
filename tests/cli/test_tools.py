"""``toolnexus tools``: the tool list and MCP server status, with no model."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import toolnexus as tn

from .support import (
    TIMEOUT,
    clean_env,
    script,
    toolnexus,
    with_imports_listed,
    write_mcp_config,
    write_skill,
)


def test_tools_prints_the_skill_tool_and_exits_0(tmp_path: Path) -> None:
    write_skill(tmp_path / "skills", "greeting", "Greet people warmly.")

    done = toolnexus("tools", "--no-builtins", "--skills", str(tmp_path / "skills"))

    assert done.returncode == 0, done.stderr
    assert done.stdout == "skill\t(skill)\n"


def test_tools_piped_never_imports_rich(tmp_path: Path) -> None:
    write_skill(tmp_path / "skills", "greeting", "Greet people warmly.")

    done, modules = with_imports_listed(
        "tools", "--no-builtins", "--skills", str(tmp_path / "skills")
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout == "skill\t(skill)\n"
    assert not any(name == "rich" or name.startswith("rich.") for name in modules)


def test_tools_json_is_a_valid_list_of_name_source_description(tmp_path: Path) -> None:
    write_skill(tmp_path / "skills", "greeting", "Greet people warmly.")

    done = toolnexus("tools", "--no-builtins", "--skills", str(tmp_path / "skills"), "--json")

    assert done.returncode == 0, done.stderr
    listing = json.loads(done.stdout)
    assert [(t["name"], t["source"]) for t in listing] == [("skill", "skill")]
    assert set(listing[0]) == {"name", "source", "description"}
    assert listing[0]["description"] == tn.SKILL_TOOL_DESCRIPTION


def test_tools_shows_mcp_server_status_sorted_then_tools_in_order(tmp_path: Path) -> None:
    config = write_mcp_config(
        tmp_path / "mcp.json",
        extra={
            "another": {"command": "unused", "disabled": True},
            "broken": {"url": None},
        },
    )
    write_skill(tmp_path / "skills", "greeting", "Greet people warmly.")

    done = toolnexus(
        "tools", "--no-builtins", "--config", str(config), "--skills", str(tmp_path / "skills")
    )

    assert done.returncode == 0, done.stderr
    assert "1 of 3 MCP servers failed (broken); exit code 0 (1 with --strict)" in done.stderr
    lines = done.stdout.splitlines()
    assert lines[:3] == [
        "# mcp another: disabled",
        "# mcp broken: failed",
        "# mcp fixture: connected",
    ]
    assert lines[3:] == [
        "fixture_echo\t(mcp)",
        "fixture_add\t(mcp)",
        "fixture_fail\t(mcp)",
        "fixture_structured\t(mcp)",
        "fixture_sleep\t(mcp)",
        "fixture_pid\t(mcp)",
        "fixture_ask\t(mcp)",
        "fixture_delete\t(mcp)",
        "skill\t(skill)",
    ]


def test_tools_without_no_builtins_lists_the_built_in_tools() -> None:
    from toolnexus.tools.builtin import builtin_tools

    done = toolnexus("tools")

    assert done.returncode == 0, done.stderr
    expected = [f"{t.name}\t({t.source})" for t in builtin_tools()]
    assert done.stdout.splitlines() == expected


def test_a_broken_config_file_is_an_error_naming_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "mcp.json"
    bad.write_text("{not json", encoding="utf-8")

    done = toolnexus("tools", "--config", str(bad))

    assert done.returncode == 1
    assert str(bad) in done.stderr
    assert "Traceback" not in done.stderr


def test_a_reader_that_goes_away_early_ends_the_listing_quietly() -> None:
    # As in `toolnexus tools --json | head -c 0`: the pipe's only reader is gone before the
    # listing is written.
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [script(), "tools", "--json"],
            stdin=subprocess.DEVNULL,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=TIMEOUT,
            env=clean_env(),
            check=False,
        )
    finally:
        os.close(write_end)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert "BrokenPipeError" not in done.stderr


def test_tools_strict_exits_1_when_a_configured_server_failed(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"broken": {"url": None}}}), encoding="utf-8")

    done = toolnexus("tools", "--no-builtins", "--strict", "--config", str(config))

    assert done.returncode == 1
    assert done.stdout.splitlines() == ["# mcp broken: failed"]
    assert "1 of 1 MCP servers failed (broken); exit code 1 (--strict)" in done.stderr
    assert "Traceback" not in done.stderr


def test_tools_strict_exits_0_when_every_server_connected(tmp_path: Path) -> None:
    config = write_mcp_config(tmp_path / "mcp.json")

    done = toolnexus("tools", "--no-builtins", "--strict", "--json", "--config", str(config))

    assert done.returncode == 0, done.stderr
    assert "failed" not in done.stderr
