"""JSON text every store can keep, for any transcript the library can produce.

A transcript may hold text no database takes as is: a lone surrogate (half of a split emoji,
from a tool's output) cannot be encoded as UTF-8, and PostgreSQL's JSONB refuses NUL
(``\\u0000``) even escaped. Both are written with ASCII ``\\u`` escapes instead, which
``json.loads`` turns back into the exact same string.
"""

from __future__ import annotations

import json
from typing import Any

from .._json import compact_json
from ..errors import ConfigError

__all__ = ["from_jsonb", "storable_id", "storable_json", "to_jsonb"]

_ESCAPED_ID = "\uffff"
"""Starts an id kept in escaped form (a noncharacter: no real id starts with it)."""


def storable_json(value: Any) -> str:
    """Compact JSON text of ``value`` that encodes as UTF-8 (raw Unicode when it can be).

    ``TypeError``/``ValueError`` when ``value`` is not JSON-serialisable.
    """
    text = compact_json(value)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: escape everything non-ASCII
        text = json.dumps(value, separators=(",", ":"))
    return text


def to_jsonb(value: Any) -> str:
    """JSON text of ``value`` for a PostgreSQL JSONB column.

    Mostly the value's own JSON. When it holds text JSONB cannot keep (NUL, a lone surrogate),
    it is stored as one JSONB *string* holding the value's ASCII-escaped JSON text, which
    ``from_jsonb`` reads back as the exact value (``value`` itself is never a string here).
    """
    text = compact_json(value)
    if "\\u0000" in text or not _is_utf8(text):
        text = json.dumps(json.dumps(value, separators=(",", ":")))
    return text


def from_jsonb(stored: Any) -> Any:
    """The value ``to_jsonb`` stored (``ValueError`` when an escaped form is not JSON)."""
    return json.loads(stored) if isinstance(stored, str) else stored


def storable_id(id: str, *, nul: bool = True) -> str:
    """The text a database keys conversation ``id`` by: ``id`` itself, or, when it holds what
    the database cannot keep (a lone surrogate; NUL unless ``nul``), an escaped form.

    Different ids always give different keys: an id that starts with the escape marker is
    escaped too, so no id kept as is can look like an escaped one.
    """
    if not isinstance(id, str):
        raise ConfigError(f"conversation ids are strings, got {type(id).__name__}")
    if _is_utf8(id) and (nul or "\x00" not in id) and not id.startswith(_ESCAPED_ID):
        return id
    return _ESCAPED_ID + json.dumps(id)


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
