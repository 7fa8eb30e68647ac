"""A served tool that suspends or reports progress, over MCP (SPEC §13, A146).

Driven by the official SDK's ``Client``: over the stateless HTTP endpoint it negotiates the
2026-07-28 protocol and answers ``input_required`` results; over stdio with the legacy
handshake the server sends it an ``elicitation/create`` request.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from typing import Any

import httpx
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters

import toolnexus as tn
from toolnexus.serve import ServeHandle

from .conftest import MCP_HEADERS

LIMIT = 20.0
QUESTIONS = {"questions": [{"question": "Which env?", "options": ["dev", "prod"]}]}


@pytest.fixture
async def question_server() -> AsyncIterator[ServeHandle]:
    """The ``question`` built-in and ``confirm`` (an approval), served over HTTP."""

    @tn.tool
    def confirm(ctx: tn.ToolContext, what: str) -> tn.ToolResult:
        """Ask before doing it."""
        if ctx.answer is None:
            return tn.pending(tn.Request.new("approval", f"May I {what}?"))
        return tn.ToolResult(f"done: {what}")

    tk = await tn.create_toolkit(builtins=True, extra_tools=[confirm])
    handle = await tk.serve("127.0.0.1:0", mcp={"tools": ["question", "confirm"]})
    yield handle
    await handle.aclose()
    await tk.aclose()


def text(result: types.CallToolResult) -> str:
    assert len(result.content) == 1
    item = result.content[0]
    assert isinstance(item, types.TextContent)
    return item.text


async def test_a_question_is_asked_through_elicitation_and_answered(
    question_server: ServeHandle,
) -> None:
    asked: list[types.ElicitRequestParams] = []

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="accept", content={"answer1": "prod"})

    async with asyncio.timeout(LIMIT):
        async with Client(question_server.url + "/mcp", elicitation_callback=elicit) as client:
            result = await client.call_tool("question", QUESTIONS)
            approved = await client.call_tool("confirm", {"what": "deploy"})
    assert not result.is_error
    assert text(result) == '{"answers":["prod"]}'
    assert asked[0].message == "Which env? (options: dev, prod)"
    assert isinstance(asked[0], types.ElicitRequestFormParams)
    assert asked[0].requested_schema["properties"]["answer1"]["enum"] == ["dev", "prod"]
    assert text(approved) == "done: deploy"


async def test_a_declined_elicitation_is_declined_expired(question_server: ServeHandle) -> None:
    async def decline(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="decline")

    async with asyncio.timeout(LIMIT):
        async with Client(question_server.url + "/mcp", elicitation_callback=decline) as client:
            result = await client.call_tool("confirm", {"what": "deploy"})
    assert result.is_error
    assert text(result) == "declined/expired: May I deploy?"


async def test_without_elicitation_the_call_is_an_error_naming_the_request(
    question_server: ServeHandle,
) -> None:
    async with asyncio.timeout(LIMIT), Client(question_server.url + "/mcp") as client:
        result = await client.call_tool("question", QUESTIONS)
    assert result.is_error
    assert "Which env? (options: dev, prod)" in text(result)
    assert "elicitation" in text(result)


async def test_a_forged_or_replayed_request_state_is_refused(question_server: ServeHandle) -> None:
    states: list[str] = []

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={})

    async with asyncio.timeout(LIMIT):
        async with Client(question_server.url + "/mcp", elicitation_callback=elicit) as client:
            first = await client.session.call_tool(
                "confirm", {"what": "deploy"}, allow_input_required=True
            )
            assert isinstance(first, types.InputRequiredResult)
            assert first.request_state is not None
            states.append(first.request_state)
            ok = await client.call_tool(
                "confirm",
                {"what": "something else"},  # the kept arguments win over the client's
                input_responses={
                    k: types.ElicitResult(action="accept", content={})
                    for k in (first.input_requests or {})
                },
                request_state=states[0],
            )
            with pytest.raises(Exception, match="requestState"):
                await client.call_tool("confirm", {"what": "x"}, request_state=states[0])
            with pytest.raises(Exception, match="requestState"):
                await client.call_tool("confirm", {"what": "x"}, request_state="forged")
    assert text(ok) == "done: deploy"


async def test_progress_reports_become_progress_notifications() -> None:
    @tn.tool
    def crunch(ctx: tn.ToolContext) -> str:
        """Report progress twice."""
        assert ctx.progress is not None
        ctx.progress(1, 2, "half")
        ctx.progress(2, 2, "all")
        return "crunched"

    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        seen.append((done, total, message))

    async with tn.Toolkit([crunch]) as tk:
        handle = await tk.serve("127.0.0.1:0", mcp={})
        try:
            async with asyncio.timeout(LIMIT), Client(handle.url + "/mcp") as client:
                result = await client.call_tool("crunch", {}, progress_callback=on_progress)
                quiet = await client.call_tool("crunch", {})
        finally:
            await handle.aclose()
    assert text(result) == "crunched"
    assert text(quiet) == "crunched"
    assert seen == [(1, 2, "half"), (2, 2, "all")]


async def test_over_stdio_the_question_is_an_elicitation_request() -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolnexus", "serve", "--mcp", "--stdio", "--builtins", "--tool", "question"],
        env=dict(os.environ),
    )
    asked: list[str] = []

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"answer1": "dev"})

    async with asyncio.timeout(LIMIT):
        async with Client(params, mode="legacy", elicitation_callback=elicit) as client:
            result = await client.call_tool("question", QUESTIONS)
    assert asked == ["Which env? (options: dev, prod)"]
    assert text(result) == '{"answers":["dev"]}'


async def test_a_cancelled_notification_to_the_stateless_endpoint_is_accepted(
    question_server: ServeHandle,
) -> None:
    body = b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}'
    async with httpx.AsyncClient(timeout=LIMIT) as http:
        answer = await http.post(
            question_server.url + "/mcp",
            content=body,
            headers={**MCP_HEADERS, "Content-Type": "application/json"},
        )
    assert answer.status_code == 202  # accepted; it cannot reach a call (see the README)
