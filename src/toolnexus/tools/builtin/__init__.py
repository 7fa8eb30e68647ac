"""The built-in tool family and the ``builtins`` toggle.

The ten built-in tools are, in order: ``bash, read, write, edit, grep, glob, webfetch,
question, apply_patch, todowrite``. ``builtin_tools(scope)`` creates them for one toolkit
(``scope`` carries the confinement root and the cleanups run at close); ``builtin_scope``
reads the root from a toolkit's ``builtins`` option and ``select_builtins`` applies its toggles.
Each family module exposes ``tools(scope) -> list[Tool]``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence

from ...errors import ConfigError
from ...types import Tool
from ._common import BuiltinScope

__all__ = ["BUILTIN_NAMES", "BuiltinScope", "builtin_scope", "builtin_tools", "select_builtins"]

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


def _families() -> list[Callable[[BuiltinScope], list[Tool]]]:
    from . import files, patch, question, search, shell, todo, web

    return [
        shell.tools,
        files.tools,
        search.tools,
        web.tools,
        question.tools,
        patch.tools,
        todo.tools,
    ]


def builtin_tools(scope: BuiltinScope | None = None) -> list[Tool]:
    """The built-in tools in their canonical order, sharing ``scope`` (a fresh, unconfined
    one when ``None``)."""
    scope = scope if scope is not None else BuiltinScope()
    made = {t.name: t for family in _families() for t in family(scope)}
    return [made[name] for name in BUILTIN_NAMES if name in made]


def builtin_scope(option: object) -> BuiltinScope:
    """The scope a ``builtins`` option asks for: ``{"root": DIR}`` confines the file tools to
    ``DIR`` (which must be an existing folder); anything else leaves them unconfined."""
    if not isinstance(option, Mapping) or option.get("root") is None:
        return BuiltinScope()
    root = option["root"]
    if not isinstance(root, str | os.PathLike):
        raise ConfigError(f"builtins.root must be a folder path, not {type(root).__name__}")
    if not os.path.isdir(root):
        raise ConfigError(f"builtins.root is not an existing folder: {os.fspath(root)}")
    return BuiltinScope(root)


def select_builtins(option: object, available: Sequence[Tool]) -> list[Tool]:
    """Apply a ``builtins`` option to the available built-ins.

    ``True`` → all; ``False``, ``{"disabled": True}`` or ``{"enabled": False}`` → none
    (``disabled`` is checked first and a whole-source off ignores the map);
    ``{"tools": {name: bool}}`` → all minus the names mapped to ``False``; a ``root`` key is
    read by ``builtin_scope``.
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
