"""Agents that cannot be used: no tools and a warning, or an error result; never a hang."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response

from toolnexus import CancelToken, ConfigError, RunCancelled, agent, create_toolkit, define_tool

from .peer import CARD_PATH, free_socket, running_app

Endpoint = Callable[[Request], Awaitable[Response]]


def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper()


def card(url: str, **changes: Any) -> dict[str, Any]:
    """A valid 1.0 card (as JSON) of an agent ``Junk`` whose JSON-RPC endpoint is ``url/``."""
    body: dict[str, Any] = {
        "name": "Junk",
        "description": "Answers badly.",
        "version": "1",
        "supportedInterfaces": [
            {"url": f"{url}/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ],
        "capabilities": {},
        "defaultInputModes": ["text"],
        "defaultOutputModes": ["text"],
        "skills": [{"id": "work", "name": "Work", "description": "Does work.", "tags": []}],
    }
    body.update(changes)
    return body


def fixed(body: str, *, status: int = 200, media_type: str = "application/json") -> Endpoint:
    async def endpoint(request: Request) -> Response:
        return PlainTextResponse(body, status_code=status, media_type=media_type)

    return endpoint


def unreachable_url() -> str:
    sock = free_socket()  # bound, never listening: connections are refused
    port = sock.getsockname()[1]
    sock.close()
    return f"http://127.0.0.1:{port}{CARD_PATH}"


async def tools_and_warnings(
    caplog: pytest.LogCaptureFixture, *agents: Any
) -> tuple[list[str], list[str]]:
    caplog.set_level(logging.WARNING, logger="toolnexus")
    async with asyncio.timeout(10):
        tk = await create_toolkit(
            builtins=False, agents=list(agents), extra_tools=[define_tool(shout)]
        )
    async with tk:
        return [t.name for t in tk.tools()], [r.getMessage() for r in caplog.records]


async def test_an_unreachable_agent_contributes_no_tools_and_a_warning_naming_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    names, warnings = await tools_and_warnings(caplog, agent(unreachable_url(), name="far away"))
    assert names == ["shout"]
    assert any('A2A agent "far away"' in w and "no tools" in w for w in warnings)


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ("this is not JSON", 200),
        ("[1, 2, 3]", 200),
        ('{"name": 5, "skills": "many"}', 200),
        ('{"error": "nope"}', 500),
    ],
)
async def test_a_card_that_is_not_a_card_contributes_no_tools(
    caplog: pytest.LogCaptureFixture, body: str, status: int
) -> None:
    async with running_app({CARD_PATH: fixed(body, status=status)}) as url:
        names, warnings = await tools_and_warnings(caplog, url + CARD_PATH)
    assert names == ["shout"]
    assert any(f'A2A agent "{url}{CARD_PATH}"' in w for w in warnings)


@pytest.mark.parametrize(
    "changes",
    [
        {"supportedInterfaces": []},
        {"supportedInterfaces": [{"url": "http://x/", "protocolBinding": "GRPC"}]},
        {"name": ""},
    ],
)
async def test_a_card_without_a_name_or_jsonrpc_interface_contributes_no_tools(
    caplog: pytest.LogCaptureFixture, changes: dict[str, Any]
) -> None:
    async with (
        running_app({}) as url,
        running_app({CARD_PATH: fixed(json.dumps(card(url, **changes)))}) as host,
    ):
        names, warnings = await tools_and_warnings(caplog, agent(host + CARD_PATH, name="odd"))
    assert names == ["shout"]
    assert any('A2A agent "odd"' in w for w in warnings)


async def test_a_card_that_never_arrives_gives_up_within_the_timeout(
    caplog: pytest.LogCaptureFixture,
) -> None:
    never = asyncio.Event()

    async def stall(request: Request) -> Response:
        await never.wait()
        return PlainTextResponse("late")

    async with running_app({CARD_PATH: stall}) as url:
        try:
            names, warnings = await tools_and_warnings(
                caplog, agent(url + CARD_PATH, timeout=0.3, name="slow")
            )
        finally:
            never.set()
    assert names == ["shout"]
    assert any('A2A agent "slow"' in w and "300ms" in w for w in warnings)


async def test_strict_makes_a_failing_agent_a_config_error() -> None:
    with pytest.raises(ConfigError, match='A2A agent "far away" failed'):
        await create_toolkit(
            builtins=False, agents=[agent(unreachable_url(), name="far away")], strict=True
        )


async def test_header_secrets_never_reach_the_warning(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUNK_TOKEN", "hush-hush-token-42")
    async with running_app({CARD_PATH: fixed("echo: hush-hush-token-42 is not JSON")}) as url:
        names, warnings = await tools_and_warnings(
            caplog, agent(url + CARD_PATH, headers={"X-Token": "${JUNK_TOKEN}"})
        )
    assert names == ["shout"]
    assert warnings
    assert not any("hush-hush-token-42" in w for w in warnings)


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("not json at all", "SendMessage failed"),
        (
            '{"jsonrpc": "2.0", "id": "1", "result": {"task": {"status": {"state": 7}}}}',
            "SendMessage",
        ),
        ('{"jsonrpc": "2.0", "id": "1", "result": {"task": "a string"}}', "SendMessage"),
        ('{"jsonrpc": "2.0", "id": "1", "result": {}}', "SendMessage"),
        ('{"jsonrpc": "2.0", "id": "1", "error": {"code": -32603, "message": "kaput"}}', "kaput"),
    ],
)
async def test_a_peer_answering_garbage_is_an_error_result_naming_the_agent(
    answer: str, expected: str
) -> None:
    holder: dict[str, str] = {}

    async def the_card(request: Request) -> Response:
        return JSONResponse(card(holder["url"]))

    async with running_app({CARD_PATH: the_card, "/": fixed(answer)}) as url:
        holder["url"] = url
        async with asyncio.timeout(10):
            async with await create_toolkit(
                builtins=False, agents=[agent(url + CARD_PATH, poll_every=0.01, timeout=2)]
            ) as tk:
                result = await tk.execute("Junk_work", {"task": "go"})
    assert result.is_error
    assert result.output.startswith('A2A agent "Junk": ')
    assert expected in result.output


async def test_cancelling_the_load_stops_waiting_for_a_card() -> None:
    arrived, never = asyncio.Event(), asyncio.Event()

    async def stall(request: Request) -> Response:
        arrived.set()
        await never.wait()
        return PlainTextResponse("late")

    token = CancelToken()
    async with running_app({CARD_PATH: stall}) as url:
        try:
            load = asyncio.ensure_future(
                create_toolkit(builtins=False, agents=[url + CARD_PATH], cancel=token)
            )
            async with asyncio.timeout(5):
                await arrived.wait()
                token.cancel()
                with pytest.raises(RunCancelled, match="A2A"):
                    await load
        finally:
            never.set()
