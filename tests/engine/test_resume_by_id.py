"""Approvals that resume by conversation id alone: ``client.pending(id)``, ``client.resume``.

A run halted with a ``conversation_id`` keeps its pending request in the store beside the
transcript; another process with the same store can list and answer it. Answering claims the
request, so of two resumes (concurrent or not) exactly one runs.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from toolnexus import (
    Answer,
    ConfigError,
    InMemoryConversationStore,
    LLMError,
    SqliteConversationStore,
)
from toolnexus.testing import StubLLMServer, reply

from ..running import drive
from .resume_worker import APPROVAL, CONVERSATION, PROMPT, build_toolkit, calls_file
from .support import Message, assert_balanced, client_for

WORKER = Path(__file__).with_name("approval_worker.py")


@pytest.fixture
def mode(async_mode: str) -> str:
    return async_mode


def script(stub: StubLLMServer, *replies: Any) -> None:
    stub.enqueue(
        reply.tool_calls(
            reply.call("record", id="c1"), reply.call("deploy", {"env": "prod"}, id="c2")
        ),
        *replies,
    )


class PlainStore:
    """A store with only ``get`` and ``save``, as a minimal custom store is."""

    def __init__(self) -> None:
        self.data: dict[str, list[Message]] = {}

    async def get(self, id: str) -> list[Message] | None:
        return self.data.get(id)

    async def save(self, id: str, messages: list[Message]) -> None:
        self.data[id] = list(messages)


async def test_a_halted_run_keeps_its_request_and_resume_needs_only_id_and_answer(
    stub: StubLLMServer, style: str, mode: str, tmp_path: Path
) -> None:
    script(stub, reply.text("Deployed."))
    toolkit = await build_toolkit(str(tmp_path / "db"))
    async with client_for(stub, style) as client:
        halted, _ = await drive(client, mode, toolkit, prompt=PROMPT, conversation_id="ops")
        assert halted.status == "pending"
        waiting = await client.pending("ops")
        assert waiting == halted.pending
        assert waiting is not None
        assert (waiting.prompt, waiting.data) == (APPROVAL, {"env": "prod", "toolCallId": "c2"})
        assert await client.pending("unknown") is None

        answer = Answer(waiting.id, ok=True, data={"by": "maya"})
        done = await client.resume("ops", answer, toolkit)
        assert (done.status, done.text) == ("done", "Deployed.")
        assert await client.pending("ops") is None
        assert await client.conversation_store.get("ops") == done.messages
        assert_balanced(done.messages, style)

        with pytest.raises(ConfigError, match="not waiting for an answer"):
            await client.resume("ops", answer, toolkit)
    lines = calls_file(str(tmp_path / "db")).read_text().splitlines()
    assert lines == ["record", "deploy", "deploy answered"]
    assert len(stub.requests) == 2


async def test_a_new_prompt_on_a_waiting_conversation_is_a_clear_error(
    stub: StubLLMServer, style: str, mode: str, tmp_path: Path
) -> None:
    script(stub)
    toolkit = await build_toolkit(str(tmp_path / "db"))
    async with client_for(stub, style) as client:
        halted, _ = await drive(client, mode, toolkit, prompt=PROMPT, conversation_id="ops")
        assert halted.pending is not None
        before = await client.conversation_store.get("ops")
        for attempt in (
            lambda: client.ask("And now?", toolkit, id="ops"),
            lambda: client.ask("And now?", toolkit, id="ops", on_text=lambda _: None),
            lambda: drive(client, mode, toolkit, prompt="And now?", conversation_id="ops"),
        ):
            with pytest.raises(ConfigError) as caught:
                await attempt()
            assert halted.pending.id in str(caught.value)
            assert APPROVAL in str(caught.value)
        assert await client.conversation_store.get("ops") == before
        assert await client.pending("ops") == halted.pending
    assert len(stub.requests) == 1  # nothing was sent for the refused prompts


async def test_a_mismatched_answer_claims_nothing(
    stub: StubLLMServer, style: str, tmp_path: Path
) -> None:
    script(stub, reply.text("Deployed."))
    toolkit = await build_toolkit(str(tmp_path / "db"))
    async with client_for(stub, style) as client:
        halted = await client.ask(PROMPT, toolkit, id="ops")
        assert halted.pending is not None
        with pytest.raises(ValueError, match="does not match"):
            await client.resume("ops", Answer("some-other-id", ok=True), toolkit)
        assert await client.pending("ops") == halted.pending
        done = await client.resume("ops", Answer(halted.pending.id, ok=True), toolkit)
    assert done.status == "done"


async def test_a_failed_resume_leaves_the_conversation_waiting(
    stub: StubLLMServer, style: str, tmp_path: Path
) -> None:
    script(stub, reply.error(400, {"error": "bad request"}), reply.text("Deployed."))
    toolkit = await build_toolkit(str(tmp_path / "db"))
    async with client_for(stub, style, retries=0) as client:
        halted = await client.ask(PROMPT, toolkit, id="ops")
        assert halted.pending is not None
        answer = Answer(halted.pending.id, ok=True)
        with pytest.raises(LLMError):
            await client.resume("ops", answer, toolkit)
        assert await client.pending("ops") == halted.pending
        done = await client.resume("ops", answer, toolkit)
    assert done.status == "done"


async def test_ask_with_answer_claims_the_request_too(
    stub: StubLLMServer, style: str, tmp_path: Path
) -> None:
    script(stub, reply.text("Deployed."))
    toolkit = await build_toolkit(str(tmp_path / "db"))
    async with client_for(stub, style) as client:
        halted = await client.ask(PROMPT, toolkit, id="ops")
        assert halted.pending is not None
        answer = Answer(halted.pending.id, ok=True)
        assert (await client.ask_with_answer(halted.pending, answer, toolkit, id="ops")).text
        with pytest.raises(ConfigError, match="not waiting for request"):
            await client.ask_with_answer(halted.pending, answer, toolkit, id="ops")
    assert calls_file(str(tmp_path / "db")).read_text().count("deploy answered") == 1


async def test_concurrent_resumes_in_one_process_run_the_approved_call_once(
    stub: StubLLMServer, style: str, tmp_path: Path
) -> None:
    script(stub, reply.text("Deployed."), reply.text("Deployed again."))
    toolkit = await build_toolkit(str(tmp_path / "db"))
    store = InMemoryConversationStore()
    async with client_for(stub, style, store=store) as client:
        halted = await client.ask(PROMPT, toolkit, id="ops")
        assert halted.pending is not None
        answer = Answer(halted.pending.id, ok=True)
        outcomes = await asyncio.gather(
            *(client.resume("ops", answer, toolkit) for _ in range(3)), return_exceptions=True
        )
    assert sum(not isinstance(o, BaseException) for o in outcomes) == 1
    assert all(isinstance(o, ConfigError) for o in outcomes if isinstance(o, BaseException))
    assert calls_file(str(tmp_path / "db")).read_text().count("deploy answered") == 1


async def test_a_store_without_pending_methods_works_but_cannot_resume_by_id(
    stub: StubLLMServer, style: str, tmp_path: Path
) -> None:
    script(stub, reply.text("Deployed."))
    toolkit = await build_toolkit(str(tmp_path / "db"))
    store = PlainStore()
    async with client_for(stub, style, store=store) as client:
        halted = await client.ask(PROMPT, toolkit, id="ops")
        assert halted.pending is not None
        with pytest.raises(ConfigError, match="does not keep pending requests"):
            await client.pending("ops")
        with pytest.raises(ConfigError, match="does not keep pending requests"):
            await client.resume("ops", Answer(halted.pending.id, ok=True), toolkit)
        answer = Answer(halted.pending.id, ok=True)
        done = await client.ask_with_answer(halted.pending, answer, toolkit, id="ops")
    assert done.status == "done"
    assert store.data["ops"] == done.messages


# --- across processes ----------------------------------------------------------------------


async def start_worker(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        str(WORKER),
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def finish(proc: asyncio.subprocess.Process) -> dict[str, Any]:
    try:
        async with asyncio.timeout(60):
            out, err = await proc.communicate()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, err.decode()
    parsed: dict[str, Any] = json.loads(out.decode().splitlines()[-1])
    return parsed


async def halt_in_sqlite(stub: StubLLMServer, style: str, db: str) -> str:
    """Halt a run in conversation ``CONVERSATION`` of the SQLite file; the answer as JSON."""
    toolkit = await build_toolkit(db)
    store = SqliteConversationStore(db)
    async with client_for(stub, style, store=store) as client:
        halted = await client.run(PROMPT, toolkit, conversation_id=CONVERSATION)
    await store.aclose()
    assert halted.pending is not None
    return json.dumps(Answer(halted.pending.id, ok=True, data={"by": "ops"}).to_dict())


async def test_a_second_process_resumes_given_only_the_conversation_id_and_the_answer(
    stub: StubLLMServer, style: str, tmp_path: Path
) -> None:
    db = str(tmp_path / "approvals.db")
    script(stub, reply.text("Released and deployed."))
    answer = await halt_in_sqlite(stub, style, db)

    worker = await start_worker(db, stub.url, style, CONVERSATION, answer)
    assert await finish(worker) == {"status": "done", "text": "Released and deployed."}

    calls = calls_file(db).read_text(encoding="utf-8").splitlines()
    assert calls == ["record", "deploy", "deploy answered"]
    store = SqliteConversationStore(db)
    assert await store.get_pending(CONVERSATION) is None
    saved = await store.get(CONVERSATION)
    await store.aclose()
    assert saved is not None
    assert_balanced(saved, style)


async def test_of_two_processes_resuming_at_once_exactly_one_runs(
    stub: StubLLMServer, style: str, tmp_path: Path
) -> None:
    db = str(tmp_path / "approvals.db")
    script(stub, reply.text("Released and deployed."), reply.text("Released twice!"))
    answer = await halt_in_sqlite(stub, style, db)

    workers = [
        await start_worker(db, stub.url, style, CONVERSATION, answer, "--wait") for _ in range(2)
    ]
    async with asyncio.timeout(60):
        for worker in workers:  # both are ready before either is released
            assert worker.stdout is not None
            assert (await worker.stdout.readline()).strip() == b"ready"
    for worker in workers:
        assert worker.stdin is not None
        worker.stdin.write(b"go\n")
        await worker.stdin.drain()
    outcomes = [await finish(worker) for worker in workers]

    done = [o for o in outcomes if "status" in o]
    refused = [o for o in outcomes if "error" in o]
    assert done == [{"status": "done", "text": "Released and deployed."}]
    assert [o["error"] for o in refused] == ["ConfigError"]
    assert "not waiting" in refused[0]["message"]
    assert calls_file(db).read_text(encoding="utf-8").count("deploy answered") == 1
    assert len(stub.requests) == 2
