"""One run as the chat parts both UI protocols are made of.

``chat_flow`` turns the loop's events into a neutral sequence that AG-UI (``agui``) and the AI
SDK stream (``ai_sdk``) each render one to one: text messages opened, extended and closed; tool
calls opened, their argument text, closed with the parsed arguments, and their results; steps
(one model call and the tools it asked for); the pending request of a halted run; the end.

A tool call's argument text comes from ``ToolCallDeltaEvent`` pieces as the model writes them;
when the run produced none for a call (a reply that was not streamed piece by piece), the whole
compact JSON of the call's arguments is one piece, so the pieces of a call always join to its
arguments.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias, cast

from .._json import compact_json, loads
from .._redact import redact
from ..errors import ConfigError
from ..events import (
    DoneEvent,
    Event,
    TextEvent,
    ToolCallDeltaEvent,
    ToolCallEvent,
    ToolResultEvent,
    UsageEvent,
)
from ..messages import Message
from ..suspension import Answer, Request
from ..types import JSONObject, RunResult
from .messages import history_for_style

if TYPE_CHECKING:
    from ..client import Client
    from ..toolkit import Toolkit

__all__ = [
    "CallArgs",
    "CallEnd",
    "CallResult",
    "CallStart",
    "ChatTurn",
    "Failed",
    "Finished",
    "Part",
    "Pending",
    "StepEnd",
    "StepStart",
    "TextDelta",
    "TextEnd",
    "TextStart",
    "chat_flow",
    "chat_parts",
    "new_id",
]

logger = logging.getLogger("toolnexus")


def new_id() -> str:
    """A fresh opaque id for a run, a message or a step."""
    return uuid.uuid4().hex


@dataclass(frozen=True, slots=True)
class ChatTurn:
    """What a front end asked for: a prompt on a thread, or an answer to its pending request."""

    thread_id: str
    prompt: str | None = None
    answer: Answer | None = None
    earlier: tuple[JSONObject, ...] = ()
    """AG-UI-shaped messages before the prompt; they seed a thread the store does not have."""


@dataclass(frozen=True, slots=True)
class StepStart:
    """A model call begins (with the tool calls it makes and their results)."""


@dataclass(frozen=True, slots=True)
class StepEnd:
    """The step's model call and tool results are all reported."""


@dataclass(frozen=True, slots=True)
class TextStart:
    id: str


@dataclass(frozen=True, slots=True)
class TextDelta:
    id: str
    delta: str


@dataclass(frozen=True, slots=True)
class TextEnd:
    id: str


@dataclass(frozen=True, slots=True)
class CallStart:
    id: str
    name: str
    parent: str
    """The id of the assistant message (the step) that makes the call."""


@dataclass(frozen=True, slots=True)
class CallArgs:
    id: str
    delta: str


@dataclass(frozen=True, slots=True)
class CallEnd:
    id: str
    name: str
    args: JSONObject


@dataclass(frozen=True, slots=True)
class CallResult:
    id: str
    name: str
    output: str
    is_error: bool


@dataclass(frozen=True, slots=True)
class Pending:
    """The run halted on ``request`` (its ``data["toolCallId"]`` names the call)."""

    request: Request


@dataclass(frozen=True, slots=True)
class Finished:
    result: RunResult


@dataclass(frozen=True, slots=True)
class Failed:
    """The run raised; ``message`` is redacted. Nothing follows it."""

    message: str


Part: TypeAlias = (
    StepStart
    | StepEnd
    | TextStart
    | TextDelta
    | TextEnd
    | CallStart
    | CallArgs
    | CallEnd
    | CallResult
    | Pending
    | Finished
    | Failed
)


async def chat_flow(
    client: Client, toolkit: Toolkit | None, turn: ChatTurn
) -> AsyncGenerator[Part, None]:
    """Run ``turn`` (streamed) and yield its parts; a failure is one ``Failed`` part, last."""
    async with aclosing(chat_parts(_events(client, toolkit, turn))) as parts:
        async for part in parts:
            if isinstance(part, Failed):
                logger.warning("chat run on thread %s failed: %s", turn.thread_id, part.message)
            yield part


async def chat_parts(events: AsyncGenerator[Event, None]) -> AsyncGenerator[Part, None]:
    """The parts of a run's ``events`` (as ``Client.stream`` yields them); an exception raised
    by ``events`` becomes one ``Failed`` part with its redacted message, last."""
    shaper = _Shaper()
    try:
        async with aclosing(events):
            async for event in events:
                for part in shaper.feed(event):
                    yield part
    except Exception as exc:
        yield Failed(redact(str(exc)) or type(exc).__name__)


