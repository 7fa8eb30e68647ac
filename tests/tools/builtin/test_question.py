"""The ``question`` built-in: it suspends with the rendered questions and returns the answer."""

from __future__ import annotations

from typing import Any

import pytest

from toolnexus import (
    Answer,
    InMemoryConversationStore,
    Request,
    ToolContext,
    create_client,
    create_toolkit,
    pending_of,
)
from toolnexus.testing import StubLLMServer, reply
from toolnexus.tools.builtin import builtin_tools

QUESTIONS = [
    {"question": "Which env?", "header": "Env", "options": ["dev", "prod"], "multiple": True},
    {"question": "Why?"},
]
PROMPT = "Which env? (options: dev, prod)\nWhy?"


@pytest.fixture
def stub() -> Any:
    with StubLLMServer() as server:
        yield server


@pytest.fixture(params=["openai", "anthropic"])
def style(request: pytest.FixtureRequest) -> str:
    value: str = request.param
    return value


def question_tool() -> Any:
    return next(t for t in builtin_tools() if t.name == "question")


def tool_results(body: dict[str, Any]) -> list[tuple[str, str]]:
    """``(call id, content)`` of every tool result sent to the model, in either wire style."""
    out: list[tuple[str, str]] = []
    for message in body["messages"]:
        if message.get("role") == "tool":
            out.append((message["tool_call_id"], message["content"]))
        elif message.get("role") == "user" and isinstance(message.get("content"), list):
            out += [
                (b["tool_use_id"], b["content"])
                for b in message["content"]
                if b.get("type") == "tool_result"
            ]
    return out


async def test_the_first_call_suspends_on_a_question_request_listing_the_questions() -> None:
    result = await question_tool().execute({"questions": QUESTIONS}, ToolContext())

    request = pending_of(result)
    assert request is not None
    assert request.kind == "question"
    assert request.prompt == PROMPT
    assert request.data == {"questions": QUESTIONS}
    assert result.output == PROMPT
    assert result.is_error


async def test_a_question_without_options_renders_only_its_text() -> None:
    one = [{"question": "Ship it?", "options": []}]
    result = await question_tool().execute({"questions": one}, None)

    request = pending_of(result)
    assert request is not None
    assert request.prompt == "Ship it?"


async def test_executed_with_an_answer_it_returns_the_answer_data_as_compact_json() -> None:
    answer = Answer("r1", ok=True, data={"answers": ["dev", "naïve reason"], "n": 1})

    result = await question_tool().execute({"questions": QUESTIONS}, ToolContext(answer=answer))

    assert not result.is_error
    assert pending_of(result) is None
    assert result.output == '{"answers":["dev","naïve reason"],"n":1}'


async def test_an_answer_without_data_returns_an_empty_object() -> None:
    result = await question_tool().execute(
        {"questions": QUESTIONS}, ToolContext(answer=Answer("r1", ok=True))
    )
    assert (result.output, result.is_error) == ("{}", False)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({}, "question: questions is required"),
        ({"questions": []}, "question: questions must be a non-empty array"),
        ({"questions": ["Which env?"]}, "question: questions[0] must be an object"),
        ({"questions": [{"header": "x"}]}, "question: questions[0].question is required"),
        (
            {"questions": [{"question": "a"}, {"question": "b", "options": ["x", 2]}]},
            "question: questions[1].options must be an array of strings",
        ),
        (
            {"questions": [{"question": "a", "multiple": "yes"}]},
            "question: questions[0].multiple must be true or false",
        ),
    ],
)
async def test_bad_questions_are_error_results_naming_the_problem(
    args: dict[str, Any], message: str
) -> None:
    result = await question_tool().execute(args, None)

    assert result.is_error
    assert pending_of(result) is None
    assert result.output.startswith(message)


async def test_inline_with_wait_for_the_model_receives_the_answer(
    stub: StubLLMServer, style: str
) -> None:
    seen: list[Request] = []

    def wait_for(request: Request) -> Answer:
        seen.append(request)
        return Answer(request.id, ok=True, data={"answers": ["dev", "test"]})

    stub.enqueue(
        reply.tool_calls(reply.call("question", {"questions": QUESTIONS}, id="q1")),
        reply.text("thanks"),
    )
    async with (
        await create_toolkit() as toolkit,
        create_client(
            stub.url, style, model="test-model", api_key="test-key", wait_for=wait_for
        ) as client,
    ):
        result = await client.run("Ask me.", toolkit)

    assert [r.prompt for r in seen] == [PROMPT]
    assert tool_results(stub.requests[1].json) == [("q1", '{"answers":["dev","test"]}')]
    assert (result.status, result.text) == ("done", "thanks")


async def test_without_wait_for_the_run_halts_and_run_with_answer_delivers_the_answer(
    stub: StubLLMServer, style: str
) -> None:
    stub.enqueue(
        reply.tool_calls(reply.call("question", {"questions": QUESTIONS}, id="q1")),
        reply.text("deploying to dev"),
    )
    async with (
        await create_toolkit() as toolkit,
        create_client(stub.url, style, model="test-model", api_key="test-key") as client,
    ):
        halted = await client.run("Ask me.", toolkit)
        assert halted.status == "pending"
        assert halted.pending is not None
        assert (halted.pending.kind, halted.text) == ("question", PROMPT)

        answer = Answer(halted.pending.id, ok=True, data={"answers": ["dev", "test"]})
        done = await client.run_with_answer(
            halted.pending, answer, toolkit, history=halted.messages
        )

    assert (done.status, done.text) == ("done", "deploying to dev")
    assert tool_results(stub.requests[1].json) == [("q1", '{"answers":["dev","test"]}')]


async def test_a_waiting_conversation_is_resumed_by_id_with_the_answer(
    stub: StubLLMServer, style: str
) -> None:
    stub.enqueue(
        reply.tool_calls(reply.call("question", {"questions": QUESTIONS}, id="q1")),
        reply.text("noted"),
    )
    store = InMemoryConversationStore()
    async with (
        await create_toolkit() as toolkit,
        create_client(
            stub.url, style, model="test-model", api_key="test-key", store=store
        ) as client,
    ):
        await client.ask("Ask me.", toolkit, id="chat")
        waiting = await client.pending("chat")
        assert waiting is not None
        assert waiting.prompt == PROMPT

        done = await client.resume("chat", Answer(waiting.id, ok=True, data={"a": [1]}), toolkit)

    assert done.status == "done"
    assert tool_results(stub.requests[1].json) == [("q1", '{"a":[1]}')]
