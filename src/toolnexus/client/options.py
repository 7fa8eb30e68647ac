"""Checks of what a run is given: a wrong kind is a ``ConfigError`` naming the option."""

from __future__ import annotations

from ..cancel import CancelToken
from ..errors import ConfigError
from ..suspension import Answer, Request
from ..toolkit import Toolkit

__all__ = ["check_answer", "check_run"]

_RUN_OPTIONS: dict[str, tuple[tuple[type, ...] | None, str]] = {
    "prompt": ((str,), "a string"),
    "toolkit": ((Toolkit, type(None)), "a Toolkit (see create_toolkit)"),
    "history": ((list, tuple, type(None)), "a list of messages"),
    "conversation_id": ((str, type(None)), "a string"),
    "id": ((str, type(None)), "a string"),
    "cancel": ((CancelToken, type(None)), "a CancelToken"),
    "pending": ((Request,), "the halted run's Request (result.pending)"),
    "answer": ((Answer,), "an Answer"),
    "on_event": (None, "a function"),
    "on_text": (None, "a function"),
}
"""What each option of a run accepts: these types, or (``None``) ``None`` or a callable."""


def check_run(**options: object) -> None:
    """A ``ConfigError`` naming the first of a run's ``options`` of the wrong kind, raised
    before the run starts. A few ``isinstance`` calls: a history is not walked or copied."""
    for option, value in options.items():
        accepted, expected = _RUN_OPTIONS[option]
        if accepted is None:
            if value is None or callable(value):
                continue
        elif isinstance(value, accepted):
            continue
        raise ConfigError(f"{option} must be {expected}, not {type(value).__name__}")


def check_answer(pending: Request, answer: Answer) -> None:
    """A ``ConfigError`` when ``answer`` is not the answer to ``pending`` (another id)."""
    if answer.id != pending.id:
        raise ConfigError(
            f"answer id {answer.id!r} does not match the pending request id {pending.id!r}"
        )
