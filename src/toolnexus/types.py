"""Core data types shared by every layer: tools, results, usage and run results."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

from ._deprecated import renamed
from .cancel import CancelToken
from .errors import ConfigError
from .messages import Message

__all__ = [
    "Answer",
    "ConversationStore",
    "JSONObject",
    "OnCall",
    "ProgressFn",
    "Request",
    "RunResult",
    "RunStatus",
    "ServeHandle",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolExecute",
    "ToolResult",
    "ToolSource",
    "Usage",
    "WaitFor",
    "sanitize",
]

JSONObject: TypeAlias = dict[str, Any]
"""A JSON object as parsed by ``json.loads``: tool arguments, schemas, provider messages."""

ToolSource = Literal["mcp", "skill", "native", "http", "builtin", "a2a", "agent", "custom"]
RunStatus = Literal["done", "pending", "incomplete"]

_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]+")
_NOT_NAME_CHAR = re.compile(r"[^A-Za-z0-9_-]")


def sanitize(name: str) -> str:
    """Replace every character outside ``[A-Za-z0-9_-]`` with ``_``."""
    return _NOT_NAME_CHAR.sub("_", name)


@dataclass(slots=True)
class Request:
    """What a suspended tool needs from the host.

    ``kind`` is an open vocabulary (``authorization``, ``approval``, ``input``, ``question``…).
    Never collect credentials with ``question``/``input``: send the user to a ``url`` with
    ``kind="authorization"`` instead.
    """

    id: str
    kind: str
    prompt: str
    url: str | None = None
    data: JSONObject | None = None
    expires_at: str | None = None
    """RFC 3339 timestamp after which the request is no longer valid (advisory)."""

    @classmethod
    def new(
        cls,
        kind: str,
        prompt: str,
        *,
        url: str | None = None,
        data: JSONObject | None = None,
        expires_at: str | None = None,
    ) -> Request:
        """A request with a fresh unique id."""
        import uuid  # on first use: it loads platform details `import toolnexus` does not need

        return cls(uuid.uuid4().hex, kind, prompt, url=url, data=data, expires_at=expires_at)

    def to_dict(self) -> JSONObject:
        """Wire form (``expiresAt``); absent optionals are omitted."""
        out: JSONObject = {"id": self.id, "kind": self.kind, "prompt": self.prompt}
        if self.url is not None:
            out["url"] = self.url
        if self.data is not None:
            out["data"] = self.data
        if self.expires_at is not None:
            out["expiresAt"] = self.expires_at
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Request:
        """Parse the wire form; ``id``, ``kind`` and ``prompt`` are required."""
        try:
            return cls(
                id=str(data["id"]),
                kind=str(data["kind"]),
                prompt=str(data["prompt"]),
                url=data.get("url"),
                data=data.get("data"),
                expires_at=data.get("expiresAt", data.get("expires_at")),
            )
        except KeyError as exc:
            raise ValueError(f"Request is missing the {exc.args[0]!r} key") from None


@dataclass(slots=True)
class Answer:
    """The host's reply to a ``Request`` (matched by ``id``)."""

    id: str
    ok: bool
    data: JSONObject | None = None
    reason: str | None = None
    """When not ok: ``declined``, ``cancelled`` or ``expired`` (advisory)."""

    def to_dict(self) -> JSONObject:
        """Wire form (``id``, ``ok``, and ``data``/``reason`` when set)."""
        out: JSONObject = {"id": self.id, "ok": self.ok}
        if self.data is not None:
            out["data"] = self.data
        if self.reason is not None:
            out["reason"] = self.reason
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Answer:
        """Parse the wire form; ``ok`` must be a JSON boolean (``"false"`` is not false)."""
        ok = data.get("ok")
        if "ok" in data and not isinstance(ok, bool):
            raise ConfigError(f"Answer 'ok' must be true or false, not {ok!r}")
        try:
            return cls(
                id=str(data["id"]),
                ok=bool(data["ok"]),
                data=data.get("data"),
                reason=data.get("reason"),
            )
        except KeyError as exc:
            raise ValueError(f"Answer is missing the {exc.args[0]!r} key") from None


