"""The file tools do their file work in worker threads, never on the event loop."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from .support import Watch, call, tree

PATCH = "\n".join(
    [
        "*** Begin Patch",
        "*** Update File: a.txt",
        "@@",
        "-alpha",
        "+ALPHA",
        "*** Add File: n/b.txt",
        "+b",
        "*** End Patch",
    ]
)


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("read", {"path": "a.txt"}),
        ("write", {"path": "new/c.txt", "content": "c"}),
        ("edit", {"path": "a.txt", "oldString": "alpha", "newString": "beta"}),
        ("grep", {"pattern": "alpha"}),
        ("glob", {"pattern": "*.txt"}),
        ("apply_patch", {"patchText": PATCH}),
    ],
)
async def test_a_file_tool_touches_files_only_from_a_worker_thread(
    tmp_path: Path, name: str, args: dict[str, Any]
) -> None:
    tree(tmp_path, {"a.txt": "alpha\n", "sub/d.txt": "alpha\n"})
    loop_thread = threading.get_ident()
    with Watch(tmp_path) as watch:
        result = await call(name, args, tmp_path)
    assert not result.is_error, result.output
    assert watch.events, "the tool touched no file"
    assert all(thread != loop_thread for _, _, thread in watch.events), watch.events


async def test_a_held_read_leaves_the_event_loop_free(tmp_path: Path) -> None:
    tree(tmp_path, {"slow.txt": "content\n"})
    with Watch(tmp_path, hold="slow.txt") as watch:
        reading = asyncio.create_task(call("read", {"path": "slow.txt"}, tmp_path))
        assert await asyncio.to_thread(watch.entered.wait, 5)
        assert not reading.done()  # the loop got here while the read was held
        watch.release.set()
        result = await reading
    assert result.output == "content\n"
