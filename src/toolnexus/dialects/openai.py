"""The OpenAI chat-completions wire format (JSON and SSE)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .._json import compact_json
from ..schemas import openai_declarations
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

__all__ = ["OpenAIDialect"]


class OpenAIDialect:
    name = "openai"
    system_in_messages = True

    def url(self, base_url: str) -> str:
        return base_url.rstrip("/") + "/chat/completions"

    def headers(self, api_key: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"}

    def tool_schemas(self, tools: Sequence[object], *, copy: bool = True) -> list[JSONObject]:
        return openai_declarations([t for t in tools if isinstance(t, Tool)], copy=copy)

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
        choice = _choice_zero(body.get("choices") if isinstance(body, dict) else None)
        if choice is None:
            raise MalformedResponse("response has no choices[0]")
        message = choice.get("message")
        if not isinstance(message, dict):
            raise MalformedResponse("response has no choices[0].message")
        assert isinstance(body, dict)
        raw_calls = _call_list(message.get("tool_calls"), "choices[0].message.tool_calls")
        tool_uses: list[ToolUse] = []
        if raw_calls:
            message = dict(message)
            message["tool_calls"], tool_uses = _tool_calls(raw_calls, turn)
        content, refusal = message.get("content"), message.get("refusal")
        text = _content_text(content)
        refused = isinstance(refusal, str) and bool(refusal)
        if not text and refused:
            text = str(refusal)  # a refusal with no content is the answer
        finish_reason = choice.get("finish_reason")
        return Turn(
            text=text,
            tool_uses=tool_uses,
            usage=_usage(body.get("usage")),
            message=message,
            response=body,
            stop_reason="refusal"
            if refused
            else (finish_reason if isinstance(finish_reason, str) else None),
        )

    def stream_parser(self, *, turn: int) -> _OpenAIStream:
        return _OpenAIStream(self, turn)

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
        return _content_text(message.get("content") if message else None)


def _content_text(content: object) -> str:
    """The text of a message's ``content``: the string, or the text of its ``text`` parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part["text"]
            for part in content
            if isinstance(part, dict)
            and part.get("type") == "text"
            and isinstance(part.get("text"), str)
        )
    return ""


def _choice_zero(choices: object) -> JSONObject | None:
    """The element of ``choices`` whose ``index`` is 0, or the first one when it has none."""
    if not isinstance(choices, list) or not choices:
        return None
    for choice in choices:
        if isinstance(choice, dict) and type(choice.get("index")) is int and choice["index"] == 0:
            return choice
    first = choices[0]
    if isinstance(first, dict) and first.get("index") is None:
        return first
    return None


def _call_list(value: object, where: str) -> list[Any]:
    """The tool calls at ``where``: a list, or none when absent or null; anything else is a
    malformed reply."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise MalformedResponse(f"{where} is {type(value).__name__}, not a list")
    return value


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
        arguments = function.get("arguments")
        args, error = parse_arguments(name, arguments)
        if arguments is not None and not isinstance(arguments, str):
            # Some compatible servers send an object; the API takes a string back.
            call["function"] = {**function, "arguments": compact_json(arguments)}
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
    type: str = ""
    name: list[str] = field(default_factory=list)
    arguments: list[str] = field(default_factory=list)
    extra: JSONObject = field(default_factory=dict)
    """The call's other keys (``extra_content`` with a Gemini thought signature, say)."""
    function_extra: JSONObject = field(default_factory=dict)
    """The other keys of its ``function``."""

    def entry(self) -> JSONObject:
        call: JSONObject = {**self.extra, "id": self.id} if self.id else dict(self.extra)
        call["type"] = self.type or "function"
        function = {"name": "".join(self.name), "arguments": "".join(self.arguments)}
        call["function"] = {**self.function_extra, **function}
        return call