@dataclass(slots=True)
class ToolResult:
    """What a tool hands back to the model. Failures are results with ``is_error=True``."""

    output: str
    is_error: bool = False
    metadata: JSONObject | None = None

    def to_dict(self) -> JSONObject:
        """JSON form ``{"output", "isError", "metadata"?}``; a pending ``Request`` as its dict."""
        out: JSONObject = {"output": self.output, "isError": self.is_error}
        if self.metadata is not None:
            meta = dict(self.metadata)
            request = meta.get("pending")
            if request is not None and hasattr(request, "to_dict"):
                meta["pending"] = request.to_dict()
            out["metadata"] = meta
        return out

    @classmethod
    def from_dict(cls, data: JSONObject) -> ToolResult:
        """Inverse of ``to_dict`` (a pending request stays a dict, which ``pending_of`` reads)."""
        meta = data.get("metadata")
        return cls(str(data["output"]), bool(data.get("isError", False)), meta)


@dataclass(slots=True)
class ToolContext:
    """Per-call context given to a tool's ``execute``."""

    cancel: CancelToken | None = None
    """The run's cancel token, if the run has one."""
    timeout: float | None = None
    """Seconds left before the run deadline, if the run has one."""
    answer: Answer | None = None
    """The host's answer, set only when a suspended call is executed again (see ``wait_for``)."""
    progress: ProgressFn | None = None
    """Report progress of a long call: ``progress(done, total, message)``; the run emits a
    ``ToolProgressEvent`` for each report. ``None`` outside a run."""


ProgressFn: TypeAlias = Callable[[float, "float | None", "str | None"], None]
"""The ``ToolContext.progress`` callback: amount done, total if known, a message if any."""


ToolExecute: TypeAlias = Callable[[JSONObject, ToolContext | None], Awaitable[ToolResult]]


@dataclass(frozen=True, slots=True)
class Tool:
    """One callable capability, whatever its source: the unit the model sees and calls."""

    name: str
    description: str
    input_schema: JSONObject
    source: ToolSource
    execute: ToolExecute = field(repr=False, compare=False)
    annotations: JSONObject | None = field(default=None, compare=False)
    """Hints about the tool, e.g. an MCP server's ``readOnlyHint``/``destructiveHint``,
    ``title`` and ``outputSchema`` (plus ``server`` and ``originalName`` for MCP tools)."""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _TOOL_NAME.fullmatch(self.name):
            raise ValueError(
                f"invalid tool name {self.name!r}: use only letters, digits, '_' and '-' "
                f"(toolnexus.sanitize() converts a name)"
            )


@runtime_checkable
class ConversationStore(Protocol):
    """Where conversation transcripts live between runs, keyed by an opaque id.

    Optional methods, used when present: ``async get_pending(id) -> Request | None`` and
    ``async save_pending(id, request_or_None)`` keep the request a halted conversation waits
    for (``Client.pending`` and ``Client.resume`` need them); ``async claim_pending(id,
    request_id) -> Request | None`` takes that request atomically, so of two concurrent resumes
    exactly one runs; ``async aclose()`` releases what the store opened itself.
    """

    async def get(self, id: str) -> list[Message] | None:
        """The saved transcript, or ``None`` when the id is unknown."""
        ...

    async def save(self, id: str, messages: Sequence[Message]) -> None:
        """Replace the transcript stored under ``id``."""
        ...


