"""``toolnexus serve --mcp`` over stdio and HTTP, spoken to with the MCP SDK's clients."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from ..serve.conftest import http_session, text_of
from .support import TIMEOUT, clean_env, first_line, script, started, stop, toolnexus, write_skill


async def test_serve_stdio_answers_tools_list_and_calls(tmp_path: Path) -> None:
    write_skill(tmp_path / "skills", "greeting", "Greet people warmly.", "Say hello.")
    params = StdioServerParameters(
        command=script(),
        args=["serve", "--mcp", "--stdio", "--no-builtins", "--skills", str(tmp_path / "skills")],
        env=clean_env(),
    )
    async with asyncio.timeout(TIMEOUT):
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            init = await session.initialize()
            listed = await session.list_tools()
            loaded = await session.call_tool("skill", {"name": "greeting"})
    assert init.server_info.name == "toolnexus"
    assert [t.name for t in listed.tools] == ["skill"]
    assert "Say hello." in text_of(loaded)


async def test_serve_http_prints_the_endpoint_serves_mcp_and_stops_on_sigterm(
    tmp_path: Path,
) -> None:
    write_skill(tmp_path / "skills", "greeting", "Greet people warmly.")
    with started(
        "serve", "--mcp", "--addr", "127.0.0.1:0", "--name", "my-gateway",
        "--tool", "skill", "--tool", "absent", "--skills", str(tmp_path / "skills"),
        "--no-builtins",
    ) as proc:  # fmt: skip
        line = await first_line(proc)
        url = line.strip().rsplit(" ", 1)[-1]
        assert url.startswith("http://127.0.0.1:")
        assert url.endswith("/mcp")
        async with asyncio.timeout(TIMEOUT), http_session(url) as session:
            listed = await session.list_tools()
        assert [t.name for t in listed.tools] == ["skill"]
        assert await stop(proc) == 0


def test_serve_without_mcp_exits_2() -> None:
    done = toolnexus("serve", "--no-builtins")

    assert done.returncode == 2
    assert "--mcp" in done.stderr


def test_help_version_and_python_dash_m() -> None:
    import sys

    import toolnexus as tn

    version = toolnexus("--version")
    helped = toolnexus("run", "--help")
    as_module = subprocess.run(
        [sys.executable, "-m", "toolnexus", "--version"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    bare = toolnexus()

    assert version.returncode == 0
    assert version.stdout.strip() == f"toolnexus {tn.__version__}"
    assert as_module.stdout == version.stdout
    assert helped.returncode == 0
    for flag in ("--base-url", "--model", "--style", "--once", "--id", "--db", "--max-turns"):
        assert flag in helped.stdout
    assert bare.returncode == 2


async def test_serve_lists_no_built_in_tool_unless_builtins(tmp_path: Path) -> None:
    write_skill(tmp_path / "skills", "greeting", "Greet people warmly.")
    skills = ("--skills", str(tmp_path / "skills"))
    listed: dict[str, list[str]] = {}
    for label, extra in (("default", ()), ("builtins", ("--builtins",))):
        with started("serve", "--mcp", "--addr", "127.0.0.1:0", *skills, *extra) as proc:
            line = await first_line(proc)
            while "serving MCP at" not in line:  # --builtins: a warning about bash first
                assert "bash" in line
                line = await first_line(proc)
            url = line.strip().rsplit(" ", 1)[-1]
            async with asyncio.timeout(TIMEOUT), http_session(url) as session:
                listed[label] = [t.name for t in (await session.list_tools()).tools]
            assert await stop(proc) == 0
    assert listed["default"] == ["skill"]
    assert {"bash", "read", "write"} <= set(listed["builtins"])


def test_serve_rejects_builtins_with_no_builtins_and_abbreviated_flags() -> None:
    both = toolnexus("serve", "--mcp", "--builtins", "--no-builtins")
    abbreviated = toolnexus("serve", "--mcp", "--tok", "t0k")
    run_abbreviated = toolnexus("run", "--mod", "m")
    assert both.returncode == 2
    assert abbreviated.returncode == 2
    assert "--tok" in abbreviated.stderr
    assert run_abbreviated.returncode == 2


async def test_serve_token_flag_and_env_turn_auth_on(tmp_path: Path) -> None:
    import httpx

    from ..serve.conftest import MCP_HEADERS

    body = b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
    headers = {**MCP_HEADERS, "Content-Type": "application/json"}
    for args, env in (
        (("--token", "t0k"), clean_env()),
        ((), clean_env(TOOLNEXUS_SERVE_TOKEN="t0k")),
    ):
        with started("serve", "--mcp", "--addr", "127.0.0.1:0", *args, env=env) as proc:
            url = (await first_line(proc)).strip().rsplit(" ", 1)[-1]
            async with httpx.AsyncClient(timeout=TIMEOUT) as http:
                anonymous = await http.post(url, content=body, headers=headers)
                with_token = await http.post(
                    url, content=body, headers={**headers, "Authorization": "Bearer t0k"}
                )
            assert await stop(proc) == 0
            assert proc.stderr is not None
            assert "t0k" not in proc.stderr.read()
        assert (anonymous.status_code, with_token.status_code) == (401, 200)


def test_serve_on_a_public_address_needs_a_token_or_insecure() -> None:
    refused = toolnexus("serve", "--mcp", "--addr", "0.0.0.0:0")
    assert refused.returncode == 1
    assert "0.0.0.0:0" in refused.stderr
    assert "--token" in refused.stderr or "auth" in refused.stderr


async def test_serve_insecure_serves_a_public_address_with_a_warning() -> None:
    with started("serve", "--mcp", "--addr", "0.0.0.0:0", "--insecure") as proc:
        lines = [await first_line(proc), await first_line(proc)]
        assert any("without authentication" in line for line in lines)
        assert await stop(proc) == 0
