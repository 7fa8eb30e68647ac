"""Wire styles: one small, pure object per provider format."""

from __future__ import annotations

from .anthropic import AnthropicDialect
from .base import Dialect, MalformedResponse, StreamParser, ToolUse, Turn
from .openai import OpenAIDialect

__all__ = [
    "AnthropicDialect",
    "Dialect",
    "MalformedResponse",
    "OpenAIDialect",
    "StreamParser",
    "ToolUse",
    "Turn",
    "dialect_for",
]

_DIALECTS: dict[str, Dialect] = {"openai": OpenAIDialect(), "anthropic": AnthropicDialect()}


def dialect_for(style: str) -> Dialect:
    """The dialect registered for ``style``; ``ValueError`` for an unknown style."""
    try:
        return _DIALECTS[style]
    except KeyError:
        raise ValueError(
            f"unknown style {style!r}: expected one of {', '.join(sorted(_DIALECTS))}"
        ) from None
