"""``Client.translate``: one OpenAI-shaped request to either style, answered in OpenAI terms."""

from __future__ import annotations

from typing import Any

import pytest

from toolnexus import CancelToken, ConfigError, LLMError, RunCancelled, Toolkit, tool
from toolnexus.dialects.translate import build_request, read_reply
from toolnexus.testing import StubLLMServer, reply
from toolnexus.types import Usage

from .running import MakeClient

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}

CONVERSATION: list[dict[str, Any]] = [
    {"role": "system", "content": "Be brief."},
    {"role": "developer", "content": [{"type": "text", "text": "Use "}, {"text": "tools."}]},
    {"role": "user", "content": [{"type": "text", "text": "Weather in "}, {"text": "Pune"}]},
    {
        "role": "assistant",
        "content": "Checking.",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Pune"}'},
            },
            {
                "id": "c2",
                "type": "function",
                "function": {"name": "get_weather", "arguments": {"city": "Goa"}},
            },
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
    {"role": "tool", "tool_call_id": "c2", "content": "rainy"},
    {"role": "user", "content": "Thanks"},
]


def test_anthropic_inbound_mapping_converts_every_openai_shape() -> None:
    body = build_request(
        "anthropic",
        CONVERSATION,
        [WEATHER],
        model="claude",
        system=None,
        default_system="client prompt",
        tool_choice={"type": "function", "function": {"name": "get_weather"}},
        max_tokens=0,
    )
    assert body == {
        "model": "claude",
        "max_tokens": 4096,
        "system": "Be brief.\n\nUse tools.",
        "messages": [
            {"role": "user", "content": "Weather in Pune"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Checking."},
                    {
                        "type": "tool_use",
                        "id": "c1",
                        "name": "get_weather",
                        "input": {"city": "Pune"},
                    },
                    {
                        "type": "tool_use",
                        "id": "c2",
                        "name": "get_weather",
                        "input": {"city": "Goa"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "c1", "content": "sunny"},
                    {"type": "tool_result", "tool_use_id": "c2", "content": "rainy"},
                ],
            },
            {"role": "user", "content": "Thanks"},
        ],
        "tools": [
            {
                "name": "get_weather",
                "description": "Weather for a city",
                "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
            }
        ],
        "tool_choice": {"type": "tool", "name": "get_weather"},
    }


@pytest.mark.parametrize(
    ("choice", "expected"),
    [("required", {"type": "any"}), ("none", {"type": "none"}), ("auto", None), (None, None)],
)
def test_anthropic_tool_choice_mapping(choice: object, expected: object) -> None:
    body = build_request(
        "anthropic",
        [{"role": "user", "content": "hi"}],
        [WEATHER],
        model="m",
        system=None,
        default_system="",
        tool_choice=choice,
        max_tokens=100,
    )
    assert body.get("tool_choice") == expected
    assert body["max_tokens"] == 100


@pytest.mark.parametrize("style", ["openai", "anthropic"])
def test_system_argument_wins_then_inline_system_then_the_client_prompt(style: str) -> None:
    def system_of(messages: list[dict[str, Any]], system: str | None) -> object:
        body = build_request(
            style,
            messages,
            [],
            model="m",
            system=system,
            default_system="client",
            tool_choice=None,
            max_tokens=0,
        )
        if style == "anthropic":
            return body.get("system")
        return [m["content"] for m in body["messages"] if m["role"] in ("system", "developer")]

    with_inline = [{"role": "system", "content": "inline"}, {"role": "user", "content": "hi"}]
    plain = [{"role": "user", "content": "hi"}]
    if style == "anthropic":
        assert system_of(with_inline, "given") == "given"
        assert system_of(with_inline, None) == "inline"
        assert system_of(plain, None) == "client"
    else:
        assert system_of(with_inline, "given") == ["given"]
        assert system_of(with_inline, None) == ["inline"]
        assert system_of(plain, None) == ["client"]


def test_openai_messages_and_tool_choice_are_sent_as_given() -> None:
    body = build_request(
        "openai",
        CONVERSATION,
        [WEATHER],
        model="gpt",
        system=None,
        default_system="x",
        tool_choice="required",
        max_tokens=50,
    )
    assert body == {
        "model": "gpt",
        "messages": CONVERSATION,
        "tools": [WEATHER],
        "tool_choice": "required",
        "max_tokens": 50,
    }


@pytest.mark.parametrize(
    ("style", "reason", "expected"),
    [
        ("openai", "length", "length"),
        ("openai", "content_filter", "content_filter"),
        ("openai", "stop", "stop"),
        ("anthropic", "max_tokens", "length"),
        ("anthropic", "refusal", "content_filter"),
        ("anthropic", "end_turn", "stop"),
    ],
)
def test_finish_reason_mapping(style: str, reason: str, expected: str) -> None:
    if style == "openai":
        raw = {"choices": [{"message": {"content": "x"}, "finish_reason": reason}]}
    else:
        raw = {"content": [{"type": "text", "text": "x"}], "stop_reason": reason}
    assert read_reply(style, raw, usage=Usage(), request_model="m").finish_reason == expected