@dataclass(slots=True)
class Usage:
    """Token counts; on a ``RunResult`` they are summed over every LLM round trip."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.total_tokens + other.total_tokens,
        )

    def to_dict(self) -> JSONObject:
        """Wire form with camelCase keys (``promptTokens``, ...)."""
        return {
            "promptTokens": self.prompt_tokens,
            "completionTokens": self.completion_tokens,
            "totalTokens": self.total_tokens,
        }


@dataclass(slots=True)
class ToolCall:
    """One executed tool call as recorded on a ``RunResult``."""

    id: str
    name: str
    args: JSONObject
    output: str
    is_error: bool
    metadata: JSONObject | None = None

    def to_dict(self) -> JSONObject:
        """Wire form with camelCase keys (``isError``)."""
        return {
            "id": self.id,
            "name": self.name,
            "args": self.args,
            "output": self.output,
            "isError": self.is_error,
            "metadata": _wire_metadata(self.metadata),
        }


@dataclass(slots=True)
class RunResult:
    """The outcome of one run of the agent loop."""

    text: str
    messages: list[Message]
    """The transcript after the run, in the client's wire style (see ``Message``)."""
    tool_calls: list[ToolCall]
    tool_call_count: int
    turns: int
    usage: Usage
    model: str
    status: RunStatus
    """``"done"``; ``"pending"`` when the run halted on a suspension nobody answered inline;
    ``"incomplete"`` when a limit ended it (``limit`` names which)."""
    limit: str | None = None
    pending: Request | None = None
    """The ``Request`` a halted run waits on (``status == "pending"``); resume it with the
    ``Answer``."""
    stop_reason: str | None = None
    """Why the last model reply ended, the same names in every wire style: ``"stop"``,
    ``"length"`` (cut by the token limit), ``"tool_calls"``, ``"content_filter"``,
    ``"refusal"``; another provider value as it came; ``None`` when the provider gave none."""
    output: Any = None
    """With ``output_type``: the validated answer (an instance of that type); else ``None``."""
    _output_dump: Callable[[Any], object] | None = field(default=None, repr=False, compare=False)
    """Turns ``output`` into JSON data for ``to_dict`` (set by the run)."""

    def to_dict(self) -> JSONObject:
        """The camelCase wire form (JSON-serialisable)."""
        out: JSONObject = {
            "text": self.text,
            "messages": self.messages,
            "toolCalls": [call.to_dict() for call in self.tool_calls],
            "toolCallCount": self.tool_call_count,
            "turns": self.turns,
            "usage": self.usage.to_dict(),
            "model": self.model,
            "status": self.status,
            "stopReason": self.stop_reason,
            "output": self._output_json(),
        }
        if self.limit is not None:
            out["limit"] = self.limit
        if self.pending is not None:
            out["pending"] = self.pending.to_dict()
        return out

    def _output_json(self) -> object:
        if self.output is None:
            return None
        if self._output_dump is not None:
            return self._output_dump(self.output)
        from pydantic_core import to_jsonable_python

        return to_jsonable_python(self.output)


def _wire_metadata(metadata: JSONObject | None) -> JSONObject | None:
    """Metadata as JSON data: a suspension's ``Request`` (at any depth, say inside a sub-agent's
    metadata) becomes its wire dict."""
    if not metadata:
        return metadata
    wired = _wire_value(metadata)
    assert isinstance(wired, dict)
    return wired


def _wire_value(value: Any) -> Any:
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict) and not isinstance(value, type):
        return to_dict()
    if isinstance(value, dict):
        return {key: _wire_value(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_wire_value(item) for item in value]
    return value


WaitFor: TypeAlias = Callable[[Request], "Answer | Awaitable[Answer | None] | None"]
"""The host's ``wait_for`` callback: given a suspension's ``Request``, it returns the
``Answer`` (or an awaitable of one) and the run goes on; ``None`` declines."""

OnCall: TypeAlias = Callable[[JSONObject], Any]
"""Told of each call a served toolkit executes: ``{"name", "source", "ms", "is_error"}``."""


@dataclass(eq=False)
class ServeHandle:
    """A running server (``Toolkit.serve``): ``url`` is ``http://HOST:PORT``, no trailing slash.

    Defined here, below the toolkit and the servers, so that ``Toolkit.serve`` can name what it
    returns without the toolkit layer importing the serving one.
    """

    url: str
    _aclose: Callable[[], Awaitable[None]] = field(repr=False)

    async def aclose(self) -> None:
        """Close the listener and end the server's tasks. Idempotent; the toolkit stays open."""
        await self._aclose()

    async def stop(self) -> None:
        """Deprecated alias of ``aclose``."""
        renamed("ServeHandle.stop()", "ServeHandle.aclose()")
        await self._aclose()
