"""toolnexus: give any LLM a working agent.

One toolkit for every tool source (MCP servers, skills, Python functions, HTTP endpoints) and
one client that runs the tool-calling loop against OpenAI- or Anthropic-style endpoints.
"""

from __future__ import annotations

from .cancel import CancelToken
from .errors import ConfigError, LLMError, RunCancelled, RunTimeout, ToolnexusError
from .schemas import to_anthropic, to_gemini, to_openai
from .suspension import Answer, Request, auth_required, pending, pending_of
from .toolkit import Toolkit, create_toolkit
from .tools.http import http_tool
from .tools.native import define_tool, tool
from .types import (
    ConversationStore,
    JSONObject,
    RunResult,
    Tool,
    ToolCall,
    ToolContext,
    ToolResult,
    ToolSource,
    Usage,
    sanitize,
)

__version__ = "0.1.0"

__all__ = [
    "Answer",
    "CancelToken",
    "ConfigError",
    "ConversationStore",
    "JSONObject",
    "LLMError",
    "Request",
    "RunCancelled",
    "RunResult",
    "RunTimeout",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolResult",
    "ToolSource",
    "Toolkit",
    "ToolnexusError",
    "Usage",
    "__version__",
    "auth_required",
    "create_toolkit",
    "define_tool",
    "http_tool",
    "pending",
    "pending_of",
    "sanitize",
    "to_anthropic",
    "to_gemini",
    "to_openai",
    "tool",
]
