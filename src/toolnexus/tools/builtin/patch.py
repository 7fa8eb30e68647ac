"""The ``apply_patch`` built-in: add, update and delete files in one all-or-nothing step.

A patch is checked whole against the files as they are (every path, every hunk, in order,
as if the earlier operations had happened) before anything is written. Only then are the new
contents written, each to a temporary file beside its target; when every one of those is
written they are renamed into place and deleted files removed. A patch that fails anywhere
leaves every file as it was.
"""

from __future__ import annotations

import os
import secrets
import stat
from dataclasses import dataclass, field
from pathlib import Path

from ...types import JSONObject, Tool, ToolContext, ToolResult
from ._common import ArgError, BuiltinScope, builtin, require_str
from ._confined import folder_fd, open_file, opened_folder
from ._fs import fs_errors, in_thread

__all__ = ["tools"]

_DONE = {"add": "added", "update": "updated", "delete": "deleted"}
_BEGIN, _END = "*** Begin Patch", "*** End Patch"
_ADD, _UPDATE, _DELETE = "*** Add File: ", "*** Update File: ", "*** Delete File: "


def tools(scope: BuiltinScope) -> list[Tool]:
    """``apply_patch`` for one toolkit."""

    async def apply_patch(args: JSONObject, ctx: ToolContext | None) -> ToolResult:
        operations = parse_patch(require_str(args, "patchText"))
        return await in_thread(lambda stop: _apply(scope, operations))

    return [
        builtin(
            "apply_patch",
            "Add, update and delete files with one patch; nothing is written unless every "
            "part applies. Format: '*** Begin Patch', then sections '*** Add File: p' (lines "
            "starting +), '*** Update File: p' (hunks after '@@' lines; ' ' context, '-' "
            "removed, '+' added) or '*** Delete File: p', then '*** End Patch'.",
            {"patchText": {"type": "string", "description": "The whole patch."}},
            ["patchText"],
            apply_patch,
        )
    ]


@dataclass
class Hunk:
    """One change inside an updated file: ``old`` is replaced by ``new``."""

    old: str
    new: str


@dataclass
class Operation:
    """One file section of a patch."""

    kind: str  # "add", "update" or "delete"
    path: str
    content: str = ""
    hunks: list[Hunk] = field(default_factory=list)


def parse_patch(text: str) -> list[Operation]:
    """The file operations of a patch, or an ``ArgError`` naming the line that is wrong."""
    lines = text.strip().split("\n")
    lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    if lines[0].strip() != _BEGIN:
        raise ArgError(f"the patch must start with '{_BEGIN}'")
    if len(lines) < 2 or lines[-1].strip() != _END:
        raise ArgError(f"the patch must end with '{_END}'")
    body = lines[1:-1]
    operations: list[Operation] = []
    i = 0
    while i < len(body):
        header = body[i]
        j = i + 1
        while j < len(body) and not body[j].startswith("*** "):
            j += 1
        section, where = body[i + 1 : j], i + 2
        if header.startswith(_ADD):
            operations.append(_add(_path(header, _ADD, where), section, where))
        elif header.startswith(_UPDATE):
            operations.append(_update(_path(header, _UPDATE, where), section, where))
        elif header.startswith(_DELETE):
            if any(line.strip() for line in section):
                raise ArgError(f"line {where + 1}: a Delete File section has no lines")
            operations.append(Operation("delete", _path(header, _DELETE, where)))
        elif header.strip():
            raise ArgError(f"line {where}: expected a file section, got {header!r}")
        i = j
    if not operations:
        raise ArgError("the patch has no file operations")
    return operations


def _path(header: str, prefix: str, where: int) -> str:
    path = header[len(prefix) :].strip()
    if not path:
        raise ArgError(f"line {where}: no path after {prefix.strip()!r}")
    return path


def _add(path: str, section: list[str], where: int) -> Operation:
    for n, line in enumerate(section, where + 1):
        if not line.startswith("+"):
            raise ArgError(f"line {n}: every line of an added file starts with '+' ({path})")
    return Operation("add", path, content="".join(line[1:] + "\n" for line in section))


def _update(path: str, section: list[str], where: int) -> Operation:
    hunks: list[Hunk] = []
    start = 0
    for k, line in enumerate([*section, "@@"]):
        if line.startswith("@@"):
            hunk = _hunk(section[start:k], path, where + 1 + start)
            if hunk is not None:
                hunks.append(hunk)
            start = k + 1
    if not hunks:
        raise ArgError(f"Update File {path} has no hunks")
    return Operation("update", path, hunks=hunks)


def _hunk(lines: list[str], path: str, first: int) -> Hunk | None:
    """A hunk from its lines. A bare empty line is a context line whose leading space was
    lost, except at the end of the hunk, where it is only a blank before the next section."""
    while lines and lines[-1] == "":
        lines = lines[:-1]
    if not lines:
        return None
    old: list[str] = []
    new: list[str] = []
    for n, line in enumerate(lines, first):
        marker, rest = line[:1], line[1:]
        if marker in (" ", ""):
            old.append(rest)
            new.append(rest)
        elif marker == "-":
            old.append(rest)
        elif marker == "+":
            new.append(rest)
        else:
            raise ArgError(f"line {n}: a hunk line starts with ' ', '-' or '+' ({path})")
    return Hunk("\n".join(old), "\n".join(new))


