"""Remote servers: streamable HTTP, the SSE fallback, header secrets, lost sessions."""

from __future__ import annotations

import logging
import socket
import subprocess
from collections.abc import Callable

import pytest

from toolnexus import create_toolkit
from toolnexus.testing import mcp_server_command

SECRET = "tn-secret-5f0c1e9a"
WRONG = "tn-wrong-77ab2d40"


async def test_streamable_http_sends_the_env_expanded_header(
    http_server: Callable[..., str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_TEST_SECRET", SECRET)
    url = http_server("--transport", "http", "--require-header", f"X-Api-Key=key {SECRET}")
    config = {
        "mcpServers": {"web": {"url": url, "headers": {"X-Api-Key": "key ${MCP_TEST_SECRET}"}}}
    }
    async with await create_toolkit(mcp_config=config, builtins=False) as tk:
        assert tk.mcp_status() == {"web": "connected"}
        result = await tk.execute("web_echo", {"text": "over http"})
        assert (result.output, result.is_error, result.metadata) == (
            "over http",
            False,
            {"server": "web"},
        )


async def test_an_unset_header_variable_is_warned_by_name_and_sent_without_a_trailing_space(
    http_server: Callable[..., str],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.delenv("MCP_TEST_UNSET", raising=False)
    caplog.set_level(logging.WARNING, logger="toolnexus")
    url = http_server("--transport", "http", "--require-header", "Authorization=Bearer")
    config = {
        "mcpServers": {
            "web": {"url": url, "headers": {"Authorization": "Bearer ${MCP_TEST_UNSET}"}}
        }
    }
    async with await create_toolkit(mcp_config=config, builtins=False) as tk:
        assert tk.mcp_status() == {"web": "connected"}
        assert (await tk.execute("web_echo", {"text": "hi"})).output == "hi"
    assert any("${MCP_TEST_UNSET}" in r.getMessage() for r in caplog.records)


async def test_a_server_without_the_expected_header_is_refused_naming_phase_and_status(
    http_server: Callable[..., str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="toolnexus")
    url = http_server("--transport", "http", "--require-header", f"X-Api-Key={SECRET}")
    async with await create_toolkit(mcp_config={"web": {"url": url}}, builtins=False) as tk:
        assert tk.mcp_status() == {"web": "failed"}
    (message,) = [m for m in caplog.messages if m.startswith('MCP server "web" failed')]
    assert "streamable HTTP: initialize: " in message
    assert "(HTTP 401)" in message


async def test_an_sse_only_server_connects_through_the_fallback(
    http_server: Callable[..., str],
) -> None:
    url = http_server("--transport", "sse")
    async with await create_toolkit(mcp_config={"old": {"url": url}}, builtins=False) as tk:
        assert tk.mcp_status() == {"old": "connected"}
        assert (await tk.execute("old_add", {"a": 1, "b": 41})).output == "42"
        assert (await tk.execute("old_structured", {})).output == '{"answer":42,"unit":"none"}'


async def test_expanded_header_values_never_reach_logs_statuses_or_errors(
    http_server: Callable[..., str],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("MCP_TEST_SECRET", SECRET)
    monkeypatch.setenv("MCP_TEST_WRONG", WRONG)
    url = http_server("--transport", "http", "--require-header", f"X-Api-Key={SECRET}")
    # The URL repeats the wrong value, so the servers' error texts (which quote the URL)
    # contain it: the library must mask it there.
    echoing = f"{url}?echo={WRONG}"
    dead = f"http://127.0.0.1:{_free_port()}/mcp?echo={WRONG}"
    config = {
        "mcpServers": {
            "good": {"url": url, "headers": {"X-Api-Key": "${MCP_TEST_SECRET}"}},
            "wrong": {"url": echoing, "headers": {"X-Api-Key": "${MCP_TEST_WRONG}"}},
            "dead": {"url": dead, "headers": {"Authorization": "Bearer ${MCP_TEST_WRONG}"}},
        }
    }
    async with await create_toolkit(mcp_config=config, builtins=False) as tk:
        statuses = tk.mcp_status()
        assert statuses == {"good": "connected", "wrong": "failed", "dead": "failed"}
        outputs = [(await tk.execute("good_fail", {})).output]
        outputs.append((await tk.execute("good_sleep", {"seconds": 5}, _short())).output)
    ours = [r.getMessage() for r in caplog.records if r.name == "toolnexus"]
    (wrong,) = [m for m in ours if m.startswith('MCP server "wrong" failed: ')]
    assert "echo=***" in wrong
    assert any(m.startswith('MCP server "dead" failed: ') for m in ours)
    for text in [str(statuses), *outputs, *ours]:
        assert WRONG not in text
        assert SECRET not in text
    # Other libraries may log the URL; a header value must never show up on its own.
    for record in caplog.records:
        message = record.getMessage()
        assert message.count(WRONG) == message.count(f"echo={WRONG}")
        assert SECRET not in message


async def test_a_terminated_http_session_is_reopened_by_the_next_call(
    http_server: Callable[..., str],
) -> None:
    port = _free_port()
    first = subprocess.Popen(
        mcp_server_command("--transport", "http", "--port", str(port)),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert first.stdout is not None
        url = first.stdout.readline().strip()
        async with await create_toolkit(mcp_config={"web": {"url": url}}, builtins=False) as tk:
            before = (await tk.execute("web_pid", {})).output
            first.kill()
            first.wait(timeout=10)
            assert http_server("--transport", "http", "--port", str(port)) == url
            after = await tk.execute("web_pid", {})
            assert not after.is_error, after.output
            assert after.output != before
            assert tk.mcp_status() == {"web": "connected"}
    finally:
        first.kill()
        first.wait(timeout=10)
        if first.stdout is not None:
            first.stdout.close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _short() -> object:
    from toolnexus import ToolContext

    return ToolContext(timeout=0.2)
