"""The Anthropic messages wire format (JSON and SSE)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._json import compact_json, loads
from ..schemas import anthropic_declarations
from ..types import JSONObject, Tool, ToolResult, Usage
from .base import (
    STREAM_ENDED_EARLY,
    ArgumentsDelta,
    MalformedResponse,
    StreamItem,
    ToolUse,
    Turn,
    parse_arguments,
    stream_error,
)

__all__ = ["ANTHROPIC_VERSION", "DEFAULT_MAX_TOKENS", "AnthropicDialect"]

ANTHROPIC_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096


class AnthropicDialect:
    name = "anthropic"
    system_in_messages = False

    def url(self, base_url: str) -> str:
        base = base_url.rstrip("/")
        return base + "/messages" if base.endswith("/v1") else base + "/v1/messages"

    def headers(self, api_key: str) -> dict[str, str]:
        return {
            "x-api-key": api_key,
            "anthropic-version": ANTHROPIC_VERSION,
            "content-type": "application/json",
        }

    def tool_schemas(self, tools: Sequence[object], *, copy: bool = True) -> list[JSONObject]:
        return anthropic_declarations([t for t in tools if isinstance(t, Tool)], copy=copy)

    def build_body(
        self,
        messages: list[JSONObject],
        tools: Sequence[JSONObject],
        *,
        model: str,
        system: str,
        stream: bool,
    ) -> JSONObject:
        body: JSONObject = {"model": model, "max_tokens": DEFAULT_MAX_TOKENS}
        if system:
            body["system"] = system
        body["messages"] = messages
        if tools:
            body["tools"] = list(tools)
        if stream:
            body["stream"] = True
        return body

    def parse_response(self, body: object, *, turn: int) -> Turn:
        content = body.get("content") if isinstance(body, dict) else None
        if not isinstance(content, list):
            raise MalformedResponse("response has no content list")
        assert isinstance(body, dict)
        raw_usage = body.get("usage")
        usage = _usage(raw_usage) if isinstance(raw_usage, dict) else Usage()
        stop_reason = body.get("stop_reason")
        reply = _turn(content, usage, response=body, turn=turn)
        if isinstance(stop_reason, str):
            reply.stop_reason = _STOP_REASONS.get(stop_reason, stop_reason)
        return reply

    def stream_parser(self, *, turn: int) -> _AnthropicStream:
        return _AnthropicStream(self, turn)

    def tool_results(self, results: Sequence[tuple[str, ToolResult]]) -> list[JSONObject]:
        if not results:
            return []
        blocks = [_result_block(call_id, result) for call_id, result in results]
        return [{"role": "user", "content": blocks}]

    def tool_uses_in(self, message: JSONObject) -> list[ToolUse]:
        content = message.get("content") if message.get("role") == "assistant" else None
        if not isinstance(content, list):
            return []
        return _turn(content, Usage(), response={}).tool_uses

    def results_in(self, message: JSONObject) -> list[tuple[str, ToolResult]]:
        content = message.get("content") if message.get("role") == "user" else None
        if not isinstance(content, list):
            return []
        return [
            (str(block.get("tool_use_id")), _block_result(block))
            for block in content
            if isinstance(block, dict) and block.get("type") == "tool_result"
        ]

    def incomplete_text(self, message: JSONObject | None) -> str:
        content = message.get("content") if message else None
        if isinstance(content, str):
            return content
        if not isinstance(content, list):
            return ""
        return "".join(
            block["text"]
            for block in content
            if isinstance(block, dict)
            and block.get("type") == "text"
            and isinstance(block.get("text"), str)
        )


_STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
}
"""Anthropic stop reasons with a normalised name; others (``refusal``, ``pause_turn``, ...)
pass through as they are."""


_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})


def _result_block(call_id: str, result: ToolResult) -> JSONObject:
    """A ``tool_result`` block; image parts a tool kept in ``metadata["content"]`` (as MCP
    tools do) travel along as ``image`` blocks after the text."""
    images = _image_blocks(result.metadata)
    content: str | list[JSONObject] = result.output
    if images:
        content = [{"type": "text", "text": result.output}, *images] if result.output else images
    return {
        "type": "tool_result",
        "tool_use_id": call_id,
        "content": content,
        "is_error": result.is_error,
    }


def _image_blocks(metadata: JSONObject | None) -> list[JSONObject]:
    parts = metadata.get("content") if metadata else None
    if not isinstance(parts, list):
        return []
    return [
        {
            "type": "image",
            "source": {"type": "base64", "media_type": part["mimeType"], "data": part["data"]},
        }
        for part in parts
        if isinstance(part, dict)
        and part.get("type") == "image"
        and part.get("mimeType") in _IMAGE_TYPES
        and isinstance(part.get("data"), str)
    ]


def _block_result(block: JSONObject) -> ToolResult:
    content = block.get("content")
    if isinstance(content, str):
        output = content
    elif isinstance(content, list) and any(_is_image(part) for part in content):
        output = "\n".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        )
    else:
        output = compact_json(content)
    return ToolResult(output, is_error=bool(block.get("is_error")))


def _is_image(part: object) -> bool:
    return isinstance(part, dict) and part.get("type") == "image"


def _turn(content: list[Any], usage: Usage, *, response: JSONObject, turn: int = 0) -> Turn:
    """The turn of an assistant content list. A ``tool_use`` block without an id gets
    ``call_<turn>_<index>``, and one whose input is not an object gets ``{}`` (in a copy, so
    the transcript stays valid to send back). Empty text blocks are left out of the message,
    and a reply with no block left has no message: the API rejects both when sent back."""
    texts: list[str] = []
    tool_uses: list[ToolUse] = []
    blocks: list[Any] = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "text":
            if not block.get("text"):
                continue
            if isinstance(block.get("text"), str):
                texts.append(block["text"])
        elif isinstance(block, dict) and block.get("type") == "tool_use":
            name = str(block.get("name") or "")
            args, error = parse_arguments(name, block.get("input"))
            call_id = str(block.get("id") or f"call_{turn}_{len(tool_uses)}")
            if call_id != block.get("id") or error or not isinstance(block.get("input"), dict):
                block = {**block, "id": call_id, "input": args}
            tool_uses.append(ToolUse(call_id, name, args, error))
        blocks.append(block)
    message: JSONObject | None = {"role": "assistant", "content": blocks} if blocks else None
    return Turn("".join(texts), tool_uses, usage, message, response)


def _usage(raw: JSONObject) -> Usage:
    prompt = _int(raw.get("input_tokens"))
    completion = _int(raw.get("output_tokens"))
    return Usage(prompt, completion, prompt + completion)


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


class _AnthropicStream:
    """Rebuilds the ``message`` body of an event stream and parses it like a JSON reply.

    Blocks keep every field of their start event; deltas fill them in (text, thinking,
    signature, citations, the JSON of a tool input). String pieces are kept in lists and joined
    once at the end (appending to a str is quadratic). Usage counts are cumulative: the last
    value seen of each counts.
    """

    def __init__(self, dialect: AnthropicDialect, turn: int) -> None:
        self._dialect = dialect
        self._turn = turn
        self._message: JSONObject = {}
        self._blocks: dict[int, JSONObject] = {}
        self._pieces: dict[tuple[int, str], list[str]] = {}
        """Streamed string pieces per (block index, field): text, thinking, signature, input."""
        self._cited: set[int] = set()
        self._usage: JSONObject = {}
        self._stopped = False
        self._positions: dict[int, int] = {}
        """The position among the reply's ``tool_use`` blocks of each such block index."""

    def feed(self, event: JSONObject) -> list[StreamItem]:
        kind = event.get("type")
        if kind == "content_block_delta":
            return self._delta(event)
        if kind == "message_start":
            message = event.get("message")
            if isinstance(message, dict):
                self._message = dict(message)
                self._take_usage(message.get("usage"))
        elif kind == "content_block_start":
            block = event.get("content_block")
            index = event.get("index")
            if isinstance(block, dict) and isinstance(index, int):
                self._blocks[index] = dict(block)
                if block.get("type") == "tool_use" and index not in self._positions:
                    self._positions[index] = len(self._positions)
        elif kind == "message_delta":
            delta = event.get("delta")
            if isinstance(delta, dict):
                self._message.update(delta)
            self._take_usage(event.get("usage"))
        elif kind == "message_stop":
            self._stopped = True
        elif kind == "error":
            raise stream_error(event)
        return []

    def _delta(self, event: JSONObject) -> list[StreamItem]:
        index = event.get("index")
        delta = event.get("delta")
        if not isinstance(index, int) or not isinstance(delta, dict):
            return []
        kind = delta.get("type")
        if kind == "text_delta":
            self._blocks.setdefault(index, {"type": "text", "text": ""})
            text = delta.get("text")
            if isinstance(text, str) and text:
                self._piece(index, "text", text)
                return [text]
        elif index not in self._blocks:
            return []
        elif kind == "input_json_delta":
            partial = _str(delta.get("partial_json"))
            self._piece(index, "input", partial)
            position = self._positions.get(index)
            if position is not None and partial:
                block = self._blocks[index]
                call_id = str(block.get("id") or f"call_{self._turn}_{position}")
                return [ArgumentsDelta(call_id, str(block.get("name") or ""), position, partial)]
        elif kind in _APPENDED:
            self._piece(index, _APPENDED[kind], _str(delta.get(_APPENDED[kind])))
        elif kind == "citations_delta" and "citation" in delta:
            block = self._blocks[index]
            if index not in self._cited:  # a list of our own, not the start event's
                cited = block.get("citations")
                block["citations"] = list(cited) if isinstance(cited, list) else []
                self._cited.add(index)
            block["citations"].append(delta["citation"])
        return []

    def _piece(self, index: int, name: str, text: str) -> None:
        pieces = self._pieces.get((index, name))
        if pieces is None:
            start = self._blocks[index].get(name) if name != "input" else None
            pieces = self._pieces[index, name] = [start] if isinstance(start, str) else []
        pieces.append(text)

    def _take_usage(self, usage: object) -> None:
        if isinstance(usage, dict):
            self._usage.update((k, v) for k, v in usage.items() if v is not None)

    def finish(self, *, done: bool = False) -> Turn:
        if not self._stopped:
            raise MalformedResponse(f"{STREAM_ENDED_EARLY}: no message_stop event arrived")
        content: list[JSONObject] = [dict(block) for _, block in sorted(self._blocks.items())]
        positions = {index: n for n, index in enumerate(sorted(self._blocks))}
        for (index, name), pieces in self._pieces.items():
            block = content[positions[index]]
            joined = "".join(pieces)
            block[name] = _tool_input(block, joined) if name == "input" else joined
        body: JSONObject = {**self._message, "content": content}
        if self._usage:
            body["usage"] = self._usage
        body["streamed"] = True
        return self._dialect.parse_response(body, turn=self._turn)


_APPENDED = {"thinking_delta": "thinking", "signature_delta": "signature"}
"""Delta types whose field of the same name is appended to the block's."""


def _tool_input(block: JSONObject, raw: str) -> object:
    """A tool block's input from its streamed JSON: the parsed value, the start block's input
    when nothing came, or the text itself when it is not JSON (the call then reports it)."""
    if not raw.strip():
        start = block.get("input")
        return start if isinstance(start, dict) else {}
    try:
        return loads(raw)
    except ValueError:
        return raw


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""
