"""A run as the Vercel AI SDK's UI message stream (protocol v1, over SSE).

``ai_sdk_parts`` yields the stream's parts as dicts with exactly the protocol's keys;
``ai_sdk_stream`` yields them as SSE frames (``data: <json>``, then ``data: [DONE]``), to be
sent with ``AI_SDK_HEADERS``. The request is the body ``useChat`` posts: ``{id, messages,
trigger}``, each message with ``parts``; ``id`` is the thread, the last user message's text
parts are the prompt, and a last message carrying a ``data-toolnexus-answer`` part answers the
thread's pending request instead.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

from .._json import compact_json
from ..errors import ConfigError
from ..suspension import Answer
from ..types import JSONObject
from .flow import (
    CallArgs,
    CallEnd,
    CallResult,
    CallStart,
    ChatTurn,
    Failed,
    Finished,
    Part,
    Pending,
    StepEnd,
    StepStart,
    TextDelta,
    TextEnd,
    TextStart,
    chat_flow,
    new_id,
)

if TYPE_CHECKING:
    from ..client import Client
    from ..toolkit import Toolkit

__all__ = ["AI_SDK_HEADERS", "ai_sdk_parts", "ai_sdk_stream", "ai_sdk_turn"]

AI_SDK_HEADERS: dict[str, str] = {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    "x-vercel-ai-ui-message-stream": "v1",
    "x-accel-buffering": "no",
}
"""The response headers of the UI message stream."""
ANSWER_PART = "data-toolnexus-answer"
PENDING_PART = "data-toolnexus-pending"


def ai_sdk_turn(body: Mapping[str, Any]) -> ChatTurn:
    """The thread and the prompt (or answer) of a ``useChat`` request body, else
    ``ConfigError`` naming what is wrong."""
    if not isinstance(body, Mapping):
        raise ConfigError(f"the chat request must be a JSON object, not {type(body).__name__}")
    thread = body.get("id")
    if not isinstance(thread, str) or not thread:
        raise ConfigError("the chat request needs 'id' (the thread id), a non-empty string")
    trigger = body.get("trigger", "submit-message")
    if trigger != "submit-message":
        raise ConfigError(f"trigger {trigger!r} is not supported: send the message again")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ConfigError("the chat request needs 'messages', a non-empty list")
    for n, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("parts"), list):
            raise ConfigError(f"messages[{n}] must be an object with a 'parts' list")
    for part in messages[-1]["parts"]:
        if isinstance(part, dict) and part.get("type") == ANSWER_PART:
            return ChatTurn(thread, answer=_answer(part.get("data")))
    users = [n for n, m in enumerate(messages) if m.get("role") == "user"]
    if not users:
        raise ConfigError("the chat request has no user message to answer")
    prompt = _text(messages[users[-1]])
    earlier = tuple(
        {"role": m["role"], "content": _text(m)}
        for m in messages[: users[-1]]
        if m.get("role") in ("user", "assistant") and _text(m)
    )
    return ChatTurn(thread, prompt=prompt, earlier=earlier)


def ai_sdk_parts(
    client: Client, toolkit: Toolkit | None, body: Mapping[str, Any]
) -> AsyncIterator[JSONObject]:
    """Run a ``useChat`` request; yields the stream's parts (``start`` … ``finish``).

    The body is checked now (``ConfigError``); the run starts on the first iteration.
    """
    return _parts(client, toolkit, ai_sdk_turn(body))


def ai_sdk_stream(
    client: Client, toolkit: Toolkit | None, body: Mapping[str, Any]
) -> AsyncIterator[str]:
    """``ai_sdk_parts`` as SSE frames, ending with ``data: [DONE]``."""
    parts = ai_sdk_parts(client, toolkit, body)
    return _frames(parts)


async def _frames(parts: AsyncIterator[JSONObject]) -> AsyncIterator[str]:
    async for part in parts:
        yield f"data: {compact_json(part)}\n\n"
    yield "data: [DONE]\n\n"


async def _parts(
    client: Client, toolkit: Toolkit | None, turn: ChatTurn
) -> AsyncIterator[JSONObject]:
    yield {"type": "start", "messageId": new_id()}
    async for part in chat_flow(client, toolkit, turn):
        out = _part(part)
        if out is not None:
            yield out


def _part(part: Part) -> JSONObject | None:
    match part:
        case StepStart():
            return {"type": "start-step"}
        case StepEnd():
            return {"type": "finish-step"}
        case TextStart(id=mid):
            return {"type": "text-start", "id": mid}
        case TextDelta(id=mid, delta=delta):
            return {"type": "text-delta", "id": mid, "delta": delta}
        case TextEnd(id=mid):
            return {"type": "text-end", "id": mid}
        case CallStart(id=cid, name=name):
            return {"type": "tool-input-start", "toolCallId": cid, "toolName": name}
        case CallArgs(id=cid, delta=delta):
            return {"type": "tool-input-delta", "toolCallId": cid, "inputTextDelta": delta}
        case CallEnd(id=cid, name=name, args=args):
            return {
                "type": "tool-input-available",
                "toolCallId": cid,
                "toolName": name,
                "input": args,
            }
        case CallResult(id=cid, output=output, is_error=True):
            return {"type": "tool-output-error", "toolCallId": cid, "errorText": output}
        case CallResult(id=cid, output=output):
            return {"type": "tool-output-available", "toolCallId": cid, "output": output}
        case Pending(request=request):
            return {"type": PENDING_PART, "id": request.id, "data": request.to_dict()}
        case Finished():
            return {"type": "finish"}
        case Failed(message=message):
            return {"type": "error", "errorText": message}
    raise AssertionError(f"unhandled chat part {part!r}")  # pragma: no cover


def _text(message: Mapping[str, Any]) -> str:
    return "".join(
        p["text"]
        for p in message.get("parts", [])
        if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
    )


def _answer(data: object) -> Answer:
    if not isinstance(data, dict):
        raise ConfigError(f"a {ANSWER_PART} part's data must be an Answer object")
    try:
        return Answer.from_dict(data)
    except ValueError as exc:
        raise ConfigError(f"a {ANSWER_PART} part's data is not an Answer: {exc}") from None
