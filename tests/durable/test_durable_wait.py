"""A durable run waits inside its workflow for the host's answer and then finishes, also when
its process dies while it waits."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from toolnexus import (
    Answer,
    Request,
    ToolContext,
    Toolkit,
    ToolResult,
    create_client,
    pending,
    tool,
)
from toolnexus.testing import StubLLMServer, reply

dbos = pytest.importorskip("dbos")
from toolnexus.durable import (  # noqa: E402
    PENDING_EVENT,
    DBOSAgent,
    send_answer,
    wait_for_answer,
    waiting_for,
)

from .crash import LIMIT, kill, result_of, start  # noqa: E402

WORKER = "tests.durable.approval_worker"


@pytest.fixture
async def launched(tmp_path: Path) -> AsyncIterator[None]:
    dbos.DBOS(
        config={
            "name": "toolnexus-wait-test",
            "system_database_url": f"sqlite:///{tmp_path / 'dbos.sqlite'}",
            "log_level": "WARNING",
        }
    )
    yield
    dbos.DBOS.destroy(destroy_registry=True)


async def test_durable_wait_receives_the_hosts_answer(launched: None) -> None:
    answers: list[Answer | None] = []

    @tool
    def pay(amount: int, ctx: ToolContext) -> ToolResult:
        """Pay an amount once approved."""
        answers.append(ctx.answer)
        if ctx.answer is None:
            return pending(Request.new("approval", f"pay {amount}?"))
        return ToolResult(f"paid {amount}")

    script = [reply.tool_calls(reply.call("pay", {"amount": 5})), reply.text("paid")]
    with StubLLMServer(script) as stub:
        async with create_client(
            stub.url, "openai", model="m", api_key="k", wait_for=wait_for_answer(30)
        ) as client:
            agent = DBOSAgent(client, Toolkit([pay]), name="payer")
            dbos.DBOS.launch()
            async with asyncio.timeout(30):
                run = asyncio.create_task(agent.run("pay 5", workflow_id="pay-1"))
                request = await waiting_for("pay-1", 20)
                assert request is not None
                assert request.prompt == "pay 5?"
                await send_answer("pay-1", Answer(request.id, ok=True))
                result = await run

    assert result.status == "done"
    assert result.text == "paid"
    assert [a is not None and a.ok for a in answers] == [False, True]
    assert stub.requests[1].json["messages"][-1]["content"] == "paid 5"
    handle = await dbos.DBOS.retrieve_workflow_async("pay-1")
    assert (await handle.get_result())["text"] == "paid"


async def test_a_durable_wait_survives_a_restart_and_takes_an_answer_sent_meanwhile(
    tmp_path: Path,
) -> None:
    db = f"sqlite:///{tmp_path / 'dbos.sqlite'}"
    script = [reply.tool_calls(reply.call("pay", {"amount": 5})), reply.text("paid")]
    host = dbos.DBOSClient(system_database_url=db)
    first = None
    try:
        with StubLLMServer(script) as stub:
            first = await start(db, stub.url, str(tmp_path), "pay-2", "run", module=WORKER)
            data = await host.get_event_async("pay-2", PENDING_EVENT, timeout_seconds=LIMIT)
            assert data is not None, "the run never waited for an answer"
            request = Request.from_dict(data)
            assert request.prompt == "pay 5?"
            await kill(first)

            # answered while no process runs the workflow
            answer = Answer(request.id, ok=True, data={"by": "maya"})
            await host.send_async("pay-2", answer.to_dict(), topic=request.id)
            result = await result_of(
                await start(db, stub.url, str(tmp_path), "pay-2", "recover", module=WORKER)
            )

            assert result["status"] == "done"
            assert result["text"] == "paid"
            assert (tmp_path / "asked").read_text().split() == ["5"]
            assert (tmp_path / "paid").read_text().splitlines() == ["5 maya"]
            assert len(stub.requests) == 2  # the first model call was not sent again
            assert stub.requests[1].json["messages"][-1]["content"] == "paid 5"
    finally:
        if first is not None and first.returncode is None:
            await kill(first)
        host.destroy()
