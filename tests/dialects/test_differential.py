"""The library against the official SDKs, on the same recorded bytes.

Every fixture in ``fixtures/differential/`` is served unchanged by ``StubLLMServer`` to the
library (``run`` for the JSON body, ``stream`` for the SSE body) and, when installed, to the
official SDK: ``openai`` (chat ``create`` and its ``stream`` helper; for ``responses_*``,
``responses.create`` and ``responses.stream``, whose ``ResponseStreamState`` accumulates the
events), ``anthropic`` (``create``, ``stream``) and ``google-genai`` (``generate_content``,
``generate_content_stream``: ``GenerateContentResponse`` objects). Compared: text, tool calls,
usage, stop reason (and, for Anthropic, the content blocks kept).

Deliberate differences (the SDK is expected to read these otherwise):

- ``openai_early_end``, ``anthropic_early_end``: a body cut before its end marker. The SDKs
  return the half-assembled reply (with a truncated tool call); the library raises ``LLMError``
  so no half-announced call is ever executed.
- ``openai_call_without_id``: the library gives an id-less call ``call_<turn>_<index>`` so its
  result can be paired with it; the SDK leaves the id empty. (Gemini calls have no id as a
  rule: there the SDK's ``None`` is read as the same made-up id, so the rest is compared.)
- ``gemini_malformed_function_call``: the SDK returns the reply with its finish reason; the
  library raises ``LLMError`` naming it (SPEC §11.2).
- ``gemini_early_end``: the SDK yields the chunks it got; the library raises (no
  ``finishReason`` arrived), as for the other styles.
- The SDK stream helpers of ``responses`` raise when no ``response.completed`` arrives (an early
  end, an ``error`` event): read as refusals, as the library's. An ``incomplete`` stream is read
  from its ``response.incomplete`` event.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from toolnexus import create_client
from toolnexus.testing import StubLLMServer, reply

from .differential import (
    FAILED,
    MODES,
    SDK_PACKAGE,
    SDK_READERS,
    Outcome,
    cases,
    has_mode,
    library_outcome,
    library_result,
    sdk_blocks,
    sdk_outcome,
    style_of,
)

WEATHER = ("get_weather", '{"city":"Paris","unit":"c"}')
EXPECTED: dict[str, Outcome] = {
    "openai_text": Outcome("The capital of France is Paris.", (), (14, 7), "stop"),
    "openai_tool_call": Outcome("", (("call_Wx7kP2", *WEATHER),), (82, 18), "tool_calls"),
    "openai_parallel_tools": Outcome(
        "",
        (
            ("call_A1", "get_weather", '{"city":"Oslo"}'),
            ("call_B2", "get_time", '{"tz":"Europe/Oslo"}'),
        ),
        (95, 41),
        "tool_calls",
    ),
    "openai_text_and_tool": Outcome(
        "Let me look that up.", (("call_Q9", "search", '{"q":"ñandú"}'),), (40, 22), "tool_calls"
    ),
    "openai_refusal": Outcome("I'm sorry, but I can't help with that.", (), (30, 9), "refusal"),
    "openai_length": Outcome("Once upon a time there was", (), (12, 5), "length"),
    "openai_content_filter": Outcome("Here is how", (), (21, 3), "content_filter"),
    "openai_n2": Outcome("Red is warm.", (), (10, 8), "stop"),
    "openai_object_arguments": Outcome(
        "", (("call_obj1", "get_weather", '{"city":"Lima","days":2}'),), (50, 12), "tool_calls"
    ),
    "openai_reasoning_content": Outcome("Hello! How can I help?", (), (9, 31), "stop"),
    "openai_openrouter_no_done": Outcome("Sure, here you go.", (), (18, 6), "stop"),
    "openai_error_chunk": FAILED,
    "openai_early_end": FAILED,
    "openai_call_without_id": Outcome("", (("call_0_0", "get_time", "{}"),), (7, 3), "tool_calls"),
    "anthropic_text": Outcome("Paris is the capital of France.", (), (15, 11), "stop"),
    "anthropic_tool_use": Outcome(
        "I'll check the weather.", (("toolu_01A", *WEATHER),), (380, 74), "tool_calls"
    ),
    "anthropic_thinking_tool_use": Outcome(
        "", (("toolu_01T", "get_weather", '{"city":"Oslo"}'),), (512, 96), "tool_calls"
    ),
    "anthropic_redacted_thinking": Outcome("Here is my answer.", (), (60, 40), "stop"),
    "anthropic_web_search": Outcome("Let me search.It is sunny, 21°C.", (), (2100, 180), "stop"),
    "anthropic_max_tokens": Outcome("The history of Rome begins", (), (20, 5), "length"),
    "anthropic_refusal": Outcome("I can", (), (25, 3), "refusal"),
    "anthropic_pause_turn": Outcome("", (), (900, 60), "pause_turn"),
    "anthropic_empty": Outcome("", (), (30, 2), "stop"),
    "anthropic_stop_sequence": Outcome("1, 2, 3, ", (), (12, 8), "stop"),
    "anthropic_error_event": FAILED,
    "anthropic_early_end": FAILED,
    "anthropic_tool_use_extra_fields": Outcome(
        "", (("toolu_01X", "get_time", '{"tz":"UTC"}'),), (70, 20), "tool_calls"
    ),
    "anthropic_parallel_tools": Outcome(
        "",
        (("toolu_P1", "get_weather", '{"city":"Lima"}'), ("toolu_P2", "get_time", "{}")),
        (300, 55),
        "tool_calls",
    ),
    "responses_text": Outcome("The capital of France is Paris.", (), (14, 7), "stop"),
    "responses_tool_call": Outcome("", (("call_Wx7kP2", *WEATHER),), (82, 18), "tool_calls"),
    "responses_parallel_tools": Outcome(
        "Let me look that up.",
        (
            ("call_A1", "get_weather", '{"city":"Oslo"}'),
            ("call_B2", "get_time", '{"tz":"Europe/Oslo"}'),
        ),
        (95, 41),
        "tool_calls",
    ),
    "responses_max_output_tokens": Outcome("Once upon a time there was", (), (12, 5), "length"),
    "responses_content_filter": Outcome("Here is how", (), (21, 3), "content_filter"),
    "responses_refusal": Outcome("I'm sorry, but I can't help with that.", (), (30, 9), "refusal"),
    "responses_failed": FAILED,
    "responses_early_end": FAILED,
    "responses_error_event": FAILED,
    "gemini_text": Outcome("Paris is the capital of France.", (), (8, 7), "stop"),
    "gemini_tool_call": Outcome("", (("call_0_0", *WEATHER),), (82, 58), "tool_calls"),
    "gemini_parallel_tools": Outcome(
        "Let me look that up.",
        (
            ("fc_A1", "get_weather", '{"city":"Oslo"}'),
            ("fc_B2", "get_time", '{"tz":"Europe/Oslo"}'),
        ),
        (95, 41),
        "tool_calls",
    ),
    "gemini_max_tokens": Outcome("Once upon a time there was", (), (12, 5), "length"),
    "gemini_safety": Outcome("", (), (21, 0), "content_filter"),
    "gemini_blocked_prompt": Outcome("", (), (9, 0), "content_filter"),
    "gemini_malformed_function_call": FAILED,
    "gemini_signature_on_empty_text": Outcome(
        "Hello! How can I help you today?", (), (6, 40), "stop"
    ),
    "gemini_early_end": FAILED,
    "gemini_error_chunk": FAILED,
}
DIFFERENCES = {
    ("openai_early_end", "sse"): "the SDK returns the cut reply; the library raises",
    ("anthropic_early_end", "sse"): "the SDK returns the cut reply; the library raises",
    ("openai_call_without_id", "json"): "the library names id-less calls",
    ("openai_call_without_id", "sse"): "the library names id-less calls",
    ("gemini_malformed_function_call", "json"): "the SDK returns the reply; the library raises",
    ("gemini_malformed_function_call", "sse"): "the SDK returns the reply; the library raises",
    ("gemini_early_end", "sse"): "the SDK returns the chunks it got; the library raises",
}
CASE_MODES = [(case, mode) for case in cases() for mode in MODES if has_mode(case, mode)]
PAIRED = [
    case
    for case in cases()
    if all(has_mode(case, mode) for mode in MODES) and EXPECTED[case] != FAILED
]


@pytest.fixture(scope="module")
def server() -> Iterator[StubLLMServer]:
    with StubLLMServer() as stub:
        yield stub


def test_every_fixture_has_an_expected_reading() -> None:
    assert sorted(EXPECTED) == cases()
    assert {case for case, _ in DIFFERENCES} <= set(EXPECTED)


@pytest.mark.parametrize(("case", "mode"), CASE_MODES)
async def test_library_reads_the_reply_as_documented(
    server: StubLLMServer, case: str, mode: str
) -> None:
    assert library_outcome(await library_result(server, case, mode)) == EXPECTED[case]


def _assistant_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The assistant messages, without the ``null``/``[]`` placeholders only a JSON body has."""
    return [
        {k: v for k, v in m.items() if k == "content" or v not in (None, [])}
        for m in messages
        if m.get("role") == "assistant"
    ]


