"""The differential harness: one recorded reply, read by the library and by an official SDK.

Each case is a pair of hand-written fixtures in ``fixtures/differential/``: ``<case>.json`` (the
provider's non-streamed body) and ``<case>.sse`` (the same reply streamed); a case that only
exists as a stream (an error event, a body cut short) has no ``.json``. ``StubLLMServer`` serves
the bytes unchanged. What is compared is an ``Outcome``: the text, the tool calls, the usage
and the normalised stop reason, or the fact that the reply was refused with an error.
"""

from __future__ import annotations

import json
from contextlib import aclosing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolnexus import DoneEvent, LLMError, RunResult, create_client
from toolnexus.testing import StubLLMServer, reply

FIXTURES = Path(__file__).parent / "fixtures" / "differential"
MODES = ("json", "sse")
SUFFIX = {"json": ".json", "sse": ".sse"}
CONTENT_TYPE = {"json": "application/json", "sse": "text/event-stream"}
STOP_NAMES = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
}
"""The stop-reason names every style is read into (anything else passes through)."""


@dataclass(frozen=True)
class Outcome:
    """What a reader made of one reply."""

    text: str = ""
    calls: tuple[tuple[str | None, str, str], ...] = ()
    """``(id, name, arguments as sorted compact JSON)`` per tool call, in call order."""
    usage: tuple[int, int] = (0, 0)
    stop: str | None = None
    failed: bool = False
    """The reader raised instead of returning a reply."""


FAILED = Outcome(failed=True)


def style_of(case: str) -> str:
    return case.split("_", 1)[0]


def cases() -> list[str]:
    """Every case name, from the fixture files."""
    return sorted({path.stem for path in FIXTURES.iterdir() if path.suffix in (".json", ".sse")})


def has_mode(case: str, mode: str) -> bool:
    return (FIXTURES / f"{case}{SUFFIX[mode]}").exists()


def raw_reply(case: str, mode: str) -> reply.Reply:
    data = (FIXTURES / f"{case}{SUFFIX[mode]}").read_bytes()
    return reply.raw_bytes(data, content_type=CONTENT_TYPE[mode])


def _args(value: object) -> str:
    if isinstance(value, str):
        try:
            value = json.loads(value) if value else {}
        except ValueError:
            return str(value)
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _stop(value: object) -> str | None:
    return STOP_NAMES.get(value, value) if isinstance(value, str) else None


# --- the library ---------------------------------------------------------------------------


async def library_result(stub: StubLLMServer, case: str, mode: str) -> RunResult | None:
    """The library's run over the case (one turn, no tools); ``None`` when it raised
    ``LLMError``."""
    stub.enqueue(raw_reply(case, mode))
    client = create_client(
        stub.url, style_of(case), model="test-model", api_key="test-key", max_turns=1, retries=0
    )
    try:
        if mode == "json":
            return await client.run("hi")
        async with aclosing(client.stream("hi")) as events:
            async for event in events:
                if isinstance(event, DoneEvent):
                    return event.result
    except LLMError:
        return None
    finally:
        await client.aclose()
    raise AssertionError("the stream ended without a done event")


def library_outcome(result: RunResult | None) -> Outcome:
    if result is None:
        return FAILED
    calls = tuple((c.id, c.name, _args(c.args)) for c in result.tool_calls)
    usage = (result.usage.prompt_tokens, result.usage.completion_tokens)
    return Outcome(result.text, calls, usage, result.stop_reason)


# --- the official SDKs ---------------------------------------------------------------------


async def sdk_outcome(stub: StubLLMServer, case: str, mode: str) -> Outcome:
    """The official SDK's reading of the case, normalised like the library's result."""
    stub.enqueue(raw_reply(case, mode))
    try:
        if style_of(case) == "openai":
            return await _openai_sdk(stub.url, mode)
        return await _anthropic_sdk(stub.url, mode)
    except Exception as exc:  # any SDK error counts as "refused the reply"
        if type(exc).__module__.split(".")[0] in ("openai", "anthropic", "pydantic"):
            return FAILED
        raise


async def _openai_sdk(url: str, mode: str) -> Outcome:
    import openai

    client = openai.AsyncOpenAI(base_url=url, api_key="test-key", max_retries=0)
    request: dict[str, Any] = {
        "model": "test-model",
        "messages": [{"role": "user", "content": "hi"}],
    }
    async with client:
        if mode == "json":
            completion = await client.chat.completions.create(**request)
        else:
            async with client.chat.completions.stream(**request) as stream:
                try:
                    async for _ in stream:
                        pass
                    completion = await stream.get_final_completion()
                except (openai.LengthFinishReasonError, openai.ContentFilterFinishReasonError):
                    # The helper raises on these by policy; what it assembled is compared.
                    completion = stream.current_completion_snapshot
    choice = completion.choices[0]
    message = choice.message
    refusal = getattr(message, "refusal", None)
    text = message.content or refusal or ""
    calls = tuple(
        (call.id or None, call.function.name, _args(call.function.arguments))
        for call in message.tool_calls or ()
    )
    usage = completion.usage
    counts = (usage.prompt_tokens, usage.completion_tokens) if usage else (0, 0)
    return Outcome(text, calls, counts, "refusal" if refusal else _stop(choice.finish_reason))


async def _anthropic_sdk(url: str, mode: str) -> Outcome:
    import anthropic

    client = anthropic.AsyncAnthropic(base_url=url, api_key="test-key", max_retries=0)
    request: dict[str, Any] = {
        "model": "test-model",
        "max_tokens": 4096,
        "messages": [{"role": "user", "content": "hi"}],
    }
    async with client:
        if mode == "json":
            message = await client.messages.create(**request)
        else:
            async with client.messages.stream(**request) as stream:
                message = await stream.get_final_message()
    text = "".join(block.text for block in message.content if block.type == "text")
    calls = tuple(
        (block.id, block.name, _args(block.input))
        for block in message.content
        if block.type == "tool_use"
    )
    counts = (message.usage.input_tokens, message.usage.output_tokens)
    return Outcome(text, calls, counts, _stop(message.stop_reason))


async def sdk_blocks(stub: StubLLMServer, case: str, mode: str) -> list[dict[str, Any]]:
    """The content blocks the Anthropic SDK keeps for the case, as plain dicts."""
    import anthropic

    stub.enqueue(raw_reply(case, mode))
    client = anthropic.AsyncAnthropic(base_url=stub.url, api_key="test-key", max_retries=0)
    request: dict[str, Any] = {
        "model": "test-model",
        "max_tokens": 4096,
        "messages": [{"role": "user", "content": "hi"}],
    }
    async with client:
        if mode == "json":
            message = await client.messages.create(**request)
        else:
            async with client.messages.stream(**request) as stream:
                message = await stream.get_final_message()
    return [block.model_dump(exclude_none=True) for block in message.content]
