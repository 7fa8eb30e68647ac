"""The ``gemini`` style: the Gemini API's ``generateContent`` (SPEC §11.2, A135, A136)."""

from __future__ import annotations

import time
from contextlib import aclosing
from typing import Any

import pytest

from toolnexus import (
    ConfigError,
    DoneEvent,
    Event,
    LLMError,
    RunResult,
    TextEvent,
    ToolCallDeltaEvent,
    Toolkit,
    ToolResult,
    create_client,
    create_toolkit,
)
from toolnexus.dialects import ArgumentsDelta, GeminiDialect, ToolUse
from toolnexus.testing import StubLLMServer, reply

from ..engine.support import get_weather

DIALECT = GeminiDialect()
SIGNATURE = "CiQB0e2KdGhvdWdodC1zaWduYXR1cmU="


@pytest.fixture
async def weather() -> Any:
    async with await create_toolkit(extra_tools=[get_weather], builtins=False) as tk:
        yield tk


def client(stub: StubLLMServer, **options: Any) -> Any:
    options.setdefault("api_key", "test-key")
    options.setdefault("retries", 0)
    return create_client(stub.url + "/v1beta", "gemini", model="gemini-test", **options)


def candidate(parts: list[dict[str, Any]] | None, finish: str | None = "STOP") -> dict[str, Any]:
    body: dict[str, Any] = {"index": 0}
    if parts is not None:
        body["content"] = {"role": "model", "parts": parts}
    if finish is not None:
        body["finishReason"] = finish
    return body


def answer(parts: list[dict[str, Any]] | None, finish: str | None = "STOP", **top: Any) -> Any:
    return {"candidates": [candidate(parts, finish)], **top}


async def streamed(c: Any, toolkit: Toolkit | None = None) -> tuple[RunResult, list[Event]]:
    events: list[Event] = []
    async with aclosing(c.stream("Weather?", toolkit)) as stream:
        async for event in stream:
            events.append(event)
            if isinstance(event, DoneEvent):
                return event.result, events
    raise AssertionError("no done event")


THOUGHT_AND_CALLS = [
    {"text": "Two cities.", "thought": True},
    {
        "functionCall": {"name": "get_weather", "args": {"city": "Oslo"}},
        "thoughtSignature": SIGNATURE,
    },
    {"functionCall": {"name": "get_weather", "args": {"city": "Lima"}}},
]
USAGE = {"promptTokenCount": 10, "candidatesTokenCount": 6, "thoughtsTokenCount": 30}


# --- A135 -------------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
async def test_a_two_turn_tool_run_sends_the_model_content_verbatim(
    stub: StubLLMServer, weather: Toolkit, stream: bool
) -> None:
    first = answer(THOUGHT_AND_CALLS, usageMetadata=USAGE)
    last = answer(
        [{"text": "Cold and warm."}],
        usageMetadata={"promptTokenCount": 50, "candidatesTokenCount": 4},
    )
    if stream:
        stub.enqueue(reply.raw_sse([first]), reply.raw_sse([last]))
    else:
        stub.enqueue(reply.raw_json(first), reply.raw_json(last))
    async with client(stub, system_prompt="Be brief.") as c:
        result = (await streamed(c, weather))[0] if stream else await c.run("Weather?", weather)

    method = "streamGenerateContent" if stream else "generateContent"
    assert [r.path for r in stub.requests] == [f"/v1beta/models/gemini-test:{method}"] * 2
    assert stub.requests[0].headers["x-goog-api-key"] == "test-key"
    sent = stub.requests[1].json
    assert sent["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert sent["tools"] == [
        {
            "functionDeclarations": [
                {
                    "name": "get_weather",
                    "description": "Current weather for a city.",
                    "parametersJsonSchema": get_weather.input_schema,
                }
            ]
        }
    ]
    assert sent["contents"] == [
        {"role": "user", "parts": [{"text": "Weather?"}]},
        {"role": "model", "parts": THOUGHT_AND_CALLS},
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "name": "get_weather",
                        "response": {"result": "sunny in Oslo"},
                    }
                },
                {
                    "functionResponse": {
                        "name": "get_weather",
                        "response": {"result": "sunny in Lima"},
                    }
                },
            ],
        },
    ]
    assert "model" not in sent
    assert [c.id for c in result.tool_calls] == ["call_0_0", "call_0_1"]
    assert (result.text, result.stop_reason) == ("Cold and warm.", "stop")
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (60, 40)