@pytest.mark.parametrize("case", PAIRED)
async def test_json_and_stream_keep_the_same_assistant_message(
    server: StubLLMServer, case: str
) -> None:
    plain = await library_result(server, case, "json")
    streamed = await library_result(server, case, "sse")
    assert plain is not None
    assert streamed is not None
    assert _assistant_messages(streamed.messages) == _assistant_messages(plain.messages)
    if style_of(case) != "openai":  # no placeholders there: the very same transcript
        assert streamed.messages == plain.messages


@pytest.mark.filterwarnings("ignore::UserWarning")  # pydantic, on object `arguments`
@pytest.mark.filterwarnings(  # google-genai subclasses aiohttp's ClientSession
    "ignore:Inheritance class AiohttpClientSession:DeprecationWarning"
)
@pytest.mark.parametrize(("case", "mode"), CASE_MODES)
async def test_the_official_sdk_reads_the_same_bytes_alike(
    server: StubLLMServer, case: str, mode: str
) -> None:
    pytest.importorskip(SDK_PACKAGE[style_of(case)])
    ours = library_outcome(await library_result(server, case, mode))
    theirs = await sdk_outcome(server, case, mode)
    if (case, mode) in DIFFERENCES:
        assert theirs != ours, f"no longer a difference: {DIFFERENCES[case, mode]}"
    else:
        assert theirs == ours


