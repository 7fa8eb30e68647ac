"""What every built-in tool shares: argument checks, error results, output caps, the root."""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from ...types import JSONObject, Tool, ToolContext, ToolResult

__all__ = [
    "MAX_OUTPUT_CHARS",
    "ArgError",
    "BuiltinScope",
    "builtin",
    "cut_head",
    "cut_tail",
    "fail",
    "opt_bool",
    "opt_number",
    "opt_str",
    "require_str",
]

logger = logging.getLogger("toolnexus")

MAX_OUTPUT_CHARS = 100_000
"""Longest output ``bash``, ``read``, ``grep`` and ``webfetch`` return; longer ones are cut."""

Body = Callable[[JSONObject, ToolContext | None], Awaitable[ToolResult]]


class ArgError(Exception):
    """A bad argument or a refused path: becomes ``ToolResult("<tool>: <message>", True)``."""


class BuiltinScope:
    """What the built-ins of one toolkit share: the confinement root and cleanups to run
    when the toolkit closes (``bash`` registers one that kills its running process groups)."""

    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        self.root: Path | None = Path(root).resolve() if root is not None else None
        self._cleanups: list[Callable[[], Awaitable[None]]] = []

    def on_close(self, cleanup: Callable[[], Awaitable[None]]) -> None:
        """Run ``cleanup`` when the toolkit closes."""
        self._cleanups.append(cleanup)

    async def close(self) -> None:
        """Run every cleanup; one that raises is logged and the others still run."""
        cleanups, self._cleanups = self._cleanups, []
        for cleanup in cleanups:
            try:
                await cleanup()
            except Exception:
                logger.warning("built-in tool cleanup failed", exc_info=True)

    def resolve(self, path: str) -> Path:
        """``path`` made absolute: against the root when there is one, else the working
        directory. With a root, a path that resolves outside it (symlinks followed) is
        refused with an ``ArgError`` naming it."""
        if self.root is None:
            return Path(os.path.abspath(path))
        resolved = (self.root / path).resolve()
        if resolved != self.root and not resolved.is_relative_to(self.root):
            raise ArgError(f"{path} is outside the root {self.root}")
        return resolved

    def resolve_name(self, path: str) -> Path:
        """Like ``resolve``, but a symlink in the last component is kept (the link itself, as
        ``rm`` sees it); its folder is resolved and checked as ``resolve`` does, and so is
        where the link leads."""
        final = self.resolve(path)
        base = Path(path) if self.root is None else self.root / path
        name = base.name
        if name in ("", ".", "..") or not os.path.islink(base):
            return final
        return self.resolve(str(base.parent)) / name


def fail(tool: str, message: str, metadata: JSONObject | None = None) -> ToolResult:
    """The error result ``"<tool>: <message>"``."""
    return ToolResult(f"{tool}: {message}", is_error=True, metadata=metadata)


def builtin(
    name: str, description: str, properties: JSONObject, required: list[str], body: Body
) -> Tool:
    """A built-in ``Tool`` whose schema is closed (``additionalProperties: false``) and whose
    ``ArgError`` or unexpected exception becomes an error result naming the tool."""

    async def execute(args: JSONObject, ctx: ToolContext | None) -> ToolResult:
        try:
            return await body(args, ctx)
        except ArgError as exc:
            return fail(name, str(exc))
        except Exception as exc:  # a tool never raises into the run
            logger.debug("built-in %s failed", name, exc_info=True)
            return fail(name, str(exc) or type(exc).__name__)

    schema: JSONObject = {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }
    return Tool(name, description, schema, "builtin", execute)


def require_str(args: JSONObject, name: str) -> str:
    """A required, non-empty string argument, else ``ArgError("<name> is required")``."""
    value = args.get(name)
    if not isinstance(value, str) or value == "":
        raise ArgError(f"{name} is required")
    return value


def opt_str(args: JSONObject, name: str, default: str | None = None) -> str | None:
    """An optional string argument (``ArgError`` when present but not a string)."""
    value = args.get(name)
    if value is None:
        return default
    if not isinstance(value, str):
        raise ArgError(f"{name} must be a string")
    return value


def opt_number(args: JSONObject, name: str, default: float | None = None) -> float | None:
    """An optional number argument (``ArgError`` when present but not a number)."""
    value: Any = args.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ArgError(f"{name} must be a number")
    return float(value)


def opt_bool(args: JSONObject, name: str, default: bool = False) -> bool:
    """An optional boolean argument (``ArgError`` when present but not a boolean)."""
    value = args.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ArgError(f"{name} must be a boolean")
    return value


def cut_head(text: str, limit: int = MAX_OUTPUT_CHARS) -> tuple[str, bool]:
    """Keep the first ``limit`` characters; say ``truncated`` when anything was cut."""
    if len(text) <= limit:
        return text, False
    return text[:limit] + f"\n[output truncated: {len(text) - limit} more characters]", True


def cut_tail(text: str, limit: int = MAX_OUTPUT_CHARS) -> tuple[str, bool]:
    """Keep the last ``limit`` characters; say ``truncated`` when anything was cut."""
    if len(text) <= limit:
        return text, False
    return f"[output truncated: {len(text) - limit} earlier characters]\n" + text[-limit:], True
