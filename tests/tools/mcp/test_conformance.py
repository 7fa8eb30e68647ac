"""The official MCP conformance suite's client scenarios, run against ``conformance_client.py``
(a toolkit with the scenario's server, its tools called by a run whose ``wait_for`` plays the
person). The suite (npm ``@modelcontextprotocol/conformance``, Node 22) runs every scenario
once per module, in parallel; each scenario is then one test that reads its checks."""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import re
import shlex
import shutil
import sys
from pathlib import Path

import pytest

from ...npm_packages import npm_bin

CLIENT = Path(__file__).with_name("conformance_client.py")
LIMIT = 300.0
"""Seconds the whole suite may take."""
SCENARIO_MS = 120_000
"""Per scenario; generous, since a loaded machine starts 26 Python clients at once."""

_BACKCOMPAT = (
    "the scenario serves, at the server's root well-known address, authorization server "
    "metadata whose issuer is <origin>/oauth; the MCP SDK's OAuth client checks, as RFC 8414 "
    "section 3.3 requires, that the issuer matches the address the metadata came from, and "
    "refuses it (issuer mismatch), so no client registration, authorization or token request "
    "follows"
)
SCENARIOS = [
    "initialize",
    "tools_call",
    "elicitation-sep1034-client-defaults",
    "sse-retry",
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
    "auth/2025-03-26-oauth-metadata-backcompat",
    "auth/2025-03-26-oauth-endpoint-fallback",
    "auth/resource-mismatch",
    "auth/offline-access-scope",
    "auth/offline-access-not-supported",
    "auth/client-credentials-jwt",
    "auth/client-credentials-basic",
    "auth/cross-app-access-complete-flow",
]
pytestmark = pytest.mark.timeout(LIMIT + 60)  # the first test waits for the whole suite

EXPECTED_TO_FAIL = {
    "auth/2025-03-26-oauth-metadata-backcompat": _BACKCOMPAT,
}


@pytest.fixture(scope="module")
def node_bin() -> Path:
    """The folder with ``node`` (22) and ``conformance``."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node/npm are not installed: the MCP conformance suite needs Node 22")
    folder, why = npm_bin()
    if folder is None:
        pytest.fail(f"the npm interop packages could not be installed: {why}")
    return folder


async def _run(bin_dir: Path, argv: list[str]) -> tuple[int, str]:
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    proc = await asyncio.create_subprocess_exec(
        str(bin_dir / argv[0]),
        *argv[1:],
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        async with asyncio.timeout(LIMIT):
            out, _ = await proc.communicate()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    return proc.returncode or 0, out.decode(errors="replace")


def _checks(results: Path) -> dict[str, list[dict[str, object]]]:
    """``{scenario: its checks}`` from the suite's output folder."""
    found: dict[str, list[dict[str, object]]] = {}
    for path in results.rglob("checks.json"):
        folder = path.parent.relative_to(results).as_posix()
        name = re.sub(r"-\d{4}-\d{2}-\d{2}T[\d-]+Z$", "", folder)
        found[name] = json.loads(path.read_text())
    return found


@pytest.fixture(scope="module")
def suite(node_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """Every client scenario, run once: ``{"checks": {...}, "listed": [...], "log": str}``.

    Under pytest-xdist the workers share one run: the first to take the lock runs the suite
    and leaves the summary beside the workers' temporary folders for the others.
    """
    if os.environ.get("PYTEST_XDIST_WORKER"):  # this session's folder, above the worker's
        shared = tmp_path_factory.getbasetemp().parent / "conformance-client"
        shared.mkdir(exist_ok=True)
    else:
        shared = tmp_path_factory.mktemp("conformance-client")
    summary = shared / "summary.json"
    with open(shared / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not summary.exists():
            summary.write_text(json.dumps(_run_suite(node_bin, shared / "results")))
    loaded: dict[str, object] = json.loads(summary.read_text())
    return loaded


def _run_suite(node_bin: Path, results: Path) -> dict[str, object]:
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(CLIENT))}"

    async def run_all() -> tuple[tuple[int, str], tuple[int, str]]:
        listed = await _run(node_bin, ["conformance", "list", "--client"])
        ran = await _run(
            node_bin,
            [
                "conformance", "client", "--command", command, "--suite", "all",
                "--timeout", str(SCENARIO_MS), "-o", str(results),
            ],
        )  # fmt: skip
        return listed, ran

    (_, listing), (_, log) = asyncio.run(run_all())
    names = re.findall(r"^\s*- (\S+)", listing.split("Client scenarios", 1)[-1], re.MULTILINE)
    return {"checks": _checks(results), "listed": names, "log": log[-20000:]}


def _waited_as_told(check: dict[str, object]) -> bool:
    """A reconnection that respected the server's retry interval but came late.

    How late depends on the machine's load (the suite allows 200 ms, then warns, and fails
    past twice the interval), so only an early reconnection counts against the client here.
    """
    details = check.get("details")
    return (
        check["id"] == "client-sse-retry-timing"
        and isinstance(details, dict)
        and details.get("tooEarly") is False
        and isinstance(details.get("actualDelayMs"), int)
    )


def test_every_client_scenario_of_the_suite_is_covered_here(suite: dict[str, object]) -> None:
    assert suite["listed"] == SCENARIOS


@pytest.mark.parametrize(
    "scenario",
    [
        pytest.param(
            name,
            marks=pytest.mark.xfail(strict=True, reason=EXPECTED_TO_FAIL[name])
            if name in EXPECTED_TO_FAIL
            else (),
        )
        for name in SCENARIOS
    ],
)
def test_the_client_passes_the_conformance_scenario(
    suite: dict[str, object], scenario: str
) -> None:
    checks = suite["checks"]
    assert isinstance(checks, dict)
    assert scenario in checks, f"{scenario} did not run:\n{str(suite['log'])[-3000:]}"
    failed = [
        f"{c['status']} {c['id']}: {c.get('errorMessage') or c.get('description')}"
        for c in checks[scenario]
        if c["status"] not in ("SUCCESS", "INFO") and not _waited_as_told(c)
    ]
    assert not failed, failed
    assert any(c["status"] == "SUCCESS" for c in checks[scenario])
