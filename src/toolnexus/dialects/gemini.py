"""The Google Gemini API wire format (``generateContent``, JSON and SSE).

The transcript is the API's ``contents``: the prompt as ``{"role": "user", "parts": [{"text":
prompt}]}``, each reply's ``candidates[0].content`` as received (its parts keep ``thought`` and
``thoughtSignature``, which Gemini needs back with function calls), and the results of one tool
turn as one ``user`` content of ``functionResponse`` parts.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from .._json import compact_json, loads
from ..errors import LLMError
from ..schemas import gemini_declarations
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

__all__ = ["GeminiDialect"]

_FILTERED = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
    }
)
"""Finish reasons of a reply the provider filtered: ``content_filter``."""
_FAILED = frozenset(
    {
        "MALFORMED_FUNCTION_CALL",
        "UNEXPECTED_TOOL_CALL",
        "TOO_MANY_TOOL_CALLS",
        "MALFORMED_RESPONSE",
        "MISSING_THOUGHT_SIGNATURE",
    }
)
"""Finish reasons of a reply that cannot be used: ``LLMError``."""
_RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"
_DURATION = re.compile(r"\s*(\d{1,10}(?:\.\d{0,9})?)s\s*")


class GeminiDialect:
    name = "gemini"
    system_in_messages = False

    def url(self, base_url: str) -> str:
        """The ``models`` collection; ``model_urls`` gives a model's two endpoints."""
        return base_url.rstrip("/") + "/models"

    def model_urls(self, base_url: str, model: str) -> tuple[str, str]:
        """``(generateContent URL, streamGenerateContent URL)`` of ``model``."""
        base = base_url.rstrip("/")
        path = model if "/" in model else f"models/{model}"
        return f"{base}/{path}:generateContent", f"{base}/{path}:streamGenerateContent?alt=sse"

    def headers(self, api_key: str) -> dict[str, str]:
        return {"x-goog-api-key": api_key, "Content-Type": "application/json"}

    def tool_schemas(self, tools: Sequence[object], *, copy: bool = True) -> list[JSONObject]:
        return gemini_declarations([t for t in tools if isinstance(t, Tool)], copy=copy)

    def prompt_message(self, prompt: str | None) -> JSONObject:
        return {"role": "user", "parts": [{"text": prompt or ""}]}

    def build_body(
        self,
        messages: list[JSONObject],
        tools: Sequence[JSONObject],
        *,
        model: str,
        system: str,
        stream: bool,
    ) -> JSONObject:
        body: JSONObject = {"contents": messages}
        if system:
            body["systemInstruction"] = {"parts": [{"text": system}]}
        if tools:
            body["tools"] = [{"functionDeclarations": list(tools)}]
        return body

    def parse_response(self, body: object, *, turn: int) -> Turn:
        if not isinstance(body, dict):
            raise MalformedResponse("response is not an object")
        usage = _usage(body.get("usageMetadata"))
        candidates = body.get("candidates")
        if not isinstance(candidates, list) or not candidates:
            feedback = body.get("promptFeedback")
            if isinstance(feedback, dict) and feedback.get("blockReason"):
                return Turn("", [], usage, None, body, stop_reason="content_filter")
            raise MalformedResponse("response has no candidates and no promptFeedback.blockReason")
        candidate = candidates[0]
        if not isinstance(candidate, dict):
            raise MalformedResponse("candidates[0] is not an object")
        reason = candidate.get("finishReason")
        if reason in _FAILED:
            raise LLMError(
                f"the model's reply is unusable: finishReason {reason}"
                + _detail(candidate.get("finishMessage")),
                body=compact_json(body),
            )
        content = candidate.get("content")
        parts = content.get("parts") if isinstance(content, dict) else None
        if not isinstance(parts, list):
            parts = []
        text, uses = _read_parts(parts, turn)
        message = content if isinstance(content, dict) and parts else None
        stop_reason: str | None
        if reason == "STOP":
            stop_reason = "tool_calls" if uses else "stop"
        elif reason == "MAX_TOKENS":
            stop_reason = "length"
        elif reason in _FILTERED:
            stop_reason = "content_filter"
        elif isinstance(reason, str):
            stop_reason = reason
        else:
            stop_reason = "tool_calls" if uses else None
        return Turn(text, uses, usage, message, body, stop_reason=stop_reason)

    def stream_parser(self, *, turn: int) -> _GeminiStream:
        return _GeminiStream(self, turn)

    def call_results(self, results: Sequence[tuple[ToolUse, ToolResult]]) -> list[JSONObject]:
        """One ``user`` content with a ``functionResponse`` part per result, in the given
        order; ``id`` only for a call that had one."""
        if not results:
            return []
        parts: list[JSONObject] = []
        for use, result in results:
            response: JSONObject = {"name": use.name}
            if use.named:
                response["id"] = use.id
            key = "error" if result.is_error else "result"
            response["response"] = {key: result.output}
            parts.append({"functionResponse": response})
        return [{"role": "user", "parts": parts}]

    def tool_results(self, results: Sequence[tuple[str, ToolResult]]) -> list[JSONObject]:
        """Results known only by call id (the loop uses ``call_results``, which names them)."""
        return self.call_results([(ToolUse(i, "", {}), result) for i, result in results])

    def tool_uses_in(self, message: JSONObject) -> list[ToolUse]:
        parts = message.get("parts") if message.get("role") == "model" else None
        if not isinstance(parts, list):
            return []
        return _read_parts(parts, 0)[1]

    def results_in(self, message: JSONObject) -> list[tuple[str, ToolResult]]:
        parts = message.get("parts") if message.get("role") == "user" else None
        if not isinstance(parts, list):
            return []
        out: list[tuple[str, ToolResult]] = []
        for part in parts:
            response = part.get("functionResponse") if isinstance(part, dict) else None
            if not isinstance(response, dict):
                continue
            call_id = response.get("id")
            if not isinstance(call_id, str) or not call_id:
                call_id = f"call_0_{len(out)}"
            payload = response.get("response")
            payload = payload if isinstance(payload, dict) else {}
            is_error = "error" in payload and "result" not in payload
            value = payload.get("error" if is_error else "result", payload)
            output = value if isinstance(value, str) else compact_json(value)
            out.append((call_id, ToolResult(output, is_error=is_error)))
        return out

    def incomplete_text(self, message: JSONObject | None) -> str:
        parts = message.get("parts") if message else None
        return _read_parts(parts, 0)[0] if isinstance(parts, list) else ""

    def retry_delay(self, body: str) -> float | None:
        """Seconds an error body's ``RetryInfo`` asks to wait (``"45.8s"``), or ``None``."""
        if _RETRY_INFO not in body:
            return None
        try:
            data = loads(body)
        except ValueError:
            return None
        error = data.get("error") if isinstance(data, dict) else None
        details = error.get("details") if isinstance(error, dict) else None
        for detail in details if isinstance(details, list) else ():
            if isinstance(detail, dict) and detail.get("@type") == _RETRY_INFO:
                delay = detail.get("retryDelay")
                match = _DURATION.fullmatch(delay) if isinstance(delay, str) else None
                if match:
                    return float(match.group(1))
        return None


