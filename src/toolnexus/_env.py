"""``${NAME}`` expansion for header values. Expanded values are secrets: never log them."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

__all__ = ["expand_env", "expand_headers"]

_VAR = re.compile(r"\$\{([A-Za-z0-9_]+)\}")


def expand_env(value: str, environ: Mapping[str, str] | None = None) -> str:
    """Replace each ``${NAME}`` with the variable's value; an unset variable becomes ``""``."""
    env = os.environ if environ is None else environ
    return _VAR.sub(lambda m: env.get(m.group(1), ""), value)


def expand_headers(headers: Mapping[str, str] | None) -> dict[str, str]:
    return {name: expand_env(str(value)) for name, value in (headers or {}).items()}
