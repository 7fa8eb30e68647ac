"""What a run reports as it goes: the event vocabulary of ``stream`` and ``on_event``.

Within a turn the order is: text deltas → ``usage`` → every ``tool_call`` → per call, in call
order, (``pending`` then) ``tool_result`` → the next turn. ``tool_progress`` events come while
the calls run, between their ``tool_call`` and ``tool_result``. ``done`` comes once, last.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal, TypeAlias

from .suspension import Request
from .types import JSONObject, RunResult, Usage

__all__ = [
    "DoneEvent",
    "Event",
    "PendingEvent",
    "TextEvent",
    "ToolCallDeltaEvent",
    "ToolCallEvent",
    "ToolProgressEvent",
    "ToolResultEvent",
    "UsageEvent",
]


@dataclass(frozen=True, slots=True)
class TextEvent:
    """A piece of assistant text, as it streams in (``stream`` only)."""

    type: ClassVar[Literal["text"]] = "text"
    delta: str

    def to_dict(self) -> JSONObject:
        """Wire form: ``{"type": "text", "delta": ...}``."""
        return {"type": self.type, "delta": self.delta}


@dataclass(frozen=True, slots=True)
class UsageEvent:
    """After every LLM round trip: the run's token usage so far."""

    type: ClassVar[Literal["usage"]] = "usage"
    usage: Usage

    def to_dict(self) -> JSONObject:
        """Wire form: ``{"type": "usage", "usage": ...}``."""
        return {"type": self.type, "usage": self.usage.to_dict()}


@dataclass(frozen=True, slots=True)
class ToolCallDeltaEvent:
    """A piece of a tool call's argument text as the model writes it (streamed runs only).

    ``id`` is the call's id, ``index`` its 0-based position in its reply; the deltas of one call
    joined equal its final arguments text. They come before the call's ``ToolCallEvent``.
    """

    type: ClassVar[Literal["tool_call_delta"]] = "tool_call_delta"
    id: str
    name: str
    index: int
    delta: str

    def to_dict(self) -> JSONObject:
        """Wire form: ``{"type": "tool_call_delta", "id", "name", "index", "delta"}``."""
        return {
            "type": self.type,
            "id": self.id,
            "name": self.name,
            "index": self.index,
            "delta": self.delta,
        }


@dataclass(frozen=True, slots=True)
class ToolCallEvent:
    """A call the model asked for, before any call of its turn runs."""

    type: ClassVar[Literal["tool_call"]] = "tool_call"
    id: str
    name: str
    args: JSONObject

    def to_dict(self) -> JSONObject:
        """Wire form: ``{"type": "tool_call", "id", "name", "args"}``."""
        return {"type": self.type, "id": self.id, "name": self.name, "args": self.args}


@dataclass(frozen=True, slots=True)
class PendingEvent:
    """A call suspended on ``request`` (before ``wait_for`` runs or the run halts)."""

    type: ClassVar[Literal["pending"]] = "pending"
    request: Request

    def to_dict(self) -> JSONObject:
        """Wire form: ``{"type": "pending", "request": ...}``."""
        return {"type": self.type, "request": self.request.to_dict()}


@dataclass(frozen=True, slots=True)
class ToolProgressEvent:
    """A running call reported progress (an MCP server's progress notification, say)."""

    type: ClassVar[Literal["tool_progress"]] = "tool_progress"
    id: str
    name: str
    progress: float
    total: float | None = None
    message: str | None = None

    def to_dict(self) -> JSONObject:
        """Wire form: ``{"type": "tool_progress", "id", "name", ...}`` (unset fields left out)."""
        out: JSONObject = {
            "type": self.type,
            "id": self.id,
            "name": self.name,
            "progress": self.progress,
        }
        if self.total is not None:
            out["total"] = self.total
        if self.message is not None:
            out["message"] = self.message
        return out


@dataclass(frozen=True, slots=True)
class ToolResultEvent:
    """A call's final result (after any suspension was resolved)."""

    type: ClassVar[Literal["tool_result"]] = "tool_result"
    id: str
    name: str
    output: str
    is_error: bool

    def to_dict(self) -> JSONObject:
        """Wire form: ``{"type": "tool_result", "id", "name", "output", "isError"}``."""
        return {
            "type": self.type,
            "id": self.id,
            "name": self.name,
            "output": self.output,
            "isError": self.is_error,
        }


@dataclass(frozen=True, slots=True)
class DoneEvent:
    """The run returned; ``result`` is what ``run`` returns."""

    type: ClassVar[Literal["done"]] = "done"
    result: RunResult

    def to_dict(self) -> JSONObject:
        """Wire form: ``{"type": "done", "result": ...}``."""
        return {"type": self.type, "result": self.result.to_dict()}


Event: TypeAlias = (
    TextEvent
    | UsageEvent
    | ToolCallDeltaEvent
    | ToolCallEvent
    | ToolProgressEvent
    | PendingEvent
    | ToolResultEvent
    | DoneEvent
)
