"""Naming, schema fill-in, the per-server filter and result mapping."""

from __future__ import annotations

import logging

import pytest
from mcp.types import CallToolResult, ImageContent, TextContent

from toolnexus.tools.mcp.conversion import (
    NO_ERROR_TEXT,
    fill_schema,
    select_tools,
    to_tool_result,
    tool_name,
)


def test_tool_names_sanitize_server_and_tool() -> None:
    assert tool_name("my srv", "echo") == "my_srv_echo"
    assert tool_name("git.v2/x", "read file") == "git_v2_x_read_file"


def test_schema_fill_in_only_adds_what_is_absent() -> None:
    assert fill_schema(None) == {"type": "object", "properties": {}}
    assert fill_schema({}) == {"type": "object", "properties": {}}
    assert fill_schema({"required": ["a"]}) == {
        "required": ["a"],
        "type": "object",
        "properties": {},
    }


def test_a_complete_schema_is_left_exactly_as_the_server_sent_it() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "additionalProperties": True,
        "$defs": {"x": {"type": "number"}},
    }
    out = fill_schema(schema)
    assert out == schema
    assert out is not schema


def _text(*parts: str) -> list[TextContent]:
    return [TextContent(type="text", text=p) for p in parts]


def test_an_error_result_joins_its_non_blank_texts_with_a_blank_line() -> None:
    result = CallToolResult(content=[*_text("first", "  ", "second")], is_error=True)
    mapped = to_tool_result(result, "srv")
    assert (mapped.output, mapped.is_error, mapped.metadata) == (
        "first\n\nsecond",
        True,
        {"server": "srv"},
    )


def test_an_error_result_without_text_gets_the_generic_message() -> None:
    image = ImageContent(type="image", data="aGk=", mime_type="image/png")
    mapped = to_tool_result(CallToolResult(content=[image], is_error=True), "srv")
    assert mapped.output == NO_ERROR_TEXT == "MCP tool returned an error"
    assert mapped.is_error


def test_structured_content_wins_over_text_and_renders_compact() -> None:
    result = CallToolResult(content=_text("ignored"), structured_content={"b": [1, 2], "s": "é"})
    mapped = to_tool_result(result, "srv")
    assert (mapped.output, mapped.is_error, mapped.metadata) == (
        '{"b":[1,2],"s":"é"}',
        False,
        {"server": "srv"},
    )


def test_plain_results_join_text_parts_then_describe_the_other_parts() -> None:
    image = ImageContent(type="image", data="aGk=", mime_type="image/png")
    result = CallToolResult(content=[*_text("a"), image, *_text("b")])
    mapped = to_tool_result(result, "srv")
    assert (mapped.output, mapped.is_error) == ("a\nb\n[image image/png, 2 bytes]", False)
    assert mapped.metadata == {
        "server": "srv",
        "content": [{"type": "image", "data": "aGk=", "mimeType": "image/png"}],
    }


NAMES = ["echo", "add", "fail"]


@pytest.mark.parametrize(
    ("toggles", "kept"),
    [
        (None, {"echo", "add", "fail"}),
        ({}, {"echo", "add", "fail"}),
        ({"echo": True}, {"echo"}),
        ({"echo": True, "add": False}, {"echo"}),
        ({"echo": False}, {"add", "fail"}),
        ({"echo": False, "add": False}, {"fail"}),
    ],
)
def test_the_tools_filter_allowlists_on_any_true_else_drops_the_false_names(
    toggles: dict[str, bool] | None, kept: set[str]
) -> None:
    assert select_tools("srv", NAMES, toggles) == kept


def test_unknown_names_in_the_filter_are_warned_about_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="toolnexus")
    assert select_tools("srv", NAMES, {"echo": True, "nope": True, "zzz": False}) == {"echo"}
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == ['MCP server "srv": the tools filter names unknown tools: nope, zzz']
