"""A durable run waits inside its workflow for the host's answer and then finishes."""

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
from toolnexus.durable import DBOSAgent, send_answer, wait_for_answer, waiting_for  # noqa: E402


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
