"""What every wire style provides, and the turn object both wire modes produce."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from .._json import JSONDepthError, check_depth, compact_json, loads
from ..errors import LLMError, StreamError
from ..types import JSONObject, ToolResult, Usage

__all__ = [
    "MAX_ARGUMENT_CHARS",
    "STREAM_ENDED_EARLY",
    "ArgumentsDelta",
    "Dialect",
    "MalformedResponse",
    "StreamItem",
    "StreamParser",
    "ToolUse",
    "Turn",
    "parse_arguments",
    "prompt_message",
    "stream_error",
]

STREAM_ENDED_EARLY = "stream ended early"
"""How a stream that stopped before its end marker is described (its calls never run)."""


class MalformedResponse(ValueError):
    """A provider reply that does not have the shape of its wire format."""


def stream_error(event: JSONObject) -> LLMError:
    """The error raised for a provider's error event inside a stream (no HTTP status; the
    event itself is the body)."""
    body = compact_json(event)
    return StreamError(f"provider stream error: {body}", body=body)


@dataclass(slots=True)
class ToolUse:
    """One tool call the model asked for. ``error`` is set when its arguments are unusable."""

    id: str
    name: str
    args: JSONObject
    error: str | None = None
    named: bool = True
    """``False`` when the provider gave the call no id and ``id`` was made up
    (``call_<turn>_<index>``): a style that sends ids back leaves it out."""


@dataclass(frozen=True, slots=True)
class ArgumentsDelta:
    """A piece of a tool call's argument text, as a stream carries it.

    ``index`` is the call's 0-based position in its reply; the pieces of one call joined equal
    its final arguments text.
    """

    id: str
    name: str
    index: int
    delta: str


StreamItem = str | ArgumentsDelta
"""What a stream parser hands back per event: a text delta, or a piece of a call's arguments."""


@dataclass(slots=True)
class Turn:
    """One model reply, however it arrived (a JSON body or an SSE stream)."""

    text: str
    tool_uses: list[ToolUse]
    usage: Usage
    message: JSONObject | None
    """The assistant message to append to the transcript; ``None`` when the reply has nothing
    the provider would accept back (an empty Anthropic reply)."""
    response: JSONObject = field(default_factory=dict)
    """The provider reply in its non-streamed shape, for the ``after_llm`` hook."""
    stop_reason: str | None = None
    """Why the reply ended, normalised across styles: ``"stop"``, ``"length"``,
    ``"tool_calls"``, ``"content_filter"``, ``"refusal"``, another provider value as is, or
    ``None`` when the provider gave none."""
    items: list[JSONObject] | None = None
    """The transcript entries of a reply that is several of them (the output items of a
    ``responses`` reply); ``None`` means ``[message]`` (or nothing when that is ``None``)."""

    def entries(self) -> list[JSONObject]:
        """What the reply adds to the transcript, in order."""
        if self.items is not None:
            return self.items
        return [self.message] if self.message is not None else []


class StreamParser(Protocol):
    """Folds decoded SSE events (JSON objects) into text deltas and, at the end, a ``Turn``.

    The parser rebuilds the reply the provider would have sent without streaming and hands it
    to the dialect's ``parse_response``, so both wire modes keep the same message.
    """

    def feed(self, event: JSONObject) -> list[StreamItem]:
        """Consume one event; return the text deltas and argument pieces it carries, in
        order. A provider error event raises ``LLMError``."""
        ...

    def finish(self, *, done: bool = False) -> Turn:
        """The assembled turn once the body has ended; ``done`` tells that a ``[DONE]``
        sentinel ended it. A stream cut before its end raises ``MalformedResponse`` whose
        message starts with ``STREAM_ENDED_EARLY``."""
        ...


class Dialect(Protocol):
    """One wire style. Pure: no I/O, no asyncio, plain data in and out."""

    name: str
    system_in_messages: bool
    """``True`` when the system prompt is the transcript's first message (openai)."""

    def url(self, base_url: str) -> str: ...

    def headers(self, api_key: str) -> dict[str, str]: ...

    def build_body(
        self,
        messages: list[JSONObject],
        tools: Sequence[JSONObject],
        *,
        model: str,
        system: str,
        stream: bool,
    ) -> JSONObject: ...

    def tool_schemas(self, tools: Sequence[object], *, copy: bool = True) -> list[JSONObject]:
        """The toolkit's tools in this style's request shape; ``copy=False`` shares each tool's
        schema dict instead of copying it (for a body only encoded, never handed out)."""
        ...

    def parse_response(self, body: object, *, turn: int) -> Turn: ...

    def stream_parser(self, *, turn: int) -> StreamParser: ...

    def tool_results(self, results: Sequence[tuple[str, ToolResult]]) -> list[JSONObject]:
        """Transcript messages carrying one turn's results, in the given order."""
        ...

    def tool_uses_in(self, message: JSONObject) -> list[ToolUse]:
        """The tool calls of an assistant message already in a transcript."""
        ...

    def results_in(self, message: JSONObject) -> list[tuple[str, ToolResult]]:
        """The tool results a transcript message carries, as ``(call id, result)`` pairs."""
        ...

    def incomplete_text(self, message: JSONObject | None) -> str:
        """The run's text when it stops at ``max_turns`` after ``message``."""
        ...


def prompt_message(dialect: object, prompt: str | None) -> JSONObject:
    """The transcript entry of a user prompt: the dialect's ``prompt_message`` when it has one
    (gemini's ``parts``), else the chat form ``{"role": "user", "content": prompt}``."""
    make = getattr(dialect, "prompt_message", None)
    if make is not None:
        message: JSONObject = make(prompt)
        return message
    return {"role": "user", "content": prompt}


MAX_ARGUMENT_CHARS = 1_000_000
"""Longest arguments text (JSON) of one tool call; a longer one is refused unrun, as tool
outputs are cut at the toolkit's ``max_output_chars`` (also 1,000,000 by default)."""


def parse_arguments(name: str, raw: object) -> tuple[JSONObject, str | None]:
    """Tool arguments as a dict, or ``({}, error)`` for the model to correct.

    Arguments longer than ``MAX_ARGUMENT_CHARS`` characters of JSON are such an error: they are
    never decoded into objects (a model's 30 MB of arguments would cost many times that).
    """
    if isinstance(raw, dict):
        try:
            check_depth(raw)
        except JSONDepthError as exc:
            return {}, f"invalid arguments for {name}: {exc}"
        size = len(compact_json(raw))
        if size > MAX_ARGUMENT_CHARS:
            return {}, _too_long(name, size)
        return raw, None
    if raw is None or raw == "":
        return {}, None
    if not isinstance(raw, str):
        return {}, f"invalid arguments for {name}: expected a JSON object, got {_json_kind(raw)}"
    if len(raw) > MAX_ARGUMENT_CHARS:
        return {}, _too_long(name, len(raw))
    try:
        value = loads(raw)
    except ValueError as exc:  # not JSON, or nested deeper than MAX_DEPTH
        return {}, f"invalid arguments for {name}: {exc}"
    if not isinstance(value, dict):
        return {}, f"invalid arguments for {name}: expected a JSON object, got {_json_kind(value)}"
    return value, None


def _too_long(name: str, size: int) -> str:
    return (
        f"invalid arguments for {name}: {size} characters of JSON, more than the "
        f"{MAX_ARGUMENT_CHARS} one tool call may carry; the call was not run (send the content "
        "in smaller parts)"
    )


def _json_kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return type(value).__name__
