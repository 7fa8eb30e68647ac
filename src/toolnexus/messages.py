"""Transcripts, typed: the messages of each wire style as ``TypedDict``s, and their union.

A transcript (``RunResult.messages``, ``history=``, what a ``ConversationStore`` keeps, what the
``before_llm`` hook sees) is the list of messages in the client's wire style, as that
provider's API takes them. The shapes here are loose where the providers' vary: keys a
provider may leave out are not required, and a provider's extra keys are kept verbatim.
"""

from __future__ import annotations

from typing import Any, Literal, Required, TypeAlias, TypedDict

__all__ = [
    "AnthropicBlock",
    "AnthropicMessage",
    "GeminiContent",
    "GeminiPart",
    "Message",
    "OpenAIFunctionCall",
    "OpenAIMessage",
    "OpenAIToolCall",
    "ResponsesItem",
    "Style",
]

Style: TypeAlias = Literal["openai", "anthropic", "responses", "gemini"]
"""A wire style: the request and reply format of a provider's API, and so of its transcript."""


class OpenAIFunctionCall(TypedDict):
    """The function an OpenAI tool call names, with its arguments as JSON text."""

    name: str
    arguments: str


class OpenAIToolCall(TypedDict):
    """One tool call of an OpenAI assistant message."""

    id: str
    type: Literal["function"]
    function: OpenAIFunctionCall


class OpenAIMessage(TypedDict, total=False):
    """A chat-completions message (style ``openai``, and the in-process client)."""

    role: Required[Literal["system", "developer", "user", "assistant", "tool"]]
    content: str | list[dict[str, Any]] | None
    """Text, content parts (``{"type": "text", "text"}``, images, ...), or ``None`` beside
    tool calls."""
    name: str
    tool_calls: list[OpenAIToolCall]
    """An assistant message's tool calls."""
    tool_call_id: str
    """A ``tool`` message: the id of the call it answers."""
    refusal: str | None


class AnthropicBlock(TypedDict, total=False):
    """One content block: ``text``, ``tool_use``, ``tool_result``, ``thinking``, ``image``..."""

    type: Required[str]
    text: str
    id: str
    """A ``tool_use`` block's call id."""
    name: str
    input: dict[str, Any]
    """A ``tool_use`` block's arguments."""
    tool_use_id: str
    """A ``tool_result`` block: the id of the call it answers."""
    content: str | list[dict[str, Any]]
    is_error: bool
    thinking: str
    signature: str


class AnthropicMessage(TypedDict):
    """A messages-API message (style ``anthropic``)."""

    role: Literal["user", "assistant"]
    content: str | list[AnthropicBlock]


class ResponsesItem(TypedDict, total=False):
    """An input item of the Responses API (style ``responses``): a message (``role`` and
    ``content``), an output item sent back verbatim (``message``, ``function_call``,
    ``reasoning``, ...) or a ``function_call_output``."""

    type: str
    role: str
    content: str | list[dict[str, Any]]
    id: str
    status: str
    call_id: str
    """A ``function_call`` or ``function_call_output``: the call's id."""
    name: str
    arguments: str
    """A ``function_call``'s arguments as JSON text."""
    output: str
    """A ``function_call_output``'s text."""
    summary: list[dict[str, Any]]
    encrypted_content: str


class GeminiPart(TypedDict, total=False):
    """One part of a Gemini content: text, a function call or a function response."""

    text: str
    thought: bool
    thoughtSignature: str
    functionCall: dict[str, Any]
    """``{"name", "args", "id"?}``."""
    functionResponse: dict[str, Any]
    """``{"name", "id"?, "response": {"result" | "error": ...}}``."""


class GeminiContent(TypedDict, total=False):
    """A Gemini ``contents`` entry (style ``gemini``)."""

    role: str
    parts: Required[list[GeminiPart]]


Message: TypeAlias = OpenAIMessage | AnthropicMessage | ResponsesItem | GeminiContent
"""One transcript entry, in whichever wire style the client speaks."""