@dataclass
class _Plan:
    """What a checked patch will do: final contents (``None``: delete) by resolved path."""

    contents: dict[Path, str | None] = field(default_factory=dict)
    shown: dict[Path, str] = field(default_factory=dict)


def _apply(scope: BuiltinScope, operations: list[Operation]) -> ToolResult:
    plan = _check(scope, operations)
    _write_all(scope, plan)
    done: dict[str, list[str]] = {"added": [], "updated": [], "deleted": []}
    for op in operations:
        done[_DONE[op.kind]].append(op.path)
    n = len(operations)
    return ToolResult(
        f"Applied patch: {n} file operation{'' if n == 1 else 's'}", metadata=dict(done)
    )


def _check(scope: BuiltinScope, operations: list[Operation]) -> _Plan:
    """Every operation checked against the files (and the earlier operations); nothing written."""
    plan = _Plan()
    current: dict[Path, str | None] = {}

    def state(target: Path, shown: str) -> str | None:
        if target not in current:
            current[target] = _read_text(scope, target, shown)
        return current[target]

    for op in operations:
        target = scope.resolve(op.path)
        target = target if scope.root is not None else Path(os.path.realpath(target))
        text = state(target, op.path)
        where = target
        if op.kind == "add":
            if text is not None:
                raise ArgError(f"cannot add {op.path}: it already exists")
            new: str | None = op.content
        elif text is None:
            raise ArgError(f"cannot {op.kind} {op.path}: no such file")
        elif op.kind == "delete":
            new = None
            where = scope.resolve_name(op.path)  # a symlink: the link goes, not its file
        else:
            new = _patched(text, op)
        if new is not None and not _encodable(new):
            raise ArgError(f"{op.path}: the new content is not valid Unicode text")
        current[target] = new
        plan.contents[where] = new
        plan.shown[where] = op.path
    return plan


def _read_text(scope: BuiltinScope, target: Path, shown: str) -> str | None:
    """The text of ``target``, or ``None`` when there is no such file."""
    with fs_errors(shown):
        try:
            fd = open_file(scope, target, shown)
        except FileNotFoundError:
            return None
        with open(fd, "rb") as file:
            return file.read().decode("utf-8")


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _patched(text: str, op: Operation) -> str:
    for number, hunk in enumerate(op.hunks, 1):
        if hunk.old == "" and text != "":
            raise ArgError(
                f"hunk {number} of {op.path} has no context or removed lines to place it"
            )
        at = text.find(hunk.old)
        if at < 0:
            raise ArgError(f"hunk {number} of {op.path} does not match the file")
        text = text[:at] + hunk.new + text[at + len(hunk.old) :]
    return text


def _write_all(scope: BuiltinScope, plan: _Plan) -> None:
    """Stage every new content beside its target, then rename them all into place. Every
    step works in a descriptor of the target's folder opened from the root without following
    links (see ``_confined``), so a folder swapped for a symlink meanwhile is refused."""
    staged: list[tuple[int, str, str, Path]] = []  # folder fd, temporary name, name, target
    made: list[Path] = []
    try:
        for target, content in plan.contents.items():
            if content is None:
                continue
            shown = plan.shown[target]
            with fs_errors(shown):
                folder = folder_fd(scope, target.parent, shown, create=True, made=made)
                try:
                    staged.append(
                        (folder, _stage(folder, target.name, content), target.name, target)
                    )
                except BaseException:
                    os.close(folder)
                    raise
    except BaseException:
        for folder, temp, _, _ in staged:
            _unlink(folder, temp)
            os.close(folder)
        for created in reversed(made):
            _remove_empty(created)
        raise
    try:
        for folder, temp, name, target in staged:
            with fs_errors(plan.shown[target]):
                os.replace(temp, name, src_dir_fd=folder, dst_dir_fd=folder)
    finally:
        for folder, *_ in staged:
            os.close(folder)
    for target, content in plan.contents.items():
        if content is None:
            shown = plan.shown[target]
            with fs_errors(shown), opened_folder(scope, target.parent, shown) as folder:
                _unlink(folder, target.name)


def _stage(folder: int, name: str, content: str) -> str:
    """``content`` written to a new file beside ``name`` in ``folder`` (with the mode of the
    file it will replace, or the usual mode for a new file); its name."""
    temp = f".{name}.{secrets.token_hex(6)}.patch"
    handle = os.open(temp, _NEW, 0o666, dir_fd=folder)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(content.encode("utf-8"))
            try:
                before = os.stat(name, dir_fd=folder, follow_symlinks=False)
            except FileNotFoundError:
                before = None
            if before is not None and stat.S_ISREG(before.st_mode):
                os.fchmod(out.fileno(), stat.S_IMODE(before.st_mode))
    except BaseException:
        _unlink(folder, temp)
        raise
    return temp


_NEW = (
    os.O_WRONLY
    | os.O_CREAT
    | os.O_EXCL
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


def _unlink(folder: int, name: str) -> None:
    """Remove ``name`` from ``folder`` (a symlink itself, never what it points to)."""
    try:
        os.unlink(name, dir_fd=folder)
    except FileNotFoundError:
        pass


def _remove_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:
        pass
