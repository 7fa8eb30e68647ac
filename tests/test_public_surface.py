"""The public surface: constructors, the one option set, ``aclose`` and the deprecated names."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path
from typing import Any

import pytest

import toolnexus
from toolnexus import (
    Client,
    ConfigError,
    Toolkit,
    ToolnexusError,
    create_client,
    create_in_process_client,
    create_toolkit,
    tool,
)
from toolnexus.stores.sqlite import SqliteConversationStore
from toolnexus.testing import StubLLMServer, mcp_server_command, reply

SRC = Path(__file__).resolve().parent.parent / "src"


@tool
def add(a: int, b: int) -> str:
    """Add two numbers."""
    return str(a + b)


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting to be reaped counts as dead)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


async def test_a_client_built_directly_runs_like_one_from_create_client() -> None:
    with StubLLMServer([reply.text("hello"), reply.text("hello")]) as stub:
        async with Client(stub.url, "openai", model="m", api_key="k", max_turns=2) as direct:
            assert (direct.base_url, direct.style, direct.model) == (stub.url, "openai", "m")
            assert (await direct.run("hi")).text == "hello"
        async with create_client(stub.url, model="m", api_key="k", max_turns=2) as made:
            assert type(made) is Client
            assert (made.base_url, made.style, made.model) == (stub.url, "openai", "m")
            assert (await made.run("hi")).text == "hello"
        assert stub.requests[0].json == stub.requests[1].json


def test_a_client_refuses_an_unknown_option_by_name() -> None:
    with pytest.raises(ConfigError, match=r"unknown options: max_turn$"):
        Client("http://127.0.0.1:1", model="m", max_turn=3)  # type: ignore[call-arg]
    with pytest.raises(ConfigError, match="max_turns must be an integer, at least 1, not 0"):
        Client("http://127.0.0.1:1", model="m", max_turns=0)
    with pytest.raises(ConfigError, match="does not take api_key"):
        create_in_process_client(model="m", generate=lambda r: {}, api_key="k")  # type: ignore[call-arg]


async def test_create_toolkit_is_an_async_context_manager_that_closes_the_toolkit(
    tmp_path: Path,
) -> None:
    pid_file = tmp_path / "server.pid"
    config = {"mcpServers": {"s": {"command": mcp_server_command("--pid-file", str(pid_file))}}}
    async with asyncio.timeout(20), create_toolkit(config, extra_tools=[add]) as tk:
        assert isinstance(tk, Toolkit)
        assert tk.mcp_status() == {"s": "connected"}
        assert (await tk.execute("add", {"a": 1, "b": 2})).output == "3"
        pid = int(pid_file.read_text())
        assert alive(pid)
    async with asyncio.timeout(5):
        while alive(pid):  # the child is reaped by the MCP session's own task
            await asyncio.sleep(0)
    assert not alive(pid)


async def test_create_toolkit_is_awaitable_and_async_with_await_still_works() -> None:
    tk = await create_toolkit(extra_tools=[add], builtins=False)
    assert [t.name for t in tk.tools()] == ["add"]
    await tk.aclose()
    async with await create_toolkit(extra_tools=[add], builtins=False) as again:
        assert "add" in again
    # a plain coroutine to asyncio's own APIs
    assert "add" in await asyncio.wait_for(create_toolkit(extra_tools=[add]), 10)


def test_create_toolkit_options_are_keyword_only() -> None:
    with pytest.raises(TypeError, match="positional"):
        create_toolkit(None, "skills")  # type: ignore[misc]


async def test_the_old_close_and_stop_names_warn_and_still_work(tmp_path: Path) -> None:
    old_kit = Toolkit([add])
    with pytest.warns(DeprecationWarning, match=r"Toolkit\.close\(\) is deprecated.*aclose"):
        await old_kit.close()
    old_handle = await Toolkit([add]).serve("127.0.0.1:0", mcp={})
    with pytest.warns(DeprecationWarning, match=r"ServeHandle\.stop\(\).*aclose"):
        await old_handle.stop()
    with pytest.raises(ConnectionRefusedError):  # the listener is closed
        await asyncio.open_connection(*old_handle.url.removeprefix("http://").split(":"))
    old_store = SqliteConversationStore(tmp_path / "c.db")
    with pytest.warns(DeprecationWarning, match=r"SqliteConversationStore\.close\(\)"):
        await old_store.close()
    with pytest.raises(ToolnexusError, match="is closed"):
        await old_store.get("x")


def test_suspension_keeps_its_names_and_wait_for_is_one_type() -> None:
    from toolnexus import suspension, types
    from toolnexus.engine import loop
    from toolnexus.tools.mcp import session

    assert suspension.Request is types.Request is toolnexus.Request
    assert suspension.Answer is types.Answer is toolnexus.Answer
    assert loop.WaitFor is session.WaitFor is types.WaitFor is toolnexus.WaitFor


MYPY_SNIPPET = """\
    import aiohttp
    from toolnexus import BeforeLLM, Client, Hooks, Message, Style
    from toolnexus import create_client, create_in_process_client, create_toolkit

    def generate(request: dict[str, object]) -> dict[str, object]:
        return {"content": "hi"}

    async def main() -> None:
        Client("http://x", "anthropic", model="m", max_turns=3, api_key="k")
        Client("http://x", model="m", max_turn=3)  # E
        create_client("http://x", "openai", model="m", retries=1, headers={"a": "b"})
        create_client("http://x", model="m", retry=1)  # E
        create_in_process_client(model="m", generate=generate, timeout_ms=5.0)
        create_in_process_client(model="m", generate=generate, timeout=5.0)  # E
        create_in_process_client(model="m", generate=generate, api_key="k")  # E
        Client("http://x", "cohere", model="m")  # E
        Client("http://x", model="m", max_turns="3")  # E
        async with create_toolkit(skills_dir="skills") as tk:
            await tk.aclose()
        await create_toolkit(None, "skills")  # E

    async def typed(client: Client, session: aiohttp.ClientSession) -> None:
        style: Style = client.style
        wrong: int = client.style  # E
        result = await client.run("hi", history=[{"role": "user", "content": "hi"}])
        messages: list[Message] = result.messages
        await client.run("hi", history=[{"rol": "user", "content": "hi"}])  # E
        Client("http://x", model="m", http_client=session)
        Client("http://x", model="m", http_client=object())  # E

    def before(payload: BeforeLLM) -> None:
        print(payload["messages"], payload["turn"] + 1)

    def before_wrong(payload: BeforeLLM) -> None:
        print(payload["message"])  # E

    hooks = Hooks(before_llm=before)
