"""A model running in this process: ``generate(request)`` instead of an HTTP endpoint.

``InProcessCaller`` is one more way for the loop to make a model call: it takes the OpenAI
chat-completions body the wire client would have sent, hands it to the host's ``generate``,
wraps the answer in a chat-completions response and lets the OpenAI dialect parse it, so the
loop, hooks, memory, suspension and metrics are exactly those of the HTTP client.

``generate`` may be a plain function (run in a worker thread, so a local model's compute
never blocks the event loop), a coroutine function, or an async generator that yields text
deltas (``str``) and, optionally, a final dict.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from typing import Any

from ..dialects import Dialect, MalformedResponse, Turn
from ..errors import LLMError
from ..types import JSONObject, Usage
from .retry import RetryPolicy

__all__ = ["Generate", "InProcessCaller"]

Generate = Callable[[JSONObject], Any]
"""``generate(request) -> {"content": str} | {"tool_calls": [...]}`` (see ``InProcessCaller``)."""


class _Failed(Exception):
    """Wraps whatever ``generate`` raised, until the retry policy has decided."""

    def __init__(self, error: LLMError) -> None:
        super().__init__(str(error))
        self.error = error


class InProcessCaller:
    """Answers model calls with ``generate``; the same interface as the HTTP caller.

    ``generate`` receives ``{"messages", "tools", "model", "body"}`` where ``body`` is the final
    OpenAI-style request body (after ``request_params`` and ``body_transform``) and returns
    ``{"content": str}`` or ``{"tool_calls": [{"id"?, "name", "arguments": dict | str}]}``,
    optionally with ``"usage"``. Its exceptions become ``LLMError(status=None)`` with the
    original chained as ``__cause__``; they are retried only if ``retries`` says so.
    """

    def __init__(self, generate: Generate, dialect: Dialect, model: str, policy: RetryPolicy):
        self.generate = generate
        self.dialect = dialect
        self.model = model
        self.policy = policy
        self._streams = inspect.isasyncgenfunction(generate)
        self._blocking = not (self._streams or inspect.iscoroutinefunction(generate))

    def usage_of(self, reply: JSONObject) -> Usage:
        """The usage a raw reply reports (zeros when it cannot be read)."""
        try:
            return self.dialect.parse_response(reply, turn=0).usage
        except MalformedResponse:
            return Usage()

    async def call(self, body: JSONObject, headers: Mapping[str, str], *, turn: int) -> Turn:
        """One model call answered at once (deltas of a streaming ``generate`` are joined)."""
        reply = await self._retrying(body, turn)
        return self._turn(reply, turn)

    async def call_raw(self, body: JSONObject, headers: Mapping[str, str]) -> JSONObject:
        """The chat-completions response ``generate`` makes for ``body``."""
        return await self._retrying(body, 0)

    async def stream(
        self, body: JSONObject, headers: Mapping[str, str], *, turn: int
    ) -> AsyncGenerator[str | Turn, None]:
        """Text deltas as ``generate`` yields them (one delta for a plain one), then the turn."""
        if not self._streams:
            reply = await self._retrying(body, turn)
            parsed = self._turn(reply, turn)
            if parsed.text:
                yield parsed.text
            yield parsed
            return
        attempt = 0
        while True:
            deltas: list[str] = []
            try:
                final = None
                async for item in self._deltas(body):
                    if isinstance(item, str):
                        if item:
                            deltas.append(item)
                            yield item
                    else:
                        final = item
                reply = _envelope(final, "".join(deltas), self.model, turn)
            except _Failed as failed:
                if deltas:  # text already reached the caller: a retry would repeat it
                    raise failed.error from failed.error.__cause__
                delay = await self.policy.delay(attempt, status=None, error=failed.error)
                if delay is None:
                    raise failed.error from failed.error.__cause__
                await asyncio.sleep(delay)
                attempt += 1
                continue
            yield self._turn(reply, turn)
            return

    async def _retrying(self, body: JSONObject, turn: int) -> JSONObject:
        attempt = 0
        while True:
            try:
                return await self._once(body, turn)
            except _Failed as failed:
                delay = await self.policy.delay(attempt, status=None, error=failed.error)
                if delay is None:
                    raise failed.error from failed.error.__cause__
            await asyncio.sleep(delay)
            attempt += 1

    async def _once(self, body: JSONObject, turn: int) -> JSONObject:
        if self._streams:
            deltas: list[str] = []
            final = None
            async for item in self._deltas(body):
                if isinstance(item, str):
                    deltas.append(item)
                else:
                    final = item
            return _envelope(final, "".join(deltas), self.model, turn)
        try:
            if self._blocking:
                value = await asyncio.to_thread(self.generate, _request(body, self.model))
            else:
                value = self.generate(_request(body, self.model))
            if inspect.isawaitable(value):
                value = await value
        except Exception as exc:
            raise _Failed(_generate_failed(exc)) from exc
        return _envelope(value, "", self.model, turn)

    async def _deltas(self, body: JSONObject) -> AsyncIterator[str | object]:
        """What a streaming ``generate`` yields; its exceptions become ``_Failed``."""
        agen = self.generate(_request(body, self.model))
        try:
            while True:
                try:
                    item = await agen.__anext__()
                except StopAsyncIteration:
                    return
                except Exception as exc:
                    raise _Failed(_generate_failed(exc)) from exc
                if not isinstance(item, (str, dict)):
                    error = LLMError(
                        f"generate yielded {type(item).__name__}; "
                        "expected text deltas (str) or a final dict"
                    )
                    raise _Failed(error)
                yield item
        finally:
            await agen.aclose()

    def _turn(self, reply: JSONObject, turn: int) -> Turn:
        try:
            return self.dialect.parse_response(reply, turn=turn)
        except MalformedResponse as exc:  # pragma: no cover - the envelope is ours
            raise LLMError(f"generate returned an unusable reply: {exc}") from None


def _request(body: JSONObject, model: str) -> JSONObject:
    """What ``generate`` receives: the body and its most used parts.

    A snapshot: the transcript list is copied, so a ``generate`` that keeps the request sees
    it as it was, and one that edits it cannot change the run's transcript.
    """
    messages = body.get("messages")
    body = {**body, "messages": list(messages) if isinstance(messages, list) else []}
    return {
        "messages": body["messages"],
        "tools": body.get("tools") or None,
        "model": body.get("model", model),
        "body": body,
    }


def _generate_failed(exc: Exception) -> LLMError:
    error = LLMError(f"generate raised {type(exc).__name__}: {exc}")
    error.__cause__ = exc
    return error


def _envelope(value: object, streamed: str, model: str, turn: int) -> JSONObject:
    """A chat-completions response for what ``generate`` answered."""
    if value is None:
        value = {"content": streamed}
    if not isinstance(value, dict):
        raise LLMError(
            f"generate returned {type(value).__name__}; expected a dict with 'content' or "
            "'tool_calls'"
        )
    message: JSONObject = {"role": "assistant", "content": None}
    content = value.get("content")
    if content is None and streamed:
        content = streamed
    if content is not None and not isinstance(content, str):
        raise LLMError(
            f"generate returned 'content' of type {type(content).__name__}; expected str"
        )
    message["content"] = content
    calls = value.get("tool_calls")
    if calls:
        message["tool_calls"] = _tool_calls(calls, turn)
    elif content is None:
        raise LLMError("generate returned neither 'content' nor 'tool_calls'")
    reply: JSONObject = {
        "object": "chat.completion",
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if calls else "stop",
            }
        ],
    }
    usage = value.get("usage")
    if isinstance(usage, dict):
        reply["usage"] = _usage(usage)
    return reply


def _tool_calls(calls: object, turn: int) -> list[JSONObject]:
    if not isinstance(calls, list):
        raise LLMError(
            f"generate returned 'tool_calls' of type {type(calls).__name__}; expected a list"
        )
    out: list[JSONObject] = []
    for index, call in enumerate(calls):
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            raise LLMError(f"generate returned tool call {index} without a 'name'")
        arguments = call.get("arguments", {})
        if not isinstance(arguments, str):
            try:
                arguments = json.dumps(arguments, separators=(",", ":"), ensure_ascii=False)
            except (TypeError, ValueError) as exc:
                raise LLMError(
                    f"generate returned tool call {index} ({call['name']}) with arguments "
                    f"that are not JSON: {exc}"
                ) from None
        call_id = call.get("id")
        out.append(
            {
                "id": call_id if isinstance(call_id, str) and call_id else f"call_{turn}_{index}",
                "type": "function",
                "function": {"name": call["name"], "arguments": arguments},
            }
        )
    return out


def _usage(usage: JSONObject) -> JSONObject:
    prompt = usage.get("prompt_tokens", 0)
    completion = usage.get("completion_tokens", 0)
    prompt = prompt if isinstance(prompt, int) and not isinstance(prompt, bool) else 0
    completion = (
        completion if isinstance(completion, int) and not isinstance(completion, bool) else 0
    )
    total = usage.get("total_tokens")
    if not isinstance(total, int) or isinstance(total, bool):
        total = prompt + completion
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": total}
