"""A run as AG-UI events, on the ``ag-ui-protocol`` package's own models (the only module that
imports ``ag_ui``).

``agui_events(client, toolkit, input)`` runs one ``RunAgentInput``: the thread is the client's
conversation id, the last user message the prompt; a ``resume`` entry (or
``forwardedProps.toolnexus.answer``) answers the thread's pending request instead. A halted
run ends as an AG-UI interrupt; a failure is one ``RUN_ERROR`` (redacted), last.
"""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ..suspension import Answer
from ..types import JSONObject
from .flow import (
    CallArgs,
    CallEnd,
    CallResult,
    CallStart,
    ChatTurn,
    Failed,
    Finished,
    Part,
    Pending,
    StepEnd,
    StepStart,
    TextDelta,
    TextEnd,
    TextStart,
    chat_flow,
    new_id,
)
from .messages import text_of

if TYPE_CHECKING:
    from ag_ui.core import BaseEvent, RunAgentInput

    from ..client import Client
    from ..toolkit import Toolkit

__all__ = [
    "AGUI_CONTENT_TYPE",
    "agui_events",
    "agui_input",
    "agui_turn",
    "encode_agui",
    "preload_agui",
    "require_agui",
]

AGUI_CONTENT_TYPE = "text/event-stream"
_INSTALL = "AG-UI needs the ag-ui-protocol package: pip install 'toolnexus[ui]'"


def require_agui() -> None:
    """``ConfigError`` (saying what to install) when ``ag_ui`` is not installed."""
    if importlib.util.find_spec("ag_ui") is None:
        raise ConfigError(_INSTALL)


def preload_agui() -> None:
    """Import ``ag_ui`` now (about a second of model building), so that the first run does not
    wait for it; a missing package is reported where AG-UI is used."""
    with contextlib.suppress(ImportError):
        import ag_ui.core
        import ag_ui.encoder  # noqa: F401


def agui_input(data: RunAgentInput | Mapping[str, Any]) -> RunAgentInput:
    """``data`` as a validated ``RunAgentInput`` (camelCase or snake_case keys), else
    ``ConfigError`` naming what is wrong."""
    try:
        from ag_ui.core import RunAgentInput
    except ImportError:
        raise ConfigError(_INSTALL) from None
    from pydantic import ValidationError

    if isinstance(data, RunAgentInput):
        return data
    if not isinstance(data, Mapping):
        raise ConfigError(f"an AG-UI input must be a JSON object, not {type(data).__name__}")
    try:
        return RunAgentInput.model_validate(dict(data))
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'input'}: {e['msg']}" for e in exc.errors()
        )
        raise ConfigError(f"invalid AG-UI RunAgentInput: {problems}") from None


def agui_turn(given: RunAgentInput) -> ChatTurn:
    """The prompt or answer an input carries (``ConfigError`` when it carries neither)."""
    answer = _answer_of(given)
    messages = [_plain(m) for m in given.messages]
    if answer is not None:
        return ChatTurn(given.thread_id, answer=answer)
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=None)
    if last_user is None:
        raise ConfigError("the AG-UI input has no user message (and no resume entry) to run")
    prompt = text_of(messages[last_user].get("content"))
    earlier = tuple(
        m for m in messages[:last_user] if m.get("role") in ("user", "assistant", "tool")
    )
    return ChatTurn(given.thread_id, prompt=prompt, earlier=earlier)


def agui_events(
    client: Client, toolkit: Toolkit | None, input: RunAgentInput | Mapping[str, Any]
) -> AsyncIterator[BaseEvent]:
    """Run ``input`` and yield its AG-UI events (``RUN_STARTED`` … ``RUN_FINISHED``).

    The input is checked now (``ConfigError``); the run starts on the first iteration.
    """
    given = agui_input(input)
    turn = agui_turn(given)
    return _run(client, toolkit, given, turn)