class _OpenAIStream:
    """Rebuilds the ``chat.completion`` body of a chunk stream (choice 0 only) and parses it
    like a JSON reply: text, refusal and reasoning in arrival order, tool calls by ``index``,
    the last usage seen. Every other field of the deltas (``reasoning``,
    ``reasoning_details``, a legacy ``function_call``, unknown keys of a tool call, content
    given as a list of parts) is merged into the message as it arrives (``_merge``), so the
    streamed message is the one the JSON path keeps."""

    def __init__(self, dialect: OpenAIDialect, turn: int) -> None:
        self._dialect = dialect
        self._turn = turn
        self._top: JSONObject = {}
        self._fields: dict[str, list[str]] = {name: [] for name in _DELTA_TEXT_FIELDS}
        self._calls: dict[int, _PartialCall] = {}
        self._parts: list[Any] | None = None
        """``content`` when it came as a list of parts."""
        self._extra: JSONObject = {}
        """The message's other fields."""
        self._usage: JSONObject | None = None
        self._finish_reason: object = None
        self._names: dict[int, tuple[int, str]] = {}
        """Per call index: how many name pieces were joined, and the name they make."""

    def feed(self, event: JSONObject) -> list[StreamItem]:
        top = self._top
        for key, value in event.items():
            if key not in _NOT_TOP_LEVEL:
                top[key] = value
            elif key == "error" and isinstance(value, dict):
                raise stream_error(event)
            elif key == "usage" and isinstance(value, dict):
                self._usage = value
        choice = _choice_zero(event.get("choices"))
        if choice is None:
            return []
        if choice.get("finish_reason"):
            self._finish_reason = choice["finish_reason"]
        delta = choice.get("delta")
        if not isinstance(delta, dict) or not delta:
            return []
        content: str | None = None
        pieces: list[StreamItem] = []
        # Only the keys a delta has, rather than a look-up for every field it might have.
        for key, value in delta.items():
            if key == "tool_calls":
                for raw in _call_list(value, "choices[0].delta.tool_calls"):
                    if isinstance(raw, dict):
                        piece = self._add_call_piece(raw)
                        if piece is not None:
                            pieces.append(piece)
            elif key in self._fields and isinstance(value, str):
                if not value:
                    continue
                if key == "content" and self._parts is not None:
                    _merge_parts(self._parts, [{"type": "text", "text": value}])
                else:
                    self._fields[key].append(value)
                if key == "content":
                    content = value
            elif key == "content" and isinstance(value, list):
                if self._parts is None:  # text that came as a string first is its first part
                    text = "".join(self._fields["content"])
                    self._parts = [{"type": "text", "text": text}] if text else []
                _merge_parts(self._parts, value)
                content = _content_text(value) or None
            elif key != "role" and key not in self._fields and value is not None:
                _merge(self._extra, key, value)
        if content is not None:
            pieces.insert(0, content)
        return pieces

    def _add_call_piece(self, raw: JSONObject) -> ArgumentsDelta | None:
        """Adds one ``tool_calls`` entry of a delta; returns its argument text as a delta."""
        index = raw.get("index")
        key = index if type(index) is int else len(self._calls)
        call = self._calls.setdefault(key, _PartialCall())
        if raw.get("id"):
            call.id = str(raw["id"])
        if isinstance(raw.get("type"), str):
            call.type = raw["type"]
        text: str | None = None
        function = raw.get("function")
        if isinstance(function, dict):
            if function.get("name"):
                call.name.append(str(function["name"]))
            arguments = function.get("arguments")
            if arguments is not None:
                text = arguments if isinstance(arguments, str) else compact_json(arguments)
                call.arguments.append(text)
            for name, value in function.items():
                if name not in ("name", "arguments") and value is not None:
                    _merge(call.function_extra, name, value)
        for name, value in raw.items():
            if name not in _CALL_KEYS and value is not None:
                _merge(call.extra, name, value)
        if text:
            call_id = call.id or f"call_{self._turn}_{key}"
            return ArgumentsDelta(call_id, self._name(key, call), key, text)
        return None

    def _name(self, key: int, call: _PartialCall) -> str:
        """The call's name so far, joined again only when a new piece of it came."""
        count, name = self._names.get(key, (0, ""))
        if count != len(call.name):
            name = "".join(call.name)
            self._names[key] = (len(call.name), name)
        return name

    def finish(self, *, done: bool = False) -> Turn:
        if self._finish_reason is None and not done:
            raise MalformedResponse(
                f"{STREAM_ENDED_EARLY}: no chunk carried a finish_reason and no [DONE] arrived"
            )
        text, refusal, reasoning = ("".join(self._fields[name]) for name in _DELTA_TEXT_FIELDS)
        content: str | list[Any] | None = text if self._parts is None else self._parts
        if self._calls or refusal or "function_call" in self._extra:
            content = content or None  # as the JSON path's ``null`` beside calls or a refusal
        message: JSONObject = {**self._extra, "role": "assistant", "content": content}
        if self._calls:
            message["tool_calls"] = [call.entry() for _, call in sorted(self._calls.items())]
        if refusal:
            message["refusal"] = refusal
        if reasoning:
            message["reasoning_content"] = reasoning
        body: JSONObject = {**self._top, "object": "chat.completion"}
        choice = {"index": 0, "message": message, "finish_reason": self._finish_reason}
        body["choices"] = [choice]
        if self._usage is not None:
            body["usage"] = self._usage
        body["streamed"] = True
        return self._dialect.parse_response(body, turn=self._turn)


