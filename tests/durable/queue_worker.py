"""One worker of the many-workers test: it serves a DBOS queue on a shared system database.

``python -m tests.durable.queue_worker SYSTEM_DB LLM_URL MARK_DIR EXECUTOR_ID QUEUE WORKFLOW_ID
[submit]``

The worker launches DBOS as executor ``EXECUTOR_ID`` (the three-tool agent of
``tests.durable.worker`` registered before launch), registers ``QUEUE`` and prints ``ready``.
With ``submit`` it then puts the run ``WORKFLOW_ID`` on the queue. Either way it waits, bounded,
for that run's result, whichever worker finishes it, through
``DBOS.retrieve_workflow(WORKFLOW_ID).get_result()``, and prints it as JSON together with the
executor the run finished on.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from dbos import DBOS, WorkflowHandleAsync

from .worker import launched, three_tool_agent

APP = "toolnexus-workers-test"
LIMIT = 50.0
"""Seconds within which the awaited run must finish."""


async def main(
    system_db: str,
    llm_url: str,
    mark_dir: str,
    executor_id: str,
    queue_name: str,
    workflow_id: str,
    submit: bool,
) -> None:
    client, agent = three_tool_agent(llm_url, mark_dir)
    async with launched(client, APP, system_db, executor_id=executor_id):
        queue = await DBOS.register_queue_async(queue_name, worker_concurrency=1)
        print("ready", flush=True)
        if submit:
            await agent.enqueue(queue, "go", workflow_id=workflow_id)
        async with asyncio.timeout(LIMIT):
            handle: WorkflowHandleAsync[Any] = await DBOS.retrieve_workflow_async(workflow_id)
            result = await handle.get_result()
            status = await handle.get_status()
        print(json.dumps({"result": result, "executor": status.executor_id}), flush=True)


if __name__ == "__main__":
    db, url, mark_dir, executor, queue, wid = sys.argv[1:7]
    asyncio.run(main(db, url, mark_dir, executor, queue, wid, sys.argv[7:8] == ["submit"]))