@pytest.mark.parametrize(
    ("case", "mode"),
    [(c, m) for c, m in CASE_MODES if style_of(c) == "anthropic" and EXPECTED[c] != FAILED],
)
async def test_anthropic_content_blocks_are_those_the_sdk_keeps(
    server: StubLLMServer, case: str, mode: str
) -> None:
    pytest.importorskip("anthropic")
    result = await library_result(server, case, mode)
    assert result is not None
    kept = [m["content"] for m in result.messages if m.get("role") == "assistant"]
    assert (kept[0] if kept else []) == await sdk_blocks(server, case, mode)


STUB_REPLIES = {
    "text": (reply.text("Hello there, friend.", usage=(7, 3)), "Hello there, friend."),
    "tools": (
        reply.tool_calls(
            reply.call("get_weather", {"city": "Oslo"}),
            reply.call("get_time", {"tz": "Europe/Oslo"}),
            text="Checking.",
            usage=(10, 4),
        ),
        "Checking.",
    ),
}


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.filterwarnings("ignore:Inheritance class AiohttpClientSession:DeprecationWarning")
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", sorted(STUB_REPLIES))
@pytest.mark.parametrize("style", ["openai", "anthropic", "responses", "gemini"])
async def test_the_official_sdk_reads_what_the_stub_renders(
    server: StubLLMServer, style: str, kind: str, mode: str
) -> None:
    """``StubLLMServer`` speaks each style as its SDK expects: the SDK and the library read
    the same scripted reply alike."""
    pytest.importorskip(SDK_PACKAGE[style])
    scripted, text = STUB_REPLIES[kind]
    server.reset()  # default call ids count from 1 on a fresh server
    server.enqueue(scripted)
    theirs = await SDK_READERS[style](server.url, mode)
    assert theirs.text == text
    if kind == "tools":
        assert [name for _, name, _ in theirs.calls] == ["get_weather", "get_time"]
        assert theirs.stop == "tool_calls"
    server.reset()  # the same default call ids again
    server.enqueue(scripted)
    client = create_client(server.url, style, model="test-model", api_key="test-key", max_turns=1)
    async with client:
        if mode == "json":
            result = await client.run("hi")
        else:
            result = [e async for e in client.stream("hi")][-1].result  # type: ignore[union-attr]
    ours = library_outcome(result)
    if kind == "tools":  # a one-turn run stops before the calls' answer: compare the calls
        ours = Outcome(text, ours.calls, ours.usage, "tool_calls")
    assert ours == theirs
