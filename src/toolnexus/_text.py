"""Text that is valid Unicode, so that it can always be encoded as UTF-8.

A Python string can hold what no UTF-8 text can: lone surrogate code points. They come from
bytes that are not UTF-8 decoded with ``surrogateescape`` (file names, command-line arguments
and standard input under some locales: ``caf\\udce9.txt`` for the bytes ``caf\\xe9.txt``), from
JSON escapes such as ``"\\ud800"``, or from a tool's own output. Such text can be neither sent
to a model nor saved in a store, so every text that enters a transcript passes through here:

- a pair of surrogates is joined into the one character it stands for;
- an escaped byte (``U+DC80``..``U+DCFF``) becomes the four characters ``\\xNN``;
- any other lone surrogate becomes ``U+FFFD`` (the replacement character).
"""

from __future__ import annotations

import re
from typing import Any, TypeVar

__all__ = ["invalid_note", "valid_text", "valid_value"]

T = TypeVar("T")

_SURROGATE = re.compile("[\ud800-\udfff]")


def invalid_note(count: int) -> str:
    """The line added to an output that had ``count`` characters replaced."""
    what = "character that was" if count == 1 else "characters that were"
    return (
        f"[note: {count} {what} not valid Unicode replaced: \\xNN stands for a byte that is "
        "not UTF-8 (as in a file name), U+FFFD for anything else]"
    )


def valid_text(text: str) -> tuple[str, int]:
    """``text`` made valid Unicode (see the module's text), and how many characters changed."""
    if text.isascii() or _SURROGATE.search(text) is None:
        return text, 0
    joined = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    count = 0

    def fix(match: re.Match[str]) -> str:
        nonlocal count
        count += 1
        code = ord(match.group())
        return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else "\ufffd"

    return _SURROGATE.sub(fix, joined), count


def valid_value(value: T) -> tuple[T, int]:
    """``value`` with every string in it (keys too, through dicts and lists) made valid
    Unicode; the same object when nothing needed to change."""
    fixed, count = _valid(value)
    return fixed, count


def _valid(value: Any) -> tuple[Any, int]:
    if isinstance(value, str):
        return valid_text(value)
    if isinstance(value, dict):
        total = 0
        items: list[tuple[Any, Any]] = []
        for key, item in value.items():
            new_key, a = _valid(key)
            new_item, b = _valid(item)
            total += a + b
            items.append((new_key, new_item))
        return (dict(items), total) if total else (value, 0)
    if isinstance(value, list | tuple):
        total = 0
        fixed: list[Any] = []
        for item in value:
            new_item, n = _valid(item)
            total += n
            fixed.append(new_item)
        if not total:
            return value, 0
        return (fixed if isinstance(value, list) else tuple(fixed)), total
    return value, 0
