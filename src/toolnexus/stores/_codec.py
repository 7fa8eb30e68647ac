"""JSON text every store can keep, for any transcript the library can produce.

A transcript may hold text no database takes as is: a lone surrogate (half of a split emoji,
from a tool's output) cannot be encoded as UTF-8, and PostgreSQL's JSONB refuses NUL
(``\\u0000``) even escaped. Such a value is stored as one JSON *string* instead of its usual
array or object, which ``decode`` turns back into the exact value:

- ``"b64:<base64>"``: its JSON text encoded as UTF-8 with surrogates kept (``surrogatepass``),
  used when it holds a surrogate: every code point comes back as it was, a lone half and two
  separate halves included (JSON's own ``\\ud83d\\ude00`` escapes would join those into one);
- otherwise (NUL in JSONB) its JSON text, with NUL written as the six characters ``\\u0000``.

A stored value that is a JSON array or object is the value itself.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from .._json import compact_json
from ..errors import ConfigError

__all__ = ["decode", "from_jsonb", "storable_id", "storable_json", "to_jsonb"]

_ESCAPED_ID = "\uffff"
"""Starts an id kept in escaped form (a noncharacter: no real id starts with it)."""
_BASE64 = "b64:"


def storable_json(value: Any) -> str:
    """JSON text of ``value`` (an array or object) that encodes as UTF-8: its compact JSON
    with raw Unicode, or, when that holds a surrogate, the encoded string form.

    ``TypeError``/``ValueError`` when ``value`` is not JSON-serialisable.
    """
    text = compact_json(value)
    if _is_utf8(text):
        return text
    return json.dumps(_BASE64 + base64.b64encode(text.encode("utf-8", "surrogatepass")).decode())


def to_jsonb(value: Any) -> str:
    """JSON text of ``value`` (an array or object) for a PostgreSQL JSONB column: as
    ``storable_json``, and in the string form also when it holds NUL."""
    text = storable_json(value)
    if not text.startswith('"') and "\\u0000" in text:
        text = json.dumps(json.dumps(value, separators=(",", ":")))
    return text


def decode(stored: Any) -> Any:
    """The value ``storable_json``/``to_jsonb`` wrote, from its parsed JSON.

    ``ValueError`` when a string form is not one this module writes.
    """
    if not isinstance(stored, str):
        return stored
    if stored.startswith(_BASE64):
        try:
            raw = base64.b64decode(stored[len(_BASE64) :], validate=True)
        except ValueError as exc:
            raise ValueError(f"bad base64 ({exc})") from None
        return json.loads(raw.decode("utf-8", "surrogatepass"))
    return json.loads(stored)


from_jsonb = decode
"""The value ``to_jsonb`` stored, from what the driver read."""


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
    return _ESCAPED_ID + base64.b64encode(id.encode("utf-8", "surrogatepass")).decode()


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
