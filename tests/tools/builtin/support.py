"""Calling one built-in tool the way a toolkit does (with or without a confinement root), making
file trees, and watching what a tool does to them."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from typing import Any, ClassVar

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


class Watch:
    """What Python does to the files below ``folder``, seen through the interpreter's audit
    hook (no library code is touched): ``events`` lists ``(event, path, thread id)`` for
    opening, listing, creating, renaming and removing. Opening a file named ``hold`` blocks
    the opener until ``release`` is set (at most 5 s), with ``entered`` set meanwhile.

    Use as a context manager; the hook itself is installed once per process."""

    EVENTS = frozenset({"open", "os.scandir", "os.mkdir", "os.rename", "os.replace", "os.remove"})
    _active: ClassVar[list[Watch]] = []
    _installed = False

    def __init__(self, folder: Path, hold: str | None = None) -> None:
        self.folder = str(folder)
        self.hold = hold
        self.events: list[tuple[str, str, int]] = []
        self.folders: set[int] = set()
        """Indexes in ``events`` of opens with ``O_DIRECTORY``."""
        self.entered = threading.Event()
        self.release = threading.Event()

    def opened(self) -> list[str]:
        """Names of the files opened, in order (folders opened to walk them left out)."""
        return [
            Path(path).name
            for index, (event, path, _) in enumerate(self.events)
            if event == "open" and index not in self.folders
        ]

    def __enter__(self) -> Watch:
        if not Watch._installed:
            sys.addaudithook(Watch._hook)
            Watch._installed = True
        Watch._active.append(self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release.set()
        Watch._active.remove(self)

    @staticmethod
    def _hook(event: str, args: tuple[Any, ...]) -> None:
        if event not in Watch.EVENTS or not Watch._active or not args:
            return
        if not isinstance(args[0], str | bytes | os.PathLike):
            return
        path = os.fsdecode(args[0])
        for watch in list(Watch._active):
            # A relative name is one opened below a folder's descriptor (``dir_fd=``), as the
            # file tools do under a root: counted as inside the watched folder.
            if path.startswith(watch.folder) or not os.path.isabs(path):
                if event == "open" and _is_folder_open(args):
                    watch.folders.add(len(watch.events))
                watch.events.append((event, path, threading.get_ident()))
                if event == "open" and watch.hold and Path(path).name == watch.hold:
                    watch.entered.set()
                    watch.release.wait(5)


def _is_folder_open(args: tuple[Any, ...]) -> bool:
    flags = args[2] if len(args) > 2 else None
    return isinstance(flags, int) and bool(flags & getattr(os, "O_DIRECTORY", 0))
