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
from pathlib import Path

from dbos import DBOS

from toolnexus import Toolkit, create_client, define_tool
from toolnexus.durable import DBOSAgent


def side_effect_tool(mark_dir: Path, name: str) -> object:
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


async def main(system_db: str, llm_url: str, mark_dir: str, workflow_id: str, mode: str) -> None:
    marks = Path(mark_dir)
    tools = Toolkit([side_effect_tool(marks, n) for n in ("one", "two", "three")])
    client = create_client(llm_url, "openai", model="m", api_key="k")
    agent = DBOSAgent(client, tools, name="three-tools")
    DBOS(
        config={
            "name": "toolnexus-durable-test",
            "system_database_url": system_db,
            "log_level": "WARNING",
        }
    )
    DBOS.launch()
    try:
        if mode == "run":
            result = (await agent.run("go", workflow_id=workflow_id)).to_dict()
        else:
            handle = await DBOS.retrieve_workflow_async(workflow_id)
            result = await handle.get_result()
        print(json.dumps(result), flush=True)
    finally:
        await client.aclose()
        DBOS.destroy()


if __name__ == "__main__":
    db, url, mark_dir, wid, mode = sys.argv[1:6]
    asyncio.run(main(db, url, mark_dir, wid, mode))
