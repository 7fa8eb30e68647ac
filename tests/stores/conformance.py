"""The behaviour every conversation store must have, as a reusable test suite.

A store's test module subclasses ``StoreConformance`` (or ``DurableStoreConformance`` for a
store whose data outlives the instance) in a ``Test…`` class and provides one fixture,
``make_store``: a zero-argument callable returning a new store instance. For a durable store
every instance it returns must share the same backing data (the same file, server or
database), so a second instance can read what the first saved. Stores that need cleanup may
offer ``async aclose()``; the suite calls it.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from toolnexus import ConversationStore, Request

StoreFactory = Callable[[], Any]

TRANSCRIPT: list[dict[str, Any]] = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "What's the weather in Chennai?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city":"Chennai"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "sunny in Chennai"},
    {"role": "assistant", "content": "It is sunny."},
]

UNICODE_TRANSCRIPT: list[dict[str, Any]] = [
    {"role": "user", "content": "Grüße aus Köln — 你好, мир, مرحبا, नमस्ते 👋🏽 e\u0301"},
    {"role": "assistant", "content": [{"type": "text", "text": '«ok» ✓ \t tab\nnewline "q"'}]},
]

VALUES_TRANSCRIPT: list[dict[str, Any]] = [
    {
        "role": "user",
        "content": "x",
        "null": None,
        "flags": [True, False],
        "numbers": [0, -7, 1.5, 12345678901234567890],
        "nested": {"a": {"b": [[], {}, ""]}},
    }
]


ODD_TEXT = "NUL \u0000 here, half an emoji \ud83d, a low half \ude00, both \ud83d\ude00 ok"
"""Text a run can produce that databases refuse as is (NUL in PostgreSQL, lone surrogates)."""

ODD_TRANSCRIPT: list[dict[str, Any]] = [
    {"role": "user", "content": ODD_TEXT},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_\u0000",
                "type": "function",
                "function": {"name": "cat", "arguments": '{"path":"\\u0000\\ud83d"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_\u0000", "content": "\u0000\ud800\udfff\udbff"},
    {"role": "assistant", "content": "\\u0000 is six characters here", ODD_TEXT: [ODD_TEXT]},
]

REQUEST = Request("req-1", "approval", "Deploy to prod?", data={"toolCallId": "c2", "env": "prod"})


async def _close(store: object) -> None:
    close = getattr(store, "aclose", None)
    if close is not None:
        await close()


class StoreConformance:
    """Behaviour shared by every store. Needs a ``make_store`` fixture."""

    @pytest.fixture
    async def store(self, make_store: StoreFactory) -> AsyncIterator[Any]:
        instance = make_store()
        yield instance
        await _close(instance)

    async def test_store_implements_the_protocol(self, store: Any) -> None:
        assert isinstance(store, ConversationStore)

    async def test_unknown_id_reads_as_none(self, store: Any) -> None:
        assert await store.get("never-saved") is None

    async def test_saved_transcript_reads_back_equal(self, store: Any) -> None:
        await store.save("c1", TRANSCRIPT)
        assert await store.get("c1") == TRANSCRIPT

    async def test_empty_transcript_reads_back_as_empty_list_not_none(self, store: Any) -> None:
        await store.save("empty", [])
        assert await store.get("empty") == []

    async def test_json_values_of_every_kind_round_trip(self, store: Any) -> None:
        await store.save("values", VALUES_TRANSCRIPT)
        assert await store.get("values") == VALUES_TRANSCRIPT

    async def test_unicode_round_trips_unchanged(self, store: Any) -> None:
        await store.save("unicode-ü-你好", UNICODE_TRANSCRIPT)
        assert await store.get("unicode-ü-你好") == UNICODE_TRANSCRIPT

    async def test_mutating_the_saved_list_afterwards_does_not_change_the_store(
        self, store: Any
    ) -> None:
        messages = copy.deepcopy(TRANSCRIPT)
        await store.save("c1", messages)
        messages.append({"role": "user", "content": "added later"})
        messages[1]["content"] = "changed"
        messages[2]["tool_calls"][0]["function"]["name"] = "changed"
        assert await store.get("c1") == TRANSCRIPT

    async def test_mutating_what_get_returned_does_not_change_the_store(self, store: Any) -> None:
        await store.save("c1", copy.deepcopy(TRANSCRIPT))
        got = await store.get("c1")
        assert got is not None
        got.append({"role": "user", "content": "added later"})
        got[1]["content"] = "changed"
        got[2]["tool_calls"][0]["id"] = "changed"
        assert await store.get("c1") == TRANSCRIPT

    async def test_each_get_returns_a_distinct_list(self, store: Any) -> None:
        await store.save("c1", TRANSCRIPT)
        first, second = await store.get("c1"), await store.get("c1")
        assert first == second
        assert first is not second

    async def test_overwrite_keeps_the_last_save(self, store: Any) -> None:
        await store.save("c1", TRANSCRIPT)
        await store.save("c1", [{"role": "user", "content": "second"}])
        await store.save("c1", [{"role": "user", "content": "third"}])
        assert await store.get("c1") == [{"role": "user", "content": "third"}]

    async def test_ids_are_independent_and_opaque(self, store: Any) -> None:
        ids = ["a", "A", "a ", "x'; DROP TABLE conversations; --", "名前/with/slashes", ""]
        for index, conversation_id in enumerate(ids):
            await store.save(conversation_id, [{"role": "user", "content": str(index)}])
        for index, conversation_id in enumerate(ids):
            assert await store.get(conversation_id) == [{"role": "user", "content": str(index)}]

    async def test_delete_forgets_only_that_id(self, store: Any) -> None:
        await store.save("gone", TRANSCRIPT)
        await store.save("kept", TRANSCRIPT)
        await store.delete("gone")
        assert await store.get("gone") is None
        assert await store.get("kept") == TRANSCRIPT

    async def test_delete_of_an_unknown_id_is_harmless(self, store: Any) -> None:
        await store.delete("never-saved")
        assert await store.get("never-saved") is None

    async def test_saving_after_delete_starts_afresh(self, store: Any) -> None:
        await store.save("c1", TRANSCRIPT)
        await store.delete("c1")
        await store.save("c1", [{"role": "user", "content": "new"}])
        assert await store.get("c1") == [{"role": "user", "content": "new"}]

    async def test_100_concurrent_coroutines_save_distinct_ids(self, store: Any) -> None:
        def transcript(n: int) -> list[dict[str, Any]]:
            return [{"role": "user", "content": f"message {n}"}, {"role": "assistant", "n": n}]

        async with asyncio.timeout(60):
            await asyncio.gather(*(store.save(f"conv-{n}", transcript(n)) for n in range(100)))
            got = await asyncio.gather(*(store.get(f"conv-{n}") for n in range(100)))
        assert got == [transcript(n) for n in range(100)]

    async def test_100_concurrent_saves_of_one_id_leave_one_complete_transcript(
        self, store: Any
    ) -> None:
        candidates = [[{"role": "user", "content": f"version {n}"}] * 3 for n in range(100)]
        async with asyncio.timeout(60):
            await asyncio.gather(*(store.save("shared", c) for c in candidates))
        assert await store.get("shared") in candidates

    # --- every transcript the library can produce ---------------------------------------

    async def test_nul_and_lone_surrogates_round_trip_exactly(self, store: Any) -> None:
        await store.save("odd", ODD_TRANSCRIPT)
        assert await store.get("odd") == ODD_TRANSCRIPT
        got = await store.get("odd")
        assert got is not None
        assert got[0]["content"] == ODD_TEXT  # the very same code points, not replacements

    async def test_an_odd_transcript_can_be_overwritten_by_a_plain_one_and_back(
        self, store: Any
    ) -> None:
        await store.save("c1", ODD_TRANSCRIPT)
        await store.save("c1", TRANSCRIPT)
        assert await store.get("c1") == TRANSCRIPT
        await store.save("c1", ODD_TRANSCRIPT)
        assert await store.get("c1") == ODD_TRANSCRIPT

    async def test_ids_holding_nul_or_a_lone_surrogate_are_distinct_valid_ids(
        self, store: Any
    ) -> None:
        ids = ["a\u0000b", "a", "\ud83d", "\ud83d\ude00", '\uffff"a\\u0000b"', "\uffff"]
        for index, conversation_id in enumerate(ids):
            await store.save(conversation_id, [{"role": "user", "content": str(index)}])
        for index, conversation_id in enumerate(ids):
            assert await store.get(conversation_id) == [{"role": "user", "content": str(index)}]
        await store.delete("a\u0000b")
        assert await store.get("a\u0000b") is None
        assert await store.get("a") == [{"role": "user", "content": "1"}]

    # --- the request a conversation waits for --------------------------------------------

    async def test_a_saved_request_reads_back_equal_and_none_clears_it(self, store: Any) -> None:
        assert await store.get_pending("c") is None
        await store.save_pending("c", REQUEST)
        assert await store.get_pending("c") == REQUEST
        await store.save_pending("c", None)
        assert await store.get_pending("c") is None
        await store.save_pending("c", None)  # clearing twice is harmless

    async def test_a_stored_request_is_a_copy(self, store: Any) -> None:
        given = Request("r", "approval", "ok?", data={"n": 1})
        await store.save_pending("c", given)
        assert given.data is not None
        given.data["n"] = 2
        got = await store.get_pending("c")
        assert got.data == {"n": 1}
        got.data["n"] = 3
        assert (await store.get_pending("c")).data == {"n": 1}

    async def test_a_later_request_replaces_the_earlier_one(self, store: Any) -> None:
        await store.save_pending("c", REQUEST)
        later = Request("req-2", "input", "Which region?", url="https://x", expires_at="2030")
        await store.save_pending("c", later)
        assert await store.get_pending("c") == later
        assert await store.claim_pending("c", REQUEST.id) is None
        assert await store.claim_pending("c", "req-2") == later

    async def test_a_request_with_odd_text_round_trips(self, store: Any) -> None:
        odd = Request("req-\u0000", "approval", ODD_TEXT, data={ODD_TEXT: ODD_TEXT})
        await store.save_pending("odd\u0000\ud83d", odd)
        assert await store.get_pending("odd\u0000\ud83d") == odd
        assert await store.claim_pending("odd\u0000\ud83d", odd.id) == odd

    async def test_claim_takes_only_the_named_request_once(self, store: Any) -> None:
        await store.save_pending("c", REQUEST)
        assert await store.claim_pending("c", "another") is None
        assert await store.claim_pending("missing", REQUEST.id) is None
        assert await store.claim_pending("c", REQUEST.id) == REQUEST
        assert await store.claim_pending("c", REQUEST.id) is None
        assert await store.get_pending("c") is None

    async def test_of_many_concurrent_claims_exactly_one_gets_the_request(self, store: Any) -> None:
        await store.save_pending("c", REQUEST)
        async with asyncio.timeout(30):
            claims = await asyncio.gather(*(store.claim_pending("c", REQUEST.id) for _ in range(8)))
        assert [c for c in claims if c is not None] == [REQUEST]

    async def test_delete_forgets_the_pending_request_too(self, store: Any) -> None:
        await store.save("c", [{"role": "user", "content": "hi"}])
        await store.save_pending("c", REQUEST)
        await store.save_pending("other", REQUEST)
        await store.delete("c")
        assert await store.get("c") is None
        assert await store.get_pending("c") is None
        assert await store.get_pending("other") == REQUEST

    async def test_a_pending_request_and_a_transcript_do_not_clash(self, store: Any) -> None:
        await store.save_pending("c", REQUEST)
        await store.save("c", TRANSCRIPT)
        assert await store.get_pending("c") == REQUEST
        assert await store.get("c") == TRANSCRIPT
        assert await store.get("pending:c") is None


class DurableStoreConformance(StoreConformance):
    """Adds what a store whose data outlives the instance must do."""

    async def test_a_new_instance_reads_back_identically(
        self, store: Any, make_store: StoreFactory
    ) -> None:
        await store.save("c1", TRANSCRIPT)
        await store.save("c2", UNICODE_TRANSCRIPT)
        await _close(store)
        reopened = make_store()
        try:
            assert await reopened.get("c1") == TRANSCRIPT
            assert await reopened.get("c2") == UNICODE_TRANSCRIPT
            assert await reopened.get("c3") is None
        finally:
            await _close(reopened)

    async def test_the_last_save_wins_across_instances(self, make_store: StoreFactory) -> None:
        first, second, reader = make_store(), make_store(), make_store()
        try:
            await first.save("c1", [{"role": "user", "content": "first"}])
            await second.save("c1", [{"role": "user", "content": "second"}])
            assert await reader.get("c1") == [{"role": "user", "content": "second"}]
            await second.delete("c1")
            assert await first.get("c1") is None
        finally:
            for instance in (first, second, reader):
                await _close(instance)

    async def test_a_new_instance_reads_and_claims_a_saved_request(
        self, store: Any, make_store: StoreFactory
    ) -> None:
        await store.save_pending("c", REQUEST)
        await _close(store)
        first, second = make_store(), make_store()
        try:
            assert await first.get_pending("c") == REQUEST
            claims = await asyncio.gather(
                first.claim_pending("c", REQUEST.id), second.claim_pending("c", REQUEST.id)
            )
            assert [c for c in claims if c is not None] == [REQUEST]
        finally:
            await _close(first)
            await _close(second)
