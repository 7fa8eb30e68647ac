"""Finding and parsing ``SKILL.md`` files on disk. Blocking; callers on an event loop use a thread.

Walk rules (shared by discovery and by a skill's file list): symlinked directories and files
are followed, a directory whose real path was already visited in the same walk is not entered
again, and directories named ``node_modules`` or ``.git`` are skipped. A symlink to the root
itself or to a folder above it (``/``, ``..``) is not followed, and a walk stops after
``MAX_WALK_DIRS`` directories, both with a warning, so a stray link cannot turn discovery into
a scan of the whole machine. Results are ordered by their ``/``-separated path relative to
the walk's root.

Only regular files of at most ``MAX_SKILL_FILE_BYTES`` are read as ``SKILL.md``: FIFOs,
devices and larger files are skipped with a warning (``unreadable``), and the file is opened
without blocking, so discovery never hangs.
"""

from __future__ import annotations

import logging
import os
import re
import stat
from collections.abc import Callable, Iterable
from pathlib import Path

from .model import Skill, SkillInfo, SkillSkip

__all__ = ["SKILL_FILE", "discover", "list_skill_files", "read_skill_file", "walk"]

logger = logging.getLogger("toolnexus")

SKILL_FILE = "SKILL.md"
MAX_SKILL_FILE_BYTES = 1024 * 1024
MAX_WALK_DIRS = 10_000
_SKIPPED_DIRS = frozenset({"node_modules", ".git"})
_FRONTMATTER = re.compile(r"^---\r?\n(.*?)\r?\n---\r?\n?(.*)$", re.DOTALL)


def walk(root: str, keep: Callable[[os.DirEntry[str]], bool]) -> list[tuple[str, str]]:
    """Every non-directory entry under ``root`` accepted by ``keep``.

    Returns ``(relative_path, path)`` pairs sorted by relative path; ``path`` is ``root``
    joined with the relative path (symlinks are not resolved). Unreadable directories are
    skipped silently.
    """
    found: list[tuple[str, str]] = []
    visited: set[str] = set()
    pending: list[tuple[str, str]] = [(root, "")]
    top = os.path.realpath(root)
    while pending:
        directory, prefix = pending.pop()
        real = os.path.realpath(directory)
        if real in visited:
            continue
        if prefix and _encloses(real, top):
            logger.warning(
                "not following %s: it links to %s, which contains the folder being searched",
                directory,
                real,
            )
            continue
        if len(visited) >= MAX_WALK_DIRS:
            logger.warning(
                "stopped searching %s after %d folders; files below the rest are not listed",
                root,
                MAX_WALK_DIRS,
            )
            break
        visited.add(real)
        try:
            with os.scandir(directory) as scan:
                entries = sorted(scan, key=lambda e: e.name)
        except OSError:
            continue
        subdirs: list[tuple[str, str]] = []
        for entry in entries:
            relative = prefix + entry.name
            if _is_dir(entry):
                if entry.name not in _SKIPPED_DIRS:
                    subdirs.append((entry.path, relative + "/"))
            elif keep(entry):
                found.append((relative, entry.path))
        # Depth-first in name order, so which alias of a directory is kept is deterministic.
        pending.extend(reversed(subdirs))
    found.sort()
    return found


def _encloses(outer: str, inner: str) -> bool:
    """Whether the real path ``outer`` is ``inner`` or one of its ancestors."""
    return inner == outer or inner.startswith(outer.rstrip(os.sep) + os.sep)


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()  # follows symlinks
    except OSError:
        return False


def _is_regular_file(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_file()  # follows symlinks
    except OSError:
        return False


def list_skill_files(directory: str) -> list[str]:
    """Absolute paths of every regular file in a skill folder except its own ``SKILL.md``."""
    files = walk(directory, _is_regular_file)
    return [path for relative, path in files if relative != SKILL_FILE]


def read_skill_file(path: str) -> SkillInfo | SkillSkip:
    """Parse one ``SKILL.md``. Never raises: problems come back as a ``SkillSkip``."""
    try:
        text = _read_small_file(path).decode("utf-8")
    except _NotASkillFile as exc:
        logger.warning("skipping %s: %s", path, exc)
        return SkillSkip(path, "unreadable")
    except (OSError, UnicodeDecodeError):
        return SkillSkip(path, "unreadable")
    match = _FRONTMATTER.match(text)
    if match is None:
        return SkillSkip(path, "missing-name")
    header, content = match.group(1), match.group(2)
    fields = _parse_header(header)
    if fields is None:
        return SkillSkip(path, "malformed-frontmatter")
    name = fields.get("name", "")
    if not name:
        return SkillSkip(path, "missing-name")
    description = fields.get("description") or None
    return SkillInfo(name, description, path, content, "fs")


class _NotASkillFile(Exception):
    """A ``SKILL.md`` that is not a small regular file."""


def _read_small_file(path: str) -> bytes:
    """The bytes of a regular file of at most ``MAX_SKILL_FILE_BYTES``, read without blocking.

    The file is opened non-blocking (a FIFO opens at once instead of waiting for a writer) and
    checked on the open descriptor, so a file swapped after a check is still caught.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    fd = os.open(path, flags)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _NotASkillFile("not a regular file (a FIFO, socket or device)")
        if info.st_size > MAX_SKILL_FILE_BYTES:
            raise _NotASkillFile(f"larger than {MAX_SKILL_FILE_BYTES} bytes")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(MAX_SKILL_FILE_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_SKILL_FILE_BYTES:
        raise _NotASkillFile(f"larger than {MAX_SKILL_FILE_BYTES} bytes")
    return data


def _parse_header(header: str) -> dict[str, str] | None:
    """The frontmatter's scalar fields as stripped strings; ``None`` when it is malformed.

    Malformed means the YAML does not parse, or parses to something other than a mapping
    (an empty header is an empty mapping).
    """
    import yaml

    try:
        data = yaml.safe_load(header)
    except Exception:  # yaml.YAMLError, or anything else a hostile header provokes
        return None
    if data is None:
        return {}
    if not isinstance(data, dict):
        return None
    return {
        str(key): str(value).strip()
        for key, value in data.items()
        if isinstance(value, (str, int, float, bool))
    }


def discover(roots: Iterable[str]) -> tuple[list[Skill], list[SkillSkip]]:
    """Read every ``SKILL.md`` under each root, roots in the given order.

    Returns the parsed skills (duplicates not yet resolved) and the files that were skipped.
    A missing root is logged as a warning and contributes nothing.
    """
    skills: list[Skill] = []
    skipped: list[SkillSkip] = []
    for root in roots:
        root = os.path.abspath(root)
        if not os.path.isdir(root):
            problem = "does not exist" if not os.path.lexists(root) else "is not a directory"
            logger.warning("skills directory %s %s; no skills loaded from it", root, problem)
            continue
        for _, path in walk(root, lambda e: e.name == SKILL_FILE):
            parsed = read_skill_file(path)
            if isinstance(parsed, SkillSkip):
                skipped.append(parsed)
                continue
            directory = os.path.dirname(path)
            skills.append(Skill(parsed, Path(directory).as_uri(), directory=directory))
    return skills, skipped
