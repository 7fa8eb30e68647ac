"""The built-in tool family and the ``builtins`` toggle.

The ten built-in tools are, in order: ``bash, read, write, edit, grep, glob, webfetch,
question, apply_patch, todowrite``. ``builtin_tools()`` returns those implemented in this
release (see the README); ``select_builtins`` applies a toolkit's ``builtins`` option to them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ...errors import ConfigError
from ...types import Tool

__all__ = ["BUILTIN_NAMES", "builtin_tools", "select_builtins"]

BUILTIN_NAMES: tuple[str, ...] = (
    "bash",
    "read",
    "write",
    "edit",
    "grep",
    "glob",
    "webfetch",
    "question",
    "apply_patch",
    "todowrite",
)


def builtin_tools() -> list[Tool]:
    """The built-in tools available in this release, in their canonical order."""
    return []


def select_builtins(option: object, available: Sequence[Tool]) -> list[Tool]:
    """Apply a ``builtins`` option to the available built-ins.

    ``True`` → all; ``False``, ``{"disabled": True}`` or ``{"enabled": False}`` → none
    (``disabled`` is checked first and a whole-source off ignores the map);
    ``{"tools": {name: bool}}`` → all minus the names mapped to ``False``.
    """
    if option is True or option is None:
        return list(available)
    if option is False:
        return []
    if not isinstance(option, Mapping):
        raise ConfigError(f"builtins must be a bool or a mapping, not {type(option).__name__}")
    if option.get("disabled") is True:
        return []
    if option.get("enabled") is False:
        return []
    toggles = option.get("tools") or {}
    if not isinstance(toggles, Mapping):
        raise ConfigError("builtins.tools must map tool names to true/false")
    return [t for t in available if toggles.get(t.name, True) is not False]
