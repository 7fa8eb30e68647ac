"""Structured output in each wire style: pure functions of a request body, keyed by style name.

A style takes part in structured output through one ``OutputStyle`` entry in ``OUTPUT_STYLES``:
its default mode, its native response format, where the prompted instruction goes, and how a
plain user message looks. Each function returns a new body and leaves the one it was given
(and the transcript inside it) untouched. The ``tool`` mode needs nothing per style: its
``final_result`` tool is declared through the dialect's own ``tool_schemas``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

from ..errors import ConfigError
from ..types import JSONObject

__all__ = [
    "OUTPUT_MODES",
    "OUTPUT_STYLES",
    "OutputMode",
    "OutputSchema",
    "OutputStyle",
    "output_style",
]

OutputMode = Literal["native", "tool", "prompted"]
"""How the model is asked for a typed answer: the provider's own response format
(``native``), a ``final_result`` tool (``tool``), or an instruction in the system prompt
(``prompted``)."""

OUTPUT_MODES: tuple[OutputMode, ...] = ("native", "tool", "prompted")


@dataclass(frozen=True, slots=True)
class OutputSchema:
    """The answer's schema as sent: always an object (a non-object root arrives wrapped in
    ``{"result": ...}``), and its name (``[A-Za-z0-9_-]{1,64}``)."""

    name: str
    schema: JSONObject


NativeForm = Callable[[JSONObject, OutputSchema], JSONObject]
PromptedForm = Callable[[JSONObject, str], JSONObject]


@dataclass(frozen=True, slots=True)
class OutputStyle:
    """What one wire style contributes to structured output."""

    default_mode: OutputMode
    native: NativeForm
    """The body with the style's native response format."""
    prompted: PromptedForm
    """The body with the instruction at the end of its system prompt."""
    user_message: Callable[[str], JSONObject]
    """A plain user message of this style's transcript (a retry request)."""
    native_headers: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """Request headers the native form needs (comma-joined with a same-named one)."""


def _joined(*parts: str) -> str:
    return "\n\n".join(p for p in parts if p)


def _chat_user(text: str) -> JSONObject:
    return {"role": "user", "content": text}


# --- openai (chat completions) ---------------------------------------------------------------


def openai_native(body: JSONObject, output: OutputSchema) -> JSONObject:
    form = {"name": output.name, "schema": output.schema, "strict": False}
    return {**body, "response_format": {"type": "json_schema", "json_schema": form}}


def openai_prompted(body: JSONObject, instruction: str) -> JSONObject:
    """The instruction ends the leading system message, one added for this request when the
    transcript has none (the stored transcript keeps its own messages)."""
    messages = list(body.get("messages") or [])
    first = messages[0] if messages else None
    if isinstance(first, dict) and first.get("role") in ("system", "developer"):
        content = first.get("content")
        if isinstance(content, list):
            added: object = [*content, {"type": "text", "text": instruction}]
        else:
            added = _joined(content if isinstance(content, str) else "", instruction)
        messages[0] = {**first, "content": added}
    else:
        messages.insert(0, {"role": "system", "content": instruction})
    return {**body, "messages": messages}


# --- anthropic (messages) --------------------------------------------------------------------

ANTHROPIC_OUTPUT_BETA = "structured-outputs-2025-11-13"


def anthropic_native(body: JSONObject, output: OutputSchema) -> JSONObject:
    return {**body, "output_format": {"type": "json_schema", "schema": output.schema}}


def anthropic_prompted(body: JSONObject, instruction: str) -> JSONObject:
    system = body.get("system")
    if isinstance(system, list):  # system blocks
        return {**body, "system": [*system, {"type": "text", "text": instruction}]}
    return {**body, "system": _joined(system if isinstance(system, str) else "", instruction)}


# --- responses (OpenAI Responses API) --------------------------------------------------------


def responses_native(body: JSONObject, output: OutputSchema) -> JSONObject:
    text = body.get("text")
    settings = dict(text) if isinstance(text, dict) else {}
    settings["format"] = {
        "type": "json_schema",
        "name": output.name,
        "schema": output.schema,
        "strict": False,
    }
    return {**body, "text": settings}


def responses_prompted(body: JSONObject, instruction: str) -> JSONObject:
    instructions = body.get("instructions")
    existing = instructions if isinstance(instructions, str) else ""
    return {**body, "instructions": _joined(existing, instruction)}


# --- gemini (generateContent) ----------------------------------------------------------------


def gemini_native(body: JSONObject, output: OutputSchema) -> JSONObject:
    config = body.get("generationConfig")
    settings = dict(config) if isinstance(config, dict) else {}
    settings["responseMimeType"] = "application/json"
    settings["responseJsonSchema"] = output.schema
    return {**body, "generationConfig": settings}


def gemini_prompted(body: JSONObject, instruction: str) -> JSONObject:
    system = body.get("systemInstruction")
    parts = system.get("parts") if isinstance(system, dict) else None
    kept = list(parts) if isinstance(parts, list) else []
    last = kept[-1] if kept else None
    if isinstance(last, dict) and isinstance(last.get("text"), str):
        kept[-1] = {**last, "text": _joined(last["text"], instruction)}
    else:
        kept.append({"text": instruction})
    base = system if isinstance(system, dict) else {}
    return {**body, "systemInstruction": {**base, "parts": kept}}


def _gemini_user(text: str) -> JSONObject:
    return {"role": "user", "parts": [{"text": text}]}


OUTPUT_STYLES: dict[str, OutputStyle] = {
    "openai": OutputStyle("native", openai_native, openai_prompted, _chat_user),
    "anthropic": OutputStyle(
        "tool",
        anthropic_native,
        anthropic_prompted,
        _chat_user,
        MappingProxyType({"anthropic-beta": ANTHROPIC_OUTPUT_BETA}),
    ),
    "responses": OutputStyle("native", responses_native, responses_prompted, _chat_user),
    "gemini": OutputStyle("native", gemini_native, gemini_prompted, _gemini_user),
}
"""Every wire style's structured-output forms, by style name (a new style adds its entry)."""


def output_style(style: str) -> OutputStyle:
    """The structured-output forms of ``style``; ``ConfigError`` for a style without them."""
    try:
        return OUTPUT_STYLES[style]
    except KeyError:
        raise ConfigError(
            f"structured output is not available for style {style!r}: expected one of "
            f"{', '.join(sorted(OUTPUT_STYLES))}"
        ) from None
