"""A served toolkit against MCP clients written elsewhere: the official conformance suite's
server scenarios and the MCP Inspector's command line (both npm packages, run with Node 22)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

import toolnexus as tn
from toolnexus.serve import ServeHandle

from ..npm_packages import ROOT as NPM_ROOT
from ..npm_packages import npm_bin
from .conformance_kit import conformance_tools
from .kit import make_tools

BASELINE = Path(__file__).with_name("conformance-baseline.yml")
MUST_PASS = (
    "server-initialize",
    "ping",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-error",
    "json-schema-2020-12",
    "dns-rebinding-protection",
)
"""Scenarios that check something a served toolkit does; every one of their checks must pass."""
LIMIT = 300.0


@pytest.fixture(scope="module")
def node_bin() -> Path:
    """The folder with ``node`` (22), ``conformance`` and ``mcp-inspector-cli``."""
    if shutil.which("node") is None:
        pytest.skip("node is not installed: the MCP conformance suite and Inspector need Node 22")
    folder, why = npm_bin()
    if folder is None:
        pytest.fail(f"the npm interop packages could not be installed: {why}")
    return folder


@pytest.fixture
async def served() -> AsyncIterator[list[ServeHandle]]:
    handles: list[ServeHandle] = []
    yield handles
    for handle in handles:
        await handle.aclose()


async def _run(bin_dir: Path, argv: list[str], cwd: Path | None = None) -> tuple[int, str, str]:
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    proc = await asyncio.create_subprocess_exec(
        str(bin_dir / argv[0]),
        *argv[1:],
        env=env,
        cwd=cwd,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        async with asyncio.timeout(LIMIT):
            out, err = await proc.communicate()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    return proc.returncode or 0, out.decode(), err.decode()


def _statuses(results: Path) -> dict[str, list[str]]:
    """``{scenario: [status of each check]}`` from the suite's output folder."""
    found: dict[str, list[str]] = {}
    for folder in results.iterdir():
        match = re.match(r"server-(.+)-\d{4}-\d{2}-\d{2}T", folder.name)
        if match is None or not (folder / "checks.json").exists():
            continue
        checks = json.loads((folder / "checks.json").read_text())
        found[match.group(1)] = [c["status"] for c in checks]
    return found


async def test_the_conformance_suite_passes_every_server_scenario_outside_the_baseline(
    node_bin: Path, served: list[ServeHandle], tmp_path: Path
) -> None:
    handle = await tn.Toolkit(conformance_tools()).serve("127.0.0.1:0", mcp={})
    served.append(handle)

    code, out, err = await _run(
        node_bin,
        [
            "conformance", "server", "--url", handle.url + "/mcp", "--suite", "all",
            "--expected-failures", str(BASELINE), "-o", str(tmp_path),
        ],
    )  # fmt: skip

    assert code == 0, out[-4000:] + err[-2000:]
    statuses = _statuses(tmp_path)
    for scenario in MUST_PASS:
        assert statuses.get(scenario), f"{scenario} did not run: {sorted(statuses)}"
        assert set(statuses[scenario]) <= {"SUCCESS", "INFO"}, (scenario, statuses[scenario])


async def test_the_mcp_inspector_cli_lists_and_calls_a_served_tool(
    node_bin: Path, served: list[ServeHandle]
) -> None:
    handle = await tn.Toolkit(make_tools()).serve("127.0.0.1:0", mcp={})
    served.append(handle)
    target = [handle.url + "/mcp", "--transport", "http"]
    # The Inspector CLI finds its own package.json through a path relative to the working
    # directory, so it runs from the node_modules folder it was installed in.
    cwd = NPM_ROOT / "node_modules"

    listed = await _run(
        node_bin, ["mcp-inspector-cli", "--cli", *target, "--method", "tools/list"], cwd
    )
    called = await _run(
        node_bin,
        [
            "mcp-inspector-cli", "--cli", *target, "--method", "tools/call",
            "--tool-name", "echo", "--tool-arg", "text=hello inspector",
        ],
        cwd,
    )  # fmt: skip

    assert listed[0] == 0, listed[2]
    tools = json.loads(listed[1])["tools"]
    assert [t["name"] for t in tools] == ["echo", "boom", "wait"]
    assert tools[0]["inputSchema"] == make_tools()[0].input_schema
    assert called[0] == 0, called[2]
    assert json.loads(called[1]) == {
        "content": [{"type": "text", "text": "hello inspector"}],
        "isError": False,
    }
