"""A140: the UI routes over HTTP (AG-UI and AI SDK streams, the thread view, the offline page)."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from ag_ui.core import Event
from pydantic import TypeAdapter

from toolnexus import ConfigError
from toolnexus.serve.http import ServeHandle
from toolnexus.testing import StubLLMServer, reply
from toolnexus.toolkit import Toolkit

from ..running import MakeClient
from .support import APPROVAL, build_toolkit

EVENTS: TypeAdapter[Any] = TypeAdapter(Event)


@pytest.fixture
async def toolkit() -> AsyncIterator[Toolkit]:
    async with await build_toolkit() as tk:
        yield tk


@pytest.fixture
async def served(
    stub: StubLLMServer, make_client: MakeClient, toolkit: Toolkit
) -> AsyncIterator[ServeHandle]:
    handle = await toolkit.serve("127.0.0.1:0", client=make_client("openai"), ui={})
    try:
        yield handle
    finally:
        await handle.aclose()


async def post(url: str, body: Any, **headers: str) -> tuple[int, dict[str, str], bytes]:
    async with aiohttp.ClientSession() as session:
        async with session.post(url, json=body, headers=headers) as response:
            return response.status, dict(response.headers), await response.read()


def sse_data(body: bytes) -> list[str]:
    """The ``data:`` payloads of an SSE body, checking every frame ends with a blank line."""
    text = body.decode()
    assert text.endswith("\n\n")
    frames = text.split("\n\n")[:-1]
    out = []
    for frame in frames:
        lines = frame.split("\n")
        assert all(line.startswith("data: ") for line in lines), frame
        out.append("\n".join(line[len("data: ") :] for line in lines))
    return out


async def test_agui_streams_validated_events_as_sse(
    stub: StubLLMServer, served: ServeHandle
) -> None:
    stub.enqueue(reply.tool_calls(reply.call("get_weather", {"city": "Pune"})), reply.text("Warm."))
    body = {
        "threadId": "h1",
        "runId": "r1",
        "messages": [{"id": "1", "role": "user", "content": "hi"}],
    }
    status, headers, raw = await post(f"{served.url}/agui", body)
    assert status == 200
    assert headers["Content-Type"].startswith("text/event-stream")
    assert headers.get("Transfer-Encoding") == "chunked"  # streamed, not buffered
    events = [EVENTS.validate_json(d) for d in sse_data(raw)]
    kinds = [e.type.value for e in events]
    assert kinds[0] == "RUN_STARTED"
    assert kinds[-1] == "RUN_FINISHED"
    assert "TOOL_CALL_RESULT" in kinds
    assert "TEXT_MESSAGE_CONTENT" in kinds


async def test_ai_sdk_chat_streams_the_ui_message_stream(
    stub: StubLLMServer, served: ServeHandle
) -> None:
    stub.enqueue(
        reply.tool_calls(reply.call("get_weather", {"city": "Pune"}, id="c1")),
        reply.text("It is warm in Pune."),
    )
    body = {
        "id": "h2",
        "trigger": "submit-message",
        "messages": [{"id": "m1", "role": "user", "parts": [{"type": "text", "text": "Pune?"}]}],
    }
    status, headers, raw = await post(f"{served.url}/api/chat", body)
    assert status == 200
    assert headers["Content-Type"] == "text/event-stream"
    assert headers["x-vercel-ai-ui-message-stream"] == "v1"
    data = sse_data(raw)
    assert data[-1] == "[DONE]"
    parts = [json.loads(d) for d in data[:-1]]
    kinds = [p["type"] for p in parts]
    assert kinds[0] == "start"
    assert kinds[-1] == "finish"
    assert kinds[1:-1] == [
        "start-step",
        "tool-input-start",
        *["tool-input-delta"] * kinds.count("tool-input-delta"),
        "tool-input-available",
        "tool-output-available",
        "finish-step",
        "start-step",
        "text-start",
        *["text-delta"] * 5,
        "text-end",
        "finish-step",
    ]
    by_kind = {p["type"]: p for p in parts}
    assert set(by_kind["start"]) == {"type", "messageId"}
    assert by_kind["tool-input-start"] == {
        "type": "tool-input-start",
        "toolCallId": "c1",
        "toolName": "get_weather",
    }
    deltas = "".join(p["inputTextDelta"] for p in parts if p["type"] == "tool-input-delta")
    assert json.loads(deltas) == {"city": "Pune"}
    assert by_kind["tool-input-available"] == {
        "type": "tool-input-available",
        "toolCallId": "c1",
        "toolName": "get_weather",
        "input": {"city": "Pune"},
    }
    assert by_kind["tool-output-available"] == {
        "type": "tool-output-available",
        "toolCallId": "c1",
        "output": "sunny in Pune",
    }
    text = "".join(p["delta"] for p in parts if p["type"] == "text-delta")
    assert text == "It is warm in Pune."
    assert {frozenset(p) for p in parts if p["type"] == "text-delta"} == {
        frozenset({"type", "id", "delta"})
    }
    assert by_kind["finish"] == {"type": "finish"}


async def test_ai_sdk_pending_part_and_answer_part_resume(
    stub: StubLLMServer, served: ServeHandle
) -> None:
    stub.enqueue(
        reply.tool_calls(reply.call("delete_file", {"name": "n"}, id="c1")), reply.text("Gone.")
    )
    ask = {
        "id": "h3",
        "messages": [{"id": "m1", "role": "user", "parts": [{"type": "text", "text": "rm n"}]}],
    }
    _, _, raw = await post(f"{served.url}/api/chat", ask)
    parts = [json.loads(d) for d in sse_data(raw)[:-1]]
    assert [p["type"] for p in parts][-3:] == ["data-toolnexus-pending", "finish-step", "finish"]
    request = parts[-3]["data"]
    assert (request["kind"], request["prompt"]) == ("approval", APPROVAL)

    answer = {"type": "data-toolnexus-answer", "data": {"id": request["id"], "ok": True}}
    again = {"id": "h3", "messages": [{"id": "m2", "role": "user", "parts": [answer]}]}
    _, _, raw = await post(f"{served.url}/api/chat", again)
    parts = [json.loads(d) for d in sse_data(raw)[:-1]]
    assert parts[2] == {"type": "tool-output-available", "toolCallId": "c1", "output": "deleted n"}
    assert "".join(p.get("delta", "") for p in parts if p["type"] == "text-delta") == "Gone."


async def test_ai_sdk_model_failure_is_an_error_part_without_the_key(
    stub: StubLLMServer, make_client: MakeClient, toolkit: Toolkit
) -> None:
    from toolnexus.ui import ai_sdk_parts

    key = "sk-ui-secret-key-777"
    stub.enqueue(reply.error(500, f"upstream broke, key={key}"))
    client = make_client("anthropic", api_key=key, retries=0)
    body = {"id": "h4", "messages": [{"role": "user", "parts": [{"type": "text", "text": "x"}]}]}
    parts = [p async for p in ai_sdk_parts(client, toolkit, body)]
    assert [p["type"] for p in parts] == ["start", "error"]
    assert set(parts[1]) == {"type", "errorText"}
    assert key not in parts[1]["errorText"]


async def test_thread_view_has_the_transcript_and_the_pending_request(
    stub: StubLLMServer, served: ServeHandle
) -> None:
    stub.enqueue(reply.tool_calls(reply.call("delete_file", {"name": "n"}, id="c7"), text="Sure."))
    body = {
        "threadId": "h5",
        "runId": "r",
        "messages": [{"id": "1", "role": "user", "content": "rm n"}],
    }
    await post(f"{served.url}/agui", body)
    async with aiohttp.ClientSession() as session:
        async with session.get(f"{served.url}/api/threads/h5") as response:
            assert response.status == 200
            view = await response.json()
        async with session.get(f"{served.url}/api/threads/nope") as response:
            assert (await response.json())["messages"] == []
    from ag_ui.core import Message

    messages = [TypeAdapter(Message).validate_python(m) for m in view["messages"]]
    assert [m.role for m in messages] == ["user", "assistant", "tool"]
    assert view["messages"][1]["content"] == "Sure."
    assert view["messages"][1]["toolCalls"][0]["function"] == {
        "name": "delete_file",
        "arguments": '{"name":"n"}',
    }
    assert view["pending"]["prompt"] == APPROVAL
    assert view["pending"]["data"]["toolCallId"] == "c7"


async def test_the_page_and_its_files_load_nothing_from_elsewhere(served: ServeHandle) -> None:
    async with aiohttp.ClientSession() as session:
        async with session.get(f"{served.url}/") as response:
            assert response.status == 200
            assert response.headers["Content-Type"].startswith("text/html")
            assert "default-src 'none'" in response.headers["Content-Security-Policy"]
            page = await response.text()
        assets = re.findall(r'(?:src|href)="([^"]+)"', page)
        assert assets
        assert all(a.startswith("/static/") for a in assets)
        texts = [page]
        for asset in assets:
            async with session.get(served.url + asset) as response:
                assert response.status == 200, asset
                texts.append(await response.text())
        async with session.get(f"{served.url}/static/../serve/ui.py") as response:
            assert response.status == 404
        async with session.post(f"{served.url}/", data="x") as response:
            assert response.status == 405
    for text in texts:
        text = text.replace('xmlns="http://www.w3.org/2000/svg"', "")  # a name, not a fetch
        assert not re.search(r"https?://", text), "the page must not reference any external URL"


async def test_posts_must_be_json_and_well_formed(served: ServeHandle) -> None:
    async with aiohttp.ClientSession() as session:
        async with session.post(
            f"{served.url}/agui", data="{}", headers={"Content-Type": "text/plain"}
        ) as response:
            assert response.status == 415
    status, _, raw = await post(f"{served.url}/agui", {"runId": "x", "messages": []})
    assert status == 400
    assert b"threadId" in raw.replace(b"thread_id", b"threadId")
    status, _, raw = await post(f"{served.url}/api/chat", {"messages": []})
    assert status == 400
    assert b"'id'" in raw


async def test_a_foreign_host_is_refused_on_a_loopback_bind(served: ServeHandle) -> None:
    async with aiohttp.ClientSession() as session:
        async with session.get(f"{served.url}/", headers={"Host": "evil.example"}) as response:
            assert response.status == 421
        origin = {"Origin": "http://evil.example"}
        async with session.post(f"{served.url}/agui", json={}, headers=origin) as response:
            assert response.status == 403


async def test_serving_the_ui_needs_a_client_and_known_options(toolkit: Toolkit) -> None:
    with pytest.raises(ConfigError, match="client="):
        await toolkit.serve("127.0.0.1:0", ui={})
    with pytest.raises(ConfigError, match="colour"):
        await toolkit.serve("127.0.0.1:0", ui={"colour": "red"}, client=object())


async def test_the_page_and_an_a2a_agent_share_the_root_by_method(
    make_client: MakeClient, toolkit: Toolkit
) -> None:
    handle = await toolkit.serve("127.0.0.1:0", client=make_client("openai"), ui={}, a2a={})
    try:
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{handle.url}/") as response:
                assert response.headers["Content-Type"].startswith("text/html")
            rpc = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "none"}}
            headers = {"A2A-Version": "1.0"}
            async with session.post(f"{handle.url}/", json=rpc, headers=headers) as response:
                answer = await response.json()
        assert answer["error"]["code"] == -32001  # A2A's own "task not found"
    finally:
        await handle.aclose()
