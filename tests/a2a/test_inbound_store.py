"""Where a served agent keeps its tasks: memory, a folder of JSON files, or the host's object."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from a2a.server.tasks import InMemoryTaskStore
from a2a.types.a2a_pb2 import GetTaskRequest, TaskState
from a2a.utils.errors import TaskNotFoundError

import toolnexus as tn
from toolnexus.serve import FileTaskStore, MemoryTaskStore
from toolnexus.testing import StubLLMServer, reply

from .served import Serve, artifact_texts, message, send


async def test_a_file_store_keeps_tasks_readable_after_a_restart(
    serve: Serve, connect: Any, stub: StubLLMServer, tmp_path: Path
) -> None:
    stub.enqueue(reply.text("kept"))
    folder = tmp_path / "tasks" / "nested"
    first = await serve(tn.Toolkit([]), store=f"file:{folder}")
    task = await send(await connect(first.handle.url), message("remember", context_id="f"))
    await first.handle.aclose()

    assert sorted(p.name for p in folder.iterdir()) == [f"{task.id}.json"]  # no temporary file
    saved = json.loads((folder / f"{task.id}.json").read_text())
    assert saved["status"]["state"] == "TASK_STATE_COMPLETED"
    assert saved["contextId"] == "f"

    second = await serve(tn.Toolkit([]), store=f"file:{folder}")
    client = await connect(second.handle.url)
    again = await client.get_task(GetTaskRequest(id=task.id))
    assert again.status.state == TaskState.TASK_STATE_COMPLETED
    assert artifact_texts(again) == ["kept"]
    assert [m.parts[0].text for m in again.history] == ["remember"]


async def test_a_file_store_answers_task_not_found_for_ids_that_are_not_file_names(
    serve: Serve, connect: Any, tmp_path: Path
) -> None:
    (tmp_path / "secret.json").write_text('{"id": "secret"}')
    served = await serve(tn.Toolkit([]), store=f"file:{tmp_path / 'tasks'}")
    client = await connect(served.handle.url)
    for bad in ("../secret", "/etc/passwd", ".hidden", "a/../../secret"):
        with pytest.raises(TaskNotFoundError):
            await client.get_task(GetTaskRequest(id=bad))


async def test_file_store_writes_replace_whole_files(tmp_path: Path) -> None:
    store = FileTaskStore(tmp_path)
    await store.save({"id": "t1", "status": {"state": "TASK_STATE_WORKING"}})
    await store.save({"id": "t1", "status": {"state": "TASK_STATE_COMPLETED"}})
    assert await store.get("t1") == {"id": "t1", "status": {"state": "TASK_STATE_COMPLETED"}}
    assert [p.name for p in tmp_path.iterdir()] == ["t1.json"]
    assert await store.get("missing") is None
    with pytest.raises(ValueError, match="cannot name a file"):
        await store.save({"id": "../escape"})


async def test_memory_store_hands_out_copies() -> None:
    store = MemoryTaskStore()
    task = {"id": "t", "artifacts": []}
    await store.save(task)
    task["artifacts"].append("changed later")
    loaded = await store.get("t")
    assert loaded == {"id": "t", "artifacts": []}
    assert loaded is not None
    loaded["id"] = "other"
    assert await store.all() == [{"id": "t", "artifacts": []}]


class Recorder:
    """A host's task store: plain dicts, every save recorded."""

    def __init__(self) -> None:
        self.saved: list[dict[str, Any]] = []
        self.tasks: dict[str, dict[str, Any]] = {}

    def get(self, id: str) -> dict[str, Any] | None:  # plain methods work too
        return self.tasks.get(id)

    async def save(self, task: dict[str, Any]) -> None:
        self.saved.append(task)
        self.tasks[task["id"]] = task


async def test_a_store_object_gets_every_save_and_answers_get_task(
    serve: Serve, connect: Any, stub: StubLLMServer
) -> None:
    stub.enqueue(reply.text("recorded"))
    recorder = Recorder()
    served = await serve(tn.Toolkit([]), store=recorder)
    client = await connect(served.handle.url)
    task = await send(client, message("note this", context_id="r"))
    states = [t["status"]["state"] for t in recorder.saved]
    assert states[0] == "TASK_STATE_SUBMITTED"
    assert "TASK_STATE_WORKING" in states
    assert states[-1] == "TASK_STATE_COMPLETED"
    assert all(t["id"] == task.id for t in recorder.saved)
    report = await served.next_report()
    assert report["task"] == recorder.saved[-1]  # reported after the final save
    recorder.tasks[task.id]["artifacts"][0]["parts"][0]["text"] = "edited in the store"
    again = await client.get_task(GetTaskRequest(id=task.id))
    assert artifact_texts(again) == ["edited in the store"]


async def test_an_sdk_task_store_is_used_as_it_is(
    serve: Serve, connect: Any, stub: StubLLMServer
) -> None:
    stub.enqueue(reply.text("sdk store"))
    store = InMemoryTaskStore()
    served = await serve(tn.Toolkit([]), store=store)
    client = await connect(served.handle.url)
    task = await send(client, message("hi", context_id="s"))
    from a2a.server.context import ServerCallContext

    kept = await store.get(task.id, ServerCallContext())
    assert kept is not None
    assert kept.status.state == TaskState.TASK_STATE_COMPLETED
    assert (await served.next_report())["state"] == "completed"


async def test_on_task_errors_are_ignored(stub: StubLLMServer, connect: Any) -> None:
    stub.enqueue(reply.text("still fine"))
    client = tn.create_client(stub.url, model="m", api_key="k")

    async def broken(info: dict[str, Any]) -> None:
        raise RuntimeError("observer failed")

    handle = await tn.Toolkit([]).serve("127.0.0.1:0", a2a={}, client=client, on_task=broken)
    try:
        task = await send(await connect(handle.url), message("hi", context_id="e"))
        assert artifact_texts(task) == ["still fine"]
        assert task.status.state == TaskState.TASK_STATE_COMPLETED
    finally:
        await handle.aclose()
        await client.aclose()
