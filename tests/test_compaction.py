"""The compactor: summarise the older part of a transcript, keep a tail that starts cleanly."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolnexus import FLUSH_REMINDER, SUMMARY_HEADER, ConfigError, compactor
from toolnexus.compaction import estimate_tokens, is_boundary
from toolnexus.testing import StubLLMServer, reply

from .running import MakeClient


def count_messages(messages: list[dict[str, Any]]) -> int:
    """Each message costs 10: easy arithmetic for the rules."""
    return 10 * len(messages)


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def openai_call(call_id: str) -> list[dict[str, Any]]:
    return [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": "result"},
    ]


def anthropic_call(call_id: str) -> list[dict[str, Any]]:
    return [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": call_id, "name": "f", "input": {}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": call_id, "content": "r"}],
        },
    ]


async def run_hook(hook: Any, messages: list[dict[str, Any]], style: str = "openai") -> Any:
    return await hook({"messages": messages, "tools": [], "model": "m", "turn": 0, "style": style})


async def test_under_the_limit_nothing_happens_and_summarize_is_not_called() -> None:
    calls: list[Any] = []
    hook = compactor(max_tokens=50, summarize=calls.append, count_tokens=count_messages)
    assert await run_hook(hook, [user("a"), assistant("b")]) is None
    assert calls == []


async def test_over_the_limit_keeps_the_system_message_and_the_largest_tail_within_budget() -> None:
    older: list[Any] = []

    def summarize(messages: list[dict[str, Any]]) -> str:
        older.append(messages)
        return "they talked"

    system = {"role": "system", "content": "be kind"}
    body = [user("1"), assistant("2"), user("3"), assistant("4"), user("5"), assistant("6")]
    hook = compactor(max_tokens=40, keep_tail=40, summarize=summarize, count_tokens=count_messages)
    out = (await run_hook(hook, [system, *body]))["messages"]
    # boundaries at body[2] (tail of 4 = 40) and body[4]; the earliest within 40 wins
    assert out == [
        system,
        {"role": "system", "content": f"{SUMMARY_HEADER}\nthey talked"},
        *body[2:],
    ]
    assert older == [body[:2]]


async def test_without_a_tail_within_budget_the_last_boundary_is_used() -> None:
    body = [user("1"), assistant("2"), user("3"), assistant("4"), assistant("5")]
    hook = compactor(
        max_tokens=10, keep_tail=10, summarize=lambda m: "s", count_tokens=count_messages
    )
    out = (await run_hook(hook, body))["messages"]
    assert out[1:] == body[2:]


async def test_with_no_boundary_the_tail_is_empty_and_the_summary_is_a_user_message() -> None:
    body = [user("only"), *openai_call("a"), *openai_call("b")]
    hook = compactor(
        max_tokens=10, summarize=lambda m: "s", count_tokens=count_messages, flush_to_memory=True
    )
    out = (await run_hook(hook, body))["messages"]
    assert out == [{"role": "user", "content": f"{SUMMARY_HEADER}\ns\n\n{FLUSH_REMINDER}"}]


async def test_gemini_summary_goes_first_and_function_responses_are_no_boundary() -> None:
    def content(role: str, *parts: dict[str, Any]) -> dict[str, Any]:
        return {"role": role, "parts": list(parts)}

    call = {"functionCall": {"name": "f", "args": {}}}
    response = {"functionResponse": {"name": "f", "response": {"result": "x" * 40}}}
    body = [
        content("user", {"text": "1"}),
        content("model", call),
        content("user", response),
        content("user", {"text": "next"}),
        content("model", {"text": "ok"}),
    ]
    assert not is_boundary(body[2])
    assert is_boundary(body[3])
    hook = compactor(
        max_tokens=10, keep_tail=20, summarize=lambda m: "sum", count_tokens=count_messages
    )
    out = (await run_hook(hook, body, "gemini"))["messages"]
    assert out == [
        content("user", {"text": f"{SUMMARY_HEADER}\nsum"}, {"text": "next"}),
        content("model", {"text": "ok"}),
    ]


async def test_anthropic_summary_goes_first_in_the_first_tail_message() -> None:
    body = [user("1"), *anthropic_call("a"), user("next"), assistant("ok")]
    hook = compactor(
        max_tokens=10,
        keep_tail=20,
        summarize=lambda m: "sum",
        count_tokens=count_messages,
        flush_to_memory=True,
    )
    out = (await run_hook(hook, body, "anthropic"))["messages"]
    assert out == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": f"{SUMMARY_HEADER}\nsum"},
                {"type": "text", "text": FLUSH_REMINDER},
                {"type": "text", "text": "next"},
            ],
        },
        assistant("ok"),
    ]


async def test_anthropic_block_content_keeps_its_blocks_after_the_summary() -> None:
    first = {
        "role": "user",
        "content": [{"type": "text", "text": "look"}, {"type": "image", "source": {}}],
    }
    body = [user("0"), assistant("x"), first, assistant("y")]
    hook = compactor(
        max_tokens=10, keep_tail=20, summarize=lambda m: "s", count_tokens=count_messages
    )
    out = (await run_hook(hook, body, "anthropic"))["messages"]
    assert out[0]["content"][1:] == first["content"]
    assert out[0]["content"][0]["text"].startswith(SUMMARY_HEADER)


async def test_an_async_summarize_is_awaited_and_the_input_is_never_mutated() -> None:
    async def summarize(messages: list[dict[str, Any]]) -> str:
        return "async summary"

    body = [user("1"), *anthropic_call("a"), user("2"), assistant("3")]
    before = copy.deepcopy(body)
    hook = compactor(max_tokens=10, keep_tail=20, summarize=summarize, count_tokens=count_messages)
    out = (await run_hook(hook, body, "anthropic"))["messages"]
    assert body == before
    assert "async summary" in out[0]["content"][0]["text"]


def test_the_default_measure_is_a_quarter_of_the_compact_json_rounded_up_per_message() -> None:
    assert estimate_tokens([{"role": "user", "content": "abc"}]) == 8  # 30 chars
    assert estimate_tokens([]) == 0


async def test_bad_options_and_bad_summaries_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="max_tokens"):
        compactor(max_tokens=0, summarize=lambda m: "")
    hook = compactor(max_tokens=1, summarize=lambda m: 42, count_tokens=count_messages)
    with pytest.raises(ConfigError, match="summarize must return a str"):
        await run_hook(hook, [user("a"), user("b")])


async def test_a_long_chat_stays_under_the_limit_through_the_loop(
    stub: StubLLMServer, make_client: MakeClient, style: str
) -> None:
    summaries: list[int] = []

    def summarize(messages: list[dict[str, Any]]) -> str:
        summaries.append(len(messages))
        return "earlier chat"

    hook = compactor(max_tokens=60, keep_tail=30, summarize=summarize, count_tokens=count_messages)
    client = make_client(style, hooks={"before_llm": hook})
    for i in range(8):
        stub.enqueue(reply.text(f"answer {i}"))
        await client.ask(f"question {i}", id="long")
    sent = [r.json["messages"] for r in stub.requests]
    assert all(count_messages(m) <= 60 for m in sent)
    assert summaries
    assert (
        sent[-1][-1]["content"] == "question 7"
        or sent[-1][-1]["content"][-1]["text"] == "question 7"
    )


# --- properties over random transcripts -----------------------------------------------------


@st.composite
def transcripts(draw: st.DrawFn, style: str) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if style == "openai" and draw(st.booleans()):
        messages.append({"role": "system", "content": "sys"})
    for n in range(draw(st.integers(1, 12))):
        messages.append(user("u" * draw(st.integers(0, 40))))
        for k in range(draw(st.integers(0, 3))):
            messages.extend(
                openai_call(f"c{n}_{k}") if style == "openai" else anthropic_call(f"c{n}_{k}")
            )
        messages.append(assistant("a" * draw(st.integers(0, 40))))
    return messages


def check_pairs(messages: list[dict[str, Any]], style: str) -> None:
    """Every tool result follows the assistant message that made its call."""
    announced: set[str] = set()
    for message in messages:
        if style == "openai":
            for call in message.get("tool_calls") or []:
                announced.add(call["id"])
            if message["role"] == "tool":
                assert message["tool_call_id"] in announced
        else:
            content = message.get("content")
            if not isinstance(content, list):
                continue
            for block in content:
                if block.get("type") == "tool_use":
                    announced.add(block["id"])
                if block.get("type") == "tool_result":
                    assert block["tool_use_id"] in announced


@pytest.mark.parametrize("style", ["openai", "anthropic"])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
async def test_compaction_never_separates_a_tool_result_from_its_call(
    style: str, data: st.DataObject
) -> None:
    messages = data.draw(transcripts(style))
    limit = data.draw(st.integers(20, 400))
    tail = data.draw(st.integers(0, limit))
    hook = compactor(max_tokens=limit, keep_tail=tail, summarize=lambda m: "s")
    out = await run_hook(hook, messages, style)
    if out is None:
        assert estimate_tokens(messages) <= limit
        return
    result = out["messages"]
    check_pairs(result, style)
    if messages[0]["role"] == "system":
        assert result[0] == messages[0]
    body = messages[1:] if messages[0]["role"] == "system" else messages
    boundaries = [i for i in range(1, len(body)) if is_boundary(body[i])]
    fits = [i for i in boundaries if estimate_tokens(body[i:]) <= tail]
    head = [messages[0]] if messages[0]["role"] == "system" else []
    note = f"{SUMMARY_HEADER}\ns"
    if style == "openai":
        added = {"role": "system", "content": note}
    else:  # the note becomes a block of the first tail message: this bounds what it adds
        added = {
            "role": "user",
            "content": [{"type": "text", "text": note}, {"type": "text", "text": ""}],
        }
    overhead = estimate_tokens([*head, added])
    if fits and tail + overhead <= limit:
        # a boundary allows it: the compacted transcript is within the limit
        assert estimate_tokens(result) <= limit
