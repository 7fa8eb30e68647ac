"""A toolkit served over streamable HTTP at ``/mcp``, checked with the MCP SDK's client."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import pytest
from mcp.shared.exceptions import MCPError

import toolnexus as tn
from toolnexus.serve import ServeHandle

from .conftest import MCP_HEADERS, http_session, rpc, text_of
from .kit import Probe, make_tools

LIMIT = 20.0


@pytest.fixture
async def served() -> Any:
    """Start ``tk.serve`` for a test and stop it afterwards."""
    handles: list[ServeHandle] = []

    async def start(tk: tn.Toolkit, **options: Any) -> ServeHandle:
        handle = await tk.serve("127.0.0.1:0", **options)
        handles.append(handle)
        return handle

    yield start
    for handle in handles:
        await handle.aclose()


async def test_lists_every_tool_verbatim_in_toolkit_order(served: Any) -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string", "minLength": 2}}}
    custom = tn.define_tool(lambda q: q, name="Find-It_2", description="Find.", input_schema=schema)
    tk = tn.Toolkit([*make_tools(), custom])
    handle = await served(tk, mcp={})
    async with asyncio.timeout(LIMIT), http_session(handle.url + "/mcp") as session:
        listed = await session.list_tools()
    assert [t.name for t in listed.tools] == ["echo", "boom", "wait", "Find-It_2"]
    by_name = {t.name: t for t in listed.tools}
    assert by_name["Find-It_2"].input_schema == schema
    assert by_name["Find-It_2"].description == "Find."
    assert by_name["echo"].input_schema == make_tools()[0].input_schema


async def test_initialize_is_stateless_json_with_server_info_and_tools_capability(
    served: Any,
) -> None:
    handle = await served(tn.Toolkit(make_tools()), mcp={"name": "gateway", "version": "2.0"})
    assert handle.url.startswith("http://127.0.0.1:")
    assert not handle.url.endswith("/")
    params = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    }
    async with asyncio.timeout(LIMIT), aiohttp.ClientSession() as http:
        async with http.post(
            handle.url + "/mcp", json=rpc("initialize", params), headers=MCP_HEADERS
        ) as resp:
            body = await resp.json()
            assert resp.status == 200
            assert resp.content_type == "application/json"
            assert "Mcp-Session-Id" not in resp.headers
    assert body["result"]["serverInfo"] == {"name": "gateway", "version": "2.0"}
    assert "tools" in body["result"]["capabilities"]


async def test_a_call_answers_one_text_item_without_metadata(served: Any) -> None:
    async def with_metadata(args: tn.JSONObject, ctx: tn.ToolContext | None) -> tn.ToolResult:
        return tn.ToolResult("out", metadata={"secret": 1})

    rich = tn.Tool("rich", "Has metadata.", {"type": "object"}, "native", with_metadata)
    handle = await served(tn.Toolkit([rich]), mcp={})
    async with asyncio.timeout(LIMIT), aiohttp.ClientSession() as http:
        call = rpc("tools/call", {"name": "rich", "arguments": {}})
        async with http.post(handle.url + "/mcp", json=call, headers=MCP_HEADERS) as resp:
            body = await resp.json()
    assert body["result"] == {"content": [{"type": "text", "text": "out"}], "isError": False}


async def test_a_raising_tool_is_an_error_result_and_the_server_keeps_serving(
    served: Any,
) -> None:
    handle = await served(tn.Toolkit(make_tools()), mcp={})
    async with asyncio.timeout(LIMIT), http_session(handle.url + "/mcp") as session:
        failed = await session.call_tool("boom", {})
        again = await session.call_tool("echo", {"text": "still here"})
    assert failed.is_error
    assert "boom went the tool" in text_of(failed)
    assert not again.is_error
    assert text_of(again) == "still here"


async def test_an_exception_escaping_execute_becomes_is_error_with_its_message(
    served: Any,
) -> None:
    async def explode(args: tn.JSONObject, ctx: tn.ToolContext | None) -> tn.ToolResult:
        raise ValueError("raw failure")

    raw = tn.Tool("raw", "Raises from execute.", {"type": "object"}, "native", explode)
    handle = await served(tn.Toolkit([raw]), mcp={})
    async with asyncio.timeout(LIMIT), http_session(handle.url + "/mcp") as session:
        result = await session.call_tool("raw", {})
    assert result.is_error
    assert text_of(result) == "raw failure"


async def test_unknown_and_filtered_out_names_are_invalid_params_errors(served: Any) -> None:
    handle = await served(tn.Toolkit(make_tools()), mcp={"tools": ["echo", "zz"]})
    async with asyncio.timeout(LIMIT), http_session(handle.url + "/mcp") as session:
        listed = await session.list_tools()
        for name in ("nope", "boom"):
            with pytest.raises(MCPError) as caught:
                await session.call_tool(name, {})
            assert caught.value.code == -32602
    assert [t.name for t in listed.tools] == ["echo"]


async def test_on_call_fires_per_executed_call_and_its_errors_are_ignored(
    served: Any,
) -> None:
    seen: list[dict[str, Any]] = []

    async def on_call(info: dict[str, Any]) -> None:
        seen.append(info)
        raise RuntimeError("observer failure")

    handle = await served(tn.Toolkit(make_tools()), mcp={}, on_call=on_call)
    async with asyncio.timeout(LIMIT), http_session(handle.url + "/mcp") as session:
        await session.call_tool("echo", {"text": "a"})
        await session.call_tool("boom", {})
        with pytest.raises(MCPError):
            await session.call_tool("nope", {})
    assert [(s["name"], s["source"], s["is_error"]) for s in seen] == [
        ("echo", "native", False),
        ("boom", "native", True),
    ]
    assert all(isinstance(s["ms"], float) and s["ms"] >= 0 for s in seen)


async def test_without_a_profile_every_path_answers_404(served: Any) -> None:
    handle = await served(tn.Toolkit(make_tools()))
    async with asyncio.timeout(LIMIT), aiohttp.ClientSession() as http:
        for method, path in [("POST", "/mcp"), ("GET", "/"), ("POST", "/"), ("GET", "/x/y")]:
            async with http.request(method, handle.url + path, json=rpc("ping")) as resp:
                assert resp.status == 404, (method, path)


async def test_with_a_profile_other_paths_answer_404(served: Any) -> None:
    handle = await served(tn.Toolkit(make_tools()), mcp={})
    async with asyncio.timeout(LIMIT), aiohttp.ClientSession() as http:
        for path in ("/", "/mcp/", "/mcpx", "/.well-known/agent-card.json"):
            async with http.post(handle.url + path, json=rpc("ping")) as resp:
                assert resp.status == 404, path


async def test_the_config_mcp_server_block_is_the_profile_when_none_is_given(
    served: Any,
) -> None:
    config = {"mcpServers": {}, "mcpServer": {"name": "from-config", "tools": ["echo"]}}
    tk = await tn.create_toolkit(config, extra_tools=make_tools(), builtins=False)
    handle = await served(tk)
    async with asyncio.timeout(LIMIT), http_session(handle.url + "/mcp") as session:
        listed = await session.list_tools()
    assert [t.name for t in listed.tools] == ["echo"]


async def test_stop_refuses_later_connections_is_idempotent_and_leaves_the_toolkit_open() -> None:
    tk = tn.Toolkit(make_tools())
    handle = await tk.serve("127.0.0.1:0", mcp={})
    await handle.aclose()
    await handle.aclose()
    async with asyncio.timeout(LIMIT), aiohttp.ClientSession() as http:
        with pytest.raises(aiohttp.ClientConnectionError):
            await http.post(handle.url + "/mcp", json=rpc("ping"))
    assert (await tk.execute("echo", {"text": "open"})).output == "open"


async def test_calls_from_several_clients_run_concurrently(served: Any) -> None:
    clients = 5
    barrier = asyncio.Barrier(clients)

    async def meet(args: tn.JSONObject, ctx: tn.ToolContext | None) -> tn.ToolResult:
        await barrier.wait()  # returns only once every client's call is running at once
        return tn.ToolResult(f"met {args['n']}")

    tool = tn.Tool("meet", "Meet the others.", {"type": "object"}, "native", meet)
    handle = await served(tn.Toolkit([tool]), mcp={})

    async def one(n: int) -> str:
        async with http_session(handle.url + "/mcp") as session:
            return text_of(await session.call_tool("meet", {"n": n}))

    async with asyncio.timeout(LIMIT):
        answers = await asyncio.gather(*(one(n) for n in range(clients)))
    assert answers == [f"met {n}" for n in range(clients)]


async def test_a_client_that_disconnects_mid_call_cancels_that_call(served: Any) -> None:
    probe = Probe()
    handle = await served(tn.Toolkit(make_tools(probe)), mcp={})
    call = rpc("tools/call", {"name": "wait", "arguments": {"tag": "left", "seconds": 60}})

    async def post() -> None:
        async with aiohttp.ClientSession() as http:
            await http.post(handle.url + "/mcp", json=call, headers=MCP_HEADERS)

    async with asyncio.timeout(LIMIT):
        request = asyncio.create_task(post())
        assert await probe.started.get() == "left"
        request.cancel()
        with pytest.raises(asyncio.CancelledError):
            await request
        assert await probe.cancelled.get() == "left"
        async with http_session(handle.url + "/mcp") as session:
            assert text_of(await session.call_tool("echo", {"text": "fine"})) == "fine"


@pytest.mark.parametrize(
    ("addr", "profile"),
    [
        ("localhost", {}),
        ("127.0.0.1:99999", {}),
        ("127.0.0.1:0", {"nmae": "x"}),
        ("127.0.0.1:0", {"tools": "echo"}),
        ("127.0.0.1:0", {"name": 3}),
    ],
)
async def test_a_bad_address_or_profile_is_a_config_error(addr: str, profile: Any) -> None:
    with pytest.raises(tn.ConfigError):
        await tn.Toolkit(make_tools()).serve(addr, mcp=profile)
