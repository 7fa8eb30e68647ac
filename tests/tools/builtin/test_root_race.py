"""The confinement root under a race: a thread keeps swapping a file or a folder inside the root
for a symlink to something outside while a tool uses it. Whatever the timing, nothing outside is
ever read, listed, written or removed (real files, real symlinks, a real thread)."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from toolnexus import ToolResult
from toolnexus.tools.builtin import BuiltinScope, builtin_tools

from .support import Watch, tree

CALLS = 1000
"""Tool calls per test; before the fix about one read in forty returned the outside file."""

SWAPS = 1_000_000
"""Upper bound of the swapper's iterations (it stops as soon as the calls are done)."""


@pytest.fixture(autouse=True)
def often_switching() -> Iterator[None]:
    """Threads switch every microsecond or so, so the swapper gets between a tool's steps."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


@pytest.fixture
def world(tmp_path: Path) -> Path:
    """``root/`` with ``file.txt`` and ``dir/inner.txt``; ``outside/`` with a secret file and
    a folder holding ``outside-only.txt``."""
    tree(
        tmp_path,
        {
            "root/file.txt": "inside text\n",
            "root/dir/inner.txt": "inside text\n",
            "outside/secret.txt": "SECRET text\n",
            "outside/dir/outside-only.txt": "SECRET text\n",
        },
    )
    return tmp_path


def tool_of(name: str, root: Path) -> Callable[[dict[str, Any]], Any]:
    [found] = [t for t in builtin_tools(BuiltinScope(root)) if t.name == name]
    return lambda args: found.execute(args, None)


@contextmanager
def swapping(place: Path, link_to: Path) -> Iterator[list[int]]:
    """A thread that, until the block ends, keeps putting a symlink to ``link_to`` in the place
    of ``place`` and then putting ``place`` back: a file is replaced by rename (atomically) and
    a fresh copy renamed back; a folder is moved aside and back. Yields a one-item list counting
    the times the link was in place."""
    stop = threading.Event()
    swaps = [0]
    link, real, aside = (place.with_name(f".{place.name}.{k}") for k in ("link", "real", "old"))
    text = None if place.is_dir() else place.read_bytes()

    def swap_file(data: bytes) -> None:
        link.symlink_to(link_to)
        os.replace(link, place)
        swaps[0] += 1
        real.write_bytes(data)
        os.replace(real, place)

    def swap_folder() -> None:
        os.rename(place, aside)
        try:
            place.symlink_to(link_to, target_is_directory=True)
            swaps[0] += 1
        finally:  # a tool may have made the folder anew meanwhile: it goes, ours comes back
            if place.is_symlink():
                place.unlink()
            elif place.exists():
                shutil.rmtree(place)
            os.rename(aside, place)

    def swap() -> None:
        while not stop.is_set() and swaps[0] < SWAPS:
            try:
                swap_folder() if text is None else swap_file(text)
            except OSError:
                continue

    thread = threading.Thread(target=swap, daemon=True)
    thread.start()
    try:
        yield swaps
    finally:
        stop.set()
        thread.join(5)
    assert not thread.is_alive()


def is_outside_text(result: ToolResult) -> bool:
    """The result shows an outside file's text, or (not a refusal naming it) its name."""
    return "SECRET" in result.output or (not result.is_error and "outside-only" in result.output)


async def test_read_never_returns_an_outside_file_swapped_in_by_a_race(world: Path) -> None:
    read = tool_of("read", world / "root")
    leaked = 0
    with swapping(world / "root/file.txt", world / "outside/secret.txt") as swaps:
        for _ in range(CALLS):
            result: ToolResult = await read({"path": "file.txt"})
            leaked += is_outside_text(result)
    assert swaps[0] > 0
    assert leaked == 0