def _detail(message: object) -> str:
    return f": {message}" if isinstance(message, str) and message else ""


def _read_parts(parts: list[Any], turn: int) -> tuple[str, list[ToolUse]]:
    """The text (parts not marked ``thought``) and the function calls of a content's parts."""
    texts: list[str] = []
    uses: list[ToolUse] = []
    for part in parts:
        if not isinstance(part, dict):
            continue
        call = part.get("functionCall")
        if isinstance(call, dict):
            name = str(call.get("name") or "")
            args, error = parse_arguments(name, call.get("args"))
            call_id = call.get("id")
            if isinstance(call_id, str) and call_id:
                uses.append(ToolUse(call_id, name, args, error))
            else:
                uses.append(ToolUse(f"call_{turn}_{len(uses)}", name, args, error, named=False))
        elif isinstance(part.get("text"), str) and not part.get("thought"):
            texts.append(part["text"])
    return "".join(texts), uses


def _usage(raw: object) -> Usage:
    if not isinstance(raw, dict):
        return Usage()
    prompt = _int(raw.get("promptTokenCount"))
    completion = _int(raw.get("candidatesTokenCount")) + _int(raw.get("thoughtsTokenCount"))
    return Usage(prompt, completion, prompt + completion)


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


class _GeminiStream:
    """Rebuilds the ``GenerateContentResponse`` of a stream of partial ones.

    The parts of candidate 0 are merged into one content: consecutive text parts of the same
    kind (thought or not) are joined, and a ``thoughtSignature`` (even one on a final empty
    text part) is carried onto the part it follows; every other part is kept as it came. The
    last ``finishReason``, ``usageMetadata`` (cumulative) and other field seen count.
    """

    def __init__(self, dialect: GeminiDialect, turn: int) -> None:
        self._dialect = dialect
        self._turn = turn
        self._top: JSONObject = {}
        self._candidate: JSONObject = {}
        self._content: JSONObject = {}
        self._parts: list[JSONObject] = []
        self._texts: list[list[str]] = []
        """Text pieces per part (joined once at the end); empty for a part that is not text."""
        self._calls = 0
        self._ended = False

    def feed(self, event: JSONObject) -> list[StreamItem]:
        if isinstance(event.get("error"), dict):
            raise stream_error(event)
        for key, value in event.items():
            if key != "candidates":
                self._top[key] = value
        feedback = event.get("promptFeedback")
        if isinstance(feedback, dict) and feedback.get("blockReason"):
            self._ended = True
        candidates = event.get("candidates")
        if not isinstance(candidates, list) or not candidates:
            return []
        candidate = candidates[0]
        if not isinstance(candidate, dict):
            return []
        for key, value in candidate.items():
            if key != "content":
                self._candidate[key] = value
        if candidate.get("finishReason"):
            self._ended = True
        content = candidate.get("content")
        if not isinstance(content, dict):
            return []
        for key, value in content.items():
            if key != "parts":
                self._content[key] = value
        parts = content.get("parts")
        out: list[StreamItem] = []
        for part in parts if isinstance(parts, list) else ():
            if isinstance(part, dict):
                self._add(part, out)
        return out

    def _add(self, part: JSONObject, out: list[StreamItem]) -> None:
        text = part.get("text")
        if isinstance(text, str):
            thought = bool(part.get("thought"))
            last = self._parts[-1] if self._parts else None
            if last is not None and self._texts[-1] and bool(last.get("thought")) == thought:
                if text:
                    self._texts[-1].append(text)
                for key, value in part.items():  # a signature, ...: carried onto the part
                    if key not in ("text", "thought"):
                        last[key] = value
            elif text or len(part) > 1:
                self._parts.append(dict(part))
                self._texts.append([text])
            if text and not thought:
                out.append(text)
            return
        self._parts.append(dict(part))
        self._texts.append([])
        call = part.get("functionCall")
        if isinstance(call, dict):
            position = self._calls
            self._calls += 1
            call_id = call.get("id")
            if not isinstance(call_id, str) or not call_id:
                call_id = f"call_{self._turn}_{position}"
            args = call.get("args")
            arguments = compact_json(args if args is not None else {})
            out.append(ArgumentsDelta(call_id, str(call.get("name") or ""), position, arguments))

    def finish(self, *, done: bool = False) -> Turn:
        if not self._ended:
            raise MalformedResponse(
                f"{STREAM_ENDED_EARLY}: no chunk carried a finishReason or a "
                "promptFeedback.blockReason"
            )
        body: JSONObject = dict(self._top)
        if self._candidate or self._parts:
            parts = []
            for part, texts in zip(self._parts, self._texts, strict=True):
                if texts:
                    part["text"] = "".join(texts)
                parts.append(part)
            candidate: JSONObject = {"content": {**self._content, "parts": parts}}
            candidate.update(self._candidate)
            if not parts and "role" not in self._content:
                del candidate["content"]
            body["candidates"] = [candidate]
        body["streamed"] = True
        return self._dialect.parse_response(body, turn=self._turn)
