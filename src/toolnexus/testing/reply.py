"""Reply builders for ``StubLLMServer``.

A ``Reply`` is semantic: the server renders it for the style of the request (a path ending in
``/chat/completions`` is openai, ``/messages`` anthropic, ``/responses`` responses,
``:generateContent``/``:streamGenerateContent`` gemini) and for its mode (``"stream": true`` in
the JSON body, or gemini's streaming method, means SSE; anything else JSON), so one script
drives a plain and a streamed run in any style. Below, ``<n>`` is the request's index on the server,
``<model>`` the request's ``"model"`` (``"stub-model"`` when it has none), and ``(p, c)`` the
``usage`` given to the builder. JSON is compact (no spaces, unescaped Unicode).

**OpenAI JSON**: ``{"id": "chatcmpl-stub-<n>", "object": "chat.completion", "model": <model>,
"choices": [{"index": 0, "message": {...}, "finish_reason": ...}], "usage": {"prompt_tokens": p,
"completion_tokens": c, "total_tokens": p + c}}``. A text reply's message is ``{"role":
"assistant", "content": <text>}`` with ``"stop"``; a tool-call reply's message is ``{"role":
"assistant", "content": <text or null>, "tool_calls": [{"id", "type": "function", "function":
{"name", "arguments": <JSON string>}}]}`` with ``"tool_calls"``. Default ids: ``call_1``,
``call_2``, ... numbered across the server's replies (a second reply's first call is
``call_3`` when the first had two), so no id is reused within a server's life; explicit ids are
sent as given. ``usage`` appears only when given.

**OpenAI SSE** (``data: <json>`` then a blank line; every chunk carries ``"id"``, ``"object":
"chat.completion.chunk"`` and ``"model"``): one chunk per text piece with
``choices[0].delta.content``; per tool call a chunk with ``delta.tool_calls[0]`` = ``{"index",
"id", "type": "function", "function": {"name", "arguments": ""}}`` followed by chunks with only
``{"index", "function": {"arguments": <piece>}}``; a chunk with an empty delta and the
``finish_reason``; ``{"choices": [], "usage": {...}}`` when usage is given; ``data: [DONE]``.

**Anthropic JSON**: ``{"id": "msg_stub_<n>", "type": "message", "role": "assistant", "model":
<model>, "content": [{"type": "text", "text"} if the text is non-empty, then {"type":
"tool_use", "id", "name", "input"} per call], "stop_reason": "end_turn" | "tool_use", "usage":
{"input_tokens": p, "output_tokens": c}}``. Default ids ``toolu_1``, ``toolu_2``, ...
(numbered across replies, as above); a call whose args were given as a string has that string
verbatim as ``input``. ``usage`` appears only when given.

**Anthropic SSE** (``event: <type>``, ``data: <json>``, blank line): ``message_start`` (message
with id, type, role, model, ``content: []``, ``usage: {"input_tokens": p, "output_tokens":
1}``); per block ``content_block_start`` (``{"type": "text", "text": ""}`` or ``{"type":
"tool_use", "id", "name", "input": {}}``), ``content_block_delta`` events (``text_delta`` pieces,
or ``input_json_delta`` pieces of the arguments string), ``content_block_stop``;
``message_delta`` (``delta.stop_reason``, ``usage: {"output_tokens": c}``); ``message_stop``.
Without usage, ``p`` and ``c`` are 0.

**Responses JSON**: ``{"id": "resp_stub_<n>", "object": "response", "created_at": 0, "status":
"completed", "error": null, "incomplete_details": null, "model": <model>, "output": [...]}``
with a ``message`` item (``id`` ``msg_stub_<n>``, one ``output_text`` part) when there is text,
then a ``function_call`` item per call (``id`` ``fc_stub_<n>_<k>``, ``call_id`` default
``call_<k>``, ``arguments`` string); ``usage`` ``{"input_tokens", "output_tokens",
"total_tokens"}`` only when given.

**Responses SSE** (``event: <type>``, ``data: <json>`` with a ``sequence_number``):
``response.created``, ``response.in_progress``; per item ``response.output_item.added``, then
``response.content_part.added``, ``response.output_text.delta`` pieces,
``response.output_text.done``, ``response.content_part.done`` (message) or
``response.function_call_arguments.delta`` pieces and ``.done`` (call), then
``response.output_item.done`` with the whole item; ``response.completed`` with the JSON body.

**Gemini JSON**: ``{"candidates": [{"content": {"role": "model", "parts": [{"text"} if there is
text, then {"functionCall": {"name", "args", "id" only when given}} per call]}, "finishReason":
"STOP", "index": 0}], "usageMetadata": {"promptTokenCount": p, "candidatesTokenCount": c,
"totalTokenCount": p + c} (only when given), "modelVersion": <model from the path>,
"responseId": "stub-<n>"}``.

**Gemini SSE** (``data: <json>`` lines ended by CRLF): one such response per text piece, then
one with the function calls (or an empty text part) carrying ``finishReason`` and the usage.

**Pieces.** Text is split into words that keep their trailing whitespace (``"Hello there"`` ->
``"Hello "``, ``"there"``; leading whitespace joins the first word) unless ``chunks`` is given.
An arguments string of two or more characters is split into pieces of ``min(16, ceil(len / 2))``
characters, so there are always at least two.

**Other replies.** ``error`` and ``raw_*`` are sent as given whatever the style or mode;
``drop`` closes the connection without a response. ``.break_after(n)`` sends the status line,
the headers and the first ``n`` SSE events (for a body that is not SSE: the first half of it,
with the full ``Content-Length``), then closes the connection. ``.with_delay(s)`` waits ``s``
seconds before the status line. ``.with_headers`` adds headers, replacing same-named ones.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from .._json import compact_json

__all__ = [
    "Reply",
    "ToolCallSpec",
    "call",
    "drop",
    "error",
    "raw_bytes",
    "raw_json",
    "raw_sse",
    "text",
    "tool_calls",
]

Style = Literal["openai", "anthropic", "responses", "gemini"]

_JSON = "application/json"
_TEXT = "text/plain; charset=utf-8"
_SSE = "text/event-stream"
_WORDS = re.compile(r"\s*\S+\s*|\s+")


@dataclass(frozen=True)
class ToolCallSpec:
    """One scripted tool call; build it with ``call``."""

    name: str
    arguments: str
    """The wire ``arguments`` string (compact JSON, or the verbatim string given)."""
    input: Mapping[str, object] | str
    """The Anthropic ``input``: the args object, or the verbatim string given."""
    id: str | None = None


@dataclass(frozen=True)
class _Message:
    text: str | None
    calls: tuple[ToolCallSpec, ...]
    usage: tuple[int, int] | None
    chunks: tuple[str, ...] | None


@dataclass(frozen=True)
class _Fixed:
    status: int
    content_type: str
    body: bytes


@dataclass(frozen=True)
class _Events:
    status: int
    events: tuple[bytes, ...]


@dataclass(frozen=True)
class _Drop:
    pass


@dataclass(frozen=True)
class Reply:
    """A scripted answer; build it with the functions of this module, not directly."""

    content: _Message | _Fixed | _Events | _Drop
    headers: tuple[tuple[str, str], ...] = ()
    delay: float = 0.0
    broken_after: int | None = None
    """Events (or, for a plain body, half of it) sent before the connection is closed."""

    def with_delay(self, seconds: float) -> Reply:
        """The same reply, sent after waiting ``seconds`` (before the status line)."""
        if not isinstance(seconds, int | float) or seconds < 0 or math.isnan(seconds):
            raise ValueError(f"with_delay: seconds must be a number >= 0, got {seconds!r}")
        return dataclasses.replace(self, delay=float(seconds))

    def break_after(self, events: int) -> Reply:
        """The same reply, cut off: ``events`` SSE events are sent, then the connection closes."""
        if not isinstance(events, int) or isinstance(events, bool) or events < 0:
            raise ValueError(f"break_after: events must be an int >= 0, got {events!r}")
        return dataclasses.replace(self, broken_after=events)

    def with_headers(self, headers: Mapping[str, str]) -> Reply:
        """The same reply with extra response headers (replacing same-named ones)."""
        return dataclasses.replace(self, headers=self.headers + _header_pairs(headers, "headers"))


def call(
    name: str, args: Mapping[str, object] | str | None = None, *, id: str | None = None
) -> ToolCallSpec:
    """A tool call. ``args`` as a mapping is sent as compact JSON; as a str, verbatim."""
    _require_str(name, "call: name")
    if id is not None:
        _require_str(id, "call: id")
    if args is None:
        args = {}
    if isinstance(args, str):
        return ToolCallSpec(name=name, arguments=args, input=args, id=id)
    if not isinstance(args, Mapping):
        raise TypeError(f"call({name!r}): args must be a dict or a str, got {type(args).__name__}")
    try:
        arguments = compact_json(dict(args))
    except (TypeError, ValueError) as exc:
        raise TypeError(f"call({name!r}): args are not JSON-serializable: {exc}") from None
    return ToolCallSpec(name=name, arguments=arguments, input=json.loads(arguments), id=id)


def text(
    content: str, *, usage: tuple[int, int] | None = None, chunks: list[str] | None = None
) -> Reply:
    """A final text answer. ``chunks`` sets the streamed pieces; they must join to ``content``."""
    _require_str(content, "text: content")
    pieces: tuple[str, ...] | None = None
    if chunks is not None:
        if not isinstance(chunks, list | tuple) or not all(isinstance(c, str) for c in chunks):
            raise TypeError(f"text: chunks must be a list of str, got {chunks!r}")
        if "".join(chunks) != content:
            raise ValueError(f"text: chunks {chunks!r} do not join to content {content!r}")
        pieces = tuple(chunks)
    return Reply(_Message(content, (), _check_usage(usage), pieces))


def tool_calls(
    *calls: ToolCallSpec, text: str | None = None, usage: tuple[int, int] | None = None
) -> Reply:
    """A tool turn: one or more calls, optionally preceded by text."""
    if not calls:
        raise ValueError("tool_calls: give at least one call(...)")
    for spec in calls:
        if not isinstance(spec, ToolCallSpec):
            raise TypeError(f"tool_calls: expected call(...) values, got {spec!r}")
    if text is not None:
        _require_str(text, "tool_calls: text")
    return Reply(_Message(text, calls, _check_usage(usage), None))


def error(
    status: int, body: str | Mapping[str, object] = "", *, headers: Mapping[str, str] | None = None
) -> Reply:
    """An error status with ``body`` (a mapping is sent as JSON, a str as text/plain)."""
    _check_status(status, "error")
    if isinstance(body, str):
        content = _Fixed(status, _TEXT, body.encode())
    elif isinstance(body, Mapping):
        content = _Fixed(status, _JSON, _encode_json(dict(body), "error"))
    else:
        raise TypeError(f"error: body must be a str or a dict, got {type(body).__name__}")
    return Reply(content, _header_pairs(headers or {}, "error: headers"))


def drop() -> Reply:
    """Close the connection without writing any response."""
    return Reply(_Drop())


def raw_json(body: object, *, status: int = 200, headers: Mapping[str, str] | None = None) -> Reply:
    """``body`` as compact JSON with that status, whatever the style or mode."""
    _check_status(status, "raw_json")
    content = _Fixed(status, _JSON, _encode_json(body, "raw_json"))
    return Reply(content, _header_pairs(headers or {}, "raw_json: headers"))


def raw_sse(events: Sequence[Mapping[str, object] | str], *, status: int = 200) -> Reply:
    """A verbatim stream: a dict is sent as ``data: <json>``, a str as is; each + a blank line."""
    _check_status(status, "raw_sse")
    if isinstance(events, str | bytes):
        raise TypeError("raw_sse: events must be a list of dicts or strs, not a single str")
    encoded: list[bytes] = []
    for event in events:
        if isinstance(event, str):
            encoded.append(f"{event}\n\n".encode())
        elif isinstance(event, Mapping):
            data = _encode_json(dict(event), "raw_sse").decode()
            encoded.append(f"data: {data}\n\n".encode())
        else:
            raise TypeError(f"raw_sse: events must be dicts or strs, got {event!r}")
    return Reply(_Events(status, tuple(encoded)))


def raw_bytes(body: bytes, *, status: int = 200, content_type: str = "text/plain") -> Reply:
    """``body`` exactly, with that status and Content-Type."""
    _check_status(status, "raw_bytes")
    if not isinstance(body, bytes | bytearray):
        raise TypeError(f"raw_bytes: body must be bytes, got {type(body).__name__}")
    _require_str(content_type, "raw_bytes: content_type")
    return Reply(_Fixed(status, content_type, bytes(body)))


# --- validation ---------------------------------------------------------------------------


def _require_str(value: object, what: str) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, got {type(value).__name__}")


def _check_status(status: object, where: str) -> None:
    if not isinstance(status, int) or isinstance(status, bool) or not 100 <= status <= 599:
        raise ValueError(f"{where}: status must be an int in 100..599, got {status!r}")


def _check_usage(usage: object) -> tuple[int, int] | None:
    if usage is None:
        return None
    if (
        not isinstance(usage, tuple | list)
        or len(usage) != 2
        or not all(isinstance(u, int) and not isinstance(u, bool) and u >= 0 for u in usage)
    ):
        raise ValueError(f"usage must be (prompt_tokens, completion_tokens) ints >= 0: {usage!r}")
    return (usage[0], usage[1])


def _header_pairs(headers: Mapping[str, str], where: str) -> tuple[tuple[str, str], ...]:
    if not isinstance(headers, Mapping):
        raise TypeError(f"{where} must be a dict of str to str, got {type(headers).__name__}")
    for key, value in headers.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError(f"{where} must map str to str, got {key!r}: {value!r}")
    return tuple(headers.items())


def _encode_json(value: object, where: str) -> bytes:
    try:
        return compact_json(value).encode()
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{where}: body is not JSON-serializable: {exc}") from None


# --- rendering ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Wire:
    """A rendered reply: a plain body, or SSE events (each ending with its blank line)."""

    status: int
    headers: dict[str, str]
    body: bytes = b""
    events: tuple[bytes, ...] | None = None


def _render(
    reply: Reply, *, style: Style, stream: bool, model: object, n: int, ids_from: int = 0
) -> _Wire | None:
    """How the server answers ``reply``; ``None`` means close the connection without one.

    Default tool-call ids are numbered after ``ids_from`` (the calls the server already sent)."""
    content = reply.content
    if isinstance(content, _Drop):
        return None
    if isinstance(content, _Fixed):
        wire = _Wire(content.status, {"Content-Type": content.content_type}, body=content.body)
    elif isinstance(content, _Events):
        wire = _Wire(content.status, _sse_headers(), events=content.events)
    elif stream:
        render_sse = _SSE_RENDERERS[style]
        wire = _Wire(200, _sse_headers(), events=tuple(render_sse(content, model, n, ids_from)))
    else:
        render_json = _JSON_RENDERERS[style]
        wire = _Wire(
            200,
            {"Content-Type": _JSON},
            body=compact_json(render_json(content, model, n, ids_from)).encode(),
        )
    for key, value in reply.headers:
        for existing in [k for k in wire.headers if k.lower() == key.lower()]:
            del wire.headers[existing]
        wire.headers[key] = value
    return wire


def _sse_headers() -> dict[str, str]:
    return {"Content-Type": _SSE, "Cache-Control": "no-cache"}


def _text_pieces(message: _Message) -> list[str]:
    if message.chunks is not None:
        return list(message.chunks)
    return _WORDS.findall(message.text or "")


def _argument_pieces(arguments: str) -> list[str]:
    if len(arguments) < 2:
        return [arguments] if arguments else []
    size = min(16, (len(arguments) + 1) // 2)
    return [arguments[i : i + size] for i in range(0, len(arguments), size)]


def _call_id(spec: ToolCallSpec, position: int, prefix: str) -> str:
    return spec.id if spec.id is not None else f"{prefix}{position}"


def _openai_usage(usage: tuple[int, int]) -> dict[str, int]:
    prompt, completion = usage
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": sum(usage)}


def _openai_json(message: _Message, model: object, n: int, ids_from: int = 0) -> dict[str, object]:
    reply: dict[str, object] = {"role": "assistant", "content": message.text}
    if message.calls:
        reply["tool_calls"] = [
            {
                "id": _call_id(spec, ids_from + i, "call_"),
                "type": "function",
                "function": {"name": spec.name, "arguments": spec.arguments},
            }
            for i, spec in enumerate(message.calls, start=1)
        ]
    finish = "tool_calls" if message.calls else "stop"
    body: dict[str, object] = {
        "id": f"chatcmpl-stub-{n}",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": reply, "finish_reason": finish}],
    }
    if message.usage is not None:
        body["usage"] = _openai_usage(message.usage)
    return body


def _openai_sse(message: _Message, model: object, n: int, ids_from: int = 0) -> list[bytes]:
    envelope = {"id": f"chatcmpl-stub-{n}", "object": "chat.completion.chunk", "model": model}

    def chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return f"data: {compact_json({**envelope, 'choices': [choice]})}\n\n".encode()

    out = [chunk({"content": piece}) for piece in _text_pieces(message)]
    for index, spec in enumerate(message.calls):
        call_id = _call_id(spec, ids_from + index + 1, "call_")
        function = {"name": spec.name, "arguments": ""}
        first = {"index": index, "id": call_id, "type": "function", "function": function}
        out.append(chunk({"tool_calls": [first]}))
        for piece in _argument_pieces(spec.arguments):
            out.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
    out.append(chunk({}, "tool_calls" if message.calls else "stop"))
    if message.usage is not None:
        usage = {**envelope, "choices": [], "usage": _openai_usage(message.usage)}
        out.append(f"data: {compact_json(usage)}\n\n".encode())
    out.append(b"data: [DONE]\n\n")
    return out


def _tool_use(spec: ToolCallSpec, position: int, tool_input: object) -> dict[str, object]:
    tool_id = _call_id(spec, position, "toolu_")
    return {"type": "tool_use", "id": tool_id, "name": spec.name, "input": tool_input}


def _anthropic_json(
    message: _Message, model: object, n: int, ids_from: int = 0
) -> dict[str, object]:
    content: list[dict[str, object]] = []
    if message.text:
        content.append({"type": "text", "text": message.text})
    content += [
        _tool_use(spec, ids_from + i, spec.input) for i, spec in enumerate(message.calls, start=1)
    ]
    body: dict[str, object] = {
        "id": f"msg_stub_{n}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if message.calls else "end_turn",
    }
    if message.usage is not None:
        body["usage"] = {"input_tokens": message.usage[0], "output_tokens": message.usage[1]}
    return body


def _anthropic_sse(message: _Message, model: object, n: int, ids_from: int = 0) -> list[bytes]:
    prompt, completion = message.usage or (0, 0)
    head = {"id": f"msg_stub_{n}", "type": "message", "role": "assistant", "model": model}
    usage = {"input_tokens": prompt, "output_tokens": 1}
    events: list[dict[str, object]] = [
        {"type": "message_start", "message": {**head, "content": [], "usage": usage}}
    ]
    blocks: list[tuple[dict[str, object], list[dict[str, object]]]] = []
    if message.text:
        text_deltas: list[dict[str, object]] = [
            {"type": "text_delta", "text": p} for p in _text_pieces(message)
        ]
        blocks.append(({"type": "text", "text": ""}, text_deltas))
    for position, spec in enumerate(message.calls, start=1):
        json_deltas: list[dict[str, object]] = [
            {"type": "input_json_delta", "partial_json": p}
            for p in _argument_pieces(spec.arguments)
        ]
        blocks.append((_tool_use(spec, ids_from + position, {}), json_deltas))
    for index, (start, deltas) in enumerate(blocks):
        events.append({"type": "content_block_start", "index": index, "content_block": start})
        events.extend({"type": "content_block_delta", "index": index, "delta": d} for d in deltas)
        events.append({"type": "content_block_stop", "index": index})
    stop_reason = "tool_use" if message.calls else "end_turn"
    delta = {"stop_reason": stop_reason}
    events.append({"type": "message_delta", "delta": delta, "usage": {"output_tokens": completion}})
    events.append({"type": "message_stop"})
    return [f"event: {e['type']}\ndata: {compact_json(e)}\n\n".encode() for e in events]


def _responses_message(text: str, n: int, status: str = "completed") -> dict[str, object]:
    part = {"type": "output_text", "text": text, "annotations": []}
    return {
        "type": "message",
        "id": f"msg_stub_{n}",
        "status": status,
        "role": "assistant",
        "content": [part] if status == "completed" else [],
    }


def _responses_call(
    spec: ToolCallSpec, position: int, n: int, status: str = "completed", ids_from: int = 0
) -> dict[str, object]:
    return {
        "type": "function_call",
        "id": f"fc_stub_{n}_{position}",
        "call_id": _call_id(spec, ids_from + position, "call_"),
        "name": spec.name,
        "arguments": spec.arguments if status == "completed" else "",
        "status": status,
    }


def _responses_json(
    message: _Message, model: object, n: int, ids_from: int = 0
) -> dict[str, object]:
    output: list[dict[str, object]] = []
    if message.text or (message.text is not None and not message.calls):
        output.append(_responses_message(message.text, n))
    output += [
        _responses_call(spec, i, n, ids_from=ids_from)
        for i, spec in enumerate(message.calls, start=1)
    ]
    body: dict[str, object] = {
        "id": f"resp_stub_{n}",
        "object": "response",
        "created_at": 0,
        "status": "completed",
        "error": None,
        "incomplete_details": None,
        "model": model,
        "output": output,
    }
    if message.usage is not None:
        prompt, completion = message.usage
        body["usage"] = {
            "input_tokens": prompt,
            "output_tokens": completion,
            "total_tokens": prompt + completion,
        }
    return body


def _responses_sse(message: _Message, model: object, n: int, ids_from: int = 0) -> list[bytes]:
    final = _responses_json(message, model, n, ids_from)
    start = {**final, "status": "in_progress", "output": []}
    start.pop("usage", None)
    events: list[dict[str, object]] = [
        {"type": "response.created", "response": start},
        {"type": "response.in_progress", "response": start},
    ]
    output = final["output"]
    assert isinstance(output, list)
    for index, item in enumerate(output):
        item_id = item["id"]
        if item["type"] == "message":
            text = str(item["content"][0]["text"])
            part: dict[str, object] = {"type": "output_text", "text": "", "annotations": []}
            where = {"item_id": item_id, "output_index": index, "content_index": 0}
            events.append(
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": _responses_message("", n, "in_progress"),
                }
            )
            events.append({"type": "response.content_part.added", **where, "part": part})
            events += [
                {"type": "response.output_text.delta", **where, "delta": piece, "logprobs": []}
                for piece in _text_pieces(message)
            ]
            events.append({"type": "response.output_text.done", **where, "text": text})
            events.append(
                {"type": "response.content_part.done", **where, "part": {**part, "text": text}}
            )
        else:
            spec = message.calls[int(str(item_id).rpartition("_")[2]) - 1]
            where = {"item_id": item_id, "output_index": index}
            position = int(str(item_id).rpartition("_")[2])
            events.append(
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": _responses_call(spec, position, n, "in_progress", ids_from),
                }
            )
            events += [
                {"type": "response.function_call_arguments.delta", **where, "delta": piece}
                for piece in _argument_pieces(spec.arguments)
            ]
            events.append(
                {
                    "type": "response.function_call_arguments.done",
                    **where,
                    "arguments": item["arguments"],
                }
            )
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    events.append({"type": "response.completed", "response": final})
    out = []
    for number, event in enumerate(events):
        event = {**event, "sequence_number": number}
        out.append(f"event: {event['type']}\ndata: {compact_json(event)}\n\n".encode())
    return out


def _gemini_envelope(model: object, n: int) -> dict[str, object]:
    return {"modelVersion": model, "responseId": f"stub-{n}"}


def _gemini_usage(usage: tuple[int, int]) -> dict[str, int]:
    prompt, completion = usage
    return {
        "promptTokenCount": prompt,
        "candidatesTokenCount": completion,
        "totalTokenCount": prompt + completion,
    }


def _gemini_call(spec: ToolCallSpec) -> dict[str, object]:
    call: dict[str, object] = {"name": spec.name, "args": spec.input}
    if spec.id is not None:  # Gemini gives calls no id unless asked to
        call["id"] = spec.id
    return {"functionCall": call}


def _gemini_json(message: _Message, model: object, n: int, ids_from: int = 0) -> dict[str, object]:
    """Gemini's reply; its calls carry no id unless the script gave one (``ids_from`` unused)."""
    parts: list[dict[str, object]] = []
    if message.text or (message.text is not None and not message.calls):
        parts.append({"text": message.text})
    parts += [_gemini_call(spec) for spec in message.calls]
    candidate = {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
    body: dict[str, object] = {"candidates": [candidate]}
    if message.usage is not None:
        body["usageMetadata"] = _gemini_usage(message.usage)
    return {**body, **_gemini_envelope(model, n)}


def _gemini_sse(message: _Message, model: object, n: int, ids_from: int = 0) -> list[bytes]:
    """Gemini's stream: one whole ``GenerateContentResponse`` per event (text pieces, then
    the calls and the finish reason), lines ended by CRLF as Google's servers end them."""
    chunks: list[list[dict[str, object]]] = [[{"text": p}] for p in _text_pieces(message)]
    calls = [_gemini_call(spec) for spec in message.calls]
    if calls or not chunks:
        chunks.append(calls or [{"text": ""}])
    out: list[bytes] = []
    for number, parts in enumerate(chunks):
        candidate: dict[str, object] = {"content": {"role": "model", "parts": parts}, "index": 0}
        last = number == len(chunks) - 1
        if last:
            candidate["finishReason"] = "STOP"
        body: dict[str, object] = {"candidates": [candidate]}
        if message.usage is not None:
            prompt, completion = message.usage
            body["usageMetadata"] = _gemini_usage((prompt, completion if last else 0))
        body.update(_gemini_envelope(model, n))
        out.append(f"data: {compact_json(body)}\r\n\r\n".encode())
    return out


_JSON_RENDERERS = {
    "openai": _openai_json,
    "anthropic": _anthropic_json,
    "responses": _responses_json,
    "gemini": _gemini_json,
}
_SSE_RENDERERS = {
    "openai": _openai_sse,
    "anthropic": _anthropic_sse,
    "responses": _responses_sse,
    "gemini": _gemini_sse,
}


def _error_wire(status: int, message: str) -> _Wire:
    """A JSON error the stub makes up itself (no route, no reply scripted, …)."""
    body = json.dumps({"error": f"StubLLMServer: {message}"}).encode()
    return _Wire(status, {"Content-Type": "application/json"}, body=body)
