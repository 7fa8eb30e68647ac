"""``${NAME}`` expansion for header values. Expanded values are secrets: never log them."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

from ._redact import add_secret

__all__ = ["expand_env", "expand_header", "expand_headers", "unsendable", "unset_variables"]

_VAR = re.compile(r"\$\{([A-Za-z0-9_]+)\}")
_UNSENDABLE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
"""A control character other than tab (the API key is checked with it at every run)."""


def expand_env(value: str, environ: Mapping[str, str] | None = None) -> str:
    """Replace each ``${NAME}`` with the variable's value; an unset variable becomes ``""``.

    Every substituted value, and the expanded text as a whole, is registered as a secret, so
    it is masked wherever the library reports text (see ``toolnexus._redact``).
    """
    env = os.environ if environ is None else environ

    def substitute(match: re.Match[str]) -> str:
        found = env.get(match.group(1), "")
        add_secret(found)
        return found

    expanded, count = _VAR.subn(substitute, value)
    if count:
        add_secret(expanded)
    return expanded


def expand_header(value: str) -> str:
    """A header value with its ``${NAME}`` s expanded, without leading or trailing whitespace:
    ``"Bearer ${TOKEN}"`` with ``TOKEN`` unset is sent as ``"Bearer"`` (HTTP stacks refuse a
    value ending in a space)."""
    return expand_env(value).strip(" \t")


def expand_headers(headers: Mapping[str, str] | None) -> dict[str, str]:
    return {name: expand_header(str(value)) for name, value in (headers or {}).items()}


def unsendable(text: str) -> bool:
    """Whether ``text`` has a character no HTTP header may carry (a line break, NUL, DEL...)."""
    return _UNSENDABLE.search(text) is not None


def unset_variables(values: Iterable[str], environ: Mapping[str, str] | None = None) -> list[str]:
    """The names of the ``${NAME}`` variables used in ``values`` that are not set, in order."""
    env = os.environ if environ is None else environ
    out: list[str] = []
    for value in values:
        for name in _VAR.findall(str(value)):
            if name not in env and name not in out:
                out.append(name)
    return out
