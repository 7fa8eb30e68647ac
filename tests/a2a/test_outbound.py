"""A remote A2A agent as tools, against a peer made of ``a2a-sdk``'s own server classes."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from toolnexus import (
    Answer,
    CancelToken,
    ToolContext,
    Toolkit,
    ToolResult,
    agent,
    create_toolkit,
    define_tool,
    pending_of,
)

from .peer import Peer, running_peer

PAINT = "Paint_Shop_paint"


def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper()


def task_of(peer: Peer, text: str) -> tuple[str, str]:
    """The (task id, context id) of the first message the peer saw with this text."""
    return next((t, c) for t, c, seen in peer.seen.messages if seen == text)


async def test_each_card_skill_becomes_a2a_tool_named_after_card_and_skill(peer: Peer) -> None:
    async with await create_toolkit(
        builtins={"tools": {name: name == "read" for name in ("read", "bash")}},
        agents=[peer.card_url],
        extra_tools=[define_tool(shout)],
    ) as tk:
        names = [t.name for t in tk.tools()]
        assert names[-3:] == [PAINT, "Paint_Shop_frame_it", "shout"]
        paint = tk.get(PAINT)
        assert paint is not None
        assert paint.source == "a2a"
        assert paint.description == "Paints things."
        assert paint.input_schema == {
            "type": "object",
            "properties": {"task": {"type": "string"}},
            "required": ["task"],
        }


async def test_a_completed_task_returns_the_text_of_every_artifact_in_order(
    peer: Peer, shop: Toolkit
) -> None:
    result = await shop.execute(PAINT, {"task": "a red barn"})
    assert result == ToolResult(result.output, False, result.metadata)
    assert result.output == "echo: a red barn\nbytes: 10"
    task_id, _ = task_of(peer, "a red barn")
    meta = result.metadata or {}
    assert meta["agent"] == "Paint Shop"
    assert meta["taskId"] == task_id
    assert meta["state"] == "completed"
    assert isinstance(meta["polls"], int)
    assert isinstance(meta["ms"], float)


async def test_a_call_sends_the_message_to_return_at_once_then_polls_the_task_until_completed(
    peer: Peer, shop: Toolkit
) -> None:
    call = asyncio.ensure_future(shop.execute(PAINT, {"task": "later please"}))
    async with asyncio.timeout(5):
        await peer.seen.polled.wait()  # the unfinished task is being polled
        peer.seen.release.set()
        result = await call

    assert not result.is_error, result.output
    assert result.output == "done: later please"
    task_id, _ = task_of(peer, "later please")
    send, *polls = peer.seen.calls
    assert send["method"] == "SendMessage"
    assert send["params"]["configuration"] == {"returnImmediately": True}
    assert send["params"]["message"]["role"] == "ROLE_USER"
    assert send["params"]["message"]["messageId"]
    assert send["params"]["message"]["parts"] == [{"text": "later please"}]
    assert polls
    assert [(c["method"], c["params"]) for c in polls] == [("GetTask", {"id": task_id})] * len(
        polls
    )
    meta = result.metadata or {}
    assert (meta["state"], meta["polls"]) == ("completed", len(polls))


async def test_every_call_carries_the_protocol_version_and_the_expanded_headers(
    peer: Peer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PAINT_TOKEN", "s3cret-paint-token")
    remote = agent(
        peer.card_url, headers={"Authorization": "Bearer ${PAINT_TOKEN}"}, poll_every=0.01
    )
    async with await create_toolkit(builtins=False, agents=[remote]) as tk:
        assert not (await tk.execute(PAINT, {"task": "hello"})).is_error
    assert len(peer.seen.headers) >= 3  # the card, SendMessage, then GetTask or more
    for headers in peer.seen.headers:
        assert headers["authorization"] == "Bearer s3cret-paint-token"
        assert headers["a2a-version"] == "1.0"


async def test_an_unset_header_variable_is_warned_by_name_and_the_call_still_works(
    peer: Peer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv("PAINT_TOKEN_UNSET", raising=False)
    caplog.set_level(logging.WARNING, logger="toolnexus")
    remote = agent(
        peer.card_url, headers={"Authorization": "Bearer ${PAINT_TOKEN_UNSET}"}, poll_every=0.01
    )
    async with await create_toolkit(builtins=False, agents=[remote]) as tk:
        assert not (await tk.execute(PAINT, {"task": "hello"})).is_error
    assert any(
        "${PAINT_TOKEN_UNSET}" in r.getMessage() and "Authorization" in r.getMessage()
        for r in caplog.records
    )
    assert peer.seen.headers
    assert all(h["authorization"] == "Bearer" for h in peer.seen.headers)  # no trailing space


async def test_a_task_completed_without_artifacts_returns_the_agent_message(
    shop: Toolkit,
) -> None:
    result = await shop.execute(PAINT, {"task": "quiet please"})
    assert not result.is_error
    assert result.output == "all done, nothing to show"


async def test_a_direct_message_answer_is_the_output_at_once(shop: Toolkit) -> None:
    result = await shop.execute(PAINT, {"task": "reply now"})
    assert not result.is_error
    assert result.output == "a direct answer"
    assert (result.metadata or {})["polls"] == 0


@pytest.mark.parametrize(
    ("words", "state", "detail"),
    [
        ("fail", "failed", "the oven broke"),
        ("reject", "rejected", "not my kind of work"),
        ("give up", "canceled", "stopped by the agent"),
        ("need auth", "auth-required", "sign in first"),
    ],
)
async def test_an_unsuccessful_end_is_an_error_naming_task_state_and_message(
    peer: Peer, shop: Toolkit, words: str, state: str, detail: str
) -> None:
    result = await shop.execute(PAINT, {"task": words})
    task_id, _ = task_of(peer, words)
    assert result.is_error
    assert result.output == f"A2A task {task_id} {state}: {detail}"
    assert (result.metadata or {})["state"] == state
    assert pending_of(result) is None


async def test_input_required_suspends_with_the_agents_question(peer: Peer, shop: Toolkit) -> None:
    result = await shop.execute(PAINT, {"task": "ask me"})
    request = pending_of(result)
    assert request is not None
    task_id, context_id = task_of(peer, "ask me")
    assert request.id == task_id
    assert request.kind == "input"
    assert request.prompt == "Which colour?"
    assert request.data == {"agent": "Paint Shop", "taskId": task_id, "contextId": context_id}
    meta = result.metadata or {}
    assert meta["state"] == "input-required"
    assert meta["taskId"] == task_id


async def test_an_answer_goes_to_the_same_task_and_context(peer: Peer, shop: Toolkit) -> None:
    first = await shop.execute(PAINT, {"task": "ask me"})
    request = pending_of(first)
    assert request is not None
    answer = Answer(request.id, ok=True, data={"answers": ["blue", "with dots"]})
    second = await shop.execute(PAINT, {"task": "ask me"}, ToolContext(answer=answer))
    assert second.output == "painted blue\nwith dots"
    assert not second.is_error
    assert peer.seen.messages[-1] == (
        request.id,
        (request.data or {})["contextId"],
        "blue\nwith dots",
    )


async def test_an_answer_in_a_fresh_toolkit_finds_the_context_and_sends_compact_json(
    peer: Peer, shop: Toolkit
) -> None:
    request = pending_of(await shop.execute(PAINT, {"task": "ask again"}))
    assert request is not None
    async with await create_toolkit(
        builtins=False, agents=[agent(peer.card_url, poll_every=0.01)]
    ) as later:
        answer = Answer(request.id, ok=True, data={"colour": "green", "coats": 2})
        result = await later.execute(PAINT, {"task": "ask again"}, ToolContext(answer=answer))
    assert result.output == 'painted {"colour":"green","coats":2}'
    assert peer.seen.messages[-1][:2] == (request.id, (request.data or {})["contextId"])
    assert (result.metadata or {})["polls"] >= 1


async def test_a_task_that_never_ends_times_out_and_is_cancelled_at_the_peer(
    peer: Peer,
) -> None:
    slow = agent(peer.card_url, timeout=0.4, poll_every=0.01)
    async with await create_toolkit(builtins=False, agents=[slow]) as tk:
        result = await tk.execute(PAINT, {"task": "hang on"})
    task_id, _ = task_of(peer, "hang on")
    assert result.is_error
    # the last state the tool saw, not "canceled", which its own CancelTask brought about
    assert result.output == f"A2A task {task_id} timed out after 400ms (state=working)"
    assert peer.seen.cancelled == [task_id]


async def test_the_runs_time_left_caps_the_timeout(peer: Peer, shop: Toolkit) -> None:
    result = await shop.execute(PAINT, {"task": "hang in there"}, ToolContext(timeout=0.25))
    task_id, _ = task_of(peer, "hang in there")
    assert result.output.startswith(f"A2A task {task_id} timed out after 250ms")


async def test_the_cancel_token_cancels_the_remote_task(peer: Peer, shop: Toolkit) -> None:
    token = CancelToken()
    call = asyncio.ensure_future(
        shop.execute(PAINT, {"task": "hang around"}, ToolContext(cancel=token))
    )
    async with asyncio.timeout(5):
        await peer.seen.arrived.wait()  # the peer has the task
        token.cancel()
        result = await call
    task_id, _ = task_of(peer, "hang around")
    assert result.is_error
    assert result.output == f"A2A task {task_id} canceled"
    assert peer.seen.cancelled == [task_id]
    assert (result.metadata or {})["state"] == "canceled"


async def test_an_already_cancelled_token_sends_nothing(peer: Peer, shop: Toolkit) -> None:
    token = CancelToken()
    token.cancel()
    result = await shop.execute(PAINT, {"task": "never sent"}, ToolContext(cancel=token))
    assert result.is_error
    assert "Paint Shop" in result.output
    assert peer.seen.messages == []


async def test_a_task_argument_that_is_not_a_string_is_an_error(shop: Toolkit) -> None:
    result = await shop.execute(PAINT, {"task": 3})
    assert result.is_error
    assert result.output == 'A2A agent "Paint Shop": invalid arguments: "task" must be a string'


async def test_name_replaces_the_card_name_as_the_tool_prefix(peer: Peer) -> None:
    async with running_peer() as twin:
        agents: list[Any] = [
            agent(peer.card_url, poll_every=0.01),
            agent(twin.card_url, name="twin shop", poll_every=0.01),
        ]
        async with await create_toolkit(builtins=False, agents=agents) as tk:
            assert [t.name for t in tk.tools()] == [
                PAINT,
                "Paint_Shop_frame_it",
                "twin_shop_paint",
                "twin_shop_frame_it",
            ]
            result = await tk.execute("twin_shop_paint", {"task": "hi"})
            assert result.output == "echo: hi\nbytes: 2"
            assert (result.metadata or {})["agent"] == "Paint Shop"
        assert twin.seen.messages[0][2] == "hi"