async def test_a_folder_swapped_for_a_link_is_never_read_or_listed_through(world: Path) -> None:
    read, grep, glob = (tool_of(n, world / "root") for n in ("read", "grep", "glob"))
    leaked: list[str] = []
    with swapping(world / "root/dir", world / "outside/dir") as swaps:
        for _ in range(CALLS // 4):
            for result in (
                await read({"path": "dir/outside-only.txt"}),
                await grep({"pattern": "SECRET|text"}),
                await grep({"pattern": "text", "path": "dir"}),
                await glob({"pattern": "**/*.txt"}),
            ):
                if is_outside_text(result):
                    leaked.append(result.output)
    assert swaps[0] > 0
    assert leaked == []


async def test_grep_never_shows_an_outside_file_swapped_in_by_a_race(world: Path) -> None:
    grep = tool_of("grep", world / "root")
    leaked = 0
    with swapping(world / "root/file.txt", world / "outside/secret.txt") as swaps:
        for _ in range(CALLS // 4):
            leaked += is_outside_text(await grep({"pattern": "text"}))
    assert swaps[0] > 0
    assert leaked == 0


@pytest.mark.parametrize(
    "args",
    [
        {"path": "file.txt", "content": "pwned\n"},
        {"path": "file.txt", "oldString": "text", "newString": "pwned"},
        {
            "patchText": "*** Begin Patch\n*** Update File: file.txt\n@@\n-inside text\n+pwned\n"
            "*** End Patch"
        },
    ],
    ids=["write", "edit", "apply_patch"],
)
async def test_a_file_swapped_for_a_link_never_gets_the_outside_file_changed(
    world: Path, args: dict[str, Any]
) -> None:
    name = "write" if "content" in args else "edit" if "oldString" in args else "apply_patch"
    tool = tool_of(name, world / "root")
    secret = world / "outside/secret.txt"
    with swapping(world / "root/file.txt", secret) as swaps:
        for _ in range(CALLS if name != "apply_patch" else CALLS // 4):
            await tool(args)
            # the swapper puts a fresh copy back, so the inside file may read either way
    assert swaps[0] > 0
    assert secret.read_text() == "SECRET text\n"
    assert sorted(p.name for p in (world / "outside").iterdir()) == ["dir", "secret.txt"]


@pytest.mark.parametrize("name", ["write", "apply_patch"])
async def test_a_folder_swapped_for_a_link_never_gets_a_file_written_outside(
    world: Path, name: str
) -> None:
    tool = tool_of(name, world / "root")
    outside = world / "outside/dir"
    with swapping(world / "root/dir", outside) as swaps:
        for i in range(CALLS // 5):
            if name == "write":
                await tool({"path": f"dir/new{i}.txt", "content": "pwned\n"})
            else:
                patch = f"*** Begin Patch\n*** Add File: dir/new{i}.txt\n+pwned\n*** End Patch"
                await tool({"patchText": patch})
    assert swaps[0] > 0
    assert sorted(p.name for p in outside.iterdir()) == ["outside-only.txt"]
    assert not list((world / "outside").glob(".*"))


# The same races made certain: the tool is held just before it opens the file (by an audit
# hook, without touching library code), the swap happens, then the tool goes on.


async def held(
    tool: str, args: dict[str, Any], root: Path, hold: str, swap: Callable[[], None]
) -> ToolResult:
    run = tool_of(tool, root)
    with Watch(root.parent, hold=hold) as watch:
        task = asyncio.ensure_future(run(args))
        assert await asyncio.to_thread(watch.entered.wait, 5)
        swap()
        watch.release.set()
        async with asyncio.timeout(5):
            result: ToolResult = await task
    return result


def to_link(place: Path, target: Path) -> Callable[[], None]:
    def swap() -> None:
        if place.is_dir():
            place.rename(place.with_name(".aside"))
        else:
            place.unlink()
        place.symlink_to(target)

    return swap


async def test_a_file_that_becomes_a_link_just_before_read_opens_it_is_refused(world: Path) -> None:
    root = world / "root"
    swap = to_link(root / "file.txt", world / "outside/secret.txt")
    result = await held("read", {"path": "file.txt"}, root, "file.txt", swap)
    assert result.is_error
    assert result.output.startswith("read: file.txt is outside the root"), result.output
    assert "SECRET" not in result.output


async def test_a_file_that_becomes_a_link_just_before_write_opens_it_is_left_alone(
    world: Path,
) -> None:
    root = world / "root"
    swap = to_link(root / "file.txt", world / "outside/secret.txt")
    result = await held("write", {"path": "file.txt", "content": "pwned"}, root, "file.txt", swap)
    assert result.is_error
    assert "outside the root" in result.output
    assert (world / "outside/secret.txt").read_text() == "SECRET text\n"


async def test_a_folder_that_becomes_a_link_while_write_works_gets_nothing_outside(
    world: Path,
) -> None:
    root = world / "root"
    swap = to_link(root / "dir", world / "outside/dir")
    args = {"path": "dir/new.txt", "content": "made"}
    result = await held("write", args, root, "new.txt", swap)
    assert sorted(p.name for p in (world / "outside/dir").iterdir()) == ["outside-only.txt"]
    # the folder was opened before the swap: the file went where that folder went
    assert not result.is_error, result.output
    assert (root / ".aside/new.txt").read_text() == "made"


def moved_out(folder: Path, to: Path) -> Callable[[], None]:
    return lambda: folder.rename(to)


async def test_a_folder_moved_out_of_the_root_mid_read_is_caught_by_the_check_of_what_was_opened(
    world: Path,
) -> None:
    # The folder was entered while inside the root; it leaves before the file in it is opened.
    root = world / "root"
    swap = moved_out(root / "dir", world / "outside/moved")
    result = await held("read", {"path": "dir/inner.txt"}, root, "inner.txt", swap)
    assert result.is_error
    assert "is outside the root" in result.output
    assert "moved out of the root" in result.output


async def test_a_folder_moved_out_of_the_root_mid_write_keeps_no_new_file_there(
    world: Path,
) -> None:
    root = world / "root"
    swap = moved_out(root / "dir", world / "outside/moved")
    args = {"path": "dir/new.txt", "content": "made"}
    result = await held("write", args, root, "new.txt", swap)
    assert result.is_error
    assert "moved out of the root" in result.output
    assert sorted(p.name for p in (world / "outside/moved").iterdir()) == ["inner.txt"]


async def test_a_folder_that_becomes_a_link_just_before_it_is_entered_is_refused(
    world: Path,
) -> None:
    root = world / "root"
    swap = to_link(root / "dir", world / "outside/dir")
    result = await held("read", {"path": "dir/outside-only.txt"}, root, "dir", swap)
    assert result.is_error
    assert result.output.startswith("read: dir/outside-only.txt is outside the root")
    assert "symbolic link appeared" in result.output
    assert "SECRET" not in result.output
