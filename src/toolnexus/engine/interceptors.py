"""The seam every model call and every tool execution of a run passes through.

An ``Interceptor`` wraps the two kinds of work the loop does on the outside world:

- ``around_llm(call_next, call)``: one logical model call (its retries inside). ``call`` is a
  ``ModelCall``; ``call_next(call)`` performs it and returns the provider's reply as a plain
  JSON object in its non-streamed shape (for a streamed call, the reply rebuilt from the
  stream). The interceptor returns such an object too: normally what ``call_next`` gave, or a
  stored one instead of calling at all (a replay, a cache). The loop reads the turn (text, tool
  calls, usage) from what comes back, so the value is all that needs to be persisted.
- ``around_tool(call_next, call)``: one execution of one tool (``toolkit.execute``, after the
  ``before_tool`` hook and before ``after_tool``). ``call`` is a ``ToolExecution``;
  ``call_next(call)`` executes it and returns its ``ToolResult`` (tool failures are error
  results, never exceptions). A re-execution of a suspended call with the host's answer is an
  execution of its own (``attempt == 1``).
- ``run_started(run)`` / ``run_finished(run, result, error)``: the edges of a run, for ``run``,
  ``stream`` and ``ask`` alike. ``run_finished`` is called exactly once: with the
  ``RunResult`` when the run produced its ``DoneEvent``; with the exception when it raised
  (``RunCancelled``, ``RunTimeout``, ``LLMError``, a hook's error, ``CancelledError``); with
  neither when a stream was closed before its end. An exception raised by ``run_finished`` is
  logged and ignored.

Every ``ModelCall`` and ``ToolExecution`` carries a ``key`` that is the same each time the same
run is replayed with the same model replies (``"llm/<turn>"``, ``"tool/<seq>"``),
and the ``RunInfo`` of its run, whose ``state`` dict an interceptor may use to keep per-run
data (keyed by itself). The model's replies are JSON objects and tool results are
``ToolResult`` dataclasses (``to_dict``/``from_dict`` give their JSON form), so a durable
layer can store either and hand it back instead of calling again.

Interceptors are installed on a client with ``client.add_interceptor(i)``; the first one
installed is the outermost. The base class passes everything through; override what you need.
A client without interceptors takes the direct path and pays nothing for the seam. A model
call made by ``call_provider`` does not pass through it.

Example::

    class Timing(Interceptor):
        async def around_tool(self, call_next, call):
            started = time.perf_counter()
            try:
                return await call_next(call)
            finally:
                print(call.name, time.perf_counter() - started)
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from ..types import JSONObject, RunResult, ToolContext, ToolResult, Usage

if TYPE_CHECKING:
    from ..dialects import Dialect, Turn

__all__ = [
    "CallModel",
    "ExecuteTool",
    "Interceptor",
    "ModelCall",
    "RunInfo",
    "ToolExecution",
    "chain",
]

logger = logging.getLogger("toolnexus")

CallModel = Callable[["ModelCall"], Awaitable[JSONObject]]
"""The rest of the chain for a model call: performs it, returns the reply object."""
ExecuteTool = Callable[["ToolExecution"], Awaitable[ToolResult]]
"""The rest of the chain for a tool execution: runs it, returns its result."""


@dataclass(slots=True, eq=False)
class RunInfo:
    """One run as interceptors see it."""

    model: str
    style: str
    """The wire style (``"openai"``, ``"anthropic"``, ``"responses"`` or ``"gemini"``)."""
    stream: bool
    """``True`` for ``stream``/``ask(on_text=...)``: model calls use the streaming wire format."""
    conversation_id: str | None = None
    abandoned: bool = False
    """Set by the loop when a stream is closed before its end, before the work in flight (a
    streamed model call) is cancelled: that ``CancelledError`` is no failure."""
    state: dict[object, Any] = field(default_factory=dict)
    """Free per-run storage for interceptors; key it by the interceptor itself."""
    _stopped: Callable[[], BaseException | None] = field(default=lambda: None, repr=False)

    @property
    def stop_reason(self) -> BaseException | None:
        """``RunCancelled``/``RunTimeout`` once the run's token or deadline stopped it.

        While that happens, the work in flight sees a plain ``asyncio.CancelledError``; this
        says why.
        """
        return self._stopped()


@dataclass(slots=True, eq=False)
class ModelCall:
    """One logical model call of a run (its retries included)."""

    run: RunInfo
    turn: int
    """0-based index of the model round trip in this run."""
    body: JSONObject
    """The request body as it will be sent (after ``request_params`` and ``body_transform``)."""
    _dialect: Dialect = field(repr=False)
    _parsed: dict[int, Turn] = field(default_factory=dict, repr=False)

    @property
    def key(self) -> str:
        """Identifies this call within its run, the same on every replay."""
        return f"llm/{self.turn}"

    @property
    def stream(self) -> bool:
        """Whether the loop asked for a streamed reply."""
        return self.run.stream

    def usage_of(self, reply: JSONObject) -> Usage:
        """The token usage a reply reports."""
        return self.parse(reply).usage

    def message_of(self, reply: JSONObject) -> JSONObject | None:
        """The assistant message a reply carries, in the transcript's wire form (``None`` for
        a reply that adds nothing to the transcript, such as an empty Anthropic one)."""
        message = self.parse(reply).message
        return dict(message) if message is not None else None

    def parse(self, reply: JSONObject) -> Turn:
        """The loop's reading of ``reply`` (parsed once per reply object)."""
        turn = self._parsed.get(id(reply))
        if turn is None or turn.response is not reply:
            turn = self._dialect.parse_response(reply, turn=self.turn)
            self._parsed[id(reply)] = turn
        return turn

    def remember(self, turn: Turn) -> JSONObject:
        """Register a turn already parsed by the loop; returns its reply object."""
        self._parsed[id(turn.response)] = turn
        return turn.response


