"""Calling one built-in tool the way a toolkit does, with or without a confinement root."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from toolnexus import ToolResult
from toolnexus.tools.builtin import BuiltinScope, builtin_tools


async def call(name: str, args: dict[str, Any], root: Path | None = None) -> ToolResult:
    """Run the built-in ``name`` with ``args`` (confined to ``root`` when given)."""
    [tool] = [t for t in builtin_tools(BuiltinScope(root)) if t.name == name]
    return await tool.execute(args, None)


def tree(base: Path, files: dict[str, str | bytes]) -> None:
    """Create ``files`` (relative path -> text or bytes) below ``base``."""
    for rel, content in files.items():
        path = base / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_bytes(content.encode("utf-8"))
