"""Core data types: ToolResult, Tool, sanitize, Usage, RunResult."""

from __future__ import annotations

import dataclasses
import json

import pytest

from toolnexus import (
    Request,
    RunResult,
    Tool,
    ToolCall,
    ToolContext,
    ToolResult,
    Usage,
    pending,
    sanitize,
)


async def _noop(args: dict[str, object], ctx: ToolContext | None) -> ToolResult:
    return ToolResult("ok")


def _tool(name: str) -> Tool:
    return Tool(
        name=name,
        description="d",
        input_schema={"type": "object", "properties": {}},
        source="custom",
        execute=_noop,
    )


def test_tool_result_defaults_to_success_without_metadata() -> None:
    result = ToolResult("x")
    assert result.output == "x"
    assert result.is_error is False
    assert result.metadata is None


def test_tool_context_fields_default_to_none() -> None:
    ctx = ToolContext()
    assert (ctx.cancel, ctx.timeout, ctx.answer) == (None, None, None)


@pytest.mark.parametrize("name", ["a b", "", "a.b", "tool/x", "ünï", "a\n"])
def test_tool_with_an_invalid_name_raises_value_error(name: str) -> None:
    with pytest.raises(ValueError, match="invalid tool name"):
        _tool(name)


@pytest.mark.parametrize("name", ["a", "get_weather", "my-srv_echo", "A9", "-_-"])
def test_tool_accepts_letters_digits_underscore_and_dash(name: str) -> None:
    assert _tool(name).name == name


def test_tool_is_immutable() -> None:
    t = _tool("a")
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.name = "b"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("my server.v2/x", "my_server_v2_x"),
        ("a-b_C9", "a-b_C9"),
        ("", ""),
        ("ü:é", "___"),
        ("tab\there", "tab_here"),
    ],
)
def test_sanitize_replaces_only_disallowed_characters(raw: str, expected: str) -> None:
    assert sanitize(raw) == expected


def test_sanitized_names_are_valid_tool_names() -> None:
    assert _tool(sanitize("my server.v2/x")).name == "my_server_v2_x"


def test_usage_defaults_to_zero_and_adds_field_by_field() -> None:
    assert Usage() == Usage(0, 0, 0)
    total = Usage(10, 6, 16) + Usage(1, 2, 3)
    assert total == Usage(prompt_tokens=11, completion_tokens=8, total_tokens=19)


def test_usage_addition_leaves_its_operands_unchanged() -> None:
    a, b = Usage(1, 1, 2), Usage(2, 2, 4)
    _ = a + b
    assert (a, b) == (Usage(1, 1, 2), Usage(2, 2, 4))


def test_usage_to_dict_uses_camel_case() -> None:
    assert Usage(10, 6, 16).to_dict() == {
        "promptTokens": 10,
        "completionTokens": 6,
        "totalTokens": 16,
    }


def _result(**overrides: object) -> RunResult:
    fields: dict[str, object] = {
        "text": "It is sunny.",
        "messages": [{"role": "user", "content": "weather?"}],
        "tool_calls": [
            ToolCall(
                id="call_1",
                name="get_weather",
                args={"city": "Chennai"},
                output="sunny",
                is_error=False,
                metadata={"status": 200},
            )
        ],
        "tool_call_count": 1,
        "turns": 2,
        "usage": Usage(10, 6, 16),
        "model": "test-model",
        "status": "done",
    }
    fields.update(overrides)
    return RunResult(**fields)  # type: ignore[arg-type]


def test_run_result_to_dict_has_exactly_the_camel_case_wire_keys() -> None:
    assert _result().to_dict() == {
        "text": "It is sunny.",
        "messages": [{"role": "user", "content": "weather?"}],
        "toolCalls": [
            {
                "id": "call_1",
                "name": "get_weather",
                "args": {"city": "Chennai"},
                "output": "sunny",
                "isError": False,
                "metadata": {"status": 200},
            }
        ],
        "toolCallCount": 1,
        "turns": 2,
        "usage": {"promptTokens": 10, "completionTokens": 6, "totalTokens": 16},
        "model": "test-model",
        "status": "done",
        "stopReason": None,
        "output": None,
    }


def test_run_result_to_dict_carries_the_stop_reason() -> None:
    assert _result(stop_reason="length").to_dict()["stopReason"] == "length"


def test_run_result_to_dict_adds_limit_only_when_set() -> None:
    wire = _result(status="incomplete", limit="maxTurns").to_dict()
    assert wire["limit"] == "maxTurns"
    assert "pending" not in wire
    assert "limit" not in _result().to_dict()


def test_run_result_to_dict_adds_pending_as_the_request_wire_form() -> None:
    request = Request(id="r1", kind="approval", prompt="Deploy?", expires_at="2030-01-01T00:00:00Z")
    wire = _result(status="pending", pending=request, text="Deploy?").to_dict()
    assert wire["pending"] == {
        "id": "r1",
        "kind": "approval",
        "prompt": "Deploy?",
        "expiresAt": "2030-01-01T00:00:00Z",
    }
    assert "limit" not in wire


def test_run_result_to_dict_is_json_serialisable_even_with_a_suspended_call() -> None:
    request = Request(id="r1", kind="authorization", prompt="Log in", url="https://x")
    suspended = pending(request)
    call = ToolCall("call_1", "login", {}, suspended.output, True, suspended.metadata)
    wire = _result(tool_calls=[call], status="pending", pending=request).to_dict()
    decoded = json.loads(json.dumps(wire))
    assert decoded["toolCalls"][0]["metadata"] == {"pending": request.to_dict()}
    assert decoded["toolCalls"][0]["isError"] is True


def test_run_result_to_dict_turns_a_request_nested_in_metadata_into_json() -> None:
    request = Request(id="r2", kind="input", prompt="Name?")
    inner = {"agent": "helper", "steps": [{"pending": request}], "last": (request,)}
    call = ToolCall("call_1", "delegate", {}, "Name?", True, {"pending": request, "sub": inner})
    wire = _result(tool_calls=[call], status="pending", pending=request).to_dict()
    decoded = json.loads(json.dumps(wire))
    meta = decoded["toolCalls"][0]["metadata"]
    assert meta["sub"]["steps"] == [{"pending": request.to_dict()}]
    assert meta["sub"]["last"] == [request.to_dict()]
    assert call.metadata is not None
    assert call.metadata["sub"] is inner  # the call itself is untouched


def test_tool_call_metadata_defaults_to_none() -> None:
    call = ToolCall("c", "n", {}, "out", False)
    assert call.metadata is None
    assert call.to_dict()["metadata"] is None