_DELTA_TEXT_FIELDS = ("content", "refusal", "reasoning_content")
"""Delta fields concatenated into the message (``content`` first: it is the text)."""
_CALL_KEYS = frozenset({"index", "id", "type", "function"})
"""The keys of a tool-call delta read into ``_PartialCall`` fields of their own."""
_STREAMED_TEXT = frozenset(
    {"content", "text", "arguments", "name", "refusal", "reasoning", "reasoning_content"}
)
"""String fields that arrive in pieces: always joined (another string field that arrives
again with the same value, such as ``format`` on every ``reasoning_details`` piece, is kept
once; a different value is joined on)."""
_KEPT = frozenset({"index", "id", "type", "role"})
"""Fields that name a piece rather than carry its content: the last value counts."""


def _merge(into: JSONObject, key: str, value: object) -> None:
    """Merge one delta field into what the earlier deltas built (strings joined, objects merged
    key by key, lists by ``_merge_parts``; anything else replaced); ``null`` only stands in
    for a field no piece has given a value yet."""
    old = into.get(key)
    if value is None:
        into.setdefault(key, None)
        return
    if old is None or key in _KEPT:
        into[key] = _fresh(value)
    elif isinstance(old, str) and isinstance(value, str):
        if key in _STREAMED_TEXT or (value != old and old):
            into[key] = old + value
        elif not old:
            into[key] = value
    elif isinstance(old, dict) and isinstance(value, dict):
        for inner, item in value.items():
            _merge(old, inner, item)
    elif isinstance(old, list) and isinstance(value, list):
        _merge_parts(old, value)
    else:
        into[key] = _fresh(value)


def _merge_parts(parts: list[Any], pieces: list[Any]) -> None:
    """Merge a delta's list into the list built so far: a piece with an ``index`` into the
    element with that ``index``; else into the last element when both are objects of one
    ``type`` (the next piece of the same part), else appended."""
    for piece in pieces:
        if not isinstance(piece, dict):
            parts.append(piece)
            continue
        index = piece.get("index")
        if type(index) is int:
            same = [p for p in parts if isinstance(p, dict) and p.get("index") == index]
            target = same[0] if same else None
        else:
            last = parts[-1] if parts else None
            fits = isinstance(last, dict) and "index" not in last
            target = last if fits and last.get("type") == piece.get("type") else None  # type: ignore[union-attr]
        if target is None:
            parts.append(_fresh(piece))
        else:
            for key, value in piece.items():
                _merge(target, key, value)


def _fresh(value: object) -> Any:
    """A copy of a delta's value that merging can change without touching the event."""
    if isinstance(value, dict):
        return {k: _fresh(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_fresh(v) for v in value]
    return value


_NOT_TOP_LEVEL = frozenset({"choices", "usage", "object", "error"})
