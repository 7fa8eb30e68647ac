"""Reading the fields of a serving profile mapping (``mcp``, ``a2a``).

Each reader raises ``ConfigError`` naming where the profile came from and the key at fault.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import ConfigError

__all__ = ["name_set", "profile_mapping", "text"]


def profile_mapping(value: object, keys: Sequence[str], kind: str, where: str) -> Mapping[str, Any]:
    """``value`` itself, once it is a mapping with no key outside ``keys``.

    ``kind`` names the profile in the error (``"MCP"``, ``"A2A"``).
    """
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: the {kind} profile must be an object")
    unknown = sorted(str(k) for k in value if k not in keys)
    if unknown:
        raise ConfigError(
            f"{where}: unknown key(s) {', '.join(unknown)} (expected {', '.join(keys)})"
        )
    return value


def text(
    value: Mapping[str, Any], key: str, default: str, where: str, *, empty_ok: bool = False
) -> str:
    """The string at ``key`` (``default`` when absent); empty only when ``empty_ok``."""
    found = value.get(key, default)
    if not isinstance(found, str) or (not found and not empty_ok):
        raise ConfigError(f'{where}: "{key}" must be a {"" if empty_ok else "non-empty "}string')
    return found


def name_set(value: Mapping[str, Any], key: str, noun: str, where: str) -> frozenset[str] | None:
    """The list of ``noun`` names at ``key`` as a set; ``None`` when absent."""
    names = value.get(key)
    if names is None:
        return None
    if isinstance(names, str) or not isinstance(names, Sequence):
        raise ConfigError(f'{where}: "{key}" must be a list of {noun} names')
    if not all(isinstance(n, str) for n in names):
        raise ConfigError(f'{where}: "{key}" must contain only strings')
    return frozenset(names)
