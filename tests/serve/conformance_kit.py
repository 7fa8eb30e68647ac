"""The tools the MCP conformance suite's tool scenarios call, as a plain toolkit."""

from __future__ import annotations

import toolnexus as tn

SIMPLE_TEXT = "This is a simple text response for testing."
SCHEMA_2020_12: tn.JSONObject = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False,
}


def conformance_tools() -> list[tn.Tool]:
    """``test_simple_text``, ``test_error_handling`` and ``json_schema_2020_12_tool``."""

    def test_simple_text() -> str:
        """Return a fixed text."""
        return SIMPLE_TEXT

    def test_error_handling() -> str:
        """Always fail."""
        raise RuntimeError("This tool always fails for testing purposes")

    def json_schema_tool(name: str = "", address: dict[str, str] | None = None) -> str:
        return f"{name} at {address or {}}"

    return [
        tn.define_tool(test_simple_text),
        tn.define_tool(test_error_handling),
        tn.define_tool(
            json_schema_tool,
            name="json_schema_2020_12_tool",
            description="Tool with JSON Schema 2020-12 features",
            input_schema=SCHEMA_2020_12,
        ),
    ]
