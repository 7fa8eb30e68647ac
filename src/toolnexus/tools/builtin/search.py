"""The ``grep`` and ``glob`` built-ins: searching file contents and names below a folder."""

from __future__ import annotations

import codecs
import os
import threading
import time
from collections.abc import Callable, Generator
from contextlib import closing
from pathlib import Path

import regex

from ...types import JSONObject, Tool, ToolContext, ToolResult
from ._common import (
    MAX_OUTPUT_CHARS,
    ArgError,
    BuiltinScope,
    builtin,
    opt_number,
    opt_str,
    require_str,
)
from ._confined import open_file, open_in
from ._fs import fs_errors, in_thread, whole_number
from ._walk import Found, compile_glob, walk_files

__all__ = ["tools"]

DEFAULT_LIMIT = 100
SEARCH_SECONDS = 30.0
"""Longest time one ``grep`` may spend matching its pattern (less when the run's deadline is
nearer); a pattern that takes longer is stopped and the call is an error saying so."""
_CHUNK = 1 << 20
_SNIFF = 8192
# Characters that make a pattern more than a literal string (a literal is searched with `in`).
_SPECIAL = frozenset("\\.^$*+?{}[]|()")


def tools(scope: BuiltinScope) -> list[Tool]:
    """``grep`` and ``glob`` for one toolkit."""

    async def grep(args: JSONObject, ctx: ToolContext | None) -> ToolResult:
        pattern = require_str(args, "pattern")
        include = opt_str(args, "include")
        wanted = compile_glob(include) if include else None
        limit = _limit(args)
        path = opt_str(args, "path") or "."
        budget = SEARCH_SECONDS
        if ctx is not None and ctx.timeout is not None:
            budget = max(0.0, min(budget, ctx.timeout))
        matcher = Matcher(pattern, budget)
        return await in_thread(
            lambda stop: _grep(scope, path, pattern, matcher, wanted, limit, stop)
        )

    async def glob(args: JSONObject, ctx: ToolContext | None) -> ToolResult:
        wanted = compile_glob(require_str(args, "pattern"))
        limit = _limit(args)
        path = opt_str(args, "path") or "."
        return await in_thread(lambda stop: _glob(scope, path, wanted, limit, stop))

    return [
        builtin(
            "grep",
            "Search file contents below a folder with a Python regular expression; "
            "prints path:line:text for each matching line.",
            {
                "pattern": {"type": "string", "description": "A Python regular expression."},
                "path": {
                    "type": "string",
                    "description": "Folder (or file) to search; default: the working folder.",
                },
                "include": {
                    "type": "string",
                    "description": "Only files matching this glob, e.g. *.py or src/**/*.ts.",
                },
                "limit": {"type": "number", "description": "Most lines to return (100)."},
            },
            ["pattern"],
            grep,
        ),
        builtin(
            "glob",
            "List files below a folder whose name (or relative path, when the pattern has a /) "
            "matches a glob such as *.py or src/**/test_*.py.",
            {
                "pattern": {"type": "string", "description": "The glob to match."},
                "path": {
                    "type": "string",
                    "description": "Folder to search; default: the working folder.",
                },
                "limit": {"type": "number", "description": "Most paths to return (100)."},
            },
            ["pattern"],
            glob,
        ),
    ]


def _limit(args: JSONObject) -> int:
    limit = whole_number(opt_number(args, "limit"), "limit", 1)
    return DEFAULT_LIMIT if limit is None else limit


def _folder(scope: BuiltinScope, path: str) -> Path:
    base = scope.resolve(path)
    with fs_errors(path):
        if not base.exists():
            raise ArgError(f"no such file or folder: {path}")
    return base


def _glob(
    scope: BuiltinScope,
    path: str,
    wanted: Callable[[str], bool],
    limit: int,
    stop: threading.Event,
) -> ToolResult:
    base = _folder(scope, path)
    if not base.is_dir():
        raise ArgError(f"not a folder: {path}")
    found: list[str] = []
    with fs_errors(path), closing(walk_files(scope, base, path, stop)) as files:
        for file in files:
            if wanted(file.rel):
                found.append(file.rel)
                if len(found) >= limit:
                    break
    return ToolResult("\n".join(found), metadata={"count": len(found)})


