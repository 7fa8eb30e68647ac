"""A public test kit for code built on toolnexus.

- ``StubLLMServer``: a real local HTTP server speaking the OpenAI chat, Anthropic, OpenAI
  Responses and Gemini wire formats (JSON and SSE), scripted per test and recording every
  request; reply builders in ``reply``.
- ``mcp_server_command()``: the argv of a bundled stdio MCP server (``echo``, ``add``, …) for
  an ``mcp.json``.

Nothing here is imported by ``import toolnexus``; the names below load on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # for type checkers; at run time the names load on first use
    from . import reply
    from .llm_stub import RecordedRequest, StubLLMServer
    from .mcp_server import mcp_server_command
    from .reply import Reply

__all__ = [
    "RecordedRequest",
    "Reply",
    "StubLLMServer",
    "mcp_server_command",
    "reply",
]

# ``reply`` is the submodule ``toolnexus.testing.reply`` (reply builders).

_LAZY = {
    "StubLLMServer": "toolnexus.testing.llm_stub",
    "RecordedRequest": "toolnexus.testing.llm_stub",
    "Reply": "toolnexus.testing.reply",
    "mcp_server_command": "toolnexus.testing.mcp_server",
}


def __getattr__(name: str) -> Any:
    if name == "reply":
        return importlib.import_module("toolnexus.testing.reply")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'toolnexus.testing' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(__all__)
