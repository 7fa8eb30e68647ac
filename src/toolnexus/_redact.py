"""The one place secrets are taken out of text that leaves the library.

Every secret the library handles is registered here when it is first resolved: API keys, header
values sent to an LLM endpoint, and every value a ``${NAME}`` header expansion produced (and the
expanded header as a whole). ``redact`` replaces each of them, and the escaped forms they take
inside ``repr()`` and JSON text, with ``***``. It is applied where text leaves: exceptions
raised out of a run (message, ``body`` and their ``__cause__``/``__context__`` chain), records
of the ``toolnexus`` logger, metric events, and tool results.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterable
from typing import Any

__all__ = [
    "MASK",
    "MIN_SECRET_LENGTH",
    "add_secret",
    "redact",
    "redact_exception",
    "redact_value",
    "secret_in",
]

MASK = "***"
MIN_SECRET_LENGTH = 6
"""Shorter values are not treated as secrets (masking ``"1"`` or ``"true"`` everywhere would
make text unreadable, and such values protect nothing)."""
_MAX_SECRETS = 4096

_lock = threading.Lock()
_secrets: dict[str, None] = {}  # insertion-ordered set, oldest first
_forms: tuple[str, ...] = ()
"""Every registered secret and its escaped forms, longest first."""


def add_secret(value: str | None) -> None:
    """Remember ``value`` (and its escaped forms) as a secret to mask from now on."""
    global _forms
    if not value or value in _secrets:
        return
    forms = {value, value.strip(), " ".join(value.split())}
    forms.add(value.encode("unicode_escape").decode("ascii"))
    forms.add(json.dumps(value, ensure_ascii=False)[1:-1])
    forms.add(json.dumps(value)[1:-1])
    forms = {f for f in forms if len(f) >= MIN_SECRET_LENGTH}
    if not forms:
        return
    with _lock:
        _secrets[value] = None
        while len(_secrets) > _MAX_SECRETS:
            del _secrets[next(iter(_secrets))]
        every = set(_forms) | forms
        _forms = tuple(sorted(every, key=len, reverse=True))


def add_secrets(values: Iterable[str]) -> None:
    for value in values:
        add_secret(value)


def secret_in(text: str) -> bool:
    """Whether ``text`` contains any registered secret."""
    return any(form in text for form in _forms)


def redact(text: str) -> str:
    """``text`` with every registered secret replaced by ``***``. Linear in ``len(text)``."""
    for form in _forms:
        if form in text:
            text = text.replace(form, MASK)
    return text


def redact_value(value: Any) -> Any:
    """A copy of a JSON-like value whose strings are redacted (used for metric events)."""
    if not _forms:
        return value
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redact_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(redact_value(v) for v in value)
    return value


def redact_exception(exc: BaseException) -> BaseException:
    """Take secrets out of ``exc`` in place, and out of its whole cause/context chain.

    String arguments (what ``str(exc)`` shows) and an ``LLMError``'s ``body`` are redacted; a
    chained exception whose text still shows a secret after that (one that renders its message
    from other attributes) is replaced in the chain by a ``RedactedError`` carrying its
    redacted text. Returns ``exc``.
    """
    if not _forms:
        return exc
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        _scrub(current)
        for attr in ("__cause__", "__context__"):
            linked = getattr(current, attr)
            if linked is not None and id(linked) not in seen:
                _scrub(linked)
                if _shows_secret(linked):
                    setattr(current, attr, _stand_in(linked))
        current = current.__cause__ or current.__context__
    return exc


class RedactedError(Exception):
    """Stands in a chain for an exception whose text showed a secret."""


def _scrub(exc: BaseException) -> None:
    try:
        exc.args = tuple(redact(a) if isinstance(a, str) else a for a in exc.args)
    except (AttributeError, TypeError):  # pragma: no cover - exotic exception types
        pass
    body = getattr(exc, "body", None)
    if isinstance(body, str):
        try:
            exc.body = redact(body)  # type: ignore[attr-defined]
        except AttributeError:  # pragma: no cover - a read-only body
            pass
    if getattr(exc, "__notes__", None):
        exc.__notes__ = [redact(n) if isinstance(n, str) else n for n in exc.__notes__]
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            redact_exception(inner)


def _shows_secret(exc: BaseException) -> bool:
    try:
        return secret_in(str(exc)) or secret_in(repr(exc))
    except Exception:  # pragma: no cover - a broken __str__
        return True


def _stand_in(exc: BaseException) -> RedactedError:
    try:
        text = str(exc)
    except Exception:  # pragma: no cover - a broken __str__
        text = ""
    stand_in = RedactedError(f"{type(exc).__name__}: {redact(text)}")
    stand_in.__traceback__ = exc.__traceback__
    stand_in.__suppress_context__ = True
    return stand_in


class _RedactingFilter(logging.Filter):
    """Renders a record's message with its arguments and redacts it (and its traceback)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not _forms:
            return True
        try:
            message = record.getMessage()
        except Exception:  # pragma: no cover - let logging report its own formatting error
            return True
        record.msg, record.args = redact(message), None
        if record.exc_info and record.exc_info[1] is not None and not record.exc_text:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
        elif record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


def _install(logger: logging.Logger) -> None:
    if not any(isinstance(f, _RedactingFilter) for f in logger.filters):
        logger.addFilter(_RedactingFilter())


_install(logging.getLogger("toolnexus"))