def _grep(
    scope: BuiltinScope,
    path: str,
    pattern: str,
    matcher: Matcher,
    wanted: Callable[[str], bool] | None,
    limit: int,
    stop: threading.Event,
) -> ToolResult:
    base = _folder(scope, path)
    if base.is_dir():
        files: Generator[Found] = walk_files(scope, base, path, stop)
        shown = str(base).rstrip("/")
    else:
        files = _one(Found(base.name, str(base), -1, base.name, True))
        shown = str(base.parent).rstrip("/")
    literal = _literal(pattern)
    lines: list[str] = []
    size = 0
    with fs_errors(path), closing(files):
        for file in files:
            if wanted is not None and not wanted(file.rel):
                continue
            for number, line in _matches(scope, file, matcher, literal, limit - len(lines), stop):
                found = f"{shown}/{file.rel}:{number}:{line}"
                lines.append(found)
                size += len(found) + 1
            if len(lines) >= limit or size > MAX_OUTPUT_CHARS:
                break
    output = "\n".join(lines)
    if len(output) <= MAX_OUTPUT_CHARS:
        return ToolResult(output, metadata={"count": len(lines)})
    note = f"\n[output truncated at {MAX_OUTPUT_CHARS} characters; narrow the pattern or path]"
    kept = output[:MAX_OUTPUT_CHARS]
    return ToolResult(kept + note, metadata={"count": kept.count("\n") + 1, "truncated": True})


def _one(file: Found) -> Generator[Found]:
    yield file


def _open(scope: BuiltinScope, file: Found) -> int:
    """A descriptor of a found file, opened without following a link out of the root."""
    if file.link:
        return open_file(scope, scope.resolve(file.path), file.rel)
    return open_in(file.folder, file.name, os.O_RDONLY, scope if scope.root else None, file.rel)


def _matches(
    scope: BuiltinScope,
    file: Found,
    matcher: Matcher,
    literal: bytes | None,
    most: int,
    stop: threading.Event,
) -> list[tuple[int, str]]:
    """Up to ``most`` ``(line number, line)`` matches in ``file``; none when it is not UTF-8
    text or cannot be read. The file is read in chunks cut after a newline (a newline byte
    never occurs inside a UTF-8 character), so memory stays bounded; a chunk is decoded only
    when it may match, so a literal pattern skips most of a tree without decoding it."""
    found: list[tuple[int, str]] = []
    try:
        with open(_open(scope, file), "rb") as data:
            number, carry = 0, b""
            while not stop.is_set():
                chunk = data.read(_CHUNK)
                if number == 0 and not carry:  # the start: most binary files fail here
                    codecs.getincrementaldecoder("utf-8")().decode(chunk[:_SNIFF])
                if len(chunk) < _CHUNK:  # a buffered read is short only at the end
                    tail = carry + chunk
                    if tail:  # a final newline ends the last line; it starts none
                        tail = tail[:-1] if tail.endswith(b"\n") else tail
                        _scan(tail, number, matcher, literal, most, found)
                    break
                block = carry + chunk
                cut = block.rfind(b"\n")
                if cut < 0:
                    carry = block
                    continue
                block, carry = block[:cut], block[cut + 1 :]
                number = _scan(block, number, matcher, literal, most, found)
                if len(found) >= most:
                    break
    except (OSError, UnicodeDecodeError):
        return []
    except ArgError:
        if matcher.timed_out:
            raise
        return []
    return found


def _scan(
    block: bytes,
    number: int,
    matcher: Matcher,
    literal: bytes | None,
    most: int,
    found: list[tuple[int, str]],
) -> int:
    """Match the lines of ``block`` (numbered after ``number``); the last line number."""
    if literal is not None and literal not in block:
        return number + block.count(b"\n") + 1
    lines = block.decode("utf-8").split("\n")
    text = literal.decode("utf-8") if literal is not None else None
    for offset, line in enumerate(lines, number + 1):
        if (text in line) if text is not None else matcher.search(line):
            found.append((offset, line))
            if len(found) >= most:
                break
    return number + len(lines)


class Matcher:
    """A grep pattern, compiled with the ``regex`` package (Python's syntax), whose searches
    share one time budget: a pattern that backtracks without bound (``(a|aa)+$`` on a long
    line) ends in an ``ArgError`` saying so when the budget is spent. Matching releases the
    GIL (``concurrent=True``), so even while it runs the event loop and every other thread
    go on."""

    def __init__(self, pattern: str, seconds: float) -> None:
        try:
            self._regex = regex.compile(pattern)
        except (regex.error, ValueError) as exc:
            raise ArgError(f"invalid regular expression {pattern!r}: {exc}") from None
        self.pattern = pattern
        self.seconds = seconds
        self.timed_out = False
        self._deadline = time.monotonic() + seconds

    def search(self, line: str) -> bool:
        """Whether the pattern occurs in ``line``; ``ArgError`` once the budget is spent."""
        left = self._deadline - time.monotonic()
        try:
            if left <= 0:
                raise TimeoutError
            return self._regex.search(line, timeout=left, concurrent=True) is not None
        except TimeoutError:
            self.timed_out = True
            raise ArgError(
                f"the pattern {self.pattern!r} took more than {self.seconds:g}s to search "
                "and was stopped; make it simpler (a repetition inside a repetition, such as "
                "(a+)+, can take exponential time)"
            ) from None


def _literal(pattern: str) -> bytes | None:
    """``pattern`` as UTF-8 bytes when it is a plain string, not a regular expression."""
    if _SPECIAL.intersection(pattern):
        return None
    try:
        return pattern.encode("utf-8")
    except UnicodeEncodeError:
        return None
