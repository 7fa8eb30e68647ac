"""Finding the halted turn of a saved transcript for a durable resume."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from toolnexus import ConfigError, Request, ToolResult
from toolnexus.dialects import AnthropicDialect, Dialect, OpenAIDialect, ToolUse
from toolnexus.engine.resume import resumable_turn
from toolnexus.types import JSONObject

OPENAI = OpenAIDialect()
ANTHROPIC = AnthropicDialect()
PLACEHOLDER = "Log in\nhttps://auth.example/login"


def halted_request(call_id: object = "call_b") -> Request:
    data: JSONObject = {"scope": "repo"}
    if call_id is not None:
        data["toolCallId"] = call_id
    return Request(
        id="r1",
        kind="authorization",
        prompt="Log in",
        url="https://auth.example/login",
        data=data,
    )


# --- transcripts ----------------------------------------------------------------------------------


def openai_call(call_id: str, name: str, arguments: str) -> JSONObject:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def openai_history() -> list[JSONObject]:
    """An earlier finished tool turn, then a turn of three calls halted on ``call_b``."""
    return [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Deploy and report."},
        {"role": "assistant", "content": None, "tool_calls": [openai_call("call_0", "ls", "{}")]},
        {"role": "tool", "tool_call_id": "call_0", "content": "a.txt"},
        {
            "role": "assistant",
            "content": "Working on it.",
            "tool_calls": [
                openai_call("call_a", "build", '{"target":"web"}'),
                openai_call("call_b", "deploy", '{"env":"prod"}'),
                openai_call("call_c", "notify", '{"to":"team"}'),
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": "built"},
        {"role": "tool", "tool_call_id": "call_b", "content": PLACEHOLDER},
    ]


def anthropic_history() -> list[JSONObject]:
    """The same conversation in the anthropic shape."""
    return [
        {"role": "user", "content": "Deploy and report."},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "call_0", "name": "ls", "input": {}}],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "call_0",
                    "content": "a.txt",
                    "is_error": False,
                }
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Working on it."},
                {"type": "tool_use", "id": "call_a", "name": "build", "input": {"target": "web"}},
                {"type": "tool_use", "id": "call_b", "name": "deploy", "input": {"env": "prod"}},
                {"type": "tool_use", "id": "call_c", "name": "notify", "input": {"to": "team"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "call_a",
                    "content": "built",
                    "is_error": False,
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "call_b",
                    "content": PLACEHOLDER,
                    "is_error": True,
                },
            ],
        },
    ]


HISTORIES: dict[str, tuple[Dialect, Callable[[], list[JSONObject]]]] = {
    "openai": (OPENAI, openai_history),
    "anthropic": (ANTHROPIC, anthropic_history),
}
STYLES = sorted(HISTORIES)


def style(name: str) -> tuple[Dialect, list[JSONObject]]:
    dialect, build = HISTORIES[name]
    return dialect, build()


CALL_A = ToolUse("call_a", "build", {"target": "web"})
CALL_B = ToolUse("call_b", "deploy", {"env": "prod"})
CALL_C = ToolUse("call_c", "notify", {"to": "team"})


# --- the halted turn ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", STYLES)
def test_finds_the_last_tool_turn_its_halted_call_results_and_unanswered_calls(name: str) -> None:
    dialect, messages = style(name)
    turn = resumable_turn(dialect, messages, halted_request())
    assert turn.calls == [CALL_A, CALL_B, CALL_C]
    assert turn.halted == CALL_B
    assert turn.results == {"call_a": ToolResult("built")}
    assert turn.unanswered == [CALL_C]
    assert turn.results_start == len(messages) - (2 if name == "openai" else 1)


@pytest.mark.parametrize("name", STYLES)
def test_a_turn_whose_other_calls_all_have_results_has_no_unanswered_call(name: str) -> None:
    dialect, messages = style(name)
    if name == "openai":
        messages.append({"role": "tool", "tool_call_id": "call_c", "content": "sent"})
    else:
        messages[-1]["content"].append(
            {"type": "tool_result", "tool_use_id": "call_c", "content": "sent", "is_error": False}
        )
    turn = resumable_turn(dialect, messages, halted_request())
    assert turn.unanswered == []
    assert turn.results == {"call_a": ToolResult("built"), "call_c": ToolResult("sent")}


@pytest.mark.parametrize("name", STYLES)
def test_the_halted_call_may_be_the_only_recorded_result(name: str) -> None:
    dialect, messages = style(name)
    if name == "openai":
        del messages[-2]  # drop call_a's result
    else:
        del messages[-1]["content"][0]
    turn = resumable_turn(dialect, messages, halted_request())
    assert turn.results == {}
    assert turn.unanswered == [CALL_A, CALL_C]


# --- what is refused ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", STYLES)
@pytest.mark.parametrize("call_id", [None, 7])
def test_a_request_without_a_tool_call_id_is_refused(name: str, call_id: object) -> None:
    dialect, messages = style(name)
    with pytest.raises(ValueError, match=r"'r1' has no data\['toolCallId'\]") as caught:
        resumable_turn(dialect, messages, halted_request(call_id))
    assert isinstance(caught.value, ConfigError)


@pytest.mark.parametrize("name", STYLES)
def test_a_request_without_data_is_refused(name: str) -> None:
    dialect, messages = style(name)
    request = Request(id="r2", kind="approval", prompt="Deploy?")
    with pytest.raises(ValueError, match="toolCallId"):
        resumable_turn(dialect, messages, request)


@pytest.mark.parametrize("name", STYLES)
def test_a_non_result_message_after_the_tool_turn_is_refused(name: str) -> None:
    dialect, messages = style(name)
    messages.append({"role": "user", "content": "and another thing"})
    position = len(messages) - 1
    with pytest.raises(
        ValueError, match=rf"message {position} \(role 'user'\) is not a tool result"
    ):
        resumable_turn(dialect, messages, halted_request())


def test_an_assistant_text_message_after_the_tool_turn_is_refused() -> None:
    messages = openai_history()
    messages.append({"role": "assistant", "content": "All done."})
    with pytest.raises(ValueError, match=r"role 'assistant'\) is not a tool result"):
        resumable_turn(OPENAI, messages, halted_request())


@pytest.mark.parametrize("name", STYLES)
def test_a_call_id_that_is_not_in_the_last_tool_turn_is_refused(name: str) -> None:
    dialect, messages = style(name)
    for missing in ("call_zzz", "call_0"):  # call_0 belongs to an earlier turn
        with pytest.raises(ValueError, match=rf"has no call '{missing}'"):
            resumable_turn(dialect, messages, halted_request(missing))


@pytest.mark.parametrize("name", STYLES)
def test_a_halted_call_without_its_placeholder_is_refused(name: str) -> None:
    dialect, messages = style(name)
    if name == "openai":
        messages.pop()  # the placeholder of call_b
    else:
        messages[-1]["content"].pop()
    with pytest.raises(ValueError, match=r"no placeholder result for the halted call 'call_b'"):
        resumable_turn(dialect, messages, halted_request())


@pytest.mark.parametrize("name", STYLES)
def test_a_history_without_any_tool_turn_is_refused(name: str) -> None:
    dialect, _ = style(name)
    messages: list[JSONObject] = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
    ]
    with pytest.raises(ValueError, match="no assistant message with tool calls"):
        resumable_turn(dialect, messages, halted_request())
