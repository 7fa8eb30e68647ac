"""The file walk ``grep`` and ``glob`` share, and their glob patterns.

The walk visits regular files below a folder depth first, each folder's entries sorted so that
the relative paths come out in plain string order (a folder sorts as its name plus ``/``), so
"the first ``limit`` matches" of a walk are also the first in sorted order and a search can
stop early. It skips ``node_modules`` and ``.git`` folders, does not follow symlinked folders
(each folder is opened from its parent's descriptor with ``O_NOFOLLOW``, so not even one
swapped for a symlink mid-walk), and, under a confinement root, skips symlinks that lead
outside it.

Patterns: ``*`` matches within one path segment, ``**`` across segments (``**/`` also matches
no folder at all), ``?`` one character other than ``/``, ``[abc]``/``[!abc]`` one character
of a set, ``{a,b}`` either alternative. A pattern without ``/`` is matched against the file's
name, one with ``/`` against its path relative to the search folder (a leading ``./`` is
ignored).
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Generator
from dataclasses import dataclass
from pathlib import Path

from ._common import ArgError, BuiltinScope
from ._confined import folder_fd

__all__ = ["SKIPPED_DIRS", "Found", "compile_glob", "walk_files"]

SKIPPED_DIRS = frozenset({"node_modules", ".git"})
"""Folders a walk never enters."""


def compile_glob(pattern: str) -> Callable[[str], bool]:
    """A predicate on a relative path (``/``-separated) for the glob ``pattern``."""
    while pattern.startswith("./"):
        pattern = pattern[2:]
    if not pattern:
        raise ArgError("the glob pattern is empty")
    regex = re.compile(_translate(pattern), re.DOTALL)
    if "/" in pattern:
        return lambda rel: regex.fullmatch(rel) is not None
    return lambda rel: regex.fullmatch(rel.rpartition("/")[2]) is not None


def _translate(pattern: str) -> str:
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            i = _char_class(pattern, i, out)
        elif c == "{":
            i = _alternatives(pattern, i, out)
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


def _char_class(pattern: str, i: int, out: list[str]) -> int:
    close = pattern.find("]", i + 2)
    if close < 0:
        out.append(re.escape("["))
        return i + 1
    body = pattern[i + 1 : close]
    negate = body.startswith("!")
    if negate:
        body = body[1:]
    body = body.replace("\\", "\\\\").replace("^", "\\^").replace("[", "\\[")
    out.append(f"[{'^/' if negate else ''}{body}]")
    return close + 1


def _alternatives(pattern: str, i: int, out: list[str]) -> int:
    depth, j = 0, i
    while j < len(pattern):
        if pattern[j] == "{":
            depth += 1
        elif pattern[j] == "}":
            depth -= 1
            if depth == 0:
                break
        j += 1
    else:
        out.append(re.escape("{"))
        return i + 1
    parts, depth, start = [], 0, i + 1
    for k in range(i + 1, j):
        if pattern[k] == "{":
            depth += 1
        elif pattern[k] == "}":
            depth -= 1
        elif pattern[k] == "," and depth == 0:
            parts.append(pattern[start:k])
            start = k + 1
    parts.append(pattern[start:j])
    out.append("(?:" + "|".join(_translate(p) for p in parts) + ")")
    return j + 1


@dataclass(frozen=True, slots=True)
class Found:
    """A regular file a walk found: ``rel`` below the search folder, ``path`` in full, and
    how to open it: ``name`` in the folder descriptor ``folder`` (valid only until the walk
    moves on), or, for a symlink (``link``), by its full path."""

    rel: str
    path: str
    folder: int
    name: str
    link: bool


def walk_files(
    scope: BuiltinScope, base: Path, shown: str, stop: threading.Event
) -> Generator[Found]:
    """Every regular file below ``base``, in sorted order.

    Folders are opened from the root without following links (see ``_confined``), so a
    folder swapped for a symlink while the walk runs is not entered; a symlink to a file is
    listed when it stays inside the root. ``stop`` ends the walk early when set.
    """
    root = scope.root
    top = folder_fd(scope, base, shown)
    fds = [top]
    stack = [iter(_sorted_entries(top))]
    prefixes = [""]
    full = [str(base).rstrip("/")]
    try:
        while stack:
            if stop.is_set():
                return
            entry = next(stack[-1], None)
            if entry is None:
                stack.pop()
                prefixes.pop()
                full.pop()
                os.close(fds.pop())
                continue
            rel = prefixes[-1] + entry.name
            path = f"{full[-1]}/{entry.name}"
            try:
                if entry.is_symlink():
                    if entry.is_dir() or not entry.is_file():
                        continue
                    if root is not None and not _inside(path, root):
                        continue
                    yield Found(rel, path, fds[-1], entry.name, True)
                elif entry.is_dir(follow_symlinks=False):
                    if entry.name not in SKIPPED_DIRS:
                        fd = os.open(entry.name, _SUBDIR, dir_fd=fds[-1])
                        fds.append(fd)
                        stack.append(iter(_sorted_entries(fd)))
                        prefixes.append(rel + "/")
                        full.append(path)
                elif entry.is_file(follow_symlinks=False):
                    yield Found(rel, path, fds[-1], entry.name, False)
            except OSError:
                continue
    finally:
        for fd in fds:
            os.close(fd)


_SUBDIR = (
    os.O_RDONLY
    | getattr(os, "O_DIRECTORY", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


def _sorted_entries(folder: int) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as entries:
            listed = list(entries)
    except OSError:
        return []
    return sorted(listed, key=_sort_key)


def _sort_key(entry: os.DirEntry[str]) -> str:
    try:
        return entry.name + "/" if entry.is_dir(follow_symlinks=False) else entry.name
    except OSError:
        return entry.name


def _inside(path: str, root: Path) -> bool:
    try:
        return Path(path).resolve().is_relative_to(root)
    except (OSError, RuntimeError):
        return False
