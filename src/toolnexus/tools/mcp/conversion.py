"""MCP definitions and results as toolnexus data: names, schemas, filters, results.

Works on the SDK's objects by attribute (``name``, ``content``, ``is_error``…) without
importing the SDK, so it stays cheap to import and easy to test.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..._json import compact_json
from ...types import JSONObject, ToolResult, sanitize

__all__ = [
    "MAX_NAME",
    "NO_ERROR_TEXT",
    "ToolInfo",
    "content_dict",
    "describe",
    "error_result",
    "fill_schema",
    "requires_task",
    "select_tools",
    "to_tool_result",
    "tool_annotations",
    "tool_info",
    "tool_name",
    "tool_names",
]

logger = logging.getLogger("toolnexus")

MAX_NAME = 64
"""The longest tool name providers accept."""
NO_ERROR_TEXT = "MCP tool returned an error"
"""The output of an ``isError`` result that carries no text."""


@dataclass(slots=True)
class ToolInfo:
    """A tool as its MCP server lists it: original name, description, converted schema."""

    name: str
    description: str
    input_schema: JSONObject
    annotations: JSONObject | None = None
    """Hints, ``title`` and ``outputSchema`` as the server gave them (see ``Tool.annotations``)."""


def tool_name(server: str, tool: str, *, hashed: bool = False) -> str:
    """The toolkit name of an MCP tool: ``sanitize(server) + "_" + sanitize(tool)``.

    Providers accept at most 64 characters: a longer name (or any name when ``hashed``, used
    to tell apart tools whose names sanitise alike) becomes its first 55 characters, ``"_"``
    and the first 8 hex digits of ``sha256(server + "\\0" + tool)``.
    """
    name = f"{sanitize(server)}_{sanitize(tool)}"
    if len(name) <= MAX_NAME and not hashed:
        return name
    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:8]
    return f"{name[:55]}_{digest}"


def tool_names(server: str, tools: Iterable[str]) -> dict[str, str]:
    """Toolkit names for one server's tools, all distinct (original name → toolkit name).

    When two names sanitise alike, every one after the first takes the hashed form, with a
    warning naming the server and both original names.
    """
    out: dict[str, str] = {}
    owner: dict[str, str] = {}
    for tool in tools:
        name = tool_name(server, tool)
        if name in owner:
            first = owner[name]
            name = tool_name(server, tool, hashed=True)
            logger.warning(
                'MCP server "%s": tools "%s" and "%s" have the same name once sanitised; '
                '"%s" is offered as %s',
                server,
                first,
                tool,
                tool,
                name,
            )
        owner.setdefault(name, tool)
        out[tool] = name
    return out


def tool_annotations(server: str, definition: Any) -> JSONObject:
    """What the server says about a tool beyond its schema, for ``Tool.annotations``.

    Its ``annotations`` hints (``readOnlyHint``, ``destructiveHint``…) in wire form, ``title``
    and ``outputSchema`` when given, plus ``server`` and ``originalName``.
    """
    out: JSONObject = {}
    hints = getattr(definition, "annotations", None)
    if hints is not None:
        out.update(content_dict(hints))
    title = getattr(definition, "title", None)
    if title:
        out["title"] = title
    output_schema = getattr(definition, "output_schema", None)
    if output_schema is not None:
        out["outputSchema"] = dict(output_schema)
    out["server"] = server
    out["originalName"] = str(definition.name)
    return out


def requires_task(definition: Any) -> bool:
    """Whether a tool can only be called as an MCP task (``execution.taskSupport: required``)."""
    execution = getattr(definition, "execution", None)
    return getattr(execution, "task_support", None) == "required"


def fill_schema(schema: Mapping[str, Any] | None) -> JSONObject:
    """A copy of the server's input schema with ``type`` and ``properties`` filled in if absent.

    Nothing else changes, so a schema that allows extra properties keeps allowing them.
    """
    out: JSONObject = dict(schema) if schema else {}
    out.setdefault("type", "object")
    out.setdefault("properties", {})
    return out


def tool_info(server: str, definition: Any) -> ToolInfo:
    """Convert one listed MCP tool definition."""
    return ToolInfo(
        name=str(definition.name),
        description=definition.description or "",
        input_schema=fill_schema(definition.input_schema),
        annotations=tool_annotations(server, definition),
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
    ``NO_ERROR_TEXT``). Otherwise structured content replaces the text parts (compact JSON; a
    binary payload inside it, such as an image's base64 copied there, is described instead and
    the whole structured content kept in ``metadata["structuredContent"]``), while every other
    part (image, audio, resource, resource link) is described on a line of
    its own, so a non-empty result never has an empty output and binary data never becomes
    text. ``metadata`` holds the server and, when there are any, the non-text parts as
    received (``content``).
    """
    metadata: JSONObject = {"server": server}
    blocks = list(result.content or ())
    others = [block for block in blocks if getattr(block, "type", None) != "text"]
    if others:
        metadata["content"] = [content_dict(block) for block in others]
    texts = [str(b.text) for b in blocks if getattr(b, "type", None) == "text"]
    if result.is_error:
        parts = [text for text in texts if text.strip()]
        return ToolResult("\n\n".join(parts) or NO_ERROR_TEXT, is_error=True, metadata=metadata)
    if result.structured_content is not None:
        structured = _without_binary(result.structured_content, others)
        if structured != result.structured_content:
            metadata["structuredContent"] = content_dict(result.structured_content)
        texts = [compact_json(structured)]
    lines = texts + [line for block in others if (line := describe(block))]
    return ToolResult("\n".join(lines), metadata=metadata)


