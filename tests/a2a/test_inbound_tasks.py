"""Tasks of a toolkit served over A2A: waiting for input, answering, cancelling, streaming."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
from a2a.types.a2a_pb2 import CancelTaskRequest, GetTaskRequest, ListTasksRequest, TaskState
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

import toolnexus as tn
from toolnexus.testing import StubLLMServer, reply

from .served import LIMIT, Serve, artifact_texts, message, send, status_text


def asking_toolkit() -> tn.Toolkit:
    """``pick_colour`` suspends on its first call and reports the answer on the second."""

    @tn.tool
    def pick_colour(ctx: tn.ToolContext) -> tn.ToolResult:
        """Ask the user for a colour."""
        if ctx.answer is None:
            return tn.pending(tn.Request.new("input", "Which colour?"))
        answers = (ctx.answer.data or {}).get("answers")
        return tn.ToolResult(f"colour: {answers}")

    return tn.Toolkit([pick_colour])


def tool_results(stub: StubLLMServer, index: int) -> list[str]:
    return [m["content"] for m in stub.requests[index].json["messages"] if m["role"] == "tool"]


async def test_a_pending_run_waits_for_input_and_a_follow_up_answers_it(
    serve: Serve, connect: Any, stub: StubLLMServer
) -> None:
    stub.enqueue(reply.tool_calls(reply.call("pick_colour", {})), reply.text("You chose blue."))
    served = await serve(asking_toolkit())
    client = await connect(served.handle.url)
    waiting = await send(client, message("Pick a colour for me", context_id="c1"))
    assert waiting.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert status_text(waiting) == "Which colour?"
    report = await served.next_report()
    assert report["state"] == "input-required"
    assert report["result"].status == "pending"
    assert await served.client.pending("c1") is not None

    done = await send(client, message("blue", task_id=waiting.id, context_id="c1"))
    assert done.id == waiting.id
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert artifact_texts(done) == ["You chose blue."]
    assert tool_results(stub, 1) == ["colour: ['blue']"]
    assert (await served.next_report())["state"] == "completed"
    assert [r["state"] for r in served.reports] == ["input-required", "completed"]
    assert await served.client.pending("c1") is None
    stub.assert_consumed()


async def test_a_stateless_task_is_answered_by_task_id_alone(
    serve: Serve, connect: Any, stub: StubLLMServer
) -> None:
    stub.enqueue(reply.tool_calls(reply.call("pick_colour", {})), reply.text("Red it is."))
    served = await serve(asking_toolkit())
    client = await connect(served.handle.url)
    waiting = await send(client, message("Pick a colour"))
    assert waiting.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    done = await send(client, message("red", task_id=waiting.id))
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert done.context_id == waiting.context_id
    assert artifact_texts(done) == ["Red it is."]
    assert tool_results(stub, 1) == ["colour: ['red']"]
    user_turns = [m for m in stub.requests[1].json["messages"] if m["role"] == "user"]
    assert [m["content"] for m in user_turns] == ["Pick a colour"]  # no new user message


async def test_a_waiting_task_answered_after_a_restart_resumes_from_the_stores(
    serve: Serve, connect: Any, stub: StubLLMServer, tmp_path: Any
) -> None:
    stub.enqueue(reply.tool_calls(reply.call("pick_colour", {})), reply.text("Green, then."))
    db = tmp_path / "conversations.db"
    tasks = f"file:{tmp_path / 'tasks'}"

    def durable_client() -> tn.Client:
        store = tn.SqliteConversationStore(db)
        return tn.create_client(stub.url, model="m", api_key="k", store=store)

    first = await serve(asking_toolkit(), client=durable_client(), store=tasks)
    waiting = await send(await connect(first.handle.url), message("Pick", context_id="c9"))
    assert waiting.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    await first.handle.aclose()

    second = await serve(asking_toolkit(), client=durable_client(), store=tasks)
    client = await connect(second.handle.url)
    done = await send(client, message("green", task_id=waiting.id, context_id="c9"))
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert artifact_texts(done) == ["Green, then."]
    assert tool_results(stub, 1) == ["colour: ['green']"]


def holding_toolkit(started: asyncio.Event, cancelled: asyncio.Event) -> tn.Toolkit:
    @tn.tool
    async def hold() -> str:
        """Wait until cancelled."""
        started.set()
        try:
            await asyncio.sleep(LIMIT * 3)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "held"

    return tn.Toolkit([hold])


async def test_cancel_task_stops_the_running_tool_and_cancels_the_task(
    serve: Serve, connect: Any, stub: StubLLMServer
) -> None:
    stub.enqueue(reply.tool_calls(reply.call("hold", {})))
    started, cancelled = asyncio.Event(), asyncio.Event()
    served = await serve(holding_toolkit(started, cancelled))
    client = await connect(served.handle.url)
    request = message("hold on", context_id="c")
    request.configuration.return_immediately = True
    task = await send(client, request)
    await asyncio.wait_for(started.wait(), LIMIT)

    answer = await asyncio.wait_for(client.cancel_task(CancelTaskRequest(id=task.id)), LIMIT)
    assert answer.status.state == TaskState.TASK_STATE_CANCELED
    await asyncio.wait_for(cancelled.wait(), LIMIT)
    stored = await client.get_task(GetTaskRequest(id=task.id))
    assert stored.status.state == TaskState.TASK_STATE_CANCELED
    report = await served.next_report()
    assert (report["state"], report["result"]) == ("canceled", None)
    assert [r["state"] for r in served.reports] == ["canceled"]
    assert len(stub.requests) == 1


async def test_cancelling_a_waiting_task_frees_its_conversation(
    serve: Serve, connect: Any, stub: StubLLMServer
) -> None:
    stub.enqueue(reply.tool_calls(reply.call("pick_colour", {})), reply.text("Hello again."))
    served = await serve(asking_toolkit())
    client = await connect(served.handle.url)
    waiting = await send(client, message("Pick", context_id="c2"))
    canceled = await client.cancel_task(CancelTaskRequest(id=waiting.id))
    assert canceled.status.state == TaskState.TASK_STATE_CANCELED
    assert await served.client.pending("c2") is None
    after = await send(client, message("Hi", context_id="c2"))
    assert artifact_texts(after) == ["Hello again."]


async def test_list_tasks_lists_a_context_tasks(
    serve: Serve, connect: Any, stub: StubLLMServer
) -> None:
    stub.enqueue(reply.text("a"), reply.text("b"), reply.text("c"))
    served = await serve(tn.Toolkit([]))
    client = await connect(served.handle.url)
    ours = {(await send(client, message(t, context_id="mine"))).id for t in ("1", "2")}
    await send(client, message("3", context_id="other"))
    listed = await client.list_tasks(ListTasksRequest(context_id="mine"))
    assert {t.id for t in listed.tasks} == ours


async def test_streaming_sends_status_and_artifact_events(
    serve: Serve, connect: Any, stub: StubLLMServer
) -> None:
    stub.enqueue(reply.text("streamed answer"))
    served = await serve(tn.Toolkit([]), streaming=True)
    client = await connect(served.handle.url, streaming=True)
    states: list[int] = []
    texts: list[str] = []

    async def follow() -> None:
        async for event in client.send_message(message("go", context_id="s")):
            if event.HasField("status_update"):
                states.append(event.status_update.status.state)
            if event.HasField("artifact_update"):
                texts.extend(p.text for p in event.artifact_update.artifact.parts)

    await asyncio.wait_for(follow(), LIMIT)
    assert texts == ["streamed answer"]
    assert states[0] == TaskState.TASK_STATE_WORKING
    assert states[-1] == TaskState.TASK_STATE_COMPLETED


async def test_mcp_and_a2a_are_served_together(stub: StubLLMServer, connect: Any) -> None:
    @tn.tool
    def echo(text: str) -> str:
        """Echo."""
        return text

    stub.enqueue(reply.text("both"))
    client = tn.create_client(stub.url, model="m", api_key="k")
    handle = await tn.Toolkit([echo]).serve("127.0.0.1:0", mcp={}, a2a={}, client=client)
    try:
        async with (
            streamable_http_client(handle.url + "/mcp") as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            assert [t.name for t in (await session.list_tools()).tools] == ["echo"]
        task = await send(await connect(handle.url), message("hi", context_id="x"))
        assert artifact_texts(task) == ["both"]
        async with httpx.AsyncClient(timeout=LIMIT) as http:
            assert (await http.get(handle.url + "/elsewhere")).status_code == 404
    finally:
        await handle.aclose()
        await client.aclose()


class Events:
    """Records what an executor publishes."""

    def __init__(self) -> None:
        self.published: list[object] = []

    async def enqueue_event(self, event: object) -> None:
        self.published.append(event)


async def test_a_message_queued_behind_a_run_that_then_finished_is_not_run(
    stub: StubLLMServer,
) -> None:
    from a2a.server.agent_execution import RequestContext
    from a2a.server.context import ServerCallContext
    from a2a.types.a2a_pb2 import Task, TaskStatus

    from toolnexus.serve.a2a_executor import ToolkitExecutor

    async with tn.create_client(stub.url, model="m", api_key="k") as client:
        executor = ToolkitExecutor(tn.Toolkit([]), client, {})
        finished = Task(
            id="t1", context_id="c", status=TaskStatus(state=TaskState.TASK_STATE_COMPLETED)
        )
        context = RequestContext(
            ServerCallContext(),
            request=message("more", task_id="t1", context_id="c"),
            task_id="t1",
            context_id="c",
            task=finished,
        )
        events = Events()
        await executor.execute(context, events)  # type: ignore[arg-type]
    assert events.published == []  # the finished task is not moved back to working
    assert stub.requests == []


async def test_stopping_the_server_fails_the_tasks_it_was_running(
    serve: Serve, connect: Any, stub: StubLLMServer, tmp_path: Any
) -> None:
    stub.enqueue(reply.tool_calls(reply.call("hold", {})))
    started, cancelled = asyncio.Event(), asyncio.Event()
    folder = tmp_path / "tasks"
    served = await serve(holding_toolkit(started, cancelled), store=f"file:{folder}")
    request = message("hold on", context_id="c")
    request.configuration.return_immediately = True
    task = await send(await connect(served.handle.url), request)
    await asyncio.wait_for(started.wait(), LIMIT)

    await served.handle.aclose()
    assert cancelled.is_set()  # the tool was stopped with the server
    saved = json.loads((folder / f"{task.id}.json").read_text())
    assert saved["status"]["state"] == "TASK_STATE_FAILED"
    assert saved["status"]["message"]["parts"] == [
        {"text": "the agent stopped before the task finished"}
    ]
    report = await served.next_report()
    assert (report["state"], report["result"]) == ("failed", None)


async def test_the_question_built_in_surfaces_as_input_required(
    serve: Serve, connect: Any, stub: StubLLMServer
) -> None:
    questions = [{"question": "Which env?", "options": ["dev", "prod"]}]
    stub.enqueue(
        reply.tool_calls(reply.call("question", {"questions": questions})),
        reply.text("Deploying to dev."),
    )
    served = await serve(await tn.create_toolkit(builtins=True))
    client = await connect(served.handle.url)
    waiting = await send(client, message("Deploy it", context_id="q"))
    assert waiting.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert status_text(waiting) == "Which env? (options: dev, prod)"
    done = await send(client, message("dev", task_id=waiting.id, context_id="q"))
    assert artifact_texts(done) == ["Deploying to dev."]
    assert tool_results(stub, 1) == ['{"answers":["dev"]}']


async def test_a_run_that_stops_short_of_an_answer_fails_the_task(
    serve: Serve, connect: Any, stub: StubLLMServer
) -> None:
    @tn.tool
    def step() -> str:
        """One more step."""
        return "stepped"

    stub.enqueue(reply.tool_calls(reply.call("step", {})))
    runner = tn.create_client(stub.url, model="m", api_key="k", max_turns=1)
    served = await serve(tn.Toolkit([step]), client=runner)
    task = await send(await connect(served.handle.url), message("go", context_id="m"))
    assert task.status.state == TaskState.TASK_STATE_FAILED
    assert "stopped before an answer" in status_text(task)
    assert (await served.next_report())["result"].status == "incomplete"


async def test_a_sign_in_request_shows_its_url_to_the_caller(
    serve: Serve, connect: Any, stub: StubLLMServer
) -> None:
    @tn.tool
    def calendar() -> tn.ToolResult:
        """Read the calendar."""
        return tn.auth_required("https://login.example/authorize", "Sign in to the calendar")

    stub.enqueue(reply.tool_calls(reply.call("calendar", {})))
    served = await serve(tn.Toolkit([calendar]))
    task = await send(await connect(served.handle.url), message("my day?", context_id="a"))
    assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert status_text(task) == "Sign in to the calendar\nhttps://login.example/authorize"
