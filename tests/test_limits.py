"""Hostile or broken peers cannot exhaust memory or CPU: sizes and nesting are bounded."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest

from toolnexus import (
    ConfigError,
    LLMError,
    Tool,
    ToolContext,
    Toolkit,
    ToolResult,
    create_client,
    create_toolkit,
)
from toolnexus._json import MAX_DEPTH, JSONDepthError, loads
from toolnexus.dialects.base import parse_arguments
from toolnexus.stores.sqlite import SqliteConversationStore
from toolnexus.testing import StubLLMServer, reply
from toolnexus.tools.mcp.config import load_mcp_config

from .running import ASYNC_MODES, drive


def nested(levels: int) -> str:
    return "[" * levels + "]" * levels


# --- JSON nesting --------------------------------------------------------------------------


@pytest.mark.parametrize("levels", [MAX_DEPTH + 1, 600, 5000, 200_000])
def test_json_nested_too_deep_is_a_depth_error_never_a_recursion_error(levels: int) -> None:
    with pytest.raises(JSONDepthError, match="deeper than 512"):
        loads(nested(levels))


def test_json_nested_exactly_to_the_limit_parses() -> None:
    value = loads(nested(MAX_DEPTH))
    assert isinstance(value, list)
    assert loads('{"a": "[[[[[[["}') == {"a": "[[[[[[["}


@pytest.mark.parametrize("raw", [f'{{"x": {nested(600)}}}', {"x": json.loads(nested(600))}])
def test_deep_tool_arguments_are_an_invalid_arguments_error(raw: object) -> None:
    args, error = parse_arguments("t", raw)
    assert args == {}
    assert error == "invalid arguments for t: JSON nested deeper than 512 levels"


@pytest.mark.parametrize("mode", ASYNC_MODES)
@pytest.mark.parametrize("style", ["openai", "anthropic"])
async def test_a_deep_response_is_an_llm_error(style: str, mode: str) -> None:
    body = nested(700)
    replies = {
        "run": reply.raw_bytes(body.encode(), content_type="application/json"),
        "stream": reply.raw_sse([f"data: {body}"]),
    }
    with StubLLMServer([replies[mode]]) as stub:
        async with create_client(stub.url, style, model="m", api_key="k", retries=0) as client:
            with pytest.raises(LLMError, match="deeper than 512") as raised:
                await drive(client, mode)
    assert raised.value.status == 200


@pytest.mark.parametrize("mode", ASYNC_MODES)
@pytest.mark.parametrize("style", ["openai", "anthropic"])
async def test_deep_tool_input_runs_no_tool_and_the_transcript_still_saves(
    style: str, mode: str, tmp_path: Path
) -> None:
    ran: list[object] = []

    async def execute(args: dict[str, object], ctx: ToolContext | None) -> ToolResult:
        ran.append(args)
        return ToolResult("ran")

    deep = Tool("t", "t", {"type": "object"}, "native", execute)
    script = [reply.tool_calls(reply.call("t", f'{{"x": {nested(600)}}}')), reply.text("ok")]
    store = SqliteConversationStore(tmp_path / "c.db")
    with StubLLMServer(script) as stub:
        async with create_client(stub.url, style, model="m", api_key="k", store=store) as client:
            result, _ = await drive(client, mode, Toolkit([deep]), conversation_id="c")
    assert ran == []
    assert result.tool_calls[0].is_error
    assert "deeper than 512" in result.tool_calls[0].output
    saved = await store.get("c")
    assert saved is not None
    assert len(saved) == len(result.messages)
    await store.aclose()


def test_a_deep_mcp_json_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(f'{{"mcpServers": {{"a": {{"args": {nested(5000)}}}}}}}')
    with pytest.raises(ConfigError, match="deeper than 512"):
        load_mcp_config(path)


@pytest.mark.parametrize("value", ["Infinity", "-Infinity", "NaN", "1e400"])
def test_a_timeout_that_is_not_finite_is_a_config_error(value: str, tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(f'{{"mcpServers": {{"a": {{"command": "x", "timeout": {value}}}}}}}')
    with pytest.raises(ConfigError, match='"timeout" must be a finite number'):
        load_mcp_config(path)


# --- response size -------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ASYNC_MODES)
@pytest.mark.parametrize("style", ["openai", "anthropic"])
async def test_a_response_over_max_response_bytes_is_an_llm_error(style: str, mode: str) -> None:
    big = reply.text("x" * 50_000)
    with StubLLMServer([big, big]) as stub:
        async with create_client(
            stub.url, style, model="m", api_key="k", max_response_bytes=10_000
        ) as client:
            with pytest.raises(LLMError, match="max_response_bytes=10000"):
                await drive(client, mode)
        assert len(stub.requests) == 1  # not retried


@pytest.mark.parametrize("mode", ASYNC_MODES)
async def test_an_error_body_over_max_response_bytes_is_an_llm_error(mode: str) -> None:
    with StubLLMServer([reply.error(500, "e" * 50_000)]) as stub:
        async with create_client(
            stub.url, model="m", api_key="k", max_response_bytes=1000, retries=0
        ) as client:
            with pytest.raises(LLMError, match="larger than max_response_bytes"):
                await drive(client, mode)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "1"])
def test_max_response_bytes_must_be_a_positive_integer(bad: object) -> None:
    with pytest.raises(ConfigError, match="max_response_bytes"):
        create_client("http://127.0.0.1:9", model="m", api_key="k", max_response_bytes=bad)  # type: ignore[arg-type]


# --- tool output ---------------------------------------------------------------------------


def _talker(size: int) -> Tool:
    async def execute(args: dict[str, object], ctx: ToolContext | None) -> ToolResult:
        return ToolResult("a" * size, metadata={"kept": 1})

    return Tool("talk", "talks", {"type": "object"}, "native", execute)


async def test_a_long_tool_output_is_cut_and_marked_truncated() -> None:
    toolkit = await create_toolkit(
        extra_tools=[_talker(5000)], builtins=False, max_output_chars=100
    )
    result = await toolkit.execute("talk", {})
    head, note = result.output.split("\n", 1)
    assert head == "a" * 100
    assert "truncated" in note
    assert result.metadata == {"kept": 1, "truncated": True}


async def test_outputs_up_to_the_default_limit_are_untouched() -> None:
    toolkit = Toolkit([_talker(1_000_000)])
    assert toolkit.max_output_chars == 1_000_000
    result = await toolkit.execute("talk", {})
    assert len(result.output) == 1_000_000
    assert result.metadata == {"kept": 1}
    longer = await Toolkit([_talker(1_000_001)]).execute("talk", {})
    assert longer.metadata == {"kept": 1, "truncated": True}


@pytest.mark.parametrize("bad", [0, -5, 2.0, None])
async def test_max_output_chars_must_be_a_positive_integer(bad: object) -> None:
    with pytest.raises(ConfigError, match="max_output_chars"):
        await create_toolkit(builtins=False, max_output_chars=bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="max_output_chars"):
        Toolkit([], max_output_chars=bad)  # type: ignore[arg-type]


# --- skill files ---------------------------------------------------------------------------

SKILL = "---\nname: {name}\ndescription: d\n---\nbody\n"


def _skill(folder: Path, name: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(SKILL.format(name=name))


async def test_skill_discovery_skips_fifos_devices_and_large_files(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import os

    from toolnexus import list_skills

    _skill(tmp_path / "good", "good")
    (tmp_path / "fifo").mkdir()
    os.mkfifo(tmp_path / "fifo" / "SKILL.md")
    (tmp_path / "zero").mkdir()
    (tmp_path / "zero" / "SKILL.md").symlink_to("/dev/zero")
    (tmp_path / "big").mkdir()
    (tmp_path / "big" / "SKILL.md").write_text(SKILL.format(name="big") + "x" * (1 << 20))
    async with asyncio.timeout(20):
        inventory = await asyncio.to_thread(list_skills, [str(tmp_path)])
    assert [s.name for s in inventory.skills] == ["good"]
    skipped = {Path(s.location).parent.name: s.reason for s in inventory.skipped}
    assert skipped == {"big": "unreadable", "fifo": "unreadable", "zero": "unreadable"}
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("fifo" in w and "not a regular file" in w for w in warnings)
    assert any("big" in w and "larger than 1048576 bytes" in w for w in warnings)


async def test_a_symlink_to_the_filesystem_root_is_not_followed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _skill(tmp_path / "skills" / "good", "good")
    (tmp_path / "skills" / "everything").symlink_to("/")
    (tmp_path / "skills" / "up").symlink_to("..")
    async with asyncio.timeout(20):
        toolkit = await create_toolkit(skills_dir=str(tmp_path / "skills"), builtins=False)
    assert "good" in toolkit.skills_prompt()
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("everything" in w and "not following" in w for w in warnings)
    assert any("up" in w and "not following" in w for w in warnings)


async def test_skill_discovery_stops_after_ten_thousand_folders_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from toolnexus import list_skills

    root = tmp_path / "skills"
    _skill(root / "aaa-first", "first")  # searched first: names are walked in order
    for n in range(10_000):
        (root / f"empty-{n:05d}").mkdir()
    _skill(root / "zzz-last", "last")  # folder 10,003 of the walk: never reached
    async with asyncio.timeout(60):
        inventory = await asyncio.to_thread(list_skills, [str(root)])
    assert [s.name for s in inventory.skills] == ["first"]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("stopped searching" in w and "after 10000 folders" in w for w in warnings)
