"""``toolnexus run`` and a pending request: answered or declined from the command line
(``--answer``, ``--decline``) or at the REPL (``/answer``, ``/decline``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolnexus.testing import StubLLMServer, reply

from .support import toolnexus

ASK = {"questions": [{"question": "Which colour?", "options": ["red", "blue"]}]}


@pytest.fixture
def stub() -> Iterator[StubLLMServer]:
    with StubLLMServer() as server:
        yield server


def endpoint(stub: StubLLMServer) -> list[str]:
    return ["--base-url", stub.url, "--model", "test-model", "--api-key", "test-key"]


def tool_results(request_json: dict[str, object]) -> list[str]:
    messages = request_json["messages"]
    assert isinstance(messages, list)
    return [m["content"] for m in messages if m.get("role") == "tool"]


def test_a_pending_once_run_says_how_to_answer_and_answer_continues_it(
    stub: StubLLMServer, tmp_path: Path
) -> None:
    stub.enqueue(reply.tool_calls(reply.call("question", ASK)), reply.text("Blue it is."))
    common = [*endpoint(stub), "--id", "chat-1", "--db", str(tmp_path / "chats.db")]

    first = toolnexus("run", *common, "--once", "pick one")
    assert first.returncode == 4, first.stderr
    assert "pending question: Which colour?" in first.stderr
    assert "toolnexus run --id chat-1 --answer TEXT (or --decline [REASON])" in first.stderr
    assert "client.resume" not in first.stderr

    answered = toolnexus("run", *common, "--answer", "blue")

    assert answered.returncode == 0, answered.stderr
    assert answered.stdout == "Blue it is.\n"
    assert "<- question ok" in answered.stderr
    assert '"answers":["blue"]' in tool_results(stub.requests[1].json)[0].replace(" ", "")

    again = toolnexus("run", *common, "--answer", "red")  # nothing waits any more
    assert again.returncode == 1
    assert "conversation 'chat-1' is not waiting for an answer" in again.stderr
    assert len(stub.requests) == 2


def test_decline_with_a_reason_resumes_and_the_model_reads_the_reason(
    stub: StubLLMServer, tmp_path: Path
) -> None:
    stub.enqueue(reply.tool_calls(reply.call("question", ASK)), reply.text("Understood."))
    common = [*endpoint(stub), "--id", "chat-2", "--db", str(tmp_path / "chats.db")]
    assert toolnexus("run", *common, "--once", "pick one").returncode == 4

    declined = toolnexus("run", *common, "--decline", "colour-blind")

    assert declined.returncode == 0, declined.stderr
    assert declined.stdout == "Understood.\n"
    [result] = tool_results(stub.requests[1].json)
    assert result.startswith("declined/expired: Which colour?")
    assert result.endswith("\nreason: colour-blind")


def test_decline_without_a_reason_tells_the_model_only_that_it_was_declined(
    stub: StubLLMServer, tmp_path: Path
) -> None:
    stub.enqueue(reply.tool_calls(reply.call("question", ASK)), reply.text("OK."))
    common = [*endpoint(stub), "--id", "chat-3", "--db", str(tmp_path / "chats.db")]
    assert toolnexus("run", *common, "--once", "pick one").returncode == 4

    declined = toolnexus("run", *common, "--decline")

    assert declined.returncode == 0, declined.stderr
    assert tool_results(stub.requests[1].json) == [
        "declined/expired: Which colour? (options: red, blue)"
    ]


def test_a_new_prompt_while_pending_is_refused_saying_how_to_answer(
    stub: StubLLMServer, tmp_path: Path
) -> None:
    stub.enqueue(reply.tool_calls(reply.call("question", ASK)))
    common = [*endpoint(stub), "--id", "chat-4", "--db", str(tmp_path / "chats.db")]
    assert toolnexus("run", *common, "--once", "pick one").returncode == 4

    refused = toolnexus("run", *common, "--once", "something else")

    assert refused.returncode == 4
    assert "waits for an answer" in refused.stderr
    assert "--answer TEXT (or --decline [REASON])" in refused.stderr
    assert len(stub.requests) == 1  # nothing was sent


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (
            ["--answer", "x"],
            "--answer answers the pending request of a conversation: give its --id",
        ),
        (["--id", "c", "--decline", "--once", "hi"], "--decline and --once do not go together"),
    ],
)
def test_answer_or_decline_without_a_conversation_is_a_usage_error(
    stub: StubLLMServer, tmp_path: Path, extra: list[str], needle: str
) -> None:
    done = toolnexus("run", *endpoint(stub), "--db", str(tmp_path / "c.db"), *extra)

    assert done.returncode == 2
    assert needle in done.stderr
    assert stub.requests == []


def test_a_pending_once_run_without_id_says_it_cannot_be_answered_later(
    stub: StubLLMServer,
) -> None:
    stub.enqueue(reply.tool_calls(reply.call("question", ASK)))

    done = toolnexus("run", *endpoint(stub), "--once", "pick one")

    assert done.returncode == 4
    assert "run the prompt again with --id ID to answer with --answer" in done.stderr


def test_the_repl_answers_and_declines_pending_requests_with_slash_commands(
    stub: StubLLMServer,
) -> None:
    stub.enqueue(
        reply.tool_calls(reply.call("question", ASK)),
        reply.text("Blue it is."),
        reply.tool_calls(reply.call("question", ASK)),
        reply.text("Fine."),
        reply.text("Hello again."),
    )
    script = "pick one\nnew prompt too soon\n/answer blue\npick again\n/decline not now\nhi\nexit\n"

    done = toolnexus("run", *endpoint(stub), input=script)

    assert done.returncode == 0, done.stderr
    assert done.stdout == "Blue it is.\nFine.\nHello again.\n"
    assert done.stderr.count("answer it with /answer TEXT, or drop it with /decline [REASON]") == 3
    assert "client.resume" not in done.stderr
    assert len(stub.requests) == 5
    sent = json.dumps(stub.requests[3].json["messages"])
    assert "reason: not now" in sent
    assert "new prompt too soon" not in json.dumps(stub.requests[4].json["messages"])
