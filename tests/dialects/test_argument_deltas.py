"""Tool-call argument pieces from each style's stream parser (SPEC §11.3, A137)."""

from __future__ import annotations

import json
from typing import Any

from toolnexus.dialects import ArgumentsDelta, StreamItem, dialect_for


def feed(style: str, events: list[dict[str, Any]], turn: int = 0) -> list[StreamItem]:
    parser = dialect_for(style).stream_parser(turn=turn)
    return [item for event in events for item in parser.feed(event)]


def openai_chunk(**delta: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta}]}


def test_openai_pieces_carry_the_id_and_name_of_their_index() -> None:
    items = feed(
        "openai",
        [
            openai_chunk(content="Sure. "),
            openai_chunk(
                tool_calls=[
                    {"index": 0, "id": "call_a", "function": {"name": "get_", "arguments": ""}}
                ]
            ),
            openai_chunk(tool_calls=[{"index": 0, "function": {"name": "weather"}}]),
            openai_chunk(tool_calls=[{"index": 0, "function": {"arguments": '{"city":'}}]),
            openai_chunk(
                tool_calls=[
                    {"index": 1, "function": {"name": "now", "arguments": "{}"}},
                    {"index": 0, "function": {"arguments": '"Oslo"}'}},
                ]
            ),
        ],
        turn=2,
    )
    assert items == [
        "Sure. ",
        ArgumentsDelta("call_a", "get_weather", 0, '{"city":'),
        ArgumentsDelta("call_2_1", "now", 1, "{}"),
        ArgumentsDelta("call_a", "get_weather", 0, '"Oslo"}'),
    ]


def test_openai_object_arguments_are_one_compact_piece() -> None:
    items = feed(
        "openai",
        [
            openai_chunk(
                tool_calls=[
                    {"index": 0, "id": "c", "function": {"name": "f", "arguments": {"a": 1}}}
                ]
            )
        ],
    )
    assert items == [ArgumentsDelta("c", "f", 0, '{"a":1}')]


def test_anthropic_pieces_are_those_of_tool_use_blocks_only() -> None:
    def delta(index: int, partial: str) -> dict[str, Any]:
        return {
            "type": "content_block_delta",
            "index": index,
            "delta": {"type": "input_json_delta", "partial_json": partial},
        }

    def start(index: int, block: dict[str, Any]) -> dict[str, Any]:
        return {"type": "content_block_start", "index": index, "content_block": block}

    items = feed(
        "anthropic",
        [
            start(0, {"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {}}),
            delta(0, '{"query":"x"}'),
            start(1, {"type": "tool_use", "id": "toolu_1", "name": "a", "input": {}}),
            delta(1, '{"k":'),
            delta(1, ""),
            start(2, {"type": "tool_use", "id": "toolu_2", "name": "b", "input": {}}),
            delta(2, "{}"),
            delta(1, "1}"),
        ],
    )
    assert items == [
        ArgumentsDelta("toolu_1", "a", 0, '{"k":'),
        ArgumentsDelta("toolu_2", "b", 1, "{}"),
        ArgumentsDelta("toolu_1", "a", 0, "1}"),
    ]
    joined = "".join(i.delta for i in items if isinstance(i, ArgumentsDelta) and i.index == 0)
    assert json.loads(joined) == {"k": 1}
