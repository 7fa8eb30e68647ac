"""Checks of what a run is given: a wrong kind is a ``ConfigError`` naming the option."""

from __future__ import annotations

from .._checks import Kinds, check_kinds, instance_of, optional
from ..cancel import CancelToken
from ..errors import ConfigError
from ..suspension import Answer, Request
from ..toolkit import Toolkit

__all__ = ["check_answer", "check_run"]

_RUN_OPTIONS: Kinds = {
    "prompt": (instance_of(str), "a string"),
    "toolkit": (optional(instance_of(Toolkit)), "a Toolkit (see create_toolkit)"),
    "history": (optional(instance_of(list, tuple)), "a list of messages"),
    "conversation_id": (optional(instance_of(str)), "a string"),
    "id": (optional(instance_of(str)), "a string"),
    "cancel": (optional(instance_of(CancelToken)), "a CancelToken"),
    "pending": (instance_of(Request), "the halted run's Request (result.pending)"),
    "answer": (instance_of(Answer), "an Answer"),
    "on_event": (optional(callable), "a function"),
    "on_text": (optional(callable), "a function"),
}
"""What each option of a run accepts."""


def check_run(**options: object) -> None:
    """A ``ConfigError`` naming the first of a run's ``options`` of the wrong kind, raised
    before the run starts. A few ``isinstance`` calls: a history is not walked or copied."""
    check_kinds(_RUN_OPTIONS, options)


def check_answer(pending: Request, answer: Answer) -> None:
    """A ``ConfigError`` when ``answer`` is not the answer to ``pending`` (another id)."""
    if answer.id != pending.id:
        raise ConfigError(
            f"answer id {answer.id!r} does not match the pending request id {pending.id!r}"
        )
