"""The OpenAI Responses wire format (JSON and SSE).

The transcript is the API's own list of input items: the prompt as ``{"role": "user",
"content": prompt}``, every output item of a reply as received (``message``, ``function_call``,
``reasoning``, ...) and each tool result as a ``function_call_output`` item. Requests are sent
with ``store: false``, so the provider keeps nothing: when items go back, their ``id`` (which
refers to stored items) is left out and a ``reasoning`` item without ``encrypted_content``
(which cannot be resolved without the store) is not sent at all; the transcript keeps both
whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._json import compact_json
from ..errors import LLMError
from ..schemas import responses_declarations
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

__all__ = ["ResponsesDialect"]


class ResponsesDialect:
    name = "responses"
    system_in_messages = False

    def url(self, base_url: str) -> str:
        return base_url.rstrip("/") + "/responses"

    def headers(self, api_key: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"}

    def tool_schemas(self, tools: Sequence[object], *, copy: bool = True) -> list[JSONObject]:
        return responses_declarations([t for t in tools if isinstance(t, Tool)], copy=copy)

    def build_body(
        self,
        messages: list[JSONObject],
        tools: Sequence[JSONObject],
        *,
        model: str,
        system: str,
        stream: bool,
    ) -> JSONObject:
        body: JSONObject = {"model": model, "input": sendable_items(messages)}
        if system:
            body["instructions"] = system
        if tools:
            body["tools"] = list(tools)
        body["store"] = False
        if stream:
            body["stream"] = True
        return body

    def parse_response(self, body: object, *, turn: int) -> Turn:
        output = body.get("output") if isinstance(body, dict) else None
        if not isinstance(output, list):
            raise MalformedResponse("response has no output list")
        assert isinstance(body, dict)
        status = body.get("status")
        if status == "failed":
            raise _failed(body)
        items: list[JSONObject] = []
        texts: list[str] = []
        refusals: list[str] = []
        uses: list[ToolUse] = []
        message: JSONObject | None = None
        for item in output:
            if not isinstance(item, dict):
                raise MalformedResponse(f"output item {len(items)} is not an object")
            kind = item.get("type")
            if kind == "message":
                message = item
                for part in _parts(item):
                    if part.get("type") == "output_text" and isinstance(part.get("text"), str):
                        texts.append(part["text"])
                    elif part.get("type") == "refusal" and isinstance(part.get("refusal"), str):
                        refusals.append(part["refusal"])
            elif kind == "function_call":
                uses.append(_tool_use(item, turn, len(uses)))
            items.append(item)
        text = "".join(texts)
        if refusals:
            stop_reason: str | None = "refusal"
            text = text or "".join(refusals)
        else:
            stop_reason = _stop_reason(status, body.get("incomplete_details"), bool(uses))
        return Turn(
            text=text,
            tool_uses=uses,
            usage=_usage(body.get("usage")),
            message=message,
            response=body,
            stop_reason=stop_reason,
            items=items,
        )

    def stream_parser(self, *, turn: int) -> _ResponsesStream:
        return _ResponsesStream(self, turn)

    def tool_results(self, results: Sequence[tuple[str, ToolResult]]) -> list[JSONObject]:
        return [
            {"type": "function_call_output", "call_id": call_id, "output": result.output}
            for call_id, result in results
        ]

    def tool_uses_in(self, message: JSONObject) -> list[ToolUse]:
        if message.get("type") != "function_call":
            return []
        return [_tool_use(message, 0, 0)]

    def results_in(self, message: JSONObject) -> list[tuple[str, ToolResult]]:
        call_id = message.get("call_id")
        if message.get("type") != "function_call_output" or not isinstance(call_id, str):
            return []
        output = message.get("output")
        return [(call_id, ToolResult(output if isinstance(output, str) else compact_json(output)))]

    def incomplete_text(self, message: JSONObject | None) -> str:
        if message is None:
            return ""
        content = message.get("content")
        if isinstance(content, str):
            return content
        return "".join(
            part["text"]
            for part in _parts(message)
            if part.get("type") == "output_text" and isinstance(part.get("text"), str)
        )


def sendable_items(messages: Sequence[JSONObject]) -> list[JSONObject]:
    """The transcript as it can be sent with ``store: false``: items without their ``id``, and
    no ``reasoning`` item that lacks ``encrypted_content``."""
    out: list[JSONObject] = []
    for item in messages:
        if item.get("type") == "reasoning" and not item.get("encrypted_content"):
            continue
        out.append({k: v for k, v in item.items() if k != "id"} if "id" in item else item)
    return out


def _parts(item: JSONObject) -> list[JSONObject]:
    content = item.get("content")
    if not isinstance(content, list):
        return []
    return [part for part in content if isinstance(part, dict)]


def _tool_use(item: JSONObject, turn: int, index: int) -> ToolUse:
    name = str(item.get("name") or "")
    call_id = item.get("call_id")
    args, error = parse_arguments(name, item.get("arguments"))
    if isinstance(call_id, str) and call_id:
        return ToolUse(call_id, name, args, error)
    return ToolUse(f"call_{turn}_{index}", name, args, error, named=False)


_INCOMPLETE = {"max_output_tokens": "length", "content_filter": "content_filter"}


def _stop_reason(status: object, details: object, calls: bool) -> str | None:
    if status == "completed":
        return "tool_calls" if calls else "stop"
    if status == "incomplete":
        reason = details.get("reason") if isinstance(details, dict) else None
        if isinstance(reason, str):
            return _INCOMPLETE.get(reason, reason)
        return "incomplete"
    if calls:
        return "tool_calls"
    return status if isinstance(status, str) else None


def _failed(body: JSONObject) -> LLMError:
    error = body.get("error")
    message = error.get("message") if isinstance(error, dict) else None
    detail = compact_json(error) if error is not None else compact_json(body)
    return LLMError(
        f"the response failed: {message if isinstance(message, str) else detail}", body=detail
    )


def _usage(raw: object) -> Usage:
    if not isinstance(raw, dict):
        return Usage()
    prompt = _int(raw.get("input_tokens"))
    completion = _int(raw.get("output_tokens"))
    total = raw.get("total_tokens")
    return Usage(prompt, completion, _int(total) if total is not None else prompt + completion)


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


class _ResponsesStream:
    """Rebuilds the ``response`` object of an event stream and parses it like a JSON reply.

    The finished items of ``response.output_item.done`` are the reply's output (by
    ``output_index``); the ending event (``response.completed`` or ``response.incomplete``)
    gives the rest (status, usage, details) and, for items no ``done`` event carried, its own
    output.
    """

    def __init__(self, dialect: ResponsesDialect, turn: int) -> None:
        self._dialect = dialect
        self._turn = turn
        self._done: dict[int, JSONObject] = {}
        self._calls: dict[str, tuple[str, str, int]] = {}
        """Per function_call item id: its call id, name and position among the reply's calls."""
        self._final: JSONObject | None = None

    def feed(self, event: JSONObject) -> list[StreamItem]:
        kind = event.get("type")
        if kind == "response.output_text.delta":
            delta = event.get("delta")
            return [delta] if isinstance(delta, str) and delta else []
        if kind == "response.function_call_arguments.delta":
            return self._arguments(event)
        if kind == "response.output_item.added":
            item = event.get("item")
            if isinstance(item, dict) and item.get("type") == "function_call":
                position = len(self._calls)
                call_id = item.get("call_id")
                if not isinstance(call_id, str) or not call_id:
                    call_id = f"call_{self._turn}_{position}"
                key = str(item.get("id") or f"#{event.get('output_index')}")
                self._calls[key] = (call_id, str(item.get("name") or ""), position)
        elif kind == "response.output_item.done":
            item, index = event.get("item"), event.get("output_index")
            if isinstance(item, dict):
                self._done[index if type(index) is int else len(self._done)] = item
        elif kind in ("response.completed", "response.incomplete"):
            response = event.get("response")
            if not isinstance(response, dict):
                raise MalformedResponse(f"a {kind} event without its response object")
            self._final = response
        elif kind == "response.failed":
            response = event.get("response")
            raise _failed(response if isinstance(response, dict) else event)
        elif kind == "error":
            raise stream_error(event)
        return []

    def _arguments(self, event: JSONObject) -> list[StreamItem]:
        delta = event.get("delta")
        if not isinstance(delta, str) or not delta:
            return []
        key = event.get("item_id")
        found = self._calls.get(str(key)) if key else None
        if found is None:
            found = self._calls.get(f"#{event.get('output_index')}")
        if found is None:
            return []
        call_id, name, position = found
        return [ArgumentsDelta(call_id, name, position, delta)]

    def finish(self, *, done: bool = False) -> Turn:
        if self._final is None:
            raise MalformedResponse(
                f"{STREAM_ENDED_EARLY}: no response.completed or response.incomplete event arrived"
            )
        body: JSONObject = dict(self._final)
        output: Any = body.get("output")
        merged = dict(enumerate(output)) if isinstance(output, list) else {}
        merged.update(self._done)
        body["output"] = [item for _, item in sorted(merged.items())]
        body["streamed"] = True
        return self._dialect.parse_response(body, turn=self._turn)
