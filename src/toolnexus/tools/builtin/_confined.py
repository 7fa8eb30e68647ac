"""Opening files below the confinement root without following a link out of it.

``BuiltinScope.resolve`` checks a path before use, but a check and a later open by name are
two steps, and a file or folder swapped for a symlink between them would be followed out of
the root. So, under a root, every open here starts from a file descriptor of the root and
walks the path one component at a time (``openat``-style, ``dir_fd=``), each folder opened
with ``O_DIRECTORY | O_NOFOLLOW`` and the file itself with ``O_NOFOLLOW``: a symlink met on
the way is refused, never followed. (The path given is the one ``resolve`` returned, which
has no symlinks left in it, so a symlink found now is one that appeared since the check.)
Where the platform says which path an open descriptor refers to (``/proc/self/fd`` on
Linux), that path is checked to be inside the root too, which catches a folder moved out of
the root while it was being walked.

Hard links cannot be told apart: a hard link inside the root to a file elsewhere *is* a file
inside the root (the same file has two names), so the tools read and write it. Keep hard
links to files the tools must not touch out of the root.

Files are opened with ``O_NONBLOCK`` and checked with ``fstat`` to be regular files, so a
FIFO or a device is refused without blocking on it. Without a root, paths are opened as
given (symlinks followed), which is what an unconfined tool is asked to do.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ._common import ArgError, BuiltinScope

__all__ = [
    "check_opened",
    "folder_fd",
    "open_file",
    "open_in",
    "opened_folder",
    "outside",
]

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_DIR_FLAGS = os.O_RDONLY | _DIRECTORY | _CLOEXEC
_PROC_FD = "/proc/self/fd"


def outside(scope: BuiltinScope, shown: str, why: str = "") -> ArgError:
    """The refusal of a path that leads out of the root."""
    return ArgError(f"{shown} is outside the root {scope.root}{why}")


_RACED = ": a symbolic link appeared on its way while it was being opened"


def folder_fd(
    scope: BuiltinScope,
    folder: Path,
    shown: str,
    *,
    create: bool = False,
    made: list[Path] | None = None,
) -> int:
    """A descriptor of ``folder`` (an absolute path from ``scope.resolve``), opened from the
    root without following links. ``create`` makes missing folders on the way (appended to
    ``made``, outermost first). The caller closes the descriptor."""
    root = scope.root
    if root is None:
        if create:
            _make_plain(folder, made)
        return os.open(folder, _DIR_FLAGS)
    parts = _parts(scope, folder, shown)
    fd = os.open(root, _DIR_FLAGS)
    try:
        here = root
        for part in parts:
            here = here / part
            if create:
                try:
                    os.mkdir(part, 0o777, dir_fd=fd)
                    if made is not None:
                        made.append(here)
                except FileExistsError:
                    pass
            step = _open_step(part, fd, scope, shown)
            os.close(fd)
            fd = step
        check_opened(scope, fd, shown)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_step(part: str, fd: int, scope: BuiltinScope, shown: str) -> int:
    try:
        return os.open(part, _DIR_FLAGS | _NOFOLLOW, dir_fd=fd)
    except OSError as exc:
        # Linux says ENOTDIR, not ELOOP, for a symlink opened with O_DIRECTORY | O_NOFOLLOW
        if exc.errno == errno.ELOOP or (exc.errno == errno.ENOTDIR and _is_link(part, fd)):
            raise outside(scope, shown, _RACED) from None
        raise


def _is_link(name: str, folder: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode)
    except OSError:
        return False


@contextmanager
def opened_folder(
    scope: BuiltinScope,
    folder: Path,
    shown: str,
    *,
    create: bool = False,
    made: list[Path] | None = None,
) -> Iterator[int]:
    """``folder_fd`` as a context manager that closes the descriptor."""
    fd = folder_fd(scope, folder, shown, create=create, made=made)
    try:
        yield fd
    finally:
        os.close(fd)


def open_file(
    scope: BuiltinScope,
    target: Path,
    shown: str,
    flags: int = os.O_RDONLY,
    *,
    create_parents: bool = False,
) -> int:
    """A descriptor of the regular file ``target`` (an absolute path from ``scope.resolve``),
    opened with ``flags`` without following a link out of the root (see the module's text).
    A folder, a FIFO or a device is refused naming ``shown``. The caller closes it."""
    if scope.root is None:
        if create_parents:
            _make_plain(target.parent, None)
        fd = os.open(target, flags | _NONBLOCK | _CLOEXEC, 0o666)
        return _regular(fd, shown)
    if target == scope.root:
        raise ArgError(f"is a directory: {shown}")
    name = target.name
    with opened_folder(scope, target.parent, shown, create=create_parents) as parent:
        created = False
        try:
            fd = open_in(parent, name, flags & ~os.O_CREAT, scope, shown)
        except FileNotFoundError:
            if not flags & os.O_CREAT:
                raise
            fd = open_in(parent, name, flags | os.O_EXCL, scope, shown)
            created = True
        try:
            check_opened(scope, fd, shown)
        except BaseException:
            os.close(fd)
            if created:  # made in a folder that has left the root meanwhile: take it back
                os.unlink(name, dir_fd=parent)
            raise
    return fd


def open_in(
    parent: int, name: str, flags: int, scope: BuiltinScope | None, shown: str, mode: int = 0o666
) -> int:
    """The regular file ``name`` in the folder ``parent``, opened with ``flags`` without
    following a symlink (a symlink there is refused as leading outside ``scope``'s root)."""
    try:
        fd = os.open(name, flags | _NOFOLLOW | _NONBLOCK | _CLOEXEC, mode, dir_fd=parent)
    except OSError as exc:
        if exc.errno == errno.ELOOP and scope is not None:
            raise outside(scope, shown, _RACED) from None
        raise
    return _regular(fd, shown)


def _regular(fd: int, shown: str) -> int:
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise ArgError(f"is a directory: {shown}")
        if not stat.S_ISREG(mode):
            raise ArgError(f"not a regular file: {shown}")
    except BaseException:
        os.close(fd)
        raise
    return fd


def check_opened(scope: BuiltinScope, fd: int, shown: str) -> None:
    """Refuse a descriptor whose path (as the platform reports it) is not inside the root."""
    root = scope.root
    if root is None:
        return
    try:
        real = os.readlink(f"{_PROC_FD}/{fd}")
    except OSError:  # no /proc: the component-wise walk is the guarantee
        return
    if real.endswith(" (deleted)"):
        real = real[: -len(" (deleted)")]
    if real != str(root) and not Path(real).is_relative_to(root):
        raise outside(scope, shown, ": it was moved out of the root while being opened")


def _parts(scope: BuiltinScope, path: Path, shown: str) -> tuple[str, ...]:
    assert scope.root is not None
    if path == scope.root:
        return ()
    if not path.is_relative_to(scope.root):
        raise outside(scope, shown)
    parts = path.relative_to(scope.root).parts
    if any(part in ("..", ".") for part in parts):
        raise outside(scope, shown)
    return parts


def _make_plain(folder: Path, made: list[Path] | None) -> None:
    missing: list[Path] = []
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    for created in reversed(missing):
        try:
            created.mkdir()
        except FileExistsError:
            continue
        if made is not None:
            made.append(created)
