"""What an A2A tool call costs over the same protocol steps made with ``a2a-sdk``'s client alone.

Against one peer built from the SDK's server classes (``tests/a2a/peer.py``, in this process),
each side sends ``calls`` tasks one after the other and follows each to ``completed``:
``SendMessage`` with ``returnImmediately``, then ``GetTask`` every ``--poll`` seconds. The tool
side goes through ``Toolkit.execute`` (argument check, timeout and cancel supervision, result
and metadata); the baseline calls the SDK client directly. Printed: mean wall time and CPU time
per call on each side (CPU of the whole process, the peer's included), and their ratio.

Usage: ``python benchmarks/a2a_calls.py [--calls 200] [--poll 0.001]`` (from the repository root)
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import uuid
from pathlib import Path

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import (
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    TaskState,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.a2a.peer import running_peer

from toolnexus import agent, create_toolkit


async def with_toolkit(card_url: str, calls: int, poll: float) -> tuple[float, float]:
    async with await create_toolkit(
        builtins=False, agents=[agent(card_url, poll_every=poll)]
    ) as tk:
        wall, cpu = time.perf_counter(), time.process_time()
        for i in range(calls):
            result = await tk.execute("Paint_Shop_paint", {"task": f"job {i}"})
            assert not result.is_error, result.output
        return time.perf_counter() - wall, time.process_time() - cpu


async def with_sdk(card_url: str, calls: int, poll: float) -> tuple[float, float]:
    async with httpx.AsyncClient(headers={"A2A-Version": "1.0"}) as http:
        base, _, path = card_url.partition("/.well-known")
        card = await A2ACardResolver(http, base, "/.well-known" + path).get_agent_card()
        client = ClientFactory(ClientConfig(streaming=False, httpx_client=http)).create(card)
        wall, cpu = time.perf_counter(), time.process_time()
        for i in range(calls):
            request = SendMessageRequest(
                message=Message(
                    role=Role.ROLE_USER,
                    message_id=str(uuid.uuid4()),
                    parts=[Part(text=f"job {i}")],
                ),
                configuration=SendMessageConfiguration(return_immediately=True),
            )
            task = None
            async for event in client.send_message(request):
                task = event.task
            assert task is not None
            while task.status.state != TaskState.TASK_STATE_COMPLETED:
                await asyncio.sleep(poll)
                task = await client.get_task(GetTaskRequest(id=task.id))
            assert task.artifacts
        return time.perf_counter() - wall, time.process_time() - cpu


async def main(calls: int, poll: float) -> None:
    async with running_peer() as peer:
        await with_sdk(peer.card_url, 10, poll)  # warm both paths up
        await with_toolkit(peer.card_url, 10, poll)
        sdk_wall, sdk_cpu = await with_sdk(peer.card_url, calls, poll)
        tool_wall, tool_cpu = await with_toolkit(peer.card_url, calls, poll)
    print(f"{calls} tasks, poll every {poll * 1000:g} ms (peer in this process)")
    print(
        f"a2a-sdk client alone: {sdk_wall / calls * 1000:.2f} ms wall, "
        f"{sdk_cpu / calls * 1000:.2f} ms CPU per task"
    )
    print(
        f"toolnexus A2A tool:   {tool_wall / calls * 1000:.2f} ms wall, "
        f"{tool_cpu / calls * 1000:.2f} ms CPU per task"
    )
    print(f"ratio tool/sdk: {tool_wall / sdk_wall:.2f}x wall, {tool_cpu / sdk_cpu:.2f}x CPU")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--poll", type=float, default=0.001)
    args = parser.parse_args()
    asyncio.run(main(args.calls, args.poll))
