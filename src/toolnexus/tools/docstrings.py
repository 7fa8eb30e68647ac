"""Per-argument descriptions from a docstring: Google, NumPy and Sphinx styles.

Google::

    Args:
        city: The city to look up.
        days (int): How many days, continued
            on an indented line.

NumPy::

    Parameters
    ----------
    city : str
        The city to look up.

Sphinx::

    :param city: The city to look up.
    :param int days: How many days.
"""

from __future__ import annotations

import inspect
import re

__all__ = ["argument_descriptions", "first_line"]

_GOOGLE_HEADERS = frozenset({"args:", "arguments:", "parameters:", "params:", "keyword args:"})
_GOOGLE_ENTRY = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_NUMPY_ENTRY = re.compile(r"^\*{0,2}(\w+)\s*(?::.*)?$")
_SPHINX_ENTRY = re.compile(r"^:param\s+(?:[^:]*\s)?(\w+)\s*:\s*(.*)$")
_SPHINX_FIELD = re.compile(r"^:\w+")


def first_line(doc: str | None) -> str:
    """The first non-empty line of a docstring, stripped; ``""`` when there is none."""
    for line in inspect.cleandoc(doc or "").splitlines():
        if line.strip():
            return line.strip()
    return ""


def argument_descriptions(doc: str | None) -> dict[str, str]:
    """``{argument: description}`` from the docstring's argument section, in any of the styles.

    Continuation lines are joined with single spaces. Arguments without text are left out.
    """
    lines = inspect.cleandoc(doc or "").splitlines()
    found: dict[str, str] = {}
    found.update(_numpy(lines))
    found.update(_google(lines))
    found.update(_sphinx(lines))
    return {name: text for name, text in found.items() if text}


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _google(lines: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for start, line in enumerate(lines):
        if line.strip().lower() not in _GOOGLE_HEADERS:
            continue
        header_indent = _indent(line)
        entry_indent: int | None = None
        current: str | None = None
        for body in lines[start + 1 :]:
            if not body.strip():
                continue
            indent = _indent(body)
            if indent <= header_indent:
                break
            if entry_indent is None:
                entry_indent = indent
            match = _GOOGLE_ENTRY.match(body.strip())
            if indent == entry_indent and match is not None:
                current = match.group(1)
                out[current] = match.group(2).strip()
            elif indent > entry_indent and current is not None:
                out[current] = f"{out[current]} {body.strip()}".strip()
    return out


def _numpy(lines: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for start in range(len(lines) - 1):
        title, rule = lines[start].strip().lower(), lines[start + 1].strip()
        if title not in ("parameters", "other parameters") or not re.fullmatch(r"-{3,}", rule):
            continue
        base = _indent(lines[start])
        current: str | None = None
        for body in lines[start + 2 :]:
            if not body.strip():
                continue
            indent = _indent(body)
            if indent == base:
                match = _NUMPY_ENTRY.match(body.strip())
                if match is None:
                    break  # the next section's title
                current = match.group(1)
                out[current] = ""
            elif indent > base and current is not None:
                out[current] = f"{out[current]} {body.strip()}".strip()
    return out


def _sphinx(lines: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    current: str | None = None
    for line in lines:
        stripped = line.strip()
        match = _SPHINX_ENTRY.match(stripped)
        if match is not None:
            current = match.group(1)
            out[current] = match.group(2).strip()
        elif _SPHINX_FIELD.match(stripped) or not stripped:
            current = None
        elif current is not None:
            out[current] = f"{out[current]} {stripped}".strip()
    return out
