"""Against the reference ``server-everything``: content types, annotations, task-only tools,
progress, elicitation defaults, and a restart answered with 400 over streamable HTTP."""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator, Iterator

import pytest

from tests.running import MakeClient
from toolnexus import (
    Answer,
    DoneEvent,
    Event,
    Request,
    ToolCallEvent,
    ToolContext,
    Toolkit,
    ToolProgressEvent,
    ToolResultEvent,
    create_toolkit,
)
from toolnexus.testing import StubLLMServer, reply

from .everything import Everything, everything_or_skip, stop


@pytest.fixture(scope="module")
def everything() -> Everything:
    return everything_or_skip()


@pytest.fixture
def http_procs() -> Iterator[list[subprocess.Popen[str]]]:
    procs: list[subprocess.Popen[str]] = []
    yield procs
    for proc in procs:
        stop(proc)


@pytest.fixture(params=["stdio", "http"])
async def kit(
    request: pytest.FixtureRequest,
    everything: Everything,
    http_procs: list[subprocess.Popen[str]],
) -> AsyncIterator[Toolkit]:
    """A toolkit with ``server-everything`` as ``ev``, over stdio or streamable HTTP."""

    def accept_with_a_name(request: Request) -> Answer:
        return Answer(request.id, ok=True, data={"name": "Ann"})

    entry: dict[str, object] = everything.stdio_entry()
    if request.param == "http":
        proc, port = await everything.start_http()
        http_procs.append(proc)
        entry = {"url": f"http://127.0.0.1:{port}/mcp", "timeout": 60_000}
    config = {"mcpServers": {"ev": entry}}
    async with await create_toolkit(
        mcp_config=config, builtins=False, wait_for=accept_with_a_name
    ) as tk:
        assert tk.mcp_status() == {"ev": "connected"}
        yield tk


async def test_image_resource_link_and_structured_results_reach_the_output(
    kit: Toolkit,
) -> None:
    image = await kit.execute("ev_get-tiny-image", {})
    assert "[image image/png, " in image.output
    assert image.metadata is not None
    (part,) = [p for p in image.metadata["content"] if p["type"] == "image"]
    assert part["mimeType"] == "image/png"
    assert len(part["data"]) > 100

    ref = await kit.execute("ev_get-resource-reference", {"resourceType": "Text"})
    assert ref.metadata is not None
    assert [p["type"] for p in ref.metadata["content"]] == ["resource"]

    links = await kit.execute("ev_get-resource-links", {"count": 2})
    assert links.output.count("[resource ") == 2
    assert links.metadata is not None
    assert {p["type"] for p in links.metadata["content"]} == {"resource_link"}

    structured = await kit.execute("ev_get-structured-content", {"location": "Chicago"})
    assert structured.output.startswith("{")
    assert "temperature" in structured.output


async def test_annotations_title_and_task_only_tools(kit: Toolkit) -> None:
    tool = kit.get("ev_get-annotated-message")
    assert tool is not None
    assert tool.annotations is not None
    assert tool.annotations["readOnlyHint"] is True
    assert tool.annotations["destructiveHint"] is False
    assert tool.annotations["title"] == "Get Annotated Message Tool"
    assert tool.annotations["originalName"] == "get-annotated-message"
    assert "ev_simulate-research-query" not in kit  # it can only run as an MCP task


async def test_progress_reaches_the_tool_context(kit: Toolkit) -> None:
    seen: list[tuple[float, float | None]] = []
    ctx = ToolContext(progress=lambda done, total, message: seen.append((done, total)))
    args = {"duration": 0.3, "steps": 3}
    result = await kit.execute("ev_trigger-long-running-operation", args, ctx)
    assert "completed" in result.output
    assert seen == [(1, 3), (2, 3), (3, 3)]


async def test_a_streamed_run_shows_the_servers_progress_between_call_and_result(
    kit: Toolkit, stub: StubLLMServer, make_client: MakeClient
) -> None:
    args = {"duration": 0.3, "steps": 3}
    stub.enqueue(
        reply.tool_calls(reply.call("ev_trigger-long-running-operation", args, id="c1")),
        reply.text("finished"),
    )
    seen: list[Event] = []
    async for event in make_client("openai").stream("go", kit):
        if isinstance(event, ToolCallEvent | ToolProgressEvent | ToolResultEvent | DoneEvent):
            seen.append(event)
    assert [type(e).__name__ for e in seen] == [
        "ToolCallEvent",
        "ToolProgressEvent",
        "ToolProgressEvent",
        "ToolProgressEvent",
        "ToolResultEvent",
        "DoneEvent",
    ]
    progress = [e for e in seen if isinstance(e, ToolProgressEvent)]
    assert [(p.id, p.progress, p.total) for p in progress] == [
        ("c1", 1, 3),
        ("c1", 2, 3),
        ("c1", 3, 3),
    ]
    result = seen[-2]
    assert isinstance(result, ToolResultEvent)
    assert "completed" in result.output
    assert not result.is_error


async def test_elicitation_answers_get_the_schema_defaults(kit: Toolkit) -> None:
    result = await kit.execute("ev_trigger-elicitation-request", {})
    assert "- Name: Ann" in result.output
    assert "- Favorite Integer: 42" in result.output
    assert "- Favorite Number: 3.14" in result.output


async def test_a_restarted_http_server_answering_400_gets_a_new_session(
    everything: Everything, http_procs: list[subprocess.Popen[str]]
) -> None:
    proc, port = await everything.start_http()
    http_procs.append(proc)
    config = {"mcpServers": {"ev": {"url": f"http://127.0.0.1:{port}/mcp"}}}
    async with await create_toolkit(mcp_config=config, builtins=False) as tk:
        assert (await tk.execute("ev_echo", {"message": "one"})).output == "Echo: one"
        stop(proc)
        proc, _ = await everything.start_http(port)
        http_procs.append(proc)
        again = await tk.execute("ev_echo", {"message": "two"})
        assert (again.output, again.is_error) == ("Echo: two", False)
        assert tk.mcp_status() == {"ev": "connected"}


@pytest.mark.parametrize("reset", [True, False])
async def test_progress_restarts_the_call_budget_only_when_configured(
    everything: Everything, reset: bool
) -> None:
    entry = {**everything.stdio_entry(), "resetTimeoutOnProgress": reset}
    async with await create_toolkit(mcp_config={"mcpServers": {"ev": entry}}, builtins=False) as tk:
        # the entry's 60 s covers Node's start-up; the call's own budget is the context's 2 s
        ctx = ToolContext(timeout=2.0)
        args = {"duration": 4, "steps": 8}  # a report every half second, four seconds in all
        result = await tk.execute("ev_trigger-long-running-operation", args, ctx)

    if reset:
        assert (result.is_error, "completed" in result.output) == (False, True), result.output
    else:
        assert result.is_error
        assert result.output == 'MCP server "ev": call timed out after 2000 ms'
