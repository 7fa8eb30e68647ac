"""Transcripts and chat messages: a stored transcript as AG-UI messages, and a front end's
earlier messages as the client's wire-style ``history``.

Pure data, no SDK: the AG-UI message shapes are written as plain dicts with the protocol's
camelCase keys (``toolCalls``, ``toolCallId``), so the thread endpoint needs no extra package.
Every stored style is read by its shape (OpenAI chat messages, Anthropic content blocks,
Responses items, Gemini contents); system and developer messages are left out of the view.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .._json import compact_json
from ..types import JSONObject

__all__ = ["history_for_style", "text_of", "transcript_to_agui"]

logger = logging.getLogger("toolnexus")
_HIDDEN_ROLES = ("system", "developer")


def transcript_to_agui(messages: Sequence[Mapping[str, Any]]) -> list[JSONObject]:
    """A stored transcript (any wire style) as AG-UI messages (``user``, ``assistant`` with
    ``toolCalls``, ``tool``), ids ``m<index>`` (``m<index>-<n>`` for a message's parts)."""
    out: list[JSONObject] = []
    for index, message in enumerate(messages):
        if isinstance(message, dict):
            out.extend(_one(message, f"m{index}"))
    return out


def _one(message: JSONObject, mid: str) -> list[JSONObject]:
    role = message.get("role")
    kind = message.get("type")
    if kind == "function_call":  # Responses items
        call = _call(message.get("call_id") or message.get("id"), message.get("name"), message)
        return [{"id": mid, "role": "assistant", "toolCalls": [call]}]
    if kind == "function_call_output":
        output = message.get("output")
        shown = output if isinstance(output, str) else compact_json(output)
        return [_tool(mid, str(message.get("call_id", "")), shown)]
    if "parts" in message and isinstance(message.get("parts"), list):  # Gemini contents
        return _gemini(message, mid)
    if role in _HIDDEN_ROLES or role not in ("user", "assistant", "tool"):
        return []
    if role == "tool":  # OpenAI tool result
        return [_tool(mid, str(message.get("tool_call_id", "")), text_of(message.get("content")))]
    content = message.get("content")
    if isinstance(content, list) and any(_is_block(b, "tool_result") for b in content):
        return _anthropic_results(content, mid)  # a user turn that carries tool results
    text = text_of(content)
    if role == "user":
        return [{"id": mid, "role": "user", "content": text}]
    calls = [
        _call(c.get("id"), (c.get("function") or {}).get("name"), c.get("function") or {})
        for c in message.get("tool_calls") or []
        if isinstance(c, dict)
    ]
    if isinstance(content, list):
        calls += [
            _call(b.get("id"), b.get("name"), {"arguments": b.get("input")})
            for b in content
            if _is_block(b, "tool_use")
        ]
    out: JSONObject = {"id": mid, "role": "assistant"}
    if text:
        out["content"] = text
    if calls:
        out["toolCalls"] = calls
    return [out] if text or calls else []


def _anthropic_results(blocks: list[Any], mid: str) -> list[JSONObject]:
    out: list[JSONObject] = []
    for n, block in enumerate(blocks):
        if _is_block(block, "tool_result"):
            tool = _tool(f"{mid}-{n}", str(block.get("tool_use_id", "")))
            tool["content"] = text_of(block.get("content"))
            if block.get("is_error"):
                tool["error"] = tool["content"]
            out.append(tool)
        elif _is_block(block, "text") and block.get("text"):
            out.append({"id": f"{mid}-{n}", "role": "user", "content": block["text"]})
    return out


def _gemini(message: JSONObject, mid: str) -> list[JSONObject]:
    parts = [p for p in message["parts"] if isinstance(p, dict)]
    text = "".join(
        p["text"] for p in parts if isinstance(p.get("text"), str) and not p.get("thought")
    )
    out: list[JSONObject] = []
    if message.get("role") == "model":
        calls = [
            _call(
                p["functionCall"].get("id") or p["functionCall"].get("name"),  # as the reply
                p["functionCall"].get("name"),
                {"arguments": p["functionCall"].get("args")},
            )
            for p in parts
            if isinstance(p.get("functionCall"), dict)
        ]
        entry: JSONObject = {"id": mid, "role": "assistant"}
        if text:
            entry["content"] = text
        if calls:
            entry["toolCalls"] = calls
        return [entry] if text or calls else []
    for n, part in enumerate(parts):
        response = part.get("functionResponse")
        if isinstance(response, dict):
            content = compact_json(response.get("response"))
            out.append(
                _tool(f"{mid}-{n}", str(response.get("id") or response.get("name", "")), content)
            )
    if text:
        out.append({"id": mid, "role": "user", "content": text})
    return out


def _call(call_id: object, name: object, holder: Any) -> JSONObject:
    arguments = holder.get("arguments") if isinstance(holder, dict) else None
    if not isinstance(arguments, str):
        arguments = compact_json(arguments if arguments is not None else {})
    return {
        "id": str(call_id or ""),
        "type": "function",
        "function": {"name": str(name or ""), "arguments": arguments},
    }


def _tool(mid: str, call_id: str, content: str = "") -> JSONObject:
    return {"id": mid, "role": "tool", "toolCallId": call_id, "content": content}


def _is_block(block: object, kind: str) -> bool:
    return isinstance(block, dict) and block.get("type") == kind


def text_of(content: object) -> str:
    """The text of a message's ``content``: a string, or the text of its text parts joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            p["text"]
            for p in content
            if isinstance(p, dict)
            and p.get("type") in ("text", "input_text", "output_text")
            and isinstance(p.get("text"), str)
        )
    return ""


def history_for_style(style: str, messages: Iterable[JSONObject]) -> list[JSONObject] | None:
    """AG-UI ``user``/``assistant``/``tool`` messages as a ``history`` in ``style``.

    ``None`` (with a warning) for a style this module cannot write, so the run starts fresh.
    """
    openai: list[JSONObject] = []
    for message in messages:
        role = message.get("role")
        if role == "user":
            openai.append({"role": "user", "content": text_of(message.get("content"))})
        elif role == "assistant":
            entry: JSONObject = {"role": "assistant", "content": message.get("content") or None}
            calls = message.get("toolCalls") or message.get("tool_calls")
            if calls:
                entry["tool_calls"] = [
                    {
                        "id": c["id"],
                        "type": "function",
                        "function": {
                            "name": c["function"]["name"],
                            "arguments": c["function"]["arguments"],
                        },
                    }
                    for c in calls
                ]
            openai.append(entry)
        elif role == "tool":
            call_id = message.get("toolCallId") or message.get("tool_call_id")
            openai.append(
                {
                    "role": "tool",
                    "tool_call_id": call_id,
                    "content": text_of(message.get("content")),
                }
            )
    if style == "openai":
        return openai
    if style == "anthropic":
        from ..dialects.translate import to_anthropic_messages

        return to_anthropic_messages(openai)
    logger.warning(
        "the client's earlier messages are not used: no conversion to the %r style", style
    )
    return None
