"""Keeping a long conversation under a token limit: summarise the old part, keep the recent one.

``compactor(...)`` returns a ``before_llm`` hook. While the transcript measures at most
``max_tokens`` it does nothing. Above that, it keeps a leading system message, asks the host's
``summarize`` for a summary of the older messages, and keeps a recent *tail* verbatim. The tail
only ever starts at a **boundary**: a user message that is not carrying tool results. So a tool
result is never separated from the call that asked for it, which providers reject.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from ._callbacks import maybe_await
from ._json import compact_json
from .errors import ConfigError
from .types import JSONObject

__all__ = ["FLUSH_REMINDER", "SUMMARY_HEADER", "compactor", "estimate_tokens"]

SUMMARY_HEADER = "Summary of the earlier part of this conversation (older messages were condensed):"
"""Put before the summary text in the compacted transcript."""

FLUSH_REMINDER = (
    "Earlier messages were condensed into the summary above. Before they fade further, save "
    "anything worth keeping to your memory."
)
"""Added after the summary when ``flush_to_memory=True``."""

CountTokens = Callable[[list[JSONObject]], int]
Summarize = Callable[[list[JSONObject]], Any]


def estimate_tokens(messages: Sequence[JSONObject]) -> int:
    """About four characters of compact JSON per token, rounded up per message."""
    return sum(math.ceil(len(compact_json(m)) / 4) for m in messages)


def compactor(
    *,
    max_tokens: int,
    summarize: Summarize,
    keep_tail: int | None = None,
    count_tokens: CountTokens | None = None,
    flush_to_memory: bool = False,
) -> Callable[[JSONObject], Any]:
    """A ``before_llm`` hook that compacts the transcript once it measures over ``max_tokens``.

    ``summarize(older_messages) -> str`` (plain or async) condenses what is dropped;
    ``keep_tail`` (default ``max_tokens // 2``) bounds the recent part kept verbatim;
    ``count_tokens(messages) -> int`` measures a list (default: ``estimate_tokens``).
    With ``flush_to_memory`` a reminder to save memories follows the summary. The hook never
    changes the messages it is given; it returns ``{"messages": [...]}`` or ``None``.
    """
    if not isinstance(max_tokens, int) or max_tokens < 1:
        raise ConfigError(f"compactor: max_tokens must be a positive int, got {max_tokens!r}")
    tail_budget = keep_tail if keep_tail is not None else max_tokens // 2
    count = count_tokens or estimate_tokens

    async def hook(payload: JSONObject) -> JSONObject | None:
        messages = list(payload.get("messages") or [])
        if count(messages) <= max_tokens:
            return None
        head = messages[:1] if messages and messages[0].get("role") == "system" else []
        body = messages[len(head) :]
        start = tail_start(body, tail_budget, count)
        summary = await maybe_await(summarize, body[:start])
        if not isinstance(summary, str):
            raise ConfigError(f"summarize must return a str, got {type(summary).__name__}")
        notes = [f"{SUMMARY_HEADER}\n{summary}"]
        if flush_to_memory:
            notes.append(FLUSH_REMINDER)
        tail = body[start:]
        if payload.get("style") == "anthropic":
            return {"messages": [*head, *_anthropic_tail(notes, tail)]}
        if payload.get("style") == "gemini":
            return {"messages": [*head, *_gemini_tail(notes, tail)]}
        return {"messages": [*head, *_openai_tail(notes, tail)]}

    return hook


def is_boundary(message: JSONObject) -> bool:
    """A user message carrying no tool results: the only place a kept tail may start."""
    if message.get("role") != "user":
        return False
    content = message.get("content")
    if isinstance(content, list):
        return not any(
            isinstance(block, dict) and block.get("type") == "tool_result" for block in content
        )
    parts = message.get("parts")  # gemini: a user content of function responses is no boundary
    if isinstance(parts, list):
        return not any(isinstance(part, dict) and "functionResponse" in part for part in parts)
    return True


def tail_start(body: list[JSONObject], budget: int, count: CountTokens) -> int:
    """Where the kept tail begins in ``body`` (``len(body)`` for an empty tail).

    The earliest boundary (not the first message) whose tail measures within ``budget``;
    else the last boundary; else none.
    """
    boundaries = [i for i in range(1, len(body)) if is_boundary(body[i])]
    if not boundaries:
        return len(body)
    for index in boundaries:
        if count(body[index:]) <= budget:
            return index
    return boundaries[-1]


def _openai_tail(notes: list[str], tail: list[JSONObject]) -> list[JSONObject]:
    if not tail:
        return [{"role": "user", "content": "\n\n".join(notes)}]
    return [*({"role": "system", "content": note} for note in notes), *tail]


def _gemini_tail(notes: list[str], tail: list[JSONObject]) -> list[JSONObject]:
    parts: list[JSONObject] = [{"text": note} for note in notes]
    if not tail:
        return [{"role": "user", "parts": parts}]
    first = tail[0]
    kept = first.get("parts")
    return [{**first, "parts": [*parts, *(kept if isinstance(kept, list) else [])]}, *tail[1:]]


def _anthropic_tail(notes: list[str], tail: list[JSONObject]) -> list[JSONObject]:
    blocks: list[JSONObject] = [{"type": "text", "text": note} for note in notes]
    if not tail:
        return [{"role": "user", "content": blocks}]
    first = tail[0]
    content = first.get("content")
    if isinstance(content, list):
        merged = [*blocks, *content]
    else:
        merged = [*blocks, {"type": "text", "text": content if isinstance(content, str) else ""}]
    return [{**first, "content": merged}, *tail[1:]]
