"""OpenTelemetry GenAI spans of runs, read back with the SDK's in-memory exporter."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import aclosing
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from toolnexus import (
    CancelToken,
    Client,
    LLMError,
    Request,
    RunCancelled,
    RunTimeout,
    TextEvent,
    ToolContext,
    Toolkit,
    ToolResult,
    create_in_process_client,
    create_toolkit,
    pending,
    tool,
)
from toolnexus.otel import instrument
from toolnexus.testing import StubLLMServer, reply
from toolnexus.types import JSONObject

from .engine.support import client_for, get_weather, make_tool, toolkit_of
from .running import ASYNC_MODES, drive

CONTENT_KEYS = {
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
}


class OpenSpans(SpanProcessor):
    """Tracks spans started and not yet ended."""

    def __init__(self) -> None:
        self.open: dict[int, str] = {}

    def on_start(self, span: Span, parent_context: Any = None) -> None:
        self.open[span.context.span_id] = span.name

    def on_end(self, span: ReadableSpan) -> None:
        assert span.context is not None
        self.open.pop(span.context.span_id, None)


class Traces:
    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracking = OpenSpans()
        self.provider = TracerProvider()
        self.provider.add_span_processor(self.tracking)
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    def spans(self) -> list[ReadableSpan]:
        return sorted(self.exporter.get_finished_spans(), key=lambda s: s.start_time or 0)

    def named(self, prefix: str) -> list[ReadableSpan]:
        return [s for s in self.spans() if s.name.startswith(prefix)]

    def root(self) -> ReadableSpan:
        (span,) = self.named("invoke_agent")
        return span


@pytest.fixture
def traces() -> Iterator[Traces]:
    t = Traces()
    yield t
    t.provider.shutdown()


def traced(stub: StubLLMServer, traces: Traces, style: str = "openai", **options: Any) -> Client:
    capture = options.pop("capture_content", False)
    client = client_for(stub, style, **options)
    return instrument(client, tracer_provider=traces.provider, capture_content=capture)


def one_tool_script() -> list[reply.Reply]:
    return [
        reply.tool_calls(
            reply.call("get_weather", {"city": "Chennai"}, id="call_1"), usage=(10, 6)
        ),
        reply.text("It is sunny in Chennai.", usage=(20, 5)),
    ]


@pytest.fixture
async def weather() -> Any:
    async with await create_toolkit(extra_tools=[get_weather], builtins=False) as tk:
        yield tk


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


@pytest.mark.parametrize("mode", ASYNC_MODES)
async def test_a_one_tool_run_is_one_agent_span_with_chat_and_tool_children(
    stub: StubLLMServer, traces: Traces, style: str, mode: str, weather: Toolkit
) -> None:
    stub.enqueue(*one_tool_script())
    client = traced(stub, traces, style)
    await drive(client, mode, weather, prompt="Weather in Chennai?")
    await client.aclose()

    root = traces.root()
    children = [s for s in traces.spans() if s is not root]
    assert [s.name for s in children] == [
        "chat test-model",
        "execute_tool get_weather",
        "chat test-model",
    ]
    assert attrs(root) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": style,
        "gen_ai.request.model": "test-model",
    }
    chat = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": style,
        "gen_ai.request.model": "test-model",
    }
    assert attrs(children[0]) == {
        **chat,
        "gen_ai.usage.input_tokens": 10,
        "gen_ai.usage.output_tokens": 6,
    }
    assert attrs(children[2]) == {
        **chat,
        "gen_ai.usage.input_tokens": 20,
        "gen_ai.usage.output_tokens": 5,
    }
    assert attrs(children[1]) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "get_weather",
        "gen_ai.tool.call.id": "call_1",
    }
    assert root.parent is None
    for span in children:
        assert span.parent is not None
        assert span.parent.span_id == root.context.span_id
        assert span.context.trace_id == root.context.trace_id
    assert all(s.status.status_code is StatusCode.UNSET for s in traces.spans())
    assert traces.tracking.open == {}


async def test_ask_with_and_without_streaming_is_traced_the_same(
    stub: StubLLMServer, traces: Traces, weather: Toolkit
) -> None:
    stub.enqueue(*one_tool_script(), *one_tool_script())
    client = traced(stub, traces, "anthropic")
    await client.ask("Weather?", weather)
    await client.ask("Weather?", weather, on_text=lambda _: None)
    await client.aclose()

    names = [s.name for s in traces.spans()]
    one_run = ["invoke_agent", "chat test-model", "execute_tool get_weather", "chat test-model"]
    assert names == one_run + one_run


async def test_the_run_joins_the_callers_trace_and_a_tools_span_is_a_child_of_its_execution(
    stub: StubLLMServer, traces: Traces
) -> None:
    tracer = traces.provider.get_tracer("app")

    async def lookup(args: JSONObject, ctx: ToolContext | None) -> ToolResult:
        with tracer.start_as_current_span("db.query"):
            return ToolResult("row")

    stub.enqueue(reply.tool_calls(reply.call("lookup")), reply.text("done"))
    client = traced(stub, traces)
    async with await toolkit_of(make_tool("lookup", lookup)) as tk:
        with tracer.start_as_current_span("request") as request:
            await client.run("go", tk)
    await client.aclose()

    root = traces.root()
    (execution,) = traces.named("execute_tool")
    (query,) = traces.named("db.query")
    assert root.parent is not None
    assert root.parent.span_id == request.get_span_context().span_id
    assert query.parent is not None
    assert query.parent.span_id == execution.context.span_id


@pytest.mark.parametrize("mode", ASYNC_MODES)
async def test_a_failing_model_call_marks_its_chat_span_and_the_run(
    stub: StubLLMServer, traces: Traces, style: str, mode: str
) -> None:
    stub.enqueue(reply.error(401, "no"))
    client = traced(stub, traces, style)
    with pytest.raises(LLMError):
        await drive(client, mode)
    await client.aclose()

    (chat,) = traces.named("chat")
    for span, operation in ((chat, "chat"), (traces.root(), "invoke_agent")):
        assert span.status.status_code is StatusCode.ERROR
        assert attrs(span) == {
            "gen_ai.operation.name": operation,
            "gen_ai.provider.name": style,
            "gen_ai.request.model": "test-model",
            "error.type": "AuthenticationError",  # the LLMError subclass for 401
        }
    assert traces.tracking.open == {}


@pytest.mark.parametrize("mode", ASYNC_MODES)
async def test_a_raising_tool_marks_only_its_own_span(
    stub: StubLLMServer, traces: Traces, mode: str
) -> None:
    @tool
    def explode() -> str:
        """Always fails."""
        raise RuntimeError("kaboom")

    stub.enqueue(reply.tool_calls(reply.call("explode")), reply.text("It failed."))
    client = traced(stub, traces)
    async with await toolkit_of(explode) as tk:
        result, _ = await drive(client, mode, tk)
    await client.aclose()

    assert result.status == "done"
    (execution,) = traces.named("execute_tool")
    assert execution.status.status_code is StatusCode.ERROR
    assert attrs(execution)["error.type"] == "tool_error"
    others = [s for s in traces.spans() if s is not execution]
    assert [s.status.status_code for s in others] == [StatusCode.UNSET] * 3
    assert all("error.type" not in attrs(s) for s in others)


async def test_a_suspended_call_is_not_an_error(stub: StubLLMServer, traces: Traces) -> None:
    async def approve(args: JSONObject, ctx: ToolContext | None) -> ToolResult:
        return pending(Request.new("approval", "May I?"))

    stub.enqueue(reply.tool_calls(reply.call("approve")))
    client = traced(stub, traces)
    async with await toolkit_of(make_tool("approve", approve)) as tk:
        result = await client.run("go", tk)
    await client.aclose()

    assert result.status == "pending"
    assert all(s.status.status_code is StatusCode.UNSET for s in traces.spans())


@pytest.mark.parametrize("mode", ASYNC_MODES)
async def test_a_cancelled_run_ends_every_span_with_the_reason(
    stub: StubLLMServer, traces: Traces, mode: str
) -> None:
    stub.enqueue(reply.text("late").with_delay(3600))
    token = CancelToken()
    client = traced(stub, traces)
    running = asyncio.create_task(drive(client, mode, cancel=token))
    async with asyncio.timeout(5):
        await stub.until_requests(1)
        token.cancel()
        with pytest.raises(RunCancelled):
            await running
    await client.aclose()

    (chat,) = traces.named("chat")
    for span in (chat, traces.root()):
        assert span.status.status_code is StatusCode.ERROR
        assert attrs(span)["error.type"] == "RunCancelled"
    assert traces.tracking.open == {}


async def test_a_run_timing_out_in_a_tool_ends_the_tool_span_with_the_reason(
    stub: StubLLMServer, traces: Traces
) -> None:
    async def slow(args: JSONObject, ctx: ToolContext | None) -> ToolResult:
        await asyncio.sleep(3600)
        return ToolResult("never")

    stub.enqueue(reply.tool_calls(reply.call("slow")))
    client = traced(stub, traces, timeout_ms=200)
    async with await toolkit_of(make_tool("slow", slow)) as tk, asyncio.timeout(5):
        with pytest.raises(RunTimeout):
            await client.run("go", tk)
    await client.aclose()

    (execution,) = traces.named("execute_tool")
    assert attrs(execution)["error.type"] == "RunTimeout"
    assert attrs(traces.root())["error.type"] == "RunTimeout"
    assert traces.named("chat")[0].status.status_code is StatusCode.UNSET
    assert traces.tracking.open == {}


async def test_an_abandoned_stream_leaves_no_span_open_and_no_error(
    stub: StubLLMServer, traces: Traces, style: str
) -> None:
    words = [f"w{i} " for i in range(3000)]
    stub.enqueue(reply.text("".join(words), chunks=words))
    client = traced(stub, traces, style)
    async with asyncio.timeout(5), aclosing(client.stream("talk")) as events:
        async for event in events:
            if isinstance(event, TextEvent):
                break
    await client.aclose()

    assert traces.tracking.open == {}
    assert [s.name for s in traces.spans()] == ["invoke_agent", "chat test-model"]
    assert all(s.status.status_code is StatusCode.UNSET for s in traces.spans())


@pytest.mark.parametrize("capture", [False, True])
async def test_contents_are_recorded_only_when_asked(
    stub: StubLLMServer, traces: Traces, style: str, capture: bool, weather: Toolkit
) -> None:
    stub.enqueue(*one_tool_script())
    client = traced(
        stub, traces, style, capture_content=capture, system_prompt="Be brief, Chennai bot."
    )
    result = await client.run("Weather in Chennai?", weather)
    await client.aclose()

    spans = traces.spans()
    if not capture:
        for span in spans:
            assert not CONTENT_KEYS & attrs(span).keys()
            assert "Chennai" not in span.name + json.dumps(attrs(span))
            assert not span.events
        return
    first_chat, execution, second_chat = spans[1:]
    sent = stub.requests[1].json
    assert sent is not None
    assert json.loads(attrs(second_chat)["gen_ai.input.messages"]) == sent["messages"]
    assert attrs(second_chat)["gen_ai.input.messages"] == json.dumps(
        sent["messages"], separators=(",", ":"), ensure_ascii=False
    )
    assert json.loads(attrs(second_chat)["gen_ai.output.messages"]) == [result.messages[-1]]
    if style == "anthropic":
        assert json.loads(attrs(first_chat)["gen_ai.system_instructions"]) == (
            "Be brief, Chennai bot."
        )
    else:
        assert "gen_ai.system_instructions" not in attrs(first_chat)
    assert attrs(execution)["gen_ai.tool.call.arguments"] == '{"city":"Chennai"}'
    assert json.loads(attrs(execution)["gen_ai.tool.call.result"]) == "sunny in Chennai"


async def test_instrumenting_again_replaces_the_tracing(
    stub: StubLLMServer, traces: Traces
) -> None:
    stub.enqueue(reply.text("hi"))
    client = client_for(stub, "openai")
    assert instrument(client, tracer_provider=traces.provider) is client
    instrument(client, tracer_provider=traces.provider)
    assert len(client.interceptors) == 1
    await client.run("hi")
    await client.aclose()
    assert [s.name for s in traces.spans()] == ["invoke_agent", "chat test-model"]


def test_an_uninstrumented_run_imports_no_opentelemetry_and_the_global_provider_is_default() -> (
    None
):
    script = textwrap.dedent(
        """
        import asyncio, sys
        import toolnexus as tn
        from toolnexus.testing import StubLLMServer, reply

        async def main(url):
            client = tn.create_client(url, model="m", api_key="test-key")
            await client.run("hi")
            assert not [m for m in sys.modules if m.startswith("opentelemetry")], "imported"
            from opentelemetry import trace
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import SimpleSpanProcessor
            from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
                InMemorySpanExporter,
            )
            from toolnexus.otel import instrument
            exporter = InMemorySpanExporter()
            provider = TracerProvider()
            provider.add_span_processor(SimpleSpanProcessor(exporter))
            trace.set_tracer_provider(provider)
            await instrument(client).run("hi")
            await client.aclose()
            print(sorted(s.name for s in exporter.get_finished_spans()))

        with StubLLMServer([reply.text("a"), reply.text("b")]) as stub:
            asyncio.run(main(stub.url))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['chat m', 'invoke_agent']"


_ = trace  # the API module itself is what toolnexus.otel uses


@pytest.mark.parametrize("mode", ASYNC_MODES)
async def test_an_in_process_model_is_traced_like_a_remote_one(
    traces: Traces, mode: str, weather: Toolkit
) -> None:
    async def generate(request: JSONObject) -> JSONObject:
        if len(request["messages"]) == 1:
            call = {"id": "c1", "name": "get_weather", "arguments": {"city": "Pune"}}
            return {"tool_calls": [call], "usage": {"prompt_tokens": 7, "completion_tokens": 3}}
        return {"content": "Sunny.", "usage": {"prompt_tokens": 9, "completion_tokens": 2}}

    client = instrument(
        create_in_process_client(model="local", generate=generate),
        tracer_provider=traces.provider,
    )
    result, _ = await drive(client, mode, weather)

    assert result.text == "Sunny."
    root = traces.root()
    chats = traces.named("chat local")
    assert [attrs(c)["gen_ai.usage.input_tokens"] for c in chats] == [7, 9]
    assert attrs(root)["gen_ai.provider.name"] == "openai"
    (execution,) = traces.named("execute_tool get_weather")
    assert execution.parent is not None
    assert execution.parent.span_id == root.context.span_id
    assert traces.tracking.open == {}
