"""A durable run killed mid-way is finished by the next process, repeating no finished work."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolnexus.testing import StubLLMServer

from .crash import kill, marks, result_of, script, start, until_requests

pytest.importorskip("dbos")


async def test_killed_run_resumes_without_repeating_tools_or_model_calls(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'dbos.sqlite'}"
    with StubLLMServer(script()) as stub:
        first = await start(db, stub.url, str(tmp_path), "run-1", "run")
        await until_requests(stub, 2)  # tool one ran; the second model call hangs
        assert marks(tmp_path) == {"one": ["0"], "two": [], "three": []}
        await kill(first)

        recovered = await result_of(await start(db, stub.url, str(tmp_path), "run-1", "recover"))

        assert recovered["status"] == "done"
        assert recovered["text"] == "all done"
        assert [call["name"] for call in recovered["toolCalls"]] == ["one", "two", "three"]
        assert marks(tmp_path) == {"one": ["0"], "two": ["1"], "three": ["2"]}
        # 2 before the kill (the second never answered), then turns 2..4: turn 1 not resent
        assert len(stub.requests) == 5
        resent = [len(r.json["messages"]) for r in stub.requests]
        assert resent == [1, 3, 3, 5, 7]
        stub.assert_consumed()


async def test_finished_workflow_returns_its_result_without_new_work(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'dbos.sqlite'}"
    with StubLLMServer(script()[:1] + script()[2:]) as stub:
        done = await result_of(await start(db, stub.url, str(tmp_path), "run-2", "run"))
        again = await result_of(await start(db, stub.url, str(tmp_path), "run-2", "run"))

        assert done == again
        assert json.dumps(done["usage"])
        assert len(stub.requests) == 4
        assert marks(tmp_path) == {"one": ["0"], "two": ["1"], "three": ["2"]}
