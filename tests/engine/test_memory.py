"""Conversation memory: ids, history, the store, ``ask``, ``conversation()``."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from toolnexus import (
    DoneEvent,
    InMemoryConversationStore,
    LLMError,
    Request,
    Toolkit,
    ToolResult,
    create_toolkit,
    pending,
    tool,
)
from toolnexus.testing import StubLLMServer, reply
from toolnexus.types import JSONObject

from ..running import MakeClient, drive
from .support import get_weather


class SpyStore:
    """An ``InMemoryConversationStore`` that records every ``get`` and ``save``."""

    def __init__(self) -> None:
        self.inner = InMemoryConversationStore()
        self.gets: list[str] = []
        self.saves: list[tuple[str, list[JSONObject]]] = []

    async def get(self, id: str) -> list[JSONObject] | None:
        self.gets.append(id)
        return await self.inner.get(id)

    async def save(self, id: str, messages: list[JSONObject]) -> None:
        self.saves.append((id, messages))
        await self.inner.save(id, messages)

    @property
    def calls(self) -> int:
        return len(self.gets) + len(self.saves)


@tool
def ask_login() -> ToolResult:
    """Always needs a login."""
    return pending(Request.new("authorization", "Log in first", url="https://auth.test/"))


@pytest.fixture
async def kit() -> AsyncIterator[Toolkit]:
    async with await create_toolkit(extra_tools=[get_weather, ask_login], builtins=False) as tk:
        yield tk


def contents(body: JSONObject) -> list[object]:
    """The ``content`` of every message a request sent."""
    return [m["content"] for m in body["messages"]]


def user_texts(body: JSONObject) -> list[str]:
    """The plain-text user prompts a request sent (tool results left out)."""
    return [
        m["content"]
        for m in body["messages"]
        if m["role"] == "user" and isinstance(m["content"], str)
    ]


# --- conversation ids -----------------------------------------------------------------------------


async def test_runs_with_the_same_id_remember_each_other(
    stub: StubLLMServer, make_client: MakeClient, mode: str, style: str
) -> None:
    store = SpyStore()
    client = make_client(style, store=store)
    stub.enqueue(reply.text("Noted: staging-eu."), reply.text("Deploying to staging-eu."))
    await drive(client, mode, prompt="My deploy target is staging-eu.", conversation_id="ops-1")
    second, _ = await drive(
        client, mode, prompt="Deploy the current branch there.", conversation_id="ops-1"
    )

    assert contents(stub.requests[1].json) == [
        "My deploy target is staging-eu.",
        _assistant_text(style, "Noted: staging-eu."),
        "Deploy the current branch there.",
    ]
    assert store.gets == ["ops-1", "ops-1"]
    assert [i for i, _ in store.saves] == ["ops-1", "ops-1"]
    assert store.saves[-1][1] == second.messages
    assert await store.inner.get("ops-1") == second.messages


def _assistant_text(style: str, text: str) -> object:
    return text if style == "openai" else [{"type": "text", "text": text}]


async def test_a_run_without_an_id_neither_reads_nor_writes_the_store(
    stub: StubLLMServer, make_client: MakeClient, mode: str, style: str, kit: Toolkit
) -> None:
    store = SpyStore()
    await store.inner.save("c1", [{"role": "user", "content": "old"}])
    client = make_client(style, store=store)
    stub.enqueue(reply.tool_calls(reply.call("get_weather", {"city": "A"})), reply.text("ok"))
    await drive(client, mode, kit, prompt="fresh")

    assert store.calls == 0
    assert contents(stub.requests[0].json) == ["fresh"]


async def test_a_one_shot_run_does_not_inherit_an_earlier_conversation(
    stub: StubLLMServer, make_client: MakeClient, mode: str, style: str
) -> None:
    client = make_client(style)
    stub.enqueue(reply.text("first"), reply.text("second"))
    await drive(client, mode, prompt="remember me", conversation_id="c1")
    await drive(client, mode, prompt="who am I?")

    assert contents(stub.requests[1].json) == ["who am I?"]


async def test_the_store_is_saved_before_the_done_event(
    stub: StubLLMServer, make_client: MakeClient, style: str
) -> None:
    store = SpyStore()
    stub.enqueue(reply.text("hello"))
    saves_at_done: list[int] = []
    async for event in make_client(style, store=store).stream("hi", conversation_id="c1"):
        if isinstance(event, DoneEvent):
            saves_at_done.append(len(store.saves))

    assert saves_at_done == [1]


async def test_each_user_id_keeps_its_own_conversation(
    stub: StubLLMServer, make_client: MakeClient, mode: str, style: str
) -> None:
    client = make_client(style)
    stub.enqueue(*(reply.text(f"reply {n}") for n in range(4)))
    for user, text in [("u1", "I am Ana"), ("u2", "I am Bo"), ("u1", "Who am I?")]:
        await drive(client, mode, prompt=text, conversation_id=f"user:{user}")
    await drive(client, mode, prompt="And me?", conversation_id="user:u2")

    third, fourth = stub.requests[2].json, stub.requests[3].json
    assert user_texts(third) == ["I am Ana", "Who am I?"]
    assert user_texts(fourth) == ["I am Bo", "And me?"]


# --- history and id together ----------------------------------------------------------------------


async def test_history_wins_over_the_store_and_the_result_is_saved_under_the_id(
    stub: StubLLMServer, make_client: MakeClient, mode: str, style: str
) -> None:
    store = SpyStore()
    await store.inner.save("c1", [{"role": "user", "content": "stored, not used"}])
    history = [
        {"role": "user", "content": "The branch is release/1.4"},
        {"role": "assistant", "content": "Noted."},
    ]
    stub.enqueue(reply.text("Deployed."))
    result, _ = await drive(
        make_client(style, store=store),
        mode,
        prompt="Deploy it.",
        history=history,
        conversation_id="c1",
    )

    assert store.gets == []
    assert contents(stub.requests[0].json) == ["The branch is release/1.4", "Noted.", "Deploy it."]
    assert [i for i, _ in store.saves] == ["c1"]
    assert await store.inner.get("c1") == result.messages


async def test_an_empty_history_still_wins_over_the_store(
    stub: StubLLMServer, make_client: MakeClient, mode: str, style: str
) -> None:
    store = SpyStore()
    await store.inner.save("c1", [{"role": "user", "content": "stored"}])
    stub.enqueue(reply.text("ok"))
    await drive(
        make_client(style, store=store), mode, prompt="new", history=[], conversation_id="c1"
    )

    assert store.gets == []
    assert contents(stub.requests[0].json) == ["new"]


async def test_history_is_not_mutated_by_the_run(
    stub: StubLLMServer, make_client: MakeClient, mode: str, style: str
) -> None:
    history: list[JSONObject] = [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b"},
    ]
    stub.enqueue(reply.text("c"))
    result, _ = await drive(make_client(style), mode, prompt="next", history=history)

    assert len(history) == 2
    assert len(result.messages) == 4


# --- which exits save -----------------------------------------------------------------------------


async def test_the_store_is_saved_after_an_incomplete_exit(
    stub: StubLLMServer, make_client: MakeClient, mode: str, style: str, kit: Toolkit
) -> None:
    store = SpyStore()
    stub.enqueue(reply.tool_calls(reply.call("get_weather", {"city": "A"})))
    client = make_client(style, store=store, max_turns=1)
    result, _ = await drive(client, mode, kit, prompt="go", conversation_id="c1")

    assert result.status == "incomplete"
    assert await store.inner.get("c1") == result.messages
    assert len(result.messages) == 3


async def test_the_store_is_saved_after_a_pending_exit(
    stub: StubLLMServer, make_client: MakeClient, mode: str, style: str, kit: Toolkit
) -> None:
    store = SpyStore()
    stub.enqueue(reply.tool_calls(reply.call("ask_login")))
    result, _ = await drive(
        make_client(style, store=store), mode, kit, prompt="go", conversation_id="c1"
    )

    assert result.status == "pending"
    assert await store.inner.get("c1") == result.messages


async def test_nothing_is_saved_when_the_run_raises(
    stub: StubLLMServer, make_client: MakeClient, mode: str, style: str, kit: Toolkit
) -> None:
    store = SpyStore()
    stub.enqueue(
        reply.tool_calls(reply.call("get_weather", {"city": "A"})),
        reply.error(400, {"error": "bad request"}),
    )
    with pytest.raises(LLMError):
        await drive(make_client(style, store=store), mode, kit, prompt="go", conversation_id="c1")

    assert store.gets == ["c1"]
    assert store.saves == []


# --- the default store ----------------------------------------------------------------------------


async def test_default_stores_are_per_client(
    stub: StubLLMServer, make_client: MakeClient, mode: str, style: str
) -> None:
    one, two = make_client(style), make_client(style)
    stub.enqueue(reply.text("one"), reply.text("two"))
    await drive(one, mode, prompt="I am client one", conversation_id="c1")
    await drive(two, mode, prompt="Who spoke before?", conversation_id="c1")

    assert contents(stub.requests[1].json) == ["Who spoke before?"]
    assert isinstance(one.conversation_store, InMemoryConversationStore)
    assert one.conversation_store is not two.conversation_store
    assert await two.conversation_store.get("c1") is not None


def test_conversation_store_is_the_store_passed_in() -> None:
    from toolnexus import create_client

    store = SpyStore()
    client = create_client("http://127.0.0.1:9", model="m", api_key="k", store=store)

    assert client.conversation_store is store


# --- ask and memory -------------------------------------------------------------------------------


@pytest.mark.parametrize("streamed", [False, True])
async def test_ask_without_id_leaves_the_store_untouched(
    stub: StubLLMServer, make_client: MakeClient, style: str, streamed: bool
) -> None:
    store = SpyStore()
    client = make_client(style, store=store)
    stub.enqueue(reply.text("one"), reply.text("two"))
    deltas: list[str] = []
    on_text = deltas.append if streamed else None
    await client.ask("first", on_text=on_text)
    await client.ask("second", on_text=on_text)

    assert store.calls == 0
    assert contents(stub.requests[1].json) == ["second"]


@pytest.mark.parametrize("streamed", [False, True])
async def test_ask_with_id_loads_and_saves_the_conversation(
    stub: StubLLMServer, make_client: MakeClient, style: str, streamed: bool
) -> None:
    store = SpyStore()
    client = make_client(style, store=store)
    stub.enqueue(reply.text("Hi Ana."), reply.text("You are Ana."))
    deltas: list[str] = []
    on_text = deltas.append if streamed else None
    await client.ask("I am Ana", id="u1", on_text=on_text)
    result = await client.ask("Who am I?", id="u1", on_text=on_text)

    assert user_texts(stub.requests[1].json) == ["I am Ana", "Who am I?"]
    assert store.gets == ["u1", "u1"]
    assert await store.inner.get("u1") == result.messages


# --- conversation() -------------------------------------------------------------------------------


async def test_conversation_send_keeps_the_transcript_until_reset(
    stub: StubLLMServer, make_client: MakeClient, style: str
) -> None:
    store = SpyStore()
    client = make_client(style, store=store, system_prompt="Be brief.")
    convo = client.conversation()
    stub.enqueue(reply.text("Hi Ana."), reply.text("You are Ana."), reply.text("No idea."))
    first = await convo.send("I am Ana")
    second = await convo.send("Who am I?")
    assert convo.messages == second.messages
    convo.reset()
    assert convo.messages == []
    third = await convo.send("Who am I?")

    sent = [contents(r.json) for r in stub.requests]
    assert user_texts(stub.requests[1].json) == ["I am Ana", "Who am I?"]
    assert sent[1][: len(first.messages)] == [m["content"] for m in first.messages]
    assert user_texts(stub.requests[2].json) == ["Who am I?"]
    assert third.messages == convo.messages
    assert store.calls == 0
    for request in stub.requests:
        roles = [m["role"] for m in request.json["messages"]]
        assert roles.count("system") == (1 if style == "openai" else 0)


async def test_conversation_send_passes_on_event(
    stub: StubLLMServer, make_client: MakeClient, style: str
) -> None:
    seen: list[str] = []
    stub.enqueue(reply.text("hello"))
    await make_client(style).conversation().send("hi", on_event=lambda e: seen.append(e.type))

    assert seen == ["usage", "done"]
