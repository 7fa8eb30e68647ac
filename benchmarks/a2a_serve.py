"""What serving a toolkit over A2A costs over a bare ``a2a-sdk`` server doing the same run.

Both servers listen on the same toolnexus listener, run each task with the same client against
one ``StubLLMServer`` (answering at once), and are sent ``tasks`` blocking ``SendMessage``
calls one after the other by ``a2a-sdk``'s client. The baseline is the SDK's own request
handler, in-memory task store and a minimal executor (``client.run``, one artifact,
``completed``); the measured side is ``tk.serve(a2a={...})`` with its executor, the task
store adapter and ``on_task``. Printed: mean wall and CPU time per task on each side (CPU of
the whole process: client, servers and stub) and their ratio.

Usage: ``python benchmarks/a2a_serve.py [--tasks 200] [--store memory|file]`` (from the
repository root)
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import uuid
from typing import Any

from a2a.client import ClientConfig, create_client
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Message,
    Part,
    Role,
    SendMessageRequest,
    Task,
    TaskState,
    TaskStatus,
)
from starlette.applications import Starlette

import toolnexus as tn
from toolnexus.serve.http import Route, ServeHandle, start_http
from toolnexus.testing import StubLLMServer, reply


class BareExecutor(AgentExecutor):
    """The least an SDK agent does with the same client: run, one artifact, completed."""

    def __init__(self, client: tn.Client, toolkit: tn.Toolkit) -> None:
        self._client = client
        self._toolkit = toolkit

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task_id, context_id = str(context.task_id), str(context.context_id)
        await event_queue.enqueue_event(
            Task(
                id=task_id,
                context_id=context_id,
                status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
                history=[context.message] if context.message is not None else [],
            )
        )
        updater = TaskUpdater(event_queue, task_id, context_id)
        await updater.start_work()
        result = await self._client.run(context.get_user_input(), self._toolkit)
        await updater.add_artifact([Part(text=result.text)])
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


async def bare_server(client: tn.Client, toolkit: tn.Toolkit) -> ServeHandle:
    def routes(url: str) -> list[Route]:
        card = AgentCard(
            name="bare",
            description="A bare SDK agent.",
            version="1",
            supported_interfaces=[
                AgentInterface(url=url + "/", protocol_binding="JSONRPC", protocol_version="1.0")
            ],
            capabilities=AgentCapabilities(),
            default_input_modes=["text"],
            default_output_modes=["text"],
            skills=[AgentSkill(id="ask", name="ask", description="Ask.", tags=["ask"])],
        )
        handler = DefaultRequestHandler(
            agent_executor=BareExecutor(client, toolkit),
            task_store=InMemoryTaskStore(),
            agent_card=card,
        )
        app = Starlette(
            routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, "/")]
        )
        return [Route("/.well-known/agent-card.json", app), Route("/", app)]

    return await start_http("127.0.0.1:0", routes)


async def drive(url: str, tasks: int) -> tuple[float, float]:
    client = await create_client(url, ClientConfig(streaming=False))
    try:
        wall, cpu = time.perf_counter(), time.process_time()
        for i in range(tasks):
            sent = Message(
                role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=[Part(text=f"job {i}")]
            )
            last: Any = None
            async for answer in client.send_message(SendMessageRequest(message=sent)):
                last = answer.task
            assert last is not None
            assert last.status.state == TaskState.TASK_STATE_COMPLETED, last
        return time.perf_counter() - wall, time.process_time() - cpu
    finally:
        await client.close()


async def main(tasks: int, store: str) -> None:
    total = 2 * (tasks + 10)
    with StubLLMServer([reply.text("done")] * total) as stub, tempfile.TemporaryDirectory() as d:
        async with tn.create_client(stub.url, model="m", api_key="k") as client:
            toolkit = tn.Toolkit([])
            reports: list[object] = []
            profile = {"store": "memory" if store == "memory" else f"file:{d}"}
            served = await toolkit.serve(
                "127.0.0.1:0", client=client, a2a=profile, on_task=reports.append
            )
            bare = await bare_server(client, toolkit)
            try:
                await drive(bare.url, 10)  # warm both paths up
                await drive(served.url, 10)
                bare_wall, bare_cpu = await drive(bare.url, tasks)
                ours_wall, ours_cpu = await drive(served.url, tasks)
            finally:
                await served.aclose()
                await bare.aclose()
    print(f"{tasks} blocking SendMessage tasks, one model call each (stub), store {store}")
    print(
        f"bare a2a-sdk server:   {bare_wall / tasks * 1000:.2f} ms wall, "
        f"{bare_cpu / tasks * 1000:.2f} ms CPU per task"
    )
    print(
        f"tk.serve(a2a=...):     {ours_wall / tasks * 1000:.2f} ms wall, "
        f"{ours_cpu / tasks * 1000:.2f} ms CPU per task"
    )
    print(f"ratio served/bare: {ours_wall / bare_wall:.2f}x wall, {ours_cpu / bare_cpu:.2f}x CPU")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--store", choices=("memory", "file"), default="memory")
    args = parser.parse_args()
    asyncio.run(main(args.tasks, args.store))