def test_results_name_their_call_and_carry_an_id_only_when_it_had_one() -> None:
    uses = [ToolUse("fc_1", "a", {}), ToolUse("call_2_1", "b", {}, named=False)]
    results = [ToolResult("fine"), ToolResult("broke", is_error=True)]
    (content,) = DIALECT.call_results(list(zip(uses, results, strict=True)))
    assert content == {
        "role": "user",
        "parts": [
            {"functionResponse": {"name": "a", "id": "fc_1", "response": {"result": "fine"}}},
            {"functionResponse": {"name": "b", "response": {"error": "broke"}}},
        ],
    }
    assert DIALECT.results_in(content) == [
        ("fc_1", ToolResult("fine")),
        ("call_0_1", ToolResult("broke", is_error=True)),
    ]


# --- A136 -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("finish", "stop"),
    [
        ("STOP", "stop"),
        ("MAX_TOKENS", "length"),
        *[
            (reason, "content_filter")
            for reason in (
                "SAFETY",
                "RECITATION",
                "BLOCKLIST",
                "PROHIBITED_CONTENT",
                "SPII",
                "IMAGE_SAFETY",
                "IMAGE_PROHIBITED_CONTENT",
                "IMAGE_RECITATION",
            )
        ],
        ("LANGUAGE", "LANGUAGE"),
        ("OTHER", "OTHER"),
    ],
)
def test_finish_reasons_map_to_stop_reasons(finish: str, stop: str) -> None:
    assert DIALECT.parse_response(answer([{"text": "x"}], finish), turn=0).stop_reason == stop


def test_stop_with_a_call_is_a_tool_turn() -> None:
    turn = DIALECT.parse_response(answer(THOUGHT_AND_CALLS), turn=2)
    assert turn.stop_reason == "tool_calls"
    assert [(u.id, u.named) for u in turn.tool_uses] == [("call_2_0", False), ("call_2_1", False)]
    assert turn.text == ""  # the thought is not the answer


@pytest.mark.parametrize(
    "finish",
    [
        "MALFORMED_FUNCTION_CALL",
        "UNEXPECTED_TOOL_CALL",
        "TOO_MANY_TOOL_CALLS",
        "MALFORMED_RESPONSE",
        "MISSING_THOUGHT_SIGNATURE",
    ],
)
async def test_an_unusable_finish_reason_raises_naming_it(stub: StubLLMServer, finish: str) -> None:
    stub.enqueue(reply.raw_json(answer(None, finish)))
    async with client(stub) as c:
        with pytest.raises(LLMError, match=finish):
            await c.run("hi")


@pytest.mark.parametrize("stream", [False, True])
async def test_a_blocked_prompt_is_done_with_content_filter(
    stub: StubLLMServer, stream: bool
) -> None:
    blocked = {
        "promptFeedback": {"blockReason": "SAFETY"},
        "usageMetadata": {"promptTokenCount": 4},
    }
    stub.enqueue(reply.raw_sse([blocked]) if stream else reply.raw_json(blocked))
    async with client(stub) as c:
        result = (await streamed(c))[0] if stream else await c.run("hi")
    assert (result.status, result.text, result.stop_reason) == ("done", "", "content_filter")
    assert result.messages == [
        {"role": "user", "parts": [{"text": "Weather?" if stream else "hi"}]}
    ]


async def test_a_candidate_without_content_adds_nothing(stub: StubLLMServer) -> None:
    stub.enqueue(reply.raw_json(answer(None, "SAFETY")))
    async with client(stub) as c:
        result = await c.run("hi")
    assert (len(result.messages), result.stop_reason) == (1, "content_filter")


