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
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from ...types import JSONObject, Tool, ToolContext, ToolResult
from ._common import ArgError, BuiltinScope, builtin, require_str
from ._fs import check_regular, fs_errors, in_thread

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
    _write_all(plan)
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
            with fs_errors(shown):
                if not target.exists():
                    current[target] = None
                else:
                    check_regular(target, shown)
                    current[target] = target.read_bytes().decode("utf-8")
        return current[target]

    for op in operations:
        target = scope.resolve(op.path)
        target = target if scope.root is not None else Path(os.path.realpath(target))
        text = state(target, op.path)
        if op.kind == "add":
            if text is not None:
                raise ArgError(f"cannot add {op.path}: it already exists")
            new: str | None = op.content
        elif text is None:
            raise ArgError(f"cannot {op.kind} {op.path}: no such file")
        elif op.kind == "delete":
            new = None
        else:
            new = _patched(text, op)
        if new is not None and not _encodable(new):
            raise ArgError(f"{op.path}: the new content is not valid Unicode text")
        current[target] = new
        plan.contents[target] = new
        plan.shown[target] = op.path
    return plan


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


def _write_all(plan: _Plan) -> None:
    """Stage every new content beside its target, then rename them all into place."""
    staged: list[tuple[Path, Path]] = []
    made: list[Path] = []
    try:
        for target, content in plan.contents.items():
            if content is None:
                continue
            shown = plan.shown[target]
            with fs_errors(shown):
                made.extend(_make_parents(target.parent))
                staged.append((_stage(target, content), target))
    except BaseException:
        for temp, _ in staged:
            temp.unlink(missing_ok=True)
        for folder in reversed(made):
            _remove_empty(folder)
        raise
    for temp, target in staged:
        with fs_errors(plan.shown[target]):
            os.replace(temp, target)
    for target, content in plan.contents.items():
        if content is None:
            with fs_errors(plan.shown[target]):
                target.unlink(missing_ok=True)


def _make_parents(folder: Path) -> list[Path]:
    missing: list[Path] = []
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    for created in reversed(missing):
        created.mkdir()
    return list(reversed(missing))


def _stage(target: Path, content: str) -> Path:
    """``content`` written to a new file beside ``target`` (with ``target``'s mode, or the
    usual mode for a new file)."""
    temp = target.parent / f".{target.name}.{secrets.token_hex(6)}.patch"
    handle = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(content.encode("utf-8"))
        if target.exists():
            shutil.copymode(target, temp)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return temp


def _remove_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:
        pass