"""


def test_mypy_rejects_a_misspelt_option_on_every_factory_and_checks_transcripts_and_hooks(
    tmp_path: Path,
) -> None:
    api = pytest.importorskip("mypy.api")
    snippet = tmp_path / "snippet.py"
    snippet.write_text(textwrap.dedent(MYPY_SNIPPET))
    config = tmp_path / "mypy.ini"
    skipped = "mcp.*,a2a.*,pydantic.*,pydantic_core.*,opentelemetry.*,dbos.*,psycopg.*"
    config.write_text(
        f"[mypy]\nmypy_path = {SRC}\nfollow_imports = silent\n"
        # third-party packages the snippet does not touch: not analysed, to keep this quick
        f"[mypy-{skipped},redis.*,uvicorn.*,starlette.*,httptools.*,h11.*,yaml.*,rich.*]\n"
        "follow_imports = skip\n"
    )
    cache = str(tmp_path / "cache")
    out, err, status = api.run(
        ["--strict", "--config-file", str(config), "--cache-dir", cache, str(snippet)]
    )
    lines = snippet.read_text().splitlines()
    expected = {n for n, line in enumerate(lines, 1) if line.endswith("# E")}
    flagged = {int(line.split(":")[1]) for line in out.splitlines() if f"{snippet.name}:" in line}
    assert status == 1, (out, err)
    assert flagged == expected, out


def test_every_option_type_is_exported() -> None:
    names: dict[str, Any] = {n: getattr(toolnexus, n) for n in toolnexus.__all__}
    for name in ("ClientOptions", "InProcessOptions", "Style", "WaitFor", "ServeHandle"):
        assert name in names
