"""The Anthropic messages wire format (JSON and SSE)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._json import compact_json
from ..errors import LLMError
from ..schemas import to_anthropic
from ..types import JSONObject, Tool, ToolResult, Usage
from .base import MalformedResponse, ToolUse, Turn, parse_arguments

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

    def tool_schemas(self, tools: Sequence[object]) -> list[JSONObject]:
        return to_anthropic([t for t in tools if isinstance(t, Tool)])

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
        return _turn(content, usage, response=body, turn=turn)

    def stream_parser(self, *, turn: int) -> _AnthropicStream:
        return _AnthropicStream(turn)

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
        return ""


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
    the transcript stays valid to send back)."""
    texts: list[str] = []
    tool_uses: list[ToolUse] = []
    blocks: list[Any] = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "text":
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
    message: JSONObject = {"role": "assistant", "content": blocks}
    return Turn("".join(texts), tool_uses, usage, message, response)


def _usage(raw: JSONObject) -> Usage:
    prompt = _int(raw.get("input_tokens"))
    completion = _int(raw.get("output_tokens"))
    return Usage(prompt, completion, prompt + completion)


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


class _AnthropicStream:
    """Assembles message events: blocks by index; usage counts are cumulative."""

    def __init__(self, turn: int = 0) -> None:
        self._turn = turn
        self._blocks: dict[int, JSONObject] = {}
        self._json: dict[int, list[str]] = {}
        self._text: dict[int, list[str]] = {}
        """Text pieces per block, joined once at the end (appending to a str is quadratic)."""
        self._input_tokens = 0
        self._output_tokens = 0
        self._stop_reason: str | None = None

    def feed(self, event: JSONObject) -> list[str]:
        kind = event.get("type")
        if kind == "content_block_delta":
            return self._delta(event)
        if kind == "message_start":
            message = event.get("message")
            if isinstance(message, dict) and isinstance(message.get("usage"), dict):
                self._take_usage(message["usage"])
        elif kind == "content_block_start":
            block = event.get("content_block")
            index = event.get("index")
            if isinstance(block, dict) and isinstance(index, int):
                self._blocks[index] = dict(block)
                if block.get("type") == "text":
                    start = block.get("text")
                    self._text[index] = [start] if isinstance(start, str) and start else []
        elif kind == "message_delta":
            delta = event.get("delta")
            if isinstance(delta, dict) and delta.get("stop_reason"):
                self._stop_reason = str(delta["stop_reason"])
            if isinstance(event.get("usage"), dict):
                self._take_usage(event["usage"])
        elif kind == "error":
            raise LLMError(
                f"provider stream error: {compact_json(event)}", body=compact_json(event)
            )
        return []

    def _delta(self, event: JSONObject) -> list[str]:
        index = event.get("index")
        delta = event.get("delta")
        if not isinstance(index, int) or not isinstance(delta, dict):
            return []
        block = self._blocks.setdefault(index, {"type": "text"})
        if delta.get("type") == "text_delta" and isinstance(delta.get("text"), str):
            if block.get("type") == "text":
                self._text.setdefault(index, []).append(delta["text"])
            return [delta["text"]] if delta["text"] else []
        if delta.get("type") == "input_json_delta":
            self._json.setdefault(index, []).append(str(delta.get("partial_json") or ""))
        return []

    def _take_usage(self, usage: JSONObject) -> None:
        if "input_tokens" in usage:
            self._input_tokens = _int(usage["input_tokens"])
        if "output_tokens" in usage:
            self._output_tokens = _int(usage["output_tokens"])

    def finish(self) -> Turn:
        content: list[JSONObject] = []
        texts: list[str] = []
        tool_uses: list[ToolUse] = []
        for index, block in sorted(self._blocks.items()):
            if block.get("type") == "text":
                text = "".join(self._text.get(index, ()))
                if text:  # the API rejects empty text blocks sent back to it
                    texts.append(text)
                    content.append({"type": "text", "text": text})
            elif block.get("type") == "tool_use":
                call_id = str(block.get("id") or f"call_{self._turn}_{len(tool_uses)}")
                name = str(block.get("name") or "")
                args, error = parse_arguments(name, "".join(self._json.get(index, ())))
                content.append({"type": "tool_use", "id": call_id, "name": name, "input": args})
                tool_uses.append(ToolUse(call_id, name, args, error))
        response: JSONObject = {
            "content": content,
            "stop_reason": self._stop_reason,
            "usage": {"input_tokens": self._input_tokens, "output_tokens": self._output_tokens},
            "streamed": True,
        }
        usage = Usage(
            self._input_tokens, self._output_tokens, self._input_tokens + self._output_tokens
        )
        message: JSONObject = {"role": "assistant", "content": content}
        return Turn("".join(texts), tool_uses, usage, message, response)
