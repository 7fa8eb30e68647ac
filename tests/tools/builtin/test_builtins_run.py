"""A model works on files through the built-ins, end to end, in both wire styles."""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from pathlib import Path

import pytest

from toolnexus import RunTimeout, ToolContext, create_toolkit
from toolnexus.testing import StubLLMServer, reply
from toolnexus.tools.builtin import BuiltinScope, builtin_tools

from ...running import MakeClient, drive


def tool_outputs(body: dict[str, object], style: str) -> list[str]:
    """The tool results a request carries back to the model, in order."""
    messages = body["messages"]
    assert isinstance(messages, list)
    if style == "openai":
        return [m["content"] for m in messages if m.get("role") == "tool"]
    return [
        block["content"]
        for m in messages
        if m["role"] == "user" and isinstance(m["content"], list)
        for block in m["content"]
        if block.get("type") == "tool_result"
    ]


async def test_a_model_writes_edits_greps_and_reads_back_a_file(
    tmp_path: Path, stub: StubLLMServer, make_client: MakeClient, style: str, mode: str
) -> None:
    stub.enqueue(
        reply.tool_calls(
            reply.call("write", {"path": "notes/todo.md", "content": "- buy milk\n- call Ann\n"})
        ),
        reply.tool_calls(
            reply.call("edit", {"path": "notes/todo.md", "oldString": "milk", "newString": "tea"})
        ),
        reply.tool_calls(reply.call("grep", {"pattern": "tea|Ann", "include": "*.md"})),
        reply.tool_calls(reply.call("read", {"path": "notes/todo.md", "offset": 1, "limit": 1})),
        reply.text("Your first todo is to buy tea."),
    )
    async with await create_toolkit(builtins={"root": str(tmp_path)}) as tk:
        result, _ = await drive(make_client(style), mode, tk, prompt="tidy my notes")

    assert result.status == "done"
    assert result.text == "Your first todo is to buy tea."
    assert (tmp_path / "notes/todo.md").read_text() == "- buy tea\n- call Ann\n"
    root = tmp_path.resolve()
    expected = [
        "Wrote 22 bytes to notes/todo.md",
        "Edited notes/todo.md (1 replacement)",
        f"{root}/notes/todo.md:1:- buy tea\n{root}/notes/todo.md:2:- call Ann",
        "- buy tea",
    ]
    assert [(c.name, c.output, c.is_error) for c in result.tool_calls] == [
        (name, output, False)
        for name, output in zip(["write", "edit", "grep", "read"], expected, strict=True)
    ]
    last = stub.requests[-1].json
    assert tool_outputs(last, style) == expected
    offered = [t["function"]["name"] if style == "openai" else t["name"] for t in last["tools"]]
    assert {"read", "write", "edit", "grep", "glob", "apply_patch"} <= set(offered)


async def test_a_refused_path_reaches_the_model_as_an_error_and_the_run_goes_on(
    tmp_path: Path, stub: StubLLMServer, make_client: MakeClient, style: str
) -> None:
    stub.enqueue(
        reply.tool_calls(reply.call("read", {"path": "../../etc/passwd"})),
        reply.text("I may not read that."),
    )
    async with await create_toolkit(builtins={"root": str(tmp_path)}) as tk:
        result, _ = await drive(make_client(style), "run", tk, prompt="read the passwords")
    [call] = result.tool_calls
    assert call.is_error
    assert call.output.startswith("read: ../../etc/passwd is outside the root")
    assert result.text == "I may not read that."
    sent = json.dumps(stub.requests[-1].json)
    assert "outside the root" in sent
    assert "root:x:0:0" not in sent


@pytest.mark.parametrize("pattern", ["(a+)+$", "(a|aa)+$"])
async def test_a_backtracking_grep_pattern_neither_freezes_the_loop_nor_outlives_the_deadline(
    tmp_path: Path, stub: StubLLMServer, make_client: MakeClient, pattern: str
) -> None:
    # Python's re holds the GIL through a match: ``(a+)+$`` against this line takes minutes,
    # and the loop (every other task of the process) would stand still all that time.
    (tmp_path / "long.txt").write_text("a" * 28 + "b\n")
    stub.enqueue(reply.tool_calls(reply.call("grep", {"pattern": pattern})), reply.text("done"))
    ticks: list[float] = []

    async def ticker() -> None:
        while True:
            ticks.append(time.perf_counter())
            await asyncio.sleep(0.01)

    ticking = asyncio.create_task(ticker())
    started = time.perf_counter()
    try:
        async with await create_toolkit(builtins={"root": str(tmp_path)}) as tk:
            client = make_client("openai", timeout_ms=500)
            try:
                result = await client.run("search", tk)
            except RunTimeout:
                result = None
    finally:
        ticking.cancel()
    took = time.perf_counter() - started
    assert took < 2.0
    gaps = [b - a for a, b in itertools.pairwise([*ticks, time.perf_counter()])]
    assert max(gaps) < 2.0, max(gaps)  # stalled for the whole search before (seconds)
    if result is not None:  # the search ended within the deadline: its result is an answer
        [call] = result.tool_calls
        assert call.output == "" or "took more than" in call.output, call.output


async def test_a_pattern_that_keeps_backtracking_is_stopped_and_says_why(tmp_path: Path) -> None:
    (tmp_path / "long.txt").write_text("a" * 40 + "!\n")
    [grep] = [t for t in builtin_tools(BuiltinScope(tmp_path)) if t.name == "grep"]
    started = time.perf_counter()
    result = await grep.execute({"pattern": "(a|aa)+$"}, ToolContext(timeout=0.3))
    assert time.perf_counter() - started < 5  # the 0.3 s budget, not the 30 s default
    assert result.is_error
    assert result.output.startswith("grep: the pattern '(a|aa)+$' took more than 0.3s")
