"""A process that runs (or recovers) a durable run waiting for a host's approval.

``python -m tests.durable.approval_worker SYSTEM_DB LLM_URL MARK_DIR WORKFLOW_ID run|recover``

The ``pay`` tool asks for approval (appending the amount to ``MARK_DIR/asked``) and, once
approved, pays (appending the amount and the approver to ``MARK_DIR/paid``). The client waits
for the answer durably with ``wait_for_answer``. ``run`` starts the workflow; ``recover``
launches DBOS, which resumes it. Both print the run's result as JSON.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from toolnexus import Request, ToolContext, Toolkit, ToolResult, create_client, pending, tool
from toolnexus.durable import DBOSAgent, wait_for_answer

from .crash import LIMIT
from .worker import launched, run_or_recover


def pay_tool(marks: Path) -> Toolkit:
    @tool
    def pay(amount: int, ctx: ToolContext) -> ToolResult:
        """Pay an amount once a human approves."""
        if ctx.answer is None:
            with (marks / "asked").open("a") as asked:
                asked.write(f"{amount}\n")
            return pending(Request.new("approval", f"pay {amount}?"))
        approver = (ctx.answer.data or {}).get("by")
        with (marks / "paid").open("a") as paid:
            paid.write(f"{amount} {approver}\n")
        return ToolResult(f"paid {amount}")

    return Toolkit([pay])


async def main(system_db: str, llm_url: str, mark_dir: str, workflow_id: str, mode: str) -> None:
    client = create_client(
        llm_url, "openai", model="m", api_key="k", wait_for=wait_for_answer(LIMIT)
    )
    agent = DBOSAgent(client, pay_tool(Path(mark_dir)), name="payer")
    async with launched(client, "toolnexus-approval-test", system_db):
        async with asyncio.timeout(LIMIT):
            result = await run_or_recover(agent, "pay 5", workflow_id, mode)
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    db, url, mark_dir, wid, mode = sys.argv[1:6]
    asyncio.run(main(db, url, mark_dir, wid, mode))
