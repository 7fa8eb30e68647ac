"""``toolnexus serve --a2a``: an agent served over A2A from the shell, driven by ``a2a-sdk``."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
from a2a.client import ClientConfig, create_client
from a2a.types.a2a_pb2 import Message, Part, Role, SendMessageRequest, TaskState

from toolnexus.testing import StubLLMServer, reply

from .support import TIMEOUT, first_line, started, stop, toolnexus, write_skill


async def test_serve_a2a_serves_an_agent_whose_tasks_the_model_runs(tmp_path: Path) -> None:
    write_skill(tmp_path / "skills", "greeting", "Greet people warmly.")
    with StubLLMServer([reply.text("Hello from the shell agent.")]) as stub, started(
        "serve", "--a2a", "--addr", "127.0.0.1:0", "--name", "greeter",
        "--base-url", stub.url, "--model", "m", "--api-key", "k",
        "--skills", str(tmp_path / "skills"), "--no-builtins",
        "--tasks", str(tmp_path / "tasks"),
    ) as proc:  # fmt: skip
        line = await first_line(proc)
        assert line.startswith("serving A2A at http://127.0.0.1:"), line
        url = line.split()[3].rstrip("/")
        async with httpx.AsyncClient(timeout=TIMEOUT) as http:
            card = (await http.get(url + "/.well-known/agent-card.json")).json()
        assert card["name"] == "greeter"
        assert [s["id"] for s in card["skills"]] == ["greeting"]
        client = await create_client(url, ClientConfig(streaming=False))
        try:
            sent = Message(
                role=Role.ROLE_USER, message_id="m1", context_id="c", parts=[Part(text="hi")]
            )
            async with asyncio.timeout(TIMEOUT):
                answers = [r async for r in client.send_message(SendMessageRequest(message=sent))]
        finally:
            await client.close()
        task = answers[-1].task
        assert task.status.state == TaskState.TASK_STATE_COMPLETED
        assert task.artifacts[0].parts[0].text == "Hello from the shell agent."
        assert (tmp_path / "tasks" / f"{task.id}.json").exists()
        assert await stop(proc) == 0


def test_serve_a2a_without_a_model_exits_2() -> None:
    done = toolnexus("serve", "--a2a", "--no-builtins", "--base-url", "http://127.0.0.1:1")
    assert done.returncode == 2
    assert "--model" in done.stderr


def test_serve_a2a_over_stdio_exits_2() -> None:
    done = toolnexus("serve", "--a2a", "--stdio", "--no-builtins")
    assert done.returncode == 2
    assert "--stdio" in done.stderr


def test_serve_without_a_protocol_names_both() -> None:
    done = toolnexus("serve", "--no-builtins")
    assert done.returncode == 2
    assert "--a2a" in done.stderr
