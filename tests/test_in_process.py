"""The in-process client: a model answering through ``generate`` instead of an endpoint."""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import AsyncIterator
from typing import Any

import pytest

from toolnexus import (
    Answer,
    ConfigError,
    DoneEvent,
    Event,
    LLMError,
    Request,
    TextEvent,
    ToolCallEvent,
    ToolContext,
    ToolResult,
    create_client,
    create_in_process_client,
    define_tool,
    pending,
    tool,
)
from toolnexus.client.options import WIRE_ONLY, ClientOptions, InProcessOptions
from toolnexus.toolkit import Toolkit

LIMIT = 10.0


@tool
def add(a: int, b: int) -> str:
    """Add two numbers."""
    return str(a + b)


def toolkit() -> Toolkit:
    return Toolkit([add])


def scripted(*answers: dict[str, Any]) -> tuple[list[dict[str, Any]], Any]:
    """A plain ``generate`` answering from ``answers`` in order; it records every request."""
    seen: list[dict[str, Any]] = []
    queue = list(answers)

    def generate(request: dict[str, Any]) -> dict[str, Any]:
        seen.append(request)
        return queue.pop(0)

    return seen, generate


async def test_tool_call_then_content_is_a_two_turn_run_without_any_api_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    seen, generate = scripted(
        {"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}]},
        {"content": "five", "usage": {"prompt_tokens": 7, "completion_tokens": 2}},
    )
    client = create_in_process_client(model="local", generate=generate)
    async with asyncio.timeout(LIMIT):
        result = await client.run("2+3?", toolkit())
    assert result.status == "done"
    assert result.text == "five"
    assert result.turns == 2
    assert [(c.name, c.args, c.output) for c in result.tool_calls] == [
        ("add", {"a": 2, "b": 3}, "5")
    ]
    # the dict arguments were encoded, and the call got a generated id
    call = result.messages[1]["tool_calls"][0]
    assert call["function"]["arguments"] == '{"a":2,"b":3}'
    assert call["id"] == "call_0_0"
    assert result.messages[2] == {"role": "tool", "tool_call_id": "call_0_0", "content": "5"}
    assert result.usage.prompt_tokens == 7
    assert result.usage.completion_tokens == 2
    # what generate received: the messages, openai-shaped tools, the model and the full body
    first = seen[0]
    assert first["model"] == "local"
    assert first["messages"] == [{"role": "user", "content": "2+3?"}]
    assert first["tools"][0]["function"]["name"] == "add"
    assert first["body"]["messages"] is first["messages"]
    assert first["body"]["model"] == "local"
    assert not first["body"].get("stream")


async def test_async_generate_and_given_call_ids_are_kept() -> None:
    calls = 0

    async def generate(request: dict[str, Any]) -> dict[str, Any]:
        nonlocal calls
        calls += 1
        if calls == 1:
            return {"tool_calls": [{"id": "mine", "name": "add", "arguments": '{"a":1,"b":1}'}]}
        return {"content": "two"}

    client = create_in_process_client(model="m", generate=generate)
    result = await client.run("1+1", toolkit())
    assert result.text == "two"
    assert result.tool_calls[0].id == "mine"


async def test_async_generator_streams_its_deltas_as_text_events() -> None:
    async def generate(request: dict[str, Any]) -> AsyncIterator[Any]:
        if request["messages"][-1]["role"] == "user":
            yield {"tool_calls": [{"name": "add", "arguments": {"a": 20, "b": 22}}]}
            return
        for piece in ("the ", "answer ", "is 42"):
            yield piece
        yield {"usage": {"prompt_tokens": 3, "completion_tokens": 3}}

    client = create_in_process_client(model="m", generate=generate)
    events: list[Event] = []
    async with asyncio.timeout(LIMIT):
        async for event in client.stream("go", toolkit()):
            events.append(event)
    texts = [e.delta for e in events if isinstance(e, TextEvent)]
    assert texts == ["the ", "answer ", "is 42"]
    assert any(isinstance(e, ToolCallEvent) for e in events)
    done = events[-1]
    assert isinstance(done, DoneEvent)
    assert done.result.text == "the answer is 42"
    assert done.result.usage.completion_tokens == 3


async def test_ask_on_text_sees_each_delta_and_memory_keeps_the_conversation() -> None:
    async def generate(request: dict[str, Any]) -> AsyncIterator[str]:
        count = sum(1 for m in request["messages"] if m["role"] == "user")
        for piece in ("turn ", str(count)):
            yield piece

    client = create_in_process_client(model="m", generate=generate)
    deltas: list[str] = []
    first = await client.ask("hi", id="c1", on_text=deltas.append)
    second = await client.ask("again", id="c1", on_text=deltas.append)
    assert deltas == ["turn ", "1", "turn ", "2"]
    assert (first.text, second.text) == ("turn 1", "turn 2")
    assert [m["role"] for m in second.messages] == ["user", "assistant", "user", "assistant"]


async def test_plain_generate_streams_its_content_as_one_delta_per_turn() -> None:
    _, generate = scripted({"content": "all at once"})
    client = create_in_process_client(model="m", generate=generate)
    events = [e async for e in client.stream("hi")]
    assert [e.delta for e in events if isinstance(e, TextEvent)] == ["all at once"]


async def test_plain_generate_runs_off_the_event_loop_thread() -> None:
    threads: list[int] = []

    def generate(request: dict[str, Any]) -> dict[str, Any]:
        threads.append(threading.get_ident())
        return {"content": "ok"}

    client = create_in_process_client(model="m", generate=generate)
    await client.run("hi")
    assert threads
    assert threads[0] != threading.get_ident()


async def test_an_exception_in_generate_is_an_llm_error_with_the_cause_chained() -> None:
    def generate(request: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("model exploded")

    client = create_in_process_client(model="m", generate=generate)
    with pytest.raises(LLMError) as caught:
        await client.run("hi")
    assert caught.value.status is None
    assert isinstance(caught.value.__cause__, RuntimeError)
    assert "model exploded" in str(caught.value)


async def test_an_exception_in_a_streaming_generate_is_an_llm_error_too() -> None:
    async def generate(request: dict[str, Any]) -> AsyncIterator[str]:
        yield "partial "
        raise OSError("device lost")

    client = create_in_process_client(model="m", generate=generate)
    with pytest.raises(LLMError) as caught:
        async for _ in client.stream("hi"):
            pass
    assert isinstance(caught.value.__cause__, OSError)


async def test_retries_apply_when_asked_for() -> None:
    attempts = 0

    def generate(request: dict[str, Any]) -> dict[str, Any]:
        nonlocal attempts
        attempts += 1
        if attempts < 3:
            raise ConnectionError("busy")
        return {"content": "third time"}

    failing = create_in_process_client(model="m", generate=generate)
    with pytest.raises(LLMError):
        await failing.run("hi")  # retries default to 0: one attempt
    assert attempts == 1
    attempts = 0
    client = create_in_process_client(model="m", generate=generate, retries=2, retry_base_ms=0)
    assert (await client.run("hi")).text == "third time"
    assert attempts == 3


@pytest.mark.parametrize(
    ("answer", "fragment"),
    [
        ("just text", "expected a dict"),
        ({}, "neither 'content' nor 'tool_calls'"),
        ({"content": 5}, "'content' of type int"),
        ({"tool_calls": [{"arguments": {}}]}, "without a 'name'"),
        ({"tool_calls": "add"}, "expected a list"),
    ],
)
async def test_an_unusable_answer_is_a_clear_llm_error(answer: object, fragment: str) -> None:
    client = create_in_process_client(model="m", generate=lambda request: answer)
    with pytest.raises(LLMError, match=fragment):
        await client.run("hi")


@pytest.mark.parametrize("option", sorted(WIRE_ONLY))
def test_wire_only_options_are_refused_by_name(option: str) -> None:
    with pytest.raises(ConfigError, match=f"does not take {option}:") as caught:
        create_in_process_client(model="m", generate=lambda r: {}, **{option: "x"})
    assert isinstance(caught.value, TypeError)


def test_the_wire_only_options_are_the_create_client_options_an_in_process_client_lacks() -> None:
    assert "max_response_bytes" in WIRE_ONLY
    positional = set(inspect.signature(create_client).parameters) - {"options"}
    over_http = positional | ClientOptions.__optional_keys__
    in_process = {"model", "generate"} | InProcessOptions.__optional_keys__
    assert over_http - in_process == set(WIRE_ONLY)


def test_bad_options_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="max_turns"):
        create_in_process_client(model="m", generate=lambda r: {}, max_turns=0)
    with pytest.raises(ConfigError, match="generate"):
        create_in_process_client(model="m", generate="not callable")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="unknown options: colour"):
        create_in_process_client(model="m", generate=lambda r: {}, colour="red")