@pytest.mark.parametrize(
    ("gemini", "google", "sent"),
    [("g-key", "x-key", "g-key"), (None, "x-key", "x-key")],
)
async def test_the_key_comes_from_gemini_then_google_api_key(
    stub: StubLLMServer,
    monkeypatch: pytest.MonkeyPatch,
    gemini: str | None,
    google: str | None,
    sent: str,
) -> None:
    for name, value in (("GEMINI_API_KEY", gemini), ("GOOGLE_API_KEY", google)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    monkeypatch.setenv("OPENAI_API_KEY", "never-sent")
    stub.enqueue(reply.text("ok"))
    async with create_client(stub.url, "gemini", model="m") as c:
        await c.run("hi")
    assert stub.requests[0].headers["x-goog-api-key"] == sent
    assert "never-sent" not in str(dict(stub.requests[0].headers))


async def test_no_key_names_both_variables_before_any_request(
    stub: StubLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    async with create_client(stub.url, "gemini", model="m") as c:
        with pytest.raises(ConfigError, match="GEMINI_API_KEY or GOOGLE_API_KEY"):
            await c.run("hi")
    assert stub.requests == []


async def test_a_429_with_retry_after_is_retried_after_it(stub: StubLLMServer) -> None:
    exhausted = {"error": {"code": 429, "message": "Quota", "status": "RESOURCE_EXHAUSTED"}}
    stub.enqueue(reply.error(429, exhausted, headers={"Retry-After": "0"}), reply.text("ok"))
    async with client(stub, retries=1, retry_base_ms=10_000) as c:
        started = time.perf_counter()
        result = await c.run("hi")
    assert result.text == "ok"
    assert time.perf_counter() - started < 2  # Retry-After: 0, not the 10 s backoff


def _retry_info(delay: str) -> dict[str, Any]:
    info = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}
    return {
        "error": {
            "code": 429,
            "message": "Quota",
            "status": "RESOURCE_EXHAUSTED",
            "details": [info],
        }
    }


@pytest.mark.parametrize("stream", [False, True])
async def test_retry_info_in_the_body_sets_the_wait(stub: StubLLMServer, stream: bool) -> None:
    stub.enqueue(reply.error(429, _retry_info("0.3s")), reply.text("ok"))
    async with client(stub, retries=1, retry_base_ms=10_000) as c:
        started = time.perf_counter()
        result = (await streamed(c))[0] if stream else await c.run("hi")
    elapsed = time.perf_counter() - started
    assert result.text == "ok"
    assert 0.3 <= elapsed < 2


def test_retry_info_is_read_and_bounded() -> None:
    import json

    assert DIALECT.retry_delay(json.dumps(_retry_info("45.8s"))) == 45.8
    assert DIALECT.retry_delay(json.dumps(_retry_info("soon"))) is None
    assert DIALECT.retry_delay("not json") is None


async def test_a_retry_info_above_the_cap_falls_back_to_backoff(stub: StubLLMServer) -> None:
    stub.enqueue(reply.error(503, _retry_info("3600s")), reply.text("ok"))
    async with client(stub, retries=1, retry_base_ms=0, max_retry_after_s=5) as c:
        started = time.perf_counter()
        assert (await c.run("hi")).text == "ok"
    assert time.perf_counter() - started < 2


# --- the stream -------------------------------------------------------------------------------


def test_a_stream_merges_text_and_carries_a_late_signature() -> None:
    parser = DIALECT.stream_parser(turn=0)
    items = []
    for parts, finish in (
        ([{"text": "Let me ", "thought": True}], None),
        ([{"text": "think.", "thought": True}], None),
        ([{"text": "Hello "}], None),
        ([{"text": "there."}], None),
        ([{"text": "", "thoughtSignature": SIGNATURE}], "STOP"),
    ):
        items += parser.feed(answer(parts, finish))
    turn = parser.finish()
    assert items == ["Hello ", "there."]
    assert turn.message == {
        "role": "model",
        "parts": [
            {"text": "Let me think.", "thought": True},
            {"text": "Hello there.", "thoughtSignature": SIGNATURE},
        ],
    }
    assert (turn.text, turn.stop_reason) == ("Hello there.", "stop")


def test_each_streamed_call_is_one_argument_delta() -> None:
    parser = DIALECT.stream_parser(turn=1)
    call = {"functionCall": {"id": "fc_7", "name": "f", "args": {"a": [1, "ü"]}}}
    assert parser.feed(answer([call, THOUGHT_AND_CALLS[2]])) == [
        ArgumentsDelta("fc_7", "f", 0, '{"a":[1,"ü"]}'),
        ArgumentsDelta("call_1_1", "get_weather", 1, '{"city":"Lima"}'),
    ]


async def test_a_stream_without_a_finish_reason_raises(stub: StubLLMServer) -> None:
    stub.enqueue(reply.raw_sse([answer([{"text": "Half"}], None)]))
    async with client(stub) as c:
        with pytest.raises(LLMError, match="stream ended early"):
            await streamed(c)


async def test_an_error_in_the_stream_raises(stub: StubLLMServer) -> None:
    error = {"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}}
    stub.enqueue(reply.raw_sse([answer([{"text": "Half"}], None), error]))
    async with client(stub) as c:
        with pytest.raises(LLMError, match="overloaded"):
            await streamed(c)


async def test_the_stub_streams_text_pieces_over_crlf(stub: StubLLMServer) -> None:
    stub.enqueue(reply.text("Hello there, friend.", usage=(3, 4)))
    async with client(stub) as c:
        result, events = await streamed(c)
    assert [e.delta for e in events if isinstance(e, TextEvent)] == ["Hello ", "there, ", "friend."]
    assert not any(isinstance(e, ToolCallDeltaEvent) for e in events)
    assert result.usage.total_tokens == 7
    assert stub.requests[0].path.endswith(":streamGenerateContent")
