"""``create_toolkit``'s options checked before anything loads: a ``ConfigError`` names the
first one of the wrong kind, before a file is read or an MCP server started."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence

from .._checks import Kinds, check_kinds, instance_of, optional
from ..cancel import CancelToken
from ..errors import ConfigError
from ..types import Tool

__all__ = [
    "check_options",
    "checked_dirs",
    "checked_max_output",
    "checked_names",
    "checked_positive",
    "checked_tools",
]

PathOrPaths = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]


def _is_token_store(value: object) -> bool:
    return all(callable(getattr(value, method, None)) for method in ("get", "set"))


def _is_filter(value: object) -> bool:
    return isinstance(value, Mapping) and all(isinstance(v, bool) for v in value.values())


def _is_list(value: object) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str | bytes)


_KINDS: Kinds = {
    "mcp_config": (optional(instance_of(str, os.PathLike, Mapping)), "a file path or a dict"),
    "builtins": (optional(instance_of(bool, Mapping)), "True, False or a dict"),
    "skill_filter": (optional(_is_filter), "a dict of skill names to True/False"),
    "skills": (optional(_is_list), "a list of SkillDef"),
    "cancel": (optional(instance_of(CancelToken)), "a CancelToken"),
    "token_store": (optional(_is_token_store), "a TokenStore (with get and set)"),
    "strict": (optional(instance_of(bool)), "True or False"),
    "wait_for": (optional(callable), "a function"),
    "skill_provider": (optional(callable), "a function"),
}
"""What each checked option accepts besides ``None``, and how a message says it."""


def check_options(**options: object) -> None:
    """A ``ConfigError`` naming the first of ``options`` (each ``None`` or of its kind) that
    is of the wrong kind."""
    check_kinds(_KINDS, options)


def checked_names(names: Iterable[str] | None, option: str) -> list[str]:
    """``names`` as a list of strings (a bare string is refused: it is not a list of names)."""
    if names is None:
        return []
    if isinstance(names, str | bytes | Mapping) or not isinstance(names, Iterable):
        raise ConfigError(f"{option} must be a list of names, not {type(names).__name__}")
    out = list(names)
    for i, name in enumerate(out):
        if not isinstance(name, str):
            raise ConfigError(f"{option}[{i}] must be a name (a string), not {type(name).__name__}")
    return out


def checked_dirs(dirs: PathOrPaths | None, option: str) -> PathOrPaths | None:
    """A folder path or a list of them (made a list, so that a generator is read once)."""
    if dirs is None or isinstance(dirs, str | os.PathLike):
        return dirs
    if isinstance(dirs, bytes | Mapping) or not isinstance(dirs, Iterable):
        raise ConfigError(
            f"{option} must be a folder path or a list of them, not {type(dirs).__name__}"
        )
    out = list(dirs)
    for i, d in enumerate(out):
        if not isinstance(d, str | os.PathLike):
            raise ConfigError(f"{option}[{i}] must be a folder path, not {type(d).__name__}")
    return out


def checked_positive(value: object, name: str) -> int:
    """``value`` when it is a positive integer (``True`` is not)."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigError(f"{name} must be a positive integer, not {value!r}")
    return value


def checked_tools(tools: Iterable[Tool] | None, option: str) -> list[Tool]:
    """``tools`` as a list, or a ``ConfigError`` naming the first entry that is not a ``Tool``."""
    if tools is None:
        return []
    if isinstance(tools, str | bytes) or not isinstance(tools, Iterable):
        raise ConfigError(f"{option} must be a list of Tool objects, not {type(tools).__name__}")
    out = list(tools)
    for i, t in enumerate(out):
        if not isinstance(t, Tool):
            raise ConfigError(
                f"{option}[{i}] is not a Tool but {type(t).__name__} ({t!r:.60}); "
                "wrap functions with @tool or build a Tool"
            )
    return out


def checked_max_output(value: object) -> int:
    """``max_output_chars``: a positive integer."""
    return checked_positive(value, "max_output_chars")