async def _events(
    client: Client, toolkit: Toolkit | None, turn: ChatTurn
) -> AsyncGenerator[Event, None]:
    if turn.answer is not None:
        resumed = client.stream_resume(turn.thread_id, turn.answer, toolkit)
        async with aclosing(resumed) as events:
            async for event in events:
                yield event
        return
    if turn.prompt is None:
        raise ConfigError("no user message to answer: the last message must be the user's")
    history: list[Message] | None = None
    if turn.earlier and await client.conversation_store.get(turn.thread_id) is None:
        history = cast("list[Message]", history_for_style(client.style, turn.earlier))
    run = client.stream(turn.prompt, toolkit, conversation_id=turn.thread_id, history=history)
    async with aclosing(run) as events:
        async for event in events:
            yield event


class _Shaper:
    """The state of one run's translation (open text, open step, calls announced)."""

    def __init__(self) -> None:
        self.step: str | None = None
        self.model_done = False
        self.text: str | None = None
        self.text_used = False
        self.started: dict[str, str] = {}
        """Calls announced in this step (ids are unique within one model reply): id -> name."""
        self.pieces: dict[str, list[str]] = {}
        self.ended: set[str] = set()
        self.open_call: str | None = None

    def feed(self, event: Event) -> list[Part]:
        out: list[Part] = []
        model_part = isinstance(event, TextEvent | ToolCallDeltaEvent | UsageEvent)
        if not isinstance(event, TextEvent):
            self._close_text(out)
        if isinstance(event, DoneEvent):
            result = event.result
            if result.status == "pending" and result.pending is not None:
                self._open_step(out, model_done=True)
                out.append(Pending(result.pending))
            if self.step is not None:
                out.append(StepEnd())
            out.append(Finished(result))
            return out
        if self.step is None or (model_part and self.model_done):
            # a step opened by a tool result (a resume settling the halted call) has no model
            # call of its own: the next model output starts the next step
            self._open_step(out, model_done=not model_part)
        if isinstance(event, TextEvent):
            if event.delta:
                if self.text is None:
                    self.text = new_id() if self.text_used else self.step
                    self.text_used = True
                    assert self.text is not None
                    out.append(TextStart(self.text))
                out.append(TextDelta(self.text, event.delta))
        elif isinstance(event, ToolCallDeltaEvent):
            if self.open_call is not None and self.open_call != event.id:
                self._end_written(out)  # the model went on to the next call
            self._start_call(out, event.id, event.name)
            self.open_call = event.id
            if event.delta:
                self.pieces.setdefault(event.id, []).append(event.delta)
                out.append(CallArgs(event.id, event.delta))
        elif isinstance(event, ToolCallEvent):
            if event.id not in self.started:
                self._start_call(out, event.id, event.name)
                out.append(CallArgs(event.id, compact_json(event.args)))
            if event.id not in self.ended:
                self.ended.add(event.id)
                out.append(CallEnd(event.id, event.name, event.args))
            if self.open_call == event.id:
                self.open_call = None
        elif isinstance(event, UsageEvent):
            self.model_done = True
        elif isinstance(event, ToolResultEvent):
            out.append(CallResult(event.id, event.name, event.output, event.is_error))
        return out

    def _open_step(self, out: list[Part], *, model_done: bool) -> None:
        if self.step is not None:
            if not model_done:  # a new model call: the previous step is complete
                out.append(StepEnd())
            else:
                return
        self.step = new_id()
        self.text_used = False
        self.started, self.pieces, self.ended, self.open_call = {}, {}, set(), None
        self.model_done = model_done
        out.append(StepStart())

    def _end_written(self, out: list[Part]) -> None:
        """End the call whose arguments the model finished writing, so that calls are reported
        one after the other; when its text does not parse, it ends at its ``ToolCallEvent``."""
        call_id = self.open_call
        assert call_id is not None
        self.open_call = None
        try:
            args = loads("".join(self.pieces.get(call_id, [])) or "{}")
        except ValueError:
            return
        if isinstance(args, dict):
            self.ended.add(call_id)
            out.append(CallEnd(call_id, self.started[call_id], args))

    def _start_call(self, out: list[Part], call_id: str, name: str) -> None:
        if call_id not in self.started:
            self.started[call_id] = name
            assert self.step is not None
            out.append(CallStart(call_id, name, self.step))

    def _close_text(self, out: list[Part]) -> None:
        if self.text is not None:
            out.append(TextEnd(self.text))
            self.text = None