def test_outbound_arguments_are_compact_json_and_unparseable_text_passes_through() -> None:
    raw = {
        "model": "served-model",
        "choices": [
            {
                "message": {
                    "content": None,
                    "tool_calls": [
                        {"id": "a", "function": {"name": "f", "arguments": '{ "x" : 1 }'}},
                        {"id": "b", "function": {"name": "g", "arguments": "not json"}},
                        {"id": "c", "function": {"name": "h", "arguments": {"y": "é"}}},
                    ],
                },
                "finish_reason": "stop",
            }
        ],
    }
    result = read_reply("openai", raw, usage=Usage(1, 2, 3), request_model="m")
    assert [(c.id, c.name, c.arguments) for c in result.tool_calls] == [
        ("a", "f", '{"x":1}'),
        ("b", "g", "not json"),
        ("c", "h", '{"y":"é"}'),
    ]
    assert result.finish_reason == "tool_calls"
    assert result.text == ""
    assert result.model == "served-model"
    assert result.raw is raw


async def test_translate_to_anthropic_makes_exactly_one_request_and_reads_the_reply(
    stub: StubLLMServer, make_client: MakeClient
) -> None:
    stub.enqueue(
        reply.tool_calls(
            reply.call("get_weather", {"city": "Delhi"}), text="Let me check", usage=(9, 4)
        )
    )
    metrics: list[dict[str, Any]] = []
    hooks_seen: list[str] = []
    client = make_client(
        "anthropic",
        on_metric=metrics.append,
        request_params={"temperature": 0},
        hooks={
            "before_llm": lambda p: hooks_seen.append(f"before_llm:{p['turn']}"),
            "after_llm": lambda p: hooks_seen.append(f"after_llm:{p['turn']}"),
            "before_tool": lambda p: hooks_seen.append("before_tool"),
            "after_tool": lambda p: hooks_seen.append("after_tool"),
        },
    )

    @tool
    def get_weather(city: str) -> str:
        """Weather for a city."""
        raise AssertionError("translate never runs a tool")

    result = await client.translate(CONVERSATION, toolkit=Toolkit([get_weather]), tools=[WEATHER])
    assert len(stub.requests) == 1
    sent = stub.requests[0].json
    assert sent["temperature"] == 0
    assert [t["name"] for t in sent["tools"]] == ["get_weather", "get_weather"]
    assert sent["messages"][2]["role"] == "user"
    assert [b["type"] for b in sent["messages"][2]["content"]] == ["tool_result", "tool_result"]
    assert result.text == "Let me check"
    assert result.finish_reason == "tool_calls"
    assert result.tool_calls[0].name == "get_weather"
    assert result.tool_calls[0].arguments == '{"city":"Delhi"}'
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (9, 4)
    assert hooks_seen == ["before_llm:0", "after_llm:0"]
    assert [m["event"] for m in metrics] == ["llm"]


async def test_translate_on_an_openai_client_answers_text(
    stub: StubLLMServer, make_client: MakeClient
) -> None:
    stub.enqueue(reply.text("plain answer", usage=(3, 2)))
    client = make_client("openai")
    result = await client.translate([{"role": "user", "content": "hi"}], tool_choice="auto")
    assert result.text == "plain answer"
    assert result.finish_reason == "stop"
    assert result.tool_calls == []
    assert stub.requests[0].json["tool_choice"] == "auto"
    assert result.model == "test-model"


@pytest.mark.parametrize("style", ["responses", "gemini"])
async def test_translate_stays_between_openai_and_anthropic(
    stub: StubLLMServer, make_client: MakeClient, style: str
) -> None:
    client = make_client(style)
    with pytest.raises(ConfigError, match="'openai' or 'anthropic'"):
        await client.translate([{"role": "user", "content": "hi"}])
    assert stub.requests == []


async def test_a_pre_cancelled_translate_sends_nothing(
    stub: StubLLMServer, make_client: MakeClient, style: str
) -> None:
    token = CancelToken()
    token.cancel()
    client = make_client(style)
    with pytest.raises(RunCancelled):
        await client.translate([{"role": "user", "content": "hi"}], cancel=token)
    assert stub.requests == []


async def test_a_failed_translate_raises_llm_error(
    stub: StubLLMServer, make_client: MakeClient, style: str
) -> None:
    stub.enqueue(reply.error(400, "bad"))
    client = make_client(style)
    with pytest.raises(LLMError) as caught:
        await client.translate([{"role": "user", "content": "hi"}])
    assert caught.value.status == 400
