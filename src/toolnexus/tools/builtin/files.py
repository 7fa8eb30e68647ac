"""The ``read``, ``write`` and ``edit`` built-ins: UTF-8 text files, confined to the root."""

from __future__ import annotations

import os
import threading
from typing import TextIO

from ...types import JSONObject, Tool, ToolContext, ToolResult
from ._common import ArgError, BuiltinScope, builtin, opt_bool, opt_number, require_str
from ._confined import open_file
from ._fs import HeadText, fs_errors, in_thread, whole_number

__all__ = ["tools"]

_CHUNK = 1 << 20


def tools(scope: BuiltinScope) -> list[Tool]:
    """``read``, ``write`` and ``edit`` for one toolkit."""

    async def read(args: JSONObject, ctx: ToolContext | None) -> ToolResult:
        path = require_str(args, "path")
        offset = whole_number(opt_number(args, "offset"), "offset", 1)
        limit = whole_number(opt_number(args, "limit"), "limit", 1)
        return await in_thread(lambda stop: _read(scope, path, offset, limit, stop))

    async def write(args: JSONObject, ctx: ToolContext | None) -> ToolResult:
        path = require_str(args, "path")
        content = _string(args, "content")
        return await in_thread(lambda stop: _write(scope, path, content))

    async def edit(args: JSONObject, ctx: ToolContext | None) -> ToolResult:
        path = require_str(args, "path")
        old = require_str(args, "oldString")
        new = _string(args, "newString")
        every = opt_bool(args, "replaceAll")
        return await in_thread(lambda stop: _edit(scope, path, old, new, every))

    return [
        builtin(
            "read",
            "Read a UTF-8 text file, whole or a window of lines (offset is 1-based).",
            {
                "path": {"type": "string", "description": "The file to read."},
                "offset": {"type": "number", "description": "First line to return (1-based)."},
                "limit": {"type": "number", "description": "How many lines to return."},
            },
            ["path"],
            read,
        ),
        builtin(
            "write",
            "Write a UTF-8 text file, replacing it if it exists and creating parent folders.",
            {
                "path": {"type": "string", "description": "The file to write."},
                "content": {"type": "string", "description": "The whole new content."},
            },
            ["path", "content"],
            write,
        ),
        builtin(
            "edit",
            "Replace an exact piece of text in a file: it must occur once, unless replaceAll.",
            {
                "path": {"type": "string", "description": "The file to edit."},
                "oldString": {"type": "string", "description": "The exact text to replace."},
                "newString": {"type": "string", "description": "The text to put in its place."},
                "replaceAll": {
                    "type": "boolean",
                    "description": "Replace every occurrence (default: exactly one).",
                },
            },
            ["path", "oldString", "newString"],
            edit,
        ),
    ]


def _string(args: JSONObject, name: str) -> str:
    """A required string argument that may be empty."""
    value = args.get(name)
    if not isinstance(value, str):
        raise ArgError(f"{name} is required")
    return value


def _read(
    scope: BuiltinScope, path: str, offset: int | None, limit: int | None, stop: threading.Event
) -> ToolResult:
    target = scope.resolve(path)
    head = HeadText()
    with fs_errors(path):
        fd = open_file(scope, target, path)
        with open(fd, encoding="utf-8", newline="\n") as file:
            if offset is None and limit is None:
                while chunk := file.read(_CHUNK):
                    if stop.is_set():
                        break
                    head.add(chunk)
            else:
                start = (offset or 1) - 1
                _read_window(file, start, None if limit is None else start + limit, head, stop)
    text, truncated = head.result()
    return ToolResult(text, metadata={"truncated": True} if truncated else None)


def _read_window(
    file: TextIO, start: int, end: int | None, head: HeadText, stop: threading.Event
) -> None:
    """Lines ``[start, end)`` of the text split on ``"\\n"``, joined with ``"\\n"``. As with
    ``str.split``, text ending in ``"\\n"`` (or empty text) has a last, empty line."""
    index = 0
    ended_with_newline = True
    taken = 0
    for line in file:
        if (end is not None and index >= end) or stop.is_set():
            return
        ended_with_newline = line.endswith("\n")
        if index >= start:
            head.add(("\n" if taken else "") + (line[:-1] if ended_with_newline else line))
            taken += 1
        index += 1
    if ended_with_newline and index >= start and (end is None or index < end) and taken:
        head.add("\n")


def _write(scope: BuiltinScope, path: str, content: str) -> ToolResult:
    target = scope.resolve(path)
    try:
        data = content.encode("utf-8")
    except UnicodeEncodeError:
        raise ArgError("content is not valid Unicode text") from None
    with fs_errors(path):
        fd = open_file(scope, target, path, os.O_WRONLY | os.O_CREAT, create_parents=True)
        _replace_content(fd, data)
    return ToolResult(f"Wrote {len(data)} bytes to {path}", metadata={"bytes": len(data)})


def _edit(scope: BuiltinScope, path: str, old: str, new: str, every: bool) -> ToolResult:
    target = scope.resolve(path)
    with fs_errors(path):
        fd = open_file(scope, target, path, os.O_RDWR)
        try:
            text = _read_all(fd).decode("utf-8")
            found = text.count(old)
            if found == 0:
                raise ArgError(f"oldString not found in {path}")
            if found > 1 and not every:
                raise ArgError(
                    f"oldString occurs {found} times in {path}; give more surrounding text to "
                    "make it unique, or set replaceAll"
                )
            updated = text.replace(old, new) if every else text.replace(old, new, 1)
            try:
                data = updated.encode("utf-8")
            except UnicodeEncodeError:
                raise ArgError("newString is not valid Unicode text") from None
        except BaseException:
            os.close(fd)
            raise
        _replace_content(fd, data)
    n = found if every else 1
    plural = "" if n == 1 else "s"
    return ToolResult(f"Edited {path} ({n} replacement{plural})", metadata={"replacements": n})


def _read_all(fd: int) -> bytes:
    """Everything in the open file ``fd``, from its start."""
    parts: list[bytes] = []
    os.lseek(fd, 0, os.SEEK_SET)
    while chunk := os.read(fd, _CHUNK):
        parts.append(chunk)
    return b"".join(parts)


def _replace_content(fd: int, data: bytes) -> None:
    """Make ``data`` the whole content of the open file ``fd``, then close it."""
    with open(fd, "r+b", buffering=0) as file:
        file.seek(0)
        file.truncate()
        view = memoryview(data)
        while view:
            view = view[file.write(view) or 0 :]