@dataclass(slots=True, eq=False)
class ToolExecution:
    """One execution of one tool call."""

    run: RunInfo
    name: str
    args: JSONObject
    """The arguments the tool is executed with (after a ``before_tool`` rewrite)."""
    call_id: str
    turn: int
    index: int
    """Position of the call among its turn's calls."""
    attempt: int
    """``0`` for the first execution, ``1`` when a suspended call runs again with an answer."""
    seq: int
    """0-based number of this execution in its run, in the order the loop starts them."""
    context: ToolContext

    @property
    def key(self) -> str:
        """Identifies this execution within its run, the same on every replay."""
        return f"tool/{self.seq}"


class Interceptor:
    """Wraps a run's model calls and tool executions; every method passes through by default.

    See the module documentation for the contract of each method.
    """

    async def around_llm(self, call_next: CallModel, call: ModelCall) -> JSONObject:
        """Wrap one model call; return the reply object (normally ``await call_next(call)``)."""
        return await call_next(call)

    async def around_tool(self, call_next: ExecuteTool, call: ToolExecution) -> ToolResult:
        """Wrap one tool execution; return its result (normally ``await call_next(call)``)."""
        return await call_next(call)

    def run_started(self, run: RunInfo) -> None:
        """A run begins (called before its first model call)."""

    def run_finished(
        self, run: RunInfo, result: RunResult | None, error: BaseException | None
    ) -> None:
        """A run ended: with ``result``, with ``error``, or abandoned (both ``None``)."""


def chain(
    interceptors: Sequence[Interceptor], method: str, innermost: Callable[[Any], Awaitable[Any]]
) -> Callable[[Any], Awaitable[Any]]:
    """``innermost`` wrapped by each interceptor's ``method``, the first one outermost.

    Interceptors that do not override ``method`` are skipped.
    """
    handler = innermost
    default = getattr(Interceptor, method)
    for interceptor in reversed(interceptors):
        bound = getattr(interceptor, method)
        if getattr(bound, "__func__", None) is default:
            continue
        handler = partial(bound, handler)
    return handler


def finish_run(
    interceptors: Sequence[Interceptor],
    run: RunInfo,
    result: RunResult | None,
    error: BaseException | None,
) -> None:
    """Tell every interceptor (innermost first) that ``run`` ended; their errors are logged."""
    for interceptor in reversed(interceptors):
        try:
            interceptor.run_finished(run, result, error)
        except Exception:
            logger.exception("run_finished of %r failed (ignored)", interceptor)
