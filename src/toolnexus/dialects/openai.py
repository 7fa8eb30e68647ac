"""The OpenAI chat-completions wire format (JSON and SSE)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .._json import compact_json
from ..schemas import to_openai
from ..types import JSONObject, Tool, ToolResult, Usage
from .base import MalformedResponse, ToolUse, Turn, parse_arguments

__all__ = ["OpenAIDialect"]


class OpenAIDialect:
    name = "openai"
    system_in_messages = True

    def url(self, base_url: str) -> str:
        return base_url.rstrip("/") + "/chat/completions"

    def headers(self, api_key: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"}

    def tool_schemas(self, tools: Sequence[object]) -> list[JSONObject]:
        return to_openai([t for t in tools if isinstance(t, Tool)])

    def build_body(
        self,
        messages: list[JSONObject],
        tools: Sequence[JSONObject],
        *,
        model: str,
        system: str,
        stream: bool,
    ) -> JSONObject:
        body: JSONObject = {"model": model, "messages": messages}
        if tools:
            body["tools"] = list(tools)
            body["tool_choice"] = "auto"
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        return body

    def parse_response(self, body: object, *, turn: int) -> Turn:
        message = _first_message(body)
        assert isinstance(body, dict)
        raw_calls = message.get("tool_calls")
        tool_uses: list[ToolUse] = []
        if isinstance(raw_calls, list) and raw_calls:
            message = dict(message)
            message["tool_calls"], tool_uses = _tool_calls(raw_calls, turn)
            text = message.get("content") if isinstance(message.get("content"), str) else ""
        else:
            content = message.get("content")
            text = content if isinstance(content, str) else ""
        return Turn(
            text=text or "",
            tool_uses=tool_uses,
            usage=_usage(body.get("usage")),
            message=message,
            response=body,
        )

    def stream_parser(self, *, turn: int) -> _OpenAIStream:
        return _OpenAIStream(turn)

    def tool_results(self, results: Sequence[tuple[str, ToolResult]]) -> list[JSONObject]:
        return [
            {"role": "tool", "tool_call_id": call_id, "content": result.output}
            for call_id, result in results
        ]

    def tool_uses_in(self, message: JSONObject) -> list[ToolUse]:
        calls = message.get("tool_calls") if message.get("role") == "assistant" else None
        if not isinstance(calls, list):
            return []
        return _tool_calls(calls, 0)[1]

    def results_in(self, message: JSONObject) -> list[tuple[str, ToolResult]]:
        call_id = message.get("tool_call_id")
        if message.get("role") != "tool" or not isinstance(call_id, str):
            return []
        content = message.get("content")
        return [
            (call_id, ToolResult(content if isinstance(content, str) else compact_json(content)))
        ]

    def incomplete_text(self, message: JSONObject | None) -> str:
        content = message.get("content") if message else None
        return content if isinstance(content, str) else ""


def _first_message(body: object) -> JSONObject:
    choices = body.get("choices") if isinstance(body, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise MalformedResponse("response has no choices[0]")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise MalformedResponse("response has no choices[0].message")
    return message


def _tool_calls(raw_calls: list[Any], turn: int) -> tuple[list[JSONObject], list[ToolUse]]:
    """The calls with ids filled in, and the parsed ``ToolUse`` of each."""
    calls: list[JSONObject] = []
    uses: list[ToolUse] = []
    for index, raw in enumerate(raw_calls):
        call = dict(raw) if isinstance(raw, dict) else {}
        function = call.get("function")
        if not isinstance(function, dict):
            function = {}
        name = str(function.get("name") or "")
        if not call.get("id"):
            call["id"] = f"call_{turn}_{index}"
        args, error = parse_arguments(name, function.get("arguments"))
        calls.append(call)
        uses.append(ToolUse(str(call["id"]), name, args, error))
    return calls, uses


def _usage(raw: object) -> Usage:
    if not isinstance(raw, dict):
        return Usage()
    prompt = _int(raw.get("prompt_tokens"))
    completion = _int(raw.get("completion_tokens"))
    total = raw.get("total_tokens")
    return Usage(prompt, completion, _int(total) if total is not None else prompt + completion)


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


@dataclass(slots=True)
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class _OpenAIStream:
    """Assembles chat-completion chunks: text in order, tool calls by ``index``."""

    def __init__(self, turn: int) -> None:
        self._turn = turn
        self._text: list[str] = []
        self._calls: dict[int, _PartialCall] = {}
        self._usage: Usage | None = None
        self._usage_raw: object = None
        self._finish_reason: str | None = None

    def feed(self, event: JSONObject) -> list[str]:
        if isinstance(event.get("usage"), dict):
            self._usage_raw = event["usage"]
            self._usage = _usage(event["usage"])
        choices = event.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            return []
        choice = choices[0]
        if choice.get("finish_reason"):
            self._finish_reason = str(choice["finish_reason"])
        delta = choice.get("delta")
        if not isinstance(delta, dict):
            return []
        pieces = delta.get("tool_calls")
        for raw in pieces if isinstance(pieces, list) else ():
            if isinstance(raw, dict):
                self._add_call_piece(raw)
        content = delta.get("content")
        if isinstance(content, str) and content:
            self._text.append(content)
            return [content]
        return []

    def _add_call_piece(self, raw: JSONObject) -> None:
        index = raw.get("index")
        key = index if isinstance(index, int) else len(self._calls)
        call = self._calls.setdefault(key, _PartialCall())
        if raw.get("id"):
            call.id = str(raw["id"])
        function = raw.get("function")
        if isinstance(function, dict):
            if function.get("name"):
                call.name += str(function["name"])
            if function.get("arguments"):
                call.arguments.append(str(function["arguments"]))

    def finish(self) -> Turn:
        text = "".join(self._text)
        message: JSONObject = {"role": "assistant", "content": text}
        raw_calls = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": "".join(call.arguments)},
            }
            for _, call in sorted(self._calls.items())
        ]
        tool_uses: list[ToolUse] = []
        if raw_calls:
            calls, tool_uses = _tool_calls(raw_calls, self._turn)
            message = {"role": "assistant", "content": text or None, "tool_calls": calls}
        usage = self._usage or Usage()
        finish_reason = self._finish_reason or ("tool_calls" if tool_uses else "stop")
        response: JSONObject = {
            "choices": [{"message": message, "finish_reason": finish_reason}],
            "usage": self._usage_raw
            if isinstance(self._usage_raw, dict)
            else {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
            "streamed": True,
        }
        return Turn(text=text, tool_uses=tool_uses, usage=usage, message=message, response=response)
