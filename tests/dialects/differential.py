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


SDK_PACKAGE = {
    "openai": "openai",
    "anthropic": "anthropic",
    "responses": "openai",
    "gemini": "google.genai",
}
"""The official SDK each style is compared with."""


# --- the official SDKs ---------------------------------------------------------------------


async def sdk_outcome(stub: StubLLMServer, case: str, mode: str) -> Outcome:
    """The official SDK's reading of the case, normalised like the library's result."""
    stub.enqueue(raw_reply(case, mode))
    try:
        return await SDK_READERS[style_of(case)](stub.url, mode)
    except Exception as exc:  # any SDK error counts as "refused the reply"
        if type(exc).__module__.split(".")[0] in ("openai", "anthropic", "pydantic", "google"):
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


async def _responses_sdk(url: str, mode: str) -> Outcome:
    """The ``openai`` package's Responses types: ``responses.create`` (JSON) and the
    ``responses.stream`` helper, whose ``ResponseStreamState`` accumulates the events."""
    import openai

    client = openai.AsyncOpenAI(base_url=url, api_key="test-key", max_retries=0)
    async with client:
        if mode == "json":
            response = await client.responses.create(model="test-model", input="hi")
        else:
            final = None
            async with client.responses.stream(model="test-model", input="hi") as stream:
                async for event in stream:
                    if event.type == "response.incomplete":
                        final = event.response  # the helper completes only on "completed"
                    elif event.type == "response.failed":
                        return FAILED
                if final is None:
                    try:
                        response = await stream.get_final_response()
                    except RuntimeError:  # "Didn't receive a `response.completed` event."
                        return FAILED
                else:
                    response = final
    if response.status == "failed":
        return FAILED
    texts: list[str] = []
    refusals: list[str] = []
    calls: list[tuple[str | None, str, str]] = []
    for item in response.output:
        if item.type == "message":
            for part in item.content:
                if part.type == "output_text":
                    texts.append(part.text)
                elif part.type == "refusal":
                    refusals.append(part.refusal)
        elif item.type == "function_call":
            calls.append((item.call_id, item.name, _args(item.arguments)))
    usage = response.usage
    counts = (usage.input_tokens, usage.output_tokens) if usage else (0, 0)
    if refusals:
        return Outcome("".join(texts) or "".join(refusals), tuple(calls), counts, "refusal")
    if response.status == "completed":
        stop: str | None = "tool_calls" if calls else "stop"
    else:
        reason = response.incomplete_details.reason if response.incomplete_details else None
        stop = {"max_output_tokens": "length"}.get(str(reason), reason)
    return Outcome("".join(texts), tuple(calls), counts, stop)


_GEMINI_FILTERED = {
    "SAFETY",
    "RECITATION",
    "BLOCKLIST",
    "PROHIBITED_CONTENT",
    "SPII",
    "IMAGE_SAFETY",
    "IMAGE_PROHIBITED_CONTENT",
    "IMAGE_RECITATION",
}


async def _gemini_sdk(url: str, mode: str) -> Outcome:
    """``google-genai``'s ``GenerateContentResponse``s, from ``generate_content`` (JSON) and
    ``generate_content_stream`` (one per SSE event, read here as the library merges them:
    text joined, calls in order, the last usage and finish reason)."""
    from google import genai
    from google.genai import types

    client = genai.Client(api_key="test-key", http_options=types.HttpOptions(base_url=url))
    if mode == "json":
        responses = [await client.aio.models.generate_content(model="test-model", contents="hi")]
    else:
        stream = await client.aio.models.generate_content_stream(model="test-model", contents="hi")
        responses = [chunk async for chunk in stream]
    texts: list[str] = []
    calls: list[tuple[str | None, str, str]] = []
    counts = (0, 0)
    finish: str | None = None
    blocked = False
    for response in responses:
        if response.prompt_feedback is not None and response.prompt_feedback.block_reason:
            blocked = True
        if response.usage_metadata is not None:
            meta = response.usage_metadata
            output = (meta.candidates_token_count or 0) + (meta.thoughts_token_count or 0)
            counts = (meta.prompt_token_count or 0, output)
        if not response.candidates:
            continue
        candidate = response.candidates[0]
        if candidate.finish_reason is not None:
            finish = candidate.finish_reason.value
        parts = candidate.content.parts if candidate.content is not None else None
        for part in parts or ():
            if part.function_call is not None:
                call = part.function_call
                # The library names an id-less call call_<turn>_<index> (SPEC §11.2).
                call_id = call.id or f"call_0_{len(calls)}"
                calls.append((call_id, call.name or "", _args(call.args or {})))
            elif part.text is not None and not part.thought:
                texts.append(part.text)
    if finish is None:  # a blocked prompt, or a stream cut short (the SDK keeps what came)
        if blocked:
            return Outcome("", (), counts, "content_filter")
        return Outcome("".join(texts), tuple(calls), counts, None)
    stop = {"STOP": "tool_calls" if calls else "stop", "MAX_TOKENS": "length"}.get(finish, finish)
    if finish in _GEMINI_FILTERED:
        stop = "content_filter"
    return Outcome("".join(texts), tuple(calls), counts, stop)


SDK_READERS = {
    "openai": _openai_sdk,
    "anthropic": _anthropic_sdk,
    "responses": _responses_sdk,
    "gemini": _gemini_sdk,
}
"""Each style's official-SDK reading of whatever the server at ``url`` answers."""
