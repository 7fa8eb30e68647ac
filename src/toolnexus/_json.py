"""JSON in and out: the compact rendering shown to a model, and parsing with a depth limit."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["MAX_DEPTH", "JSONDepthError", "check_depth", "compact_json", "loads"]

MAX_DEPTH = 512
"""Deepest nesting of arrays and objects the library accepts in JSON it parses."""


class JSONDepthError(ValueError):
    """JSON nested deeper than ``MAX_DEPTH`` levels."""

    def __init__(self, limit: int = MAX_DEPTH) -> None:
        super().__init__(f"JSON nested deeper than {limit} levels")


def compact_json(value: Any) -> str:
    """``json.dumps`` with no spaces and unescaped Unicode."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def loads(text: str | bytes, *, max_depth: int = MAX_DEPTH) -> Any:
    """``json.loads`` that refuses nesting deeper than ``max_depth`` with ``JSONDepthError``.

    Never raises ``RecursionError``; any other problem is the usual ``json.JSONDecodeError``.
    """
    try:
        value = json.loads(text)
    except RecursionError:
        raise JSONDepthError(max_depth) from None
    if len(text) <= max_depth:  # too short to hold that many brackets (most SSE events)
        return value
    opening = (b"[", b"{") if isinstance(text, bytes) else ("[", "{")
    if text.count(opening[0]) + text.count(opening[1]) > max_depth:  # type: ignore[arg-type]
        check_depth(value, max_depth)  # only text with that many brackets can be too deep
    return value


def check_depth(value: Any, max_depth: int = MAX_DEPTH) -> None:
    """Raise ``JSONDepthError`` when ``value`` nests lists/dicts deeper than ``max_depth``.

    Iterative and linear in the number of containers; scalars cost nothing.
    """
    if not isinstance(value, dict | list):
        return
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > max_depth:
            raise JSONDepthError(max_depth)
        children = node.values() if isinstance(node, dict) else node
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
