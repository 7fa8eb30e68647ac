"""Toolkit assembly: order, dedupe, toggles, execute, close."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any, cast

import pytest

from toolnexus import (
    ConfigError,
    Tool,
    ToolContext,
    Toolkit,
    ToolResult,
    ToolSource,
    create_toolkit,
    define_tool,
)
from toolnexus.testing import mcp_server_command
from toolnexus.toolkit import assemble_tools
from toolnexus.tools.builtin import BUILTIN_NAMES, builtin_tools, select_builtins


def stand_in(name: str, source: ToolSource, output: str | None = None) -> Tool:
    """A tool that answers with its own origin, so a test can tell which one ran."""
    answer = output if output is not None else f"{source}:{name}"

    async def execute(args: dict[str, Any], ctx: ToolContext | None) -> ToolResult:
        return ToolResult(answer)

    return Tool(
        name=name,
        description=f"{source} tool {name}",
        input_schema={"type": "object", "properties": {}},
        source=source,
        execute=execute,
    )


def builtins_stand_ins() -> list[Tool]:
    return [stand_in(name, "builtin") for name in BUILTIN_NAMES]


def names(tools: list[Tool]) -> list[str]:
    return [t.name for t in tools]


def origins(tools: list[Tool]) -> list[tuple[str, str]]:
    return [(t.name, t.source) for t in tools]


# order and first-wins dedupe ----------------------------------------------------------------------


def test_sources_are_ordered_mcp_skill_builtins_a2a_extra() -> None:
    tools = assemble_tools(
        extra=[stand_in("mine", "native")],
        a2a=[stand_in("peer_summarise", "a2a")],
        builtins=[stand_in("bash", "builtin"), stand_in("read", "builtin")],
        skill=stand_in("skill", "skill"),
        mcp=[stand_in("srv_echo", "mcp"), stand_in("srv_add", "mcp")],
    )
    assert origins(tools) == [
        ("srv_echo", "mcp"),
        ("srv_add", "mcp"),
        ("skill", "skill"),
        ("bash", "builtin"),
        ("read", "builtin"),
        ("peer_summarise", "a2a"),
        ("mine", "native"),
    ]


def test_a_name_collision_keeps_the_first_tool_and_warns(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="toolnexus")
    tools = assemble_tools(
        mcp=[stand_in("read", "mcp")],
        builtins=[stand_in("read", "builtin"), stand_in("glob", "builtin")],
        a2a=[stand_in("glob", "a2a")],
    )
    assert origins(tools) == [("read", "mcp"), ("glob", "builtin")]
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2
    assert all(r.name == "toolnexus" for r in warnings)
    assert "'read'" in warnings[0].getMessage()
    assert "'glob'" in warnings[1].getMessage()


def test_duplicates_within_one_source_keep_the_first(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="toolnexus")
    first, second = stand_in("dup", "native", "first"), stand_in("dup", "native", "second")
    assert assemble_tools(extra=[first, second]) == [first]
    assert "'dup'" in caplog.text


def test_an_extra_tool_colliding_with_an_mcp_tool_loses_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="toolnexus")
    tools = assemble_tools(mcp=[stand_in("srv_x", "mcp")], extra=[stand_in("srv_x", "native")])
    assert origins(tools) == [("srv_x", "mcp")]
    assert "'srv_x'" in caplog.text


# extra shadows a builtin, register does not -------------------------------------------------------


def test_an_extra_tool_replaces_the_builtin_of_that_name_silently(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="toolnexus")
    tools = assemble_tools(builtins=builtins_stand_ins(), extra=[stand_in("bash", "native")])
    assert names(tools) == [n for n in BUILTIN_NAMES if n != "bash"] + ["bash"]
    assert next(t for t in tools if t.name == "bash").source == "native"
    assert caplog.records == []


def test_an_extra_tool_shadows_a_builtin_even_when_mcp_has_the_name_too() -> None:
    tools = assemble_tools(
        mcp=[stand_in("bash", "mcp")],
        builtins=[stand_in("bash", "builtin")],
        extra=[stand_in("bash", "native")],
    )
    assert origins(tools) == [("bash", "mcp")]


async def test_register_cannot_shadow_a_builtin(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="toolnexus")
    tk = Toolkit(assemble_tools(builtins=builtins_stand_ins()))
    returned = tk.register(stand_in("bash", "native"))
    assert returned is tk
    assert names(tk.tools()) == list(BUILTIN_NAMES)
    found = tk.get("bash")
    assert found is not None
    assert found.source == "builtin"
    assert (await tk.execute("bash", {})).output == "builtin:bash"
    assert "'bash'" in caplog.text


def test_register_appends_new_tools_in_order_and_chains() -> None:
    tk = Toolkit([stand_in("a", "native")])
    same = tk.register(stand_in("b", "custom"), stand_in("c", "custom")).register(
        stand_in("d", "custom")
    )
    assert same is tk
    assert names(tk.tools()) == ["a", "b", "c", "d"]


# disable_tools by final name ----------------------------------------------------------------------


def test_disable_tools_removes_tools_by_final_name() -> None:
    tools = assemble_tools(
        mcp=[stand_in("my_srv_echo", "mcp"), stand_in("my_srv_add", "mcp")],
        skill=stand_in("skill", "skill"),
        builtins=builtins_stand_ins(),
        extra=[stand_in("mine", "native")],
        disable=["my_srv_echo", "bash", "skill", "not_a_tool"],
    )
    assert names(tools) == ["my_srv_add", *[n for n in BUILTIN_NAMES if n != "bash"], "mine"]


def test_disabling_an_extra_tool_does_not_bring_back_the_builtin_it_shadowed() -> None:
    tools = assemble_tools(
        builtins=[stand_in("bash", "builtin")], extra=[stand_in("bash", "native")], disable=["bash"]
    )
    assert tools == []


async def test_create_toolkit_applies_disable_tools_to_extra_tools() -> None:
    tk = await create_toolkit(
        extra_tools=[stand_in("keep", "native"), stand_in("drop", "native")],
        disable_tools=["drop"],
        builtins=False,
    )
    assert names(tk.tools()) == ["keep"]


# execute ------------------------------------------------------------------------------------------


async def test_executing_an_unknown_tool_is_an_error_result() -> None:
    tk = Toolkit([stand_in("a", "native")])
    assert await tk.execute("nope", {}) == ToolResult("Unknown tool: nope", is_error=True)


async def test_a_raising_tool_becomes_an_error_result() -> None:
    async def explode(args: dict[str, Any], ctx: ToolContext | None) -> ToolResult:
        raise RuntimeError("x")

    async def silent(args: dict[str, Any], ctx: ToolContext | None) -> ToolResult:
        raise RuntimeError

    tk = Toolkit(
        [
            Tool("explode", "d", {"type": "object"}, "custom", explode),
            Tool("silent", "d", {"type": "object"}, "custom", silent),
        ]
    )
    assert await tk.execute("explode", {}) == ToolResult("x", is_error=True)
    assert await tk.execute("silent", {}) == ToolResult("RuntimeError", is_error=True)


async def test_execute_passes_args_and_ctx_and_none_args_become_empty() -> None:
    seen: list[tuple[dict[str, Any], ToolContext | None]] = []

    async def record(args: dict[str, Any], ctx: ToolContext | None) -> ToolResult:
        seen.append((args, ctx))
        return ToolResult("ok")

    tk = Toolkit([Tool("record", "d", {"type": "object"}, "custom", record)])
    ctx = ToolContext(timeout=3.0)
    await tk.execute("record", None)
    await tk.execute("record", {"a": 1}, ctx)
    assert seen[0] == ({}, None)
    assert seen[1][0] == {"a": 1}
    assert seen[1][1] is ctx


async def test_cancelled_error_propagates_out_of_execute() -> None:
    started = asyncio.Event()

    async def wait_forever(args: dict[str, Any], ctx: ToolContext | None) -> ToolResult:
        started.set()
        await asyncio.Event().wait()
        return ToolResult("never")

    tk = Toolkit([Tool("wait", "d", {"type": "object"}, "custom", wait_forever)])
    task = asyncio.create_task(tk.execute("wait", {}))
    async with asyncio.timeout(5):
        await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_tool_raising_cancelled_error_itself_propagates() -> None:
    async def cancelled(args: dict[str, Any], ctx: ToolContext | None) -> ToolResult:
        raise asyncio.CancelledError

    tk = Toolkit([Tool("c", "d", {"type": "object"}, "custom", cancelled)])
    with pytest.raises(asyncio.CancelledError):
        await tk.execute("c", {})


async def test_native_tools_execute_through_the_toolkit() -> None:
    def double(n: int) -> int:
        return n * 2

    tk = Toolkit([define_tool(double)])
    assert await tk.execute("double", {"n": 21}) == ToolResult("42")


def test_get_returns_the_tool_or_none() -> None:
    a = stand_in("a", "native")
    tk = Toolkit([a])
    assert tk.get("a") is a
    assert tk.get("b") is None


def test_tools_returns_a_fresh_list() -> None:
    tk = Toolkit([stand_in("a", "native")])
    tk.tools().clear()
    assert names(tk.tools()) == ["a"]


# builtins toggle ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "count"),
    [
        (False, 0),
        ({"disabled": True}, 0),
        ({"enabled": False}, 0),
        ({"tools": {"bash": False}}, 9),
        ({"disabled": True, "tools": {"bash": True}}, 0),
        (True, 10),
        (None, 10),
        ({}, 10),
        ({"enabled": True}, 10),
        ({"disabled": False, "tools": {"bash": False, "read": False}}, 8),
        ({"tools": {"bash": True, "no_such_tool": False}}, 10),
        ({"enabled": False, "tools": {"bash": True}}, 0),
    ],
)
def test_builtins_option_selects_builtins(option: object, count: int) -> None:
    available = builtins_stand_ins()
    assert len(available) == 10
    assert len(select_builtins(option, available)) == count


def test_a_tools_map_removes_exactly_the_false_names_keeping_order() -> None:
    selected = select_builtins({"tools": {"bash": False, "glob": False}}, builtins_stand_ins())
    assert names(selected) == [n for n in BUILTIN_NAMES if n not in ("bash", "glob")]


@pytest.mark.parametrize("option", ["yes", 1, ["bash"], {"tools": ["bash"]}])
def test_a_malformed_builtins_option_raises_config_error(option: object) -> None:
    with pytest.raises(ConfigError, match="builtins"):
        select_builtins(option, builtins_stand_ins())


def test_builtin_names_are_the_ten_in_canonical_order() -> None:
    assert BUILTIN_NAMES == (
        "bash",
        "read",
        "write",
        "edit",
        "grep",
        "glob",
        "webfetch",
        "question",
        "apply_patch",
        "todowrite",
    )
    assert names(builtin_tools()) == list(BUILTIN_NAMES)
    assert all(t.source == "builtin" for t in builtin_tools())


async def test_a_default_toolkit_offers_exactly_the_ten_builtins_in_canonical_order() -> None:
    async with await create_toolkit() as tk:
        offered = names(tk.tools())
    assert offered == list(BUILTIN_NAMES)


async def test_a_config_builtins_false_is_honoured() -> None:
    shipped = names(builtin_tools())
    defaulted = await create_toolkit(mcp_config={})
    from_config = await create_toolkit(mcp_config={"builtins": False})
    overridden = await create_toolkit(mcp_config={"builtins": False}, builtins=True)
    try:
        assert names(defaulted.tools()) == shipped
        assert from_config.tools() == []
        assert from_config.mcp_status() == {}
        assert names(overridden.tools()) == shipped
    finally:
        for tk in (defaulted, from_config, overridden):
            await tk.aclose()


async def test_builtins_false_leaves_only_the_other_sources() -> None:
    tk = await create_toolkit(extra_tools=[stand_in("mine", "native")], builtins=False)
    assert origins(tk.tools()) == [("mine", "native")]


# closing ------------------------------------------------------------------------------------------


class StandInMcpSource:
    """Plays an MCP source for the toolkit: counts how often it is closed."""

    def __init__(self) -> None:
        self.closed = 0

    def tools(self) -> list[Tool]:
        return []

    def status(self) -> dict[str, str]:
        return {"srv": "connected"}

    async def close(self) -> None:
        self.closed += 1


async def test_async_with_returns_the_toolkit_and_closes_it_on_exit() -> None:
    source = StandInMcpSource()
    tk = Toolkit([stand_in("a", "native")], mcp=cast(Any, source))
    async with tk as same:
        assert same is tk
        assert tk.mcp_status() == {"srv": "connected"}
        assert source.closed == 0
    assert source.closed == 1
    await tk.aclose()
    assert source.closed == 1


async def test_async_with_closes_the_toolkit_when_the_body_raises() -> None:
    source = StandInMcpSource()
    tk = Toolkit([], mcp=cast(Any, source))
    with pytest.raises(LookupError):
        async with tk:
            raise LookupError("boom")
    assert source.closed == 1


async def test_a_toolkit_without_sources_has_no_status_no_prompt_and_closes_twice() -> None:
    async with await create_toolkit(builtins=False) as tk:
        assert tk.mcp_status() == {}
        assert tk.skills_prompt() == ""
    await tk.aclose()


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("mcp_config", 5),
        ("skills_dir", 5),
        ("skills_dir", ["skills", 5]),
        ("cancel", "x"),
        ("disable_tools", "read"),
        ("disable_tools", ["read", 5]),
        ("disable_skills", "draft"),
        ("wait_for", 3),
        ("skill_filter", 3),
        ("skill_filter", {"draft": "no"}),
        ("strict", "yes"),
        ("builtins", "yes"),
        ("skills", "a skill"),
        ("skill_provider", 3),
        ("token_store", 3),
        ("extra_tools", [object()]),
        ("agents", 3),
        ("sample_limit", "ten"),
        ("max_output_chars", 0),
        ("max_tool_threads", 0),
    ],
)
async def test_a_bad_option_is_a_config_error_naming_it_before_any_mcp_server_starts(
    tmp_path: Path, option: str, value: object
) -> None:
    pid_file = tmp_path / "server.pid"
    config = {"mcpServers": {"s": {"command": mcp_server_command("--pid-file", str(pid_file))}}}
    options: dict[str, Any] = {"mcp_config": config, option: value}
    with pytest.raises(ConfigError, match=rf"^{option}\b"):
        async with await create_toolkit(**options):
            pass
    assert not pid_file.exists()


def _plain(x: int) -> int:
    return x


@pytest.mark.parametrize(
    "build",
    [lambda: Toolkit(cast(Any, [_plain])), lambda: Toolkit().register(cast(Any, _plain))],
    ids=["constructor", "register"],
)
def test_a_plain_function_is_a_config_error_saying_to_wrap_it(build: Any) -> None:
    with pytest.raises(
        ConfigError, match=r"is not a Tool but function .*wrap functions with @tool"
    ):
        build()