async def test_hooks_request_shaping_and_metrics_work_as_over_http() -> None:
    seen, generate = scripted({"content": "shaped"})
    metrics: list[dict[str, Any]] = []
    hook_calls: list[str] = []

    def before_llm(payload: dict[str, Any]) -> None:
        hook_calls.append(payload["style"])

    def transform(body: dict[str, Any]) -> dict[str, Any]:
        return {**body, "seed": 7}

    client = create_in_process_client(
        model="m",
        generate=generate,
        hooks={"before_llm": before_llm},
        request_params={"temperature": 0, "messages": []},
        body_transform=transform,
        on_metric=metrics.append,
    )
    result = await client.run("hi")
    assert result.text == "shaped"
    assert hook_calls == ["openai"]
    body = seen[0]["body"]
    assert body["temperature"] == 0
    assert body["seed"] == 7
    assert body["messages"] == [{"role": "user", "content": "hi"}]
    kinds = [m["event"] for m in metrics]
    assert kinds == ["llm", "run"]
    assert metrics[0]["status"] == "ok"


async def test_suspension_halts_and_resumes_like_the_http_client() -> None:
    approved: list[str] = []

    async def deploy(env: str, ctx: ToolContext | None = None) -> ToolResult:
        """Deploy after approval."""
        if ctx is not None and ctx.answer is not None:
            return ToolResult(f"deployed to {env}")
        return pending(Request.new("approval", f"deploy to {env}?"))

    _, generate = scripted(
        {"tool_calls": [{"name": "deploy", "arguments": {"env": "prod"}}]},
        {"content": "deployed"},
    )

    def waiter(request: Any) -> Answer:
        approved.append(request.prompt)
        return Answer(request.id, ok=True)

    client = create_in_process_client(model="m", generate=generate, wait_for=waiter)
    deploy_tool = define_tool(deploy)
    result = await client.run("ship it", Toolkit([deploy_tool]))
    assert approved == ["deploy to prod?"]
    assert result.status == "done"
    assert result.tool_calls[0].output == "deployed to prod"

    halting = create_in_process_client(
        model="m",
        generate=scripted(
            {"tool_calls": [{"name": "deploy", "arguments": {"env": "dev"}}]},
            {"content": "resumed"},
        )[1],
    )
    halted = await halting.run("ship it", Toolkit([deploy_tool]))
    assert halted.status == "pending"
    assert halted.pending is not None
    resumed = await halting.run_with_answer(
        halted.pending,
        Answer(halted.pending.id, ok=True),
        Toolkit([deploy_tool]),
        history=halted.messages,
    )
    assert resumed.text == "resumed"
    assert resumed.tool_calls[-1].output == "deployed to dev"


