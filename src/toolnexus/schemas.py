"""A tool list in each provider's declaration format.

Each declaration carries its own copy of the tool's input schema, so whoever edits what these
functions return (a hook, ``body_transform``, a caller) cannot change the ``Tool``.
"""

from __future__ import annotations

from collections.abc import Sequence

from ._callbacks import snapshot
from .types import JSONObject, Tool

__all__ = ["to_anthropic", "to_gemini", "to_openai"]


def to_openai(tools: Sequence[Tool]) -> list[JSONObject]:
    """OpenAI chat-completions ``tools`` entries."""
    return openai_declarations(tools, copy=True)


def to_anthropic(tools: Sequence[Tool]) -> list[JSONObject]:
    """Anthropic messages ``tools`` entries."""
    return anthropic_declarations(tools, copy=True)


def openai_declarations(tools: Sequence[Tool], *, copy: bool) -> list[JSONObject]:
    """``to_openai``; with ``copy=False`` each entry shares its tool's schema dict, for a body
    nobody outside the library sees before it is encoded."""
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": snapshot(t.input_schema) if copy else t.input_schema,
            },
        }
        for t in tools
    ]


def anthropic_declarations(tools: Sequence[Tool], *, copy: bool) -> list[JSONObject]:
    """``to_anthropic``; ``copy`` as for ``openai_declarations``."""
    return [
        {
            "name": t.name,
            "description": t.description,
            "input_schema": snapshot(t.input_schema) if copy else t.input_schema,
        }
        for t in tools
    ]


def to_gemini(tools: Sequence[Tool]) -> list[JSONObject]:
    """Gemini ``tools``: one element wrapping every declaration; no tools gives ``[]``."""
    if not tools:
        return []
    declarations = [
        {"name": t.name, "description": t.description, "parameters": snapshot(t.input_schema)}
        for t in tools
    ]
    return [{"functionDeclarations": declarations}]


def responses_declarations(tools: Sequence[Tool], *, copy: bool) -> list[JSONObject]:
    """OpenAI Responses ``tools`` entries (``strict`` off: the schemas are the tools' own);
    ``copy`` as for ``openai_declarations``."""
    return [
        {
            "type": "function",
            "name": t.name,
            "description": t.description,
            "parameters": snapshot(t.input_schema) if copy else t.input_schema,
            "strict": False,
        }
        for t in tools
    ]


def gemini_declarations(tools: Sequence[Tool], *, copy: bool) -> list[JSONObject]:
    """Gemini ``functionDeclarations`` entries with the schema as ``parametersJsonSchema`` (JSON
    Schema as is, not the API's OpenAPI subset); ``copy`` as for ``openai_declarations``."""
    return [
        {
            "name": t.name,
            "description": t.description,
            "parametersJsonSchema": snapshot(t.input_schema) if copy else t.input_schema,
        }
        for t in tools
    ]
