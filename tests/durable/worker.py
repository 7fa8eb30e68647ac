"""A process that runs (or recovers) one three-tool durable run; the crash tests start it.

``python -m tests.durable.worker SYSTEM_DB LLM_URL MARK_DIR WORKFLOW_ID run|recover``

Each tool ``one``, ``two``, ``three`` appends a line to ``MARK_DIR/<name>`` (its side effect).
``run`` starts the workflow and prints its result as JSON; ``recover`` launches DBOS (which
resumes the interrupted workflow) and prints the workflow's result.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from dbos import DBOS, DBOSConfig, WorkflowHandleAsync

from toolnexus import Client, Tool, Toolkit, create_client, define_tool
from toolnexus.durable import DBOSAgent


def side_effect_tool(mark_dir: Path, name: str) -> Tool:
    def act(step: int) -> str:
        with (mark_dir / name).open("a") as marks:
            marks.write(f"{step}\n")
        return f"{name} done"

    return define_tool(
        act,
        name=name,
        description=f"Records that {name} ran",
        input_schema={
            "type": "object",
            "properties": {"step": {"type": "integer"}},
            "required": ["step"],
        },
    )


def three_tool_agent(llm_url: str, mark_dir: str) -> tuple[Client, DBOSAgent]:
    """The agent whose tools ``one``, ``two``, ``three`` mark ``mark_dir``, and its client."""
    marks = Path(mark_dir)
    tools = Toolkit([side_effect_tool(marks, n) for n in ("one", "two", "three")])
    client = create_client(llm_url, "openai", model="m", api_key="k")
    return client, DBOSAgent(client, tools, name="three-tools")


@asynccontextmanager
async def launched(
    client: Client, app: str, system_db: str, executor_id: str | None = None
) -> AsyncIterator[None]:
    """DBOS launched as ``app`` on ``system_db`` (as ``executor_id`` when given) for the block;
    then ``client`` is closed and DBOS destroyed. Agents are made before."""
    config: DBOSConfig = {"name": app, "system_database_url": system_db, "log_level": "WARNING"}
    if executor_id is not None:
        config["executor_id"] = executor_id
    DBOS(config=config)
    DBOS.launch()
    try:
        yield
    finally:
        await client.aclose()
        DBOS.destroy()


async def run_or_recover(agent: DBOSAgent, prompt: str, workflow_id: str, mode: str) -> Any:
    """``run``: start the workflow with ``prompt``; else wait for the one DBOS recovers. Its
    result as a dict."""
    if mode == "run":
        return (await agent.run(prompt, workflow_id=workflow_id)).to_dict()
    handle: WorkflowHandleAsync[Any] = await DBOS.retrieve_workflow_async(workflow_id)
    return await handle.get_result()


async def main(system_db: str, llm_url: str, mark_dir: str, workflow_id: str, mode: str) -> None:
    client, agent = three_tool_agent(llm_url, mark_dir)
    async with launched(client, "toolnexus-durable-test", system_db):
        print(json.dumps(await run_or_recover(agent, "go", workflow_id, mode)), flush=True)


if __name__ == "__main__":
    db, url, mark_dir, wid, mode = sys.argv[1:6]
    asyncio.run(main(db, url, mark_dir, wid, mode))
