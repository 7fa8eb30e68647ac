"""Host hooks around model calls and tool calls."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any, TypedDict

from .._callbacks import maybe_await
from ..errors import ConfigError
from ..messages import Message, Style
from ..types import JSONObject, ToolResult

__all__ = ["AfterLLM", "AfterTool", "BeforeLLM", "BeforeTool", "Hook", "Hooks", "call_hook"]

Hook = Callable[[Any], Any]
"""Receives one payload dict; returns ``None`` or a dict of overrides (or an awaitable of
either)."""


class BeforeLLM(TypedDict):
    """What ``before_llm`` sees before each model call (copies: changing them changes
    nothing; return ``{"messages"?, "tools"?}`` to replace them)."""

    messages: list[Message]
    """The transcript about to be sent, in the client's style."""
    tools: list[JSONObject]
    """The tool declarations about to be sent, in the client's style."""
    model: str
    turn: int
    style: Style


class AfterLLM(TypedDict):
    """What ``after_llm`` sees after each model reply."""

    response: JSONObject
    """The provider's reply body (a streamed reply as the equivalent JSON body)."""
    model: str
    turn: int
    style: Style


class BeforeTool(TypedDict):
    """What ``before_tool`` sees before each tool execution (return ``{"result":
    ToolResult}`` to skip the tool, or ``{"args": dict}`` to rewrite its arguments)."""

    name: str
    args: JSONObject
    id: str
    turn: int


class AfterTool(TypedDict):
    """What ``after_tool`` sees after each tool execution (return ``{"result": ToolResult}``
    to replace it)."""

    name: str
    args: JSONObject
    result: ToolResult
    id: str
    turn: int


@dataclass(frozen=True, slots=True)
class Hooks:
    """Callbacks that observe or change a run. Each may be sync or async.

    - ``before_llm({messages, tools, model, turn, style})`` → ``{"messages"?, "tools"?}``:
      replacements persist for the rest of the run; raising vetoes the call (and the run).
    - ``after_llm({response, model, turn, style})``: observe the provider reply.
    - ``before_tool({name, args, id, turn})`` → ``{"result": ToolResult}`` (skip the tool) or
      ``{"args": dict}`` (rewrite its arguments).
    - ``after_tool({name, args, result, id, turn})`` → ``{"result": ToolResult}`` (replace it).

    Each payload is typed (``BeforeLLM``, ``AfterLLM``, ``BeforeTool``, ``AfterTool``); a
    hook that takes a plain ``dict`` is accepted too. An exception raised by a hook propagates
    out of the run.
    """

    before_llm: Callable[[BeforeLLM], Any] | Callable[[JSONObject], Any] | None = None
    after_llm: Callable[[AfterLLM], Any] | Callable[[JSONObject], Any] | None = None
    before_tool: Callable[[BeforeTool], Any] | Callable[[JSONObject], Any] | None = None
    after_tool: Callable[[AfterTool], Any] | Callable[[JSONObject], Any] | None = None

    @classmethod
    def coerce(cls, value: Hooks | Mapping[str, Hook | None] | None) -> Hooks:
        """Accept a ``Hooks``, a dict with the same keys, or ``None``."""
        if value is None:
            return cls()
        if isinstance(value, Hooks):
            return value
        if not isinstance(value, Mapping):
            raise ConfigError(f"hooks must be a Hooks or a dict, not {type(value).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(value) - known)
        if unknown:
            raise ConfigError(
                f"unknown hook name(s) {', '.join(unknown)}; expected {', '.join(sorted(known))}"
            )
        return cls(**value)


async def call_hook(
    hook: Hook | None, payload: Mapping[str, Any], *, name: str
) -> JSONObject | None:
    """Call ``hook``; its overrides dict, or ``None``. A non-dict, non-None return is an error."""
    if hook is None:
        return None
    value = await maybe_await(hook, payload)
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} hook must return None or a dict, not {type(value).__name__}")
    return dict(value)
