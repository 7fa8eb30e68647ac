"""Finding, in a saved transcript, the turn a durable halt stopped on."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..dialects import Dialect, ToolUse
from ..errors import ConfigError
from ..suspension import Request
from ..types import JSONObject, ToolResult

__all__ = ["ResumableTurn", "resumable_turn"]


@dataclass(slots=True)
class ResumableTurn:
    calls: list[ToolUse]
    """Every call of the last tool-calling assistant message, in call order."""
    halted: ToolUse
    results: dict[str, ToolResult]
    """Results already recorded for that turn (the halted call's placeholder excluded)."""
    unanswered: list[ToolUse]
    results_start: int
    """Index of the first message after the assistant message."""


def resumable_turn(dialect: Dialect, messages: list[JSONObject], request: Request) -> ResumableTurn:
    """Validate ``messages`` for a resume of ``request``; ``ValueError`` says what is wrong."""
    call_id = (request.data or {}).get("toolCallId")
    if not isinstance(call_id, str):
        raise ConfigError(
            f"pending request {request.id!r} has no data['toolCallId']; only a request returned "
            f"by a halted run (status 'pending') can be resumed"
        )
    index = next(
        (i for i in range(len(messages) - 1, -1, -1) if dialect.tool_uses_in(messages[i])), None
    )
    if index is None:
        raise ConfigError("history has no assistant message with tool calls to resume")
    recorded: dict[str, ToolResult] = {}
    for position, message in enumerate(messages[index + 1 :], start=index + 1):
        pairs = dialect.results_in(message)
        if not pairs:
            raise ConfigError(
                f"history must end with the results of its last tool-calling turn; message "
                f"{position} (role {message.get('role')!r}) is not a tool result"
            )
        recorded.update(pairs)
    first = index  # a style whose calls are items of their own (responses): all of the turn's
    while first > 0 and dialect.tool_uses_in(messages[first - 1]):
        first -= 1
    calls = [
        use for message in messages[first : index + 1] for use in dialect.tool_uses_in(message)
    ]
    made_up = _MADE_UP.fullmatch(call_id)
    if made_up and any(not use.named for use in calls):
        # Calls without an id of their own (gemini's) were named call_<turn>_<index> in the
        # run that halted; read back from the transcript they are call_0_<index>.
        recorded = {_renamed(k, made_up[1]): v for k, v in recorded.items()}
        for use in calls:
            if not use.named:
                use.id = _renamed(use.id, made_up[1])
    halted = next((use for use in calls if use.id == call_id), None)
    if halted is None:
        raise ConfigError(f"the last tool-calling turn of history has no call {call_id!r}")
    if call_id not in recorded:
        raise ConfigError(f"history has no placeholder result for the halted call {call_id!r}")
    del recorded[call_id]
    unanswered = [u for u in calls if u.id not in recorded and u.id != call_id]
    return ResumableTurn(calls, halted, recorded, unanswered, index + 1)


_MADE_UP = re.compile(r"call_(\d+)_\d+")


def _renamed(call_id: str, turn: str) -> str:
    """``call_0_<i>`` (a made-up id read back from a transcript) as ``call_<turn>_<i>``."""
    return (
        f"call_{turn}_" + call_id.removeprefix("call_0_")
        if call_id.startswith("call_0_")
        else call_id
    )