async def _run(
    client: Client, toolkit: Toolkit | None, given: RunAgentInput, turn: ChatTurn
) -> AsyncIterator[BaseEvent]:
    from ag_ui.core import RunStartedEvent

    thread, run_id = given.thread_id, given.run_id
    started: dict[str, Any] = {"thread_id": thread, "run_id": run_id}
    if "protocol_version" in RunStartedEvent.model_fields:
        from ag_ui.core import PROTOCOL_VERSION

        started["protocol_version"] = PROTOCOL_VERSION
    yield RunStartedEvent(**started)
    async for part in chat_flow(client, toolkit, turn):
        for event in _events_of(part, thread, run_id):
            yield event


def _events_of(part: Part, thread: str, run_id: str) -> list[BaseEvent]:
    from ag_ui import core

    match part:
        case StepStart() | StepEnd():
            return []
        case TextStart(id=mid):
            return [core.TextMessageStartEvent(message_id=mid, role="assistant")]
        case TextDelta(id=mid, delta=delta):
            return [core.TextMessageContentEvent(message_id=mid, delta=delta)]
        case TextEnd(id=mid):
            return [core.TextMessageEndEvent(message_id=mid)]
        case CallStart(id=cid, name=name, parent=parent):
            return [
                core.ToolCallStartEvent(
                    tool_call_id=cid, tool_call_name=name, parent_message_id=parent
                )
            ]
        case CallArgs(id=cid, delta=delta):
            return [core.ToolCallArgsEvent(tool_call_id=cid, delta=delta)]
        case CallEnd(id=cid):
            return [core.ToolCallEndEvent(tool_call_id=cid)]
        case CallResult(id=cid, output=output):
            return [
                core.ToolCallResultEvent(
                    message_id=new_id(), tool_call_id=cid, content=output, role="tool"
                )
            ]
        case Pending(request=request):
            return [core.CustomEvent(name="toolnexus.pending", value=request.to_dict())]
        case Finished(result=result):
            return [_finished(result, thread, run_id)]
        case Failed(message=message):
            return [core.RunErrorEvent(message=message)]
    raise AssertionError(f"unhandled chat part {part!r}")  # pragma: no cover


def _finished(result: Any, thread: str, run_id: str) -> BaseEvent:
    from ag_ui import core

    fields: dict[str, Any] = {"thread_id": thread, "run_id": run_id}
    request = result.pending if result.status == "pending" else None
    if request is None:
        fields["result"] = {"status": result.status, "stopReason": result.stop_reason}
    else:
        fields["result"] = {"status": "pending"}
        if "outcome" in core.RunFinishedEvent.model_fields:
            call_id = (request.data or {}).get("toolCallId")
            interrupt = core.Interrupt(
                id=request.id,
                reason=request.kind,
                message=request.prompt,
                tool_call_id=call_id if isinstance(call_id, str) else None,
            )
            fields["outcome"] = core.RunFinishedInterruptOutcome(interrupts=[interrupt])
    return core.RunFinishedEvent(**fields)


def encode_agui(event: BaseEvent) -> str:
    """One event as an SSE frame, by ``ag_ui.encoder.EventEncoder``."""
    from ag_ui.encoder import EventEncoder

    return EventEncoder().encode(event)


def _answer_of(given: RunAgentInput) -> Answer | None:
    if given.resume:
        entry = given.resume[0]
        payload = entry.payload
        data = payload if isinstance(payload, dict) or payload is None else {"value": payload}
        ok = entry.status == "resolved"
        reason = None
        if not ok:
            why = (data or {}).get("reason")
            reason = why if isinstance(why, str) and why else "cancelled"
        return Answer(entry.interrupt_id, ok, data, reason)
    props = given.forwarded_props
    if isinstance(props, dict):
        ours = props.get("toolnexus")
        if isinstance(ours, dict) and isinstance(ours.get("answer"), dict):
            try:
                return Answer.from_dict(ours["answer"])
            except (KeyError, TypeError, ValueError) as exc:
                raise ConfigError(
                    f"forwardedProps.toolnexus.answer is not an Answer: {exc}"
                ) from None
    return None


def _plain(message: Any) -> JSONObject:
    dumped: JSONObject = message.model_dump(by_alias=True)
    return dumped