def describe(block: Any) -> str:
    """One line standing for a non-text part: ``[image image/png, 1234 bytes]`` and the like.

    The text of an embedded text resource is given in full.
    """
    kind = getattr(block, "type", None)
    if kind in ("image", "audio"):
        return f"[{kind} {block.mime_type}, {_decoded_size(block.data)} bytes]"
    if kind == "resource":
        inner = block.resource
        text = getattr(inner, "text", None)
        if text is not None:
            return str(text)
        blob = getattr(inner, "blob", None)
        mime = f" {inner.mime_type}" if getattr(inner, "mime_type", None) else ""
        size = f", {_decoded_size(blob)} bytes" if blob is not None else ""
        return f"[resource {inner.uri}{mime}{size}]"
    if kind == "resource_link":
        title = f" ({block.name})" if getattr(block, "name", None) else ""
        return f"[resource {block.uri}{title}]"
    return f"[{kind or 'unknown'} content]"


def content_dict(block: Any) -> JSONObject:
    """A part as the server sent it (camelCase wire keys), for ``metadata["content"]``."""
    dump = getattr(block, "model_dump", None)
    if dump is None:
        return dict(block) if isinstance(block, Mapping) else {"value": str(block)}
    out: JSONObject = dump(by_alias=True, mode="json", exclude_none=True)
    return out


_BASE64 = re.compile(r"(?:data:[\w.+-]+/[\w.+-]+;base64,)?[A-Za-z0-9+/_-]+={0,2}")
_MIN_BINARY_CHARS = 1024
"""A string at least this long that is all base64 is taken for binary data, not text."""


def _without_binary(value: Any, blocks: list[Any]) -> Any:
    """``value`` with every binary payload replaced by a description of it.

    A string is binary when it is the data of one of the non-text parts (described as that
    part is) or a long base64 text (described by its decoded size).
    """
    payloads = {}
    for block in blocks:
        data = getattr(block, "data", None) or getattr(
            getattr(block, "resource", None), "blob", None
        )
        if isinstance(data, str) and data:
            payloads[data] = describe(block)

    def walk(item: Any) -> Any:
        if isinstance(item, str):
            if item in payloads:
                return payloads[item]
            if len(item) >= _MIN_BINARY_CHARS and _BASE64.fullmatch(item):
                return f"[binary data, {_decoded_size(item.rpartition(',')[2])} bytes]"
            return item
        if isinstance(item, Mapping):
            return {key: walk(inner) for key, inner in item.items()}
        if isinstance(item, list | tuple):
            return [walk(inner) for inner in item]
        return item

    return walk(value)


def _decoded_size(data: str | bytes | None) -> int:
    """Bytes a base64 string decodes to, computed without decoding it."""
    if data is None:
        return 0
    text = data.decode("ascii", "replace") if isinstance(data, bytes) else data
    text = text.strip()
    padding = len(text) - len(text.rstrip("="))
    return max(0, len(text) * 3 // 4 - padding)


def error_result(message: str, server: str) -> ToolResult:
    """An error result for a call that did not produce an MCP result."""
    return ToolResult(message, is_error=True, metadata={"server": server})
