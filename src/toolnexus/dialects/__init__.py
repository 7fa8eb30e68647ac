"""Wire styles: one small, pure object per provider format."""

from __future__ import annotations

from .anthropic import AnthropicDialect
from .base import (
    ArgumentsDelta,
    Dialect,
    MalformedResponse,
    StreamItem,
    StreamParser,
    ToolUse,
    Turn,
)
from .gemini import GeminiDialect
from .openai import OpenAIDialect
from .responses import ResponsesDialect

__all__ = [
    "AnthropicDialect",
    "ArgumentsDelta",
    "Dialect",
    "GeminiDialect",
    "MalformedResponse",
    "OpenAIDialect",
    "ResponsesDialect",
    "StreamItem",
    "StreamParser",
    "ToolUse",
    "Turn",
    "dialect_for",
    "endpoint_urls",
]

_DIALECTS: dict[str, Dialect] = {
    "openai": OpenAIDialect(),
    "anthropic": AnthropicDialect(),
    "responses": ResponsesDialect(),
    "gemini": GeminiDialect(),
}


def dialect_for(style: str) -> Dialect:
    """The dialect registered for ``style``; ``ValueError`` for an unknown style."""
    try:
        return _DIALECTS[style]
    except KeyError:
        raise ValueError(
            f"unknown style {style!r}: expected one of {', '.join(sorted(_DIALECTS))}"
        ) from None


def endpoint_urls(dialect: Dialect, base_url: str, model: str) -> tuple[str, str]:
    """``(URL of a call answered whole, URL of a streamed call)``: one URL for most styles; a
    style whose endpoint names the model (gemini) has a ``model_urls`` of its own."""
    model_urls = getattr(dialect, "model_urls", None)
    if model_urls is not None:
        urls: tuple[str, str] = model_urls(base_url, model)
        return urls
    url = dialect.url(base_url)
    return url, url
