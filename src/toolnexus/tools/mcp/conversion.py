"""MCP definitions and results as toolnexus data: names, schemas, filters, results.

Works on the SDK's objects by attribute (``name``, ``content``, ``is_error``…) without
importing the SDK, so it stays cheap to import and easy to test.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..._json import compact_json
from ...types import JSONObject, ToolResult, sanitize

__all__ = [
    "NO_ERROR_TEXT",
    "ToolInfo",
    "error_result",
    "fill_schema",
    "select_tools",
    "to_tool_result",
    "tool_info",
    "tool_name",
]

logger = logging.getLogger("toolnexus")

NO_ERROR_TEXT = "MCP tool returned an error"
"""The output of an ``isError`` result that carries no text."""


@dataclass(slots=True)
class ToolInfo:
    """A tool as its MCP server lists it: original name, description, converted schema."""

    name: str
    description: str
    input_schema: JSONObject


def tool_name(server: str, tool: str) -> str:
    """The toolkit name of an MCP tool: ``sanitize(server) + "_" + sanitize(tool)``."""
    return f"{sanitize(server)}_{sanitize(tool)}"


def fill_schema(schema: Mapping[str, Any] | None) -> JSONObject:
    """A copy of the server's input schema with ``type`` and ``properties`` filled in if absent.

    Nothing else changes, so a schema that allows extra properties keeps allowing them.
    """
    out: JSONObject = dict(schema) if schema else {}
    out.setdefault("type", "object")
    out.setdefault("properties", {})
    return out


def tool_info(definition: Any) -> ToolInfo:
    """Convert one listed MCP tool definition."""
    return ToolInfo(
        name=str(definition.name),
        description=definition.description or "",
        input_schema=fill_schema(definition.input_schema),
    )


def select_tools(server: str, names: Iterable[str], toggles: Mapping[str, bool] | None) -> set[str]:
    """The names a server's ``tools`` filter keeps.

    Empty or absent → all; any ``True`` → exactly the names mapped to ``True``; otherwise all
    but the names mapped to ``False``. Names matching no listed tool are warned about once.
    """
    listed = list(names)
    if not toggles:
        return set(listed)
    unknown = sorted(set(toggles) - set(listed))
    if unknown:
        logger.warning(
            'MCP server "%s": the tools filter names unknown tools: %s', server, ", ".join(unknown)
        )
    if any(toggles.values()):
        return {name for name in listed if toggles.get(name) is True}
    return {name for name in listed if toggles.get(name) is not False}


def to_tool_result(result: Any, server: str) -> ToolResult:
    """Map a ``CallToolResult``.

    ``isError`` → an error with the non-blank text parts joined by a blank line (or
    ``NO_ERROR_TEXT``); else structured content → compact JSON; else the text parts joined by
    ``"\\n"``. Non-text parts are ignored. ``metadata`` is ``{"server": server}``.
    """
    metadata: JSONObject = {"server": server}
    texts = [
        str(block.text) for block in result.content or () if getattr(block, "type", None) == "text"
    ]
    if result.is_error:
        parts = [text for text in texts if text.strip()]
        return ToolResult("\n\n".join(parts) or NO_ERROR_TEXT, is_error=True, metadata=metadata)
    if result.structured_content is not None:
        return ToolResult(compact_json(result.structured_content), metadata=metadata)
    return ToolResult("\n".join(texts), metadata=metadata)


def error_result(message: str, server: str) -> ToolResult:
    """An error result for a call that did not produce an MCP result."""
    return ToolResult(message, is_error=True, metadata={"server": server})
