"""One-shot translation between OpenAI-shaped requests and either wire style.

``Client.translate`` takes chat-completions ``messages``/``tools``/``tool_choice`` whatever the
client's style, sends exactly one request, and answers in OpenAI terms. This module is the pure
half: the inbound mapping (OpenAI shapes → the style's request body) and the outbound one (the
provider's reply → ``TranslateResult``). No I/O here.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .._json import compact_json
from ..types import JSONObject, Usage

__all__ = ["TranslateResult", "TranslatedToolCall", "build_request", "read_reply"]

DEFAULT_MAX_TOKENS = 4096
_SYSTEM_ROLES = ("system", "developer")


@dataclass(frozen=True, slots=True)
class TranslatedToolCall:
    """A tool call of the reply, in OpenAI terms: ``arguments`` is compact JSON text."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class TranslateResult:
    """The provider's reply to one translated request, in OpenAI terms."""

    text: str
    tool_calls: list[TranslatedToolCall]
    finish_reason: str
    """``"tool_calls"``, ``"length"``, ``"content_filter"`` or ``"stop"``."""
    usage: Usage
    model: str
    raw: JSONObject = field(repr=False)
    """The decoded response body, as the provider sent it."""


def build_request(
    style: str,
    messages: Sequence[JSONObject],
    tools: Sequence[JSONObject],
    *,
    model: str,
    system: str | None,
    default_system: str,
    tool_choice: object,
    max_tokens: int,
) -> JSONObject:
    """The request body for ``style``; ``tools`` are already OpenAI ``function`` entries."""
    inline = [_text(m.get("content")) for m in messages if m.get("role") in _SYSTEM_ROLES]
    if style == "openai":
        return _openai_body(
            messages, tools, model, system, default_system, inline, tool_choice, max_tokens
        )
    rest = [m for m in messages if m.get("role") not in _SYSTEM_ROLES]
    body: JSONObject = {
        "model": model,
        "max_tokens": max_tokens if max_tokens > 0 else DEFAULT_MAX_TOKENS,
    }
    system_text = system if system is not None else "\n\n".join(inline) or default_system
    if system_text:
        body["system"] = system_text
    body["messages"] = to_anthropic_messages(rest)
    if tools:
        body["tools"] = [_anthropic_tool(t) for t in tools]
    choice = _anthropic_choice(tool_choice)
    if choice is not None:
        body["tool_choice"] = choice
    return body


def _openai_body(
    messages: Sequence[JSONObject],
    tools: Sequence[JSONObject],
    model: str,
    system: str | None,
    default_system: str,
    inline: list[str],
    tool_choice: object,
    max_tokens: int,
) -> JSONObject:
    sent = list(messages)
    if system is not None:
        sent = [{"role": "system", "content": system}] + [
            m for m in sent if m.get("role") not in _SYSTEM_ROLES
        ]
    elif not inline and default_system:
        sent = [{"role": "system", "content": default_system}, *sent]
    body: JSONObject = {"model": model, "messages": sent}
    if tools:
        body["tools"] = list(tools)
    if tool_choice is not None:
        body["tool_choice"] = tool_choice
    if max_tokens > 0:
        body["max_tokens"] = max_tokens
    return body


def to_anthropic_messages(messages: Sequence[JSONObject]) -> list[JSONObject]:
    """OpenAI chat messages (no system ones) as Anthropic messages.

    Assistant ``tool_calls`` become ``tool_use`` blocks after the message's text; a run of
    ``tool`` messages becomes one user message of ``tool_result`` blocks; array content is
    flattened to its text.
    """
    out: list[JSONObject] = []
    results: list[JSONObject] = []
    for message in messages:
        role = message.get("role")
        if role == "tool":
            results.append(
                {
                    "type": "tool_result",
                    "tool_use_id": str(message.get("tool_call_id", "")),
                    "content": _text(message.get("content")),
                }
            )
            continue
        if results:
            out.append({"role": "user", "content": results})
            results = []
        if role == "assistant" and message.get("tool_calls"):
            out.append({"role": "assistant", "content": _assistant_blocks(message)})
        else:
            out.append(
                {
                    "role": "assistant" if role == "assistant" else "user",
                    "content": _text(message.get("content")),
                }
            )
    if results:
        out.append({"role": "user", "content": results})
    return out


def _assistant_blocks(message: JSONObject) -> list[JSONObject]:
    blocks: list[JSONObject] = []
    text = _text(message.get("content"))
    if text:
        blocks.append({"type": "text", "text": text})
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        blocks.append(
            {
                "type": "tool_use",
                "id": str(call.get("id", "")),
                "name": str(function.get("name", "")),
                "input": _arguments_object(function.get("arguments")),
            }
        )
    return blocks


def _arguments_object(raw: object) -> JSONObject:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str) and raw.strip():
        try:
            value = json.loads(raw)
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}
    return {}


def _text(content: object) -> str:
    """String content as is; array content as its ``text`` parts concatenated."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""


def _anthropic_tool(entry: JSONObject) -> JSONObject:
    function = entry.get("function", entry)
    return {
        "name": function.get("name", ""),
        "description": function.get("description", ""),
        "input_schema": function.get("parameters") or {"type": "object", "properties": {}},
    }


def _anthropic_choice(choice: object) -> JSONObject | None:
    if choice == "required":
        return {"type": "any"}
    if choice == "none":
        return {"type": "none"}
    if isinstance(choice, dict):
        name = (choice.get("function") or {}).get("name") or choice.get("name")
        if name:
            return {"type": "tool", "name": name}
    return None


def read_reply(style: str, raw: JSONObject, *, usage: Usage, request_model: str) -> TranslateResult:
    """The reply ``raw`` (already validated by the dialect's parser) in OpenAI terms."""
    if style == "openai":
        choice = (raw.get("choices") or [{}])[0]
        message = choice.get("message") or {}
        content = message.get("content")
        text = content if isinstance(content, str) else ""
        calls = [
            TranslatedToolCall(
                str(call.get("id", "")),
                str((call.get("function") or {}).get("name", "")),
                _arguments_text((call.get("function") or {}).get("arguments")),
            )
            for call in message.get("tool_calls") or []
            if isinstance(call, dict)
        ]
        reason = choice.get("finish_reason")
    else:
        blocks = [b for b in raw.get("content") or [] if isinstance(b, dict)]
        text = "".join(
            b["text"] for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str)
        )
        calls = [
            TranslatedToolCall(
                str(b.get("id", "")), str(b.get("name", "")), _arguments_text(b.get("input"))
            )
            for b in blocks
            if b.get("type") == "tool_use"
        ]
        reason = raw.get("stop_reason")
    model = raw.get("model")
    return TranslateResult(
        text=text,
        tool_calls=calls,
        finish_reason=_finish_reason(reason, bool(calls)),
        usage=usage,
        model=model if isinstance(model, str) and model else request_model,
        raw=raw,
    )


def _arguments_text(raw: object) -> str:
    """Compact JSON text: a string that parses is re-rendered, one that does not passes."""
    if isinstance(raw, str):
        try:
            return compact_json(json.loads(raw))
        except ValueError:
            return raw
    return compact_json(raw if raw is not None else {})


def _finish_reason(reason: Any, has_calls: bool) -> str:
    if has_calls:
        return "tool_calls"
    if reason in ("max_tokens", "length"):
        return "length"
    if reason in ("refusal", "content_filter"):
        return "content_filter"
    return "stop"