async def test_call_provider_returns_the_chat_completion_generate_made() -> None:
    seen, generate = scripted({"content": "raw"})
    events: list[dict[str, Any]] = []
    client = create_in_process_client(model="m", generate=generate, on_metric=events.append)
    body = {"model": "other", "messages": [{"role": "user", "content": "x"}]}
    reply = await client.call_provider(body)
    assert reply["choices"][0]["message"]["content"] == "raw"
    assert reply["choices"][0]["finish_reason"] == "stop"
    assert seen[0]["body"] == body
    assert seen[0]["model"] == "other"
    assert [e["event"] for e in events] == ["llm"]


def test_run_sync_works_without_any_http_session() -> None:
    _, generate = scripted({"content": "sync"})
    client = create_in_process_client(model="m", generate=generate)
    assert client.run_sync("hi").text == "sync"


async def test_interceptors_wrap_in_process_model_calls_and_tools_in_both_modes() -> None:
    from toolnexus import Interceptor

    seen: list[str] = []

    class Recorder(Interceptor):
        async def around_llm(self, call_next: Any, call: Any) -> Any:
            seen.append(call.key)
            return await call_next(call)

        async def around_tool(self, call_next: Any, call: Any) -> Any:
            seen.append(call.key)
            return await call_next(call)

    async def generate(request: dict[str, Any]) -> AsyncIterator[Any]:
        if request["messages"][-1]["role"] == "user":
            yield {"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}]}
            return
        yield "three"

    client = create_in_process_client(model="m", generate=generate)
    client.add_interceptor(Recorder())
    assert (await client.run("1+2", toolkit())).text == "three"
    events = [e async for e in client.stream("1+2", toolkit())]
    assert [e.delta for e in events if isinstance(e, TextEvent)] == ["three"]
    assert seen == ["llm/0", "tool/0", "llm/1"] * 2
