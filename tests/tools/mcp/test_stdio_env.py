"""What a stdio server is started with and what its death tells: environment, identity,
config-relative paths, exit code and stderr."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import pytest

from toolnexus import create_toolkit

WHOAMI = """
import os
from mcp.server.mcpserver import MCPServer, Context

server = MCPServer("whoami")

@server.tool(structured_output=False)
def whoami(ctx: Context) -> str:
    info = ctx.session.client_params.client_info
    return info.name + " " + info.version

@server.tool(structured_output=False)
def env(name: str) -> str:
    return os.environ.get(name, "<unset>")

server.run()
"""


def _whoami(tmp_path: Path) -> Path:
    script = tmp_path / "whoami.py"
    script.write_text(WHOAMI, encoding="utf-8")
    return script


async def test_host_secrets_stay_out_and_config_env_and_identity_come_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import toolnexus

    monkeypatch.setenv("OPENAI_API_KEY", "sk-host-secret")
    script = _whoami(tmp_path)
    config = {"mcpServers": {"w": {"command": [sys.executable, str(script)], "env": {"X": "1"}}}}
    async with await create_toolkit(mcp_config=config) as tk:
        assert tk.mcp_status() == {"w": "connected"}
        assert (await tk.execute("w_env", {"name": "OPENAI_API_KEY"})).output == "<unset>"
        assert (await tk.execute("w_env", {"name": "X"})).output == "1"
        assert (await tk.execute("w_env", {"name": "PATH"})).output != "<unset>"
        who = await tk.execute("w_whoami", {})
        assert who.output == f"toolnexus {toolnexus.__version__}"


async def test_inherit_env_passes_the_whole_host_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_HOST_ONLY", "here")
    script = _whoami(tmp_path)
    server = {"command": [sys.executable, str(script)], "inheritEnv": True}
    async with await create_toolkit(mcp_config={"mcpServers": {"w": server}}) as tk:
        assert (await tk.execute("w_env", {"name": "MCP_HOST_ONLY"})).output == "here"


async def test_relative_command_and_cwd_resolve_against_the_config_file_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "conf" / "bin").mkdir(parents=True)
    (tmp_path / "conf" / "work").mkdir()
    launcher = tmp_path / "conf" / "bin" / "server.sh"
    launcher.write_text(
        f'#!/bin/sh\npwd > where.txt\nexec "{sys.executable}" "{_whoami(tmp_path)}"\n'
    )
    launcher.chmod(0o755)
    config_file = tmp_path / "conf" / "mcp.json"
    entry = {"command": "./bin/server.sh", "cwd": "work"}
    config_file.write_text(json.dumps({"mcpServers": {"rel": entry}}))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    async with await create_toolkit(mcp_config=str(config_file)) as tk:
        assert tk.mcp_status() == {"rel": "connected"}
    where = (tmp_path / "conf" / "work" / "where.txt").read_text().strip()
    assert Path(where).resolve() == (tmp_path / "conf" / "work").resolve()


async def test_a_server_that_exits_is_reported_with_its_exit_code_and_last_stderr_lines(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="toolnexus")
    script = tmp_path / "dies.py"
    script.write_text(
        "import sys\nprint('fatal: API_KEY is not set', file=sys.stderr)\nsys.exit(3)\n"
    )
    config = {"mcpServers": {"dies": {"command": [sys.executable, str(script)]}}}
    async with await create_toolkit(mcp_config=config) as tk:
        assert tk.mcp_status() == {"dies": "failed"}
    (message,) = [m for m in caplog.messages if m.startswith('MCP server "dies" failed')]
    assert "initialize" in message
    assert "exited with code 3" in message
    assert "fatal: API_KEY is not set" in message


async def test_a_missing_program_is_named(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="toolnexus")
    config = {"mcpServers": {"nope": {"command": "no-such-program-anywhere"}}}
    async with await create_toolkit(mcp_config=config) as tk:
        assert tk.mcp_status() == {"nope": "failed"}
    (message,) = [m for m in caplog.messages if m.startswith('MCP server "nope" failed')]
    assert "command not found: no-such-program-anywhere" in message


async def test_env_values_expand_host_variables_and_an_unset_one_warns_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("TN_HOST_TOKEN", "tok-123")
    monkeypatch.delenv("TN_NOT_SET_ANYWHERE", raising=False)
    env = {"TOKEN": "Bearer ${TN_HOST_TOKEN}", "MISSING": "x${TN_NOT_SET_ANYWHERE}y"}
    server = {"command": [sys.executable, str(_whoami(tmp_path))], "env": env}
    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        async with await create_toolkit(mcp_config={"mcpServers": {"w": server}}) as tk:
            # the server got "Bearer tok-123"; an expanded value is a secret, masked on the way back
            assert (await tk.execute("w_env", {"name": "TOKEN"})).output == "***"
            assert (await tk.execute("w_env", {"name": "MISSING"})).output == "xy"
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("env MISSING uses ${TN_NOT_SET_ANYWHERE}" in w for w in warnings), warnings
    assert not any("tok-123" in r.getMessage() for r in caplog.records)


SPEAKS_ON_STDERR = """
import sys
from mcp.server.mcpserver import MCPServer

print("server says hello on stderr", file=sys.stderr, flush=True)
server = MCPServer("chatty")

@server.tool(structured_output=False)
def talk() -> str:
    print("talking on stderr", file=sys.stderr, flush=True)
    return "ok"

server.run()
"""


async def test_a_servers_stderr_goes_to_its_logger_not_to_the_terminal(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    script = tmp_path / "chatty.py"
    script.write_text(SPEAKS_ON_STDERR, encoding="utf-8")
    config = {"mcpServers": {"chatty": {"command": [sys.executable, str(script)]}}}
    with caplog.at_level(logging.INFO, logger="toolnexus.mcp.chatty"):
        async with await create_toolkit(mcp_config=config, builtins=False) as tk:
            assert (await tk.execute("chatty_talk", {})).output == "ok"
    lines = [r.getMessage() for r in caplog.records if r.name == "toolnexus.mcp.chatty"]
    assert "server says hello on stderr" in lines
    assert "talking on stderr" in lines
    assert "on stderr" not in capfd.readouterr().err
