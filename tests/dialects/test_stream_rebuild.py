"""Stream parsers rebuild the provider's reply, so nothing the JSON path keeps is lost."""

from __future__ import annotations

import json
from typing import Any

import pytest

from toolnexus import LLMError
from toolnexus.dialects import AnthropicDialect, MalformedResponse, OpenAIDialect, ToolUse, Turn
from toolnexus.types import JSONObject

OPENAI = OpenAIDialect()
ANTHROPIC = AnthropicDialect()
DONE = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}


def _openai(*events: JSONObject) -> tuple[list[str], Turn]:
    parser = OPENAI.stream_parser(turn=0)
    deltas = [d for e in events for d in parser.feed(e)]
    return deltas, parser.finish(done=True)


def _delta(index: int | None = 0, **fields: object) -> JSONObject:
    choice: JSONObject = {"delta": fields}
    if index is not None:
        choice["index"] = index
    return {"choices": [choice]}


def test_openai_error_chunk_raises_with_the_chunk_as_body() -> None:
    parser = OPENAI.stream_parser(turn=0)
    parser.feed(_delta(content="Hal"))
    chunk = {"id": "x", "error": {"message": "overloaded", "code": 529}, "choices": []}
    with pytest.raises(LLMError, match="overloaded") as caught:
        parser.feed(chunk)
    assert caught.value.status is None
    assert caught.value.body is not None
    assert json.loads(caught.value.body) == chunk


def test_openai_stream_reads_choice_zero_only() -> None:
    deltas, turn = _openai(_delta(1, content="other "), _delta(0, content="mine"), DONE)
    assert deltas == ["mine"]
    assert turn.message == {"role": "assistant", "content": "mine"}


def test_openai_choice_without_index_counts_as_choice_zero() -> None:
    _, turn = _openai(_delta(None, content="plain"), DONE)
    assert turn.text == "plain"


def test_openai_json_reads_the_choice_with_index_zero_wherever_it_is() -> None:
    body = {
        "choices": [
            {"index": 1, "message": {"role": "assistant", "content": "b"}, "finish_reason": "stop"},
            {"index": 0, "message": {"role": "assistant", "content": "a"}, "finish_reason": "stop"},
        ]
    }
    assert OPENAI.parse_response(body, turn=0).text == "a"


def test_openai_stream_keeps_refusal_and_reasoning_like_the_json_message() -> None:
    _, turn = _openai(
        _delta(reasoning_content="think", refusal=None, content=None),
        _delta(refusal="No, "),
        _delta(refusal="sorry."),
        DONE,
    )
    message = {
        "role": "assistant",
        "content": None,
        "refusal": "No, sorry.",
        "reasoning_content": "think",
    }
    assert turn.message == message
    json_turn = OPENAI.parse_response(
        {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}, turn=0
    )
    assert (json_turn.text, json_turn.stop_reason) == ("No, sorry.", "refusal")
    assert (turn.text, turn.stop_reason) == ("No, sorry.", "refusal")


def test_openai_object_arguments_are_kept_as_a_compact_string_on_both_paths() -> None:
    call = {"index": 0, "id": "c1", "type": "function"}
    piece: dict[str, Any] = {**call, "function": {"name": "f", "arguments": {"a": 1, "b": "é"}}}
    _, turn = _openai(_delta(tool_calls=[piece]), DONE)
    stored = {
        "id": "c1",
        "type": "function",
        "function": {"name": "f", "arguments": '{"a":1,"b":"é"}'},
    }
    assert turn.message is not None
    assert turn.message["tool_calls"] == [stored]
    assert turn.tool_uses == [ToolUse("c1", "f", {"a": 1, "b": "é"})]
    sent: dict[str, Any] = {"id": "c1", "type": "function", "function": dict(piece["function"])}
    raw = {"role": "assistant", "content": None, "tool_calls": [sent]}
    json_turn = OPENAI.parse_response({"choices": [{"message": raw}]}, turn=0)
    assert json_turn.message is not None
    assert json_turn.message["tool_calls"] == [stored]
    assert sent["function"]["arguments"] == {"a": 1, "b": "é"}  # the reply is left as sent


def _anthropic(*events: JSONObject) -> Turn:
    parser = ANTHROPIC.stream_parser(turn=0)
    for event in events:
        parser.feed(event)
    return parser.finish()


def _start(index: int, block: JSONObject) -> JSONObject:
    return {"type": "content_block_start", "index": index, "content_block": block}


def _block_delta(index: int, **delta: object) -> JSONObject:
    return {"type": "content_block_delta", "index": index, "delta": delta}


STOP = {"type": "message_stop"}


def test_anthropic_signature_pieces_and_citations_are_rebuilt() -> None:
    turn = _anthropic(
        _start(0, {"type": "thinking", "thinking": "", "signature": ""}),
        _block_delta(0, type="thinking_delta", thinking="a"),
        _block_delta(0, type="signature_delta", signature="s1"),
        _block_delta(0, type="signature_delta", signature="s2"),
        _start(1, {"type": "text", "text": ""}),
        _block_delta(1, type="citations_delta", citation={"n": 1}),
        _block_delta(1, type="text_delta", text="cited"),
        _block_delta(1, type="citations_delta", citation={"n": 2}),
        _block_delta(7, type="thinking_delta", thinking="no block 7"),
        STOP,
    )
    assert turn.message == {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "a", "signature": "s1s2"},
            {"type": "text", "text": "cited", "citations": [{"n": 1}, {"n": 2}]},
        ],
    }


def test_anthropic_stream_without_message_stop_is_cut_short() -> None:
    parser = ANTHROPIC.stream_parser(turn=0)
    parser.feed(_start(0, {"type": "tool_use", "id": "t", "name": "rm", "input": {}}))
    with pytest.raises(MalformedResponse, match=r"^stream ended early: "):
        parser.finish()


def test_anthropic_json_drops_empty_text_blocks_and_keeps_no_empty_message() -> None:
    blocks = [{"type": "text", "text": ""}, {"type": "text", "text": "hi"}]
    turn = ANTHROPIC.parse_response({"content": blocks}, turn=0)
    assert turn.message == {"role": "assistant", "content": [{"type": "text", "text": "hi"}]}
    empty = ANTHROPIC.parse_response({"content": [{"type": "text", "text": ""}]}, turn=0)
    assert empty.message is None
    assert ANTHROPIC.parse_response({"content": []}, turn=0).message is None


@pytest.mark.parametrize(
    ("raw", "named"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("max_tokens", "length"),
        ("tool_use", "tool_calls"),
        ("refusal", "refusal"),
        ("pause_turn", "pause_turn"),
        ("model_context_window_exceeded", "model_context_window_exceeded"),
        (None, None),
    ],
)
def test_anthropic_stop_reasons_are_named_like_openai_ones(raw: str | None, named: str) -> None:
    body = {"content": [{"type": "text", "text": "x"}], "stop_reason": raw}
    assert ANTHROPIC.parse_response(body, turn=0).stop_reason == named
