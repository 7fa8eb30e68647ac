"""Owning the transcript yourself with ``history=``.

``RunResult.messages`` comes back in the provider's own message shape, which is the shape
``history`` takes, so persisting a conversation anywhere is a plain write and read. Here the
"database" is a JSON file per job.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

from toolnexus import create_client, create_toolkit
from toolnexus.testing import StubLLMServer, reply


def read_transcript(folder: Path, job: str) -> list[dict[str, Any]]:
    path = folder / f"{job}.json"
    return json.loads(path.read_text("utf-8")) if path.exists() else []


def write_transcript(folder: Path, job: str, messages: list[dict[str, Any]]) -> None:
    (folder / f"{job}.json").write_text(json.dumps(messages, ensure_ascii=False), "utf-8")


async def main() -> None:
    script = [reply.text("Step 1 of 2 done."), reply.text("Step 2 of 2 done.")]
    with tempfile.TemporaryDirectory() as tmp, StubLLMServer(script) as stub:
        db = Path(tmp)
        async with (
            await create_toolkit(builtins=False) as tk,
            create_client(stub.url, "openai", model="test-model", api_key="test-key") as client,
        ):
            first = await client.run("Start job 77.", tk, history=read_transcript(db, "job-77"))
            write_transcript(db, "job-77", first.messages)

            # Later, perhaps in another process: resume from what was persisted.
            saved = read_transcript(db, "job-77")
            r = await client.run("Continue where you stopped.", tk, history=saved)
            write_transcript(db, "job-77", r.messages)

        persisted = read_transcript(db, "job-77")
        second_request = stub.requests[1].json["messages"]

    assert saved == first.messages
    assert second_request[: len(saved)] == saved, second_request
    assert persisted == r.messages
    assert len(persisted) == 4, persisted
    print(f"ok: {r.text} ({len(persisted)} messages persisted)")


if __name__ == "__main__":
    asyncio.run(main())
