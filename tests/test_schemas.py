"""Provider tool formats."""

from __future__ import annotations

from typing import Any

import pytest

from toolnexus import Tool, ToolContext, Toolkit, ToolResult, to_anthropic, to_gemini, to_openai

WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}
EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


async def _execute(args: dict[str, Any], ctx: ToolContext | None) -> ToolResult:
    return ToolResult("")


TOOLS = [
    Tool("get_weather", "Weather for a city.", WEATHER_SCHEMA, "native", _execute),
    Tool("ping", "", EMPTY_SCHEMA, "http", _execute),
]


def test_openai_shape_is_exact() -> None:
    assert to_openai(TOOLS) == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Weather for a city.",
                "parameters": WEATHER_SCHEMA,
            },
        },
        {
            "type": "function",
            "function": {"name": "ping", "description": "", "parameters": EMPTY_SCHEMA},
        },
    ]


def test_anthropic_shape_is_exact() -> None:
    assert to_anthropic(TOOLS) == [
        {
            "name": "get_weather",
            "description": "Weather for a city.",
            "input_schema": WEATHER_SCHEMA,
        },
        {"name": "ping", "description": "", "input_schema": EMPTY_SCHEMA},
    ]


def test_gemini_wraps_every_declaration_in_one_element() -> None:
    assert to_gemini(TOOLS) == [
        {
            "functionDeclarations": [
                {
                    "name": "get_weather",
                    "description": "Weather for a city.",
                    "parameters": WEATHER_SCHEMA,
                },
                {"name": "ping", "description": "", "parameters": EMPTY_SCHEMA},
            ]
        }
    ]


@pytest.mark.parametrize("adapter", [to_openai, to_anthropic, to_gemini])
def test_no_tools_give_an_empty_list(adapter: Any) -> None:
    assert adapter([]) == []


def test_toolkit_methods_match_the_module_functions() -> None:
    tk = Toolkit(TOOLS)
    assert tk.to_openai() == to_openai(TOOLS)
    assert tk.to_anthropic() == to_anthropic(TOOLS)
    assert tk.to_gemini() == to_gemini(TOOLS)
    assert Toolkit().to_gemini() == []


def test_adapters_leave_the_schema_unchanged() -> None:
    [entry] = to_openai(TOOLS[:1])
    assert entry["function"]["parameters"] == WEATHER_SCHEMA
    assert WEATHER_SCHEMA == {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    }
