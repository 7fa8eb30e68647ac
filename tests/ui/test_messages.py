"""Stored transcripts of every wire style as AG-UI messages (the thread view)."""

from __future__ import annotations

from typing import Any

import pytest
from ag_ui.core import Message
from pydantic import TypeAdapter

from toolnexus.ui import transcript_to_agui
from toolnexus.ui.messages import history_for_style

MESSAGES: TypeAdapter[Any] = TypeAdapter(Message)
CALL = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"x":1}'}}
EXPECTED = [
    {"id": "m1", "role": "user", "content": "hi"},
    {"id": "m2", "role": "assistant", "content": "Let me see.", "toolCalls": [CALL]},
    {"id": "m3", "role": "tool", "toolCallId": "c1", "content": "one"},
    {"id": "m4", "role": "assistant", "content": "Done."},
]

TRANSCRIPTS = {
    "openai": [
        {"role": "system", "content": "secret instructions"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "Let me see.", "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "c1", "content": "one"},
        {"role": "assistant", "content": "Done."},
    ],
    "anthropic": [
        {"role": "system", "content": "never shown"},
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me see."},
                {"type": "tool_use", "id": "c1", "name": "f", "input": {"x": 1}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "one"}],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
    ],
}


@pytest.mark.parametrize("style", sorted(TRANSCRIPTS))
def test_a_transcript_becomes_agui_messages_without_system_text(style: str) -> None:
    view = transcript_to_agui(TRANSCRIPTS[style])
    for message in view:
        MESSAGES.validate_python(message)
    if style == "anthropic":  # the tool result sits in a user turn of blocks
        view[2] = {**view[2], "id": "m3"}
    assert view == EXPECTED


def test_responses_items_and_gemini_contents_are_read_too() -> None:
    responses = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": '{"x":1}'},
        {"type": "function_call_output", "call_id": "c1", "output": "one"},
        {"role": "assistant", "content": [{"type": "output_text", "text": "Done."}]},
    ]
    view = transcript_to_agui(responses)
    assert [m["role"] for m in view] == ["user", "assistant", "tool", "assistant"]
    assert view[1]["toolCalls"] == [CALL]
    gemini = [
        {"role": "user", "parts": [{"text": "hi"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {"x": 1}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {"r": 1}}}]},
        {"role": "model", "parts": [{"text": "thinking", "thought": True}, {"text": "Done."}]},
    ]
    view = transcript_to_agui(gemini)
    for message in view:
        MESSAGES.validate_python(message)
    assert [m["role"] for m in view] == ["user", "assistant", "tool", "assistant"]
    assert view[3]["content"] == "Done."
    assert view[1]["toolCalls"][0]["id"] == view[2]["toolCallId"] == "f"  # paired by name


def test_history_for_a_style_without_a_converter_is_none(caplog: pytest.LogCaptureFixture) -> None:
    assert history_for_style("gemini", [{"role": "user", "content": "hi"}]) is None
    assert "gemini" in caplog.text
