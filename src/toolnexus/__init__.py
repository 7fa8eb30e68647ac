"""toolnexus: give any LLM a working agent.

One toolkit for every tool source (MCP servers, skills, Python functions, HTTP endpoints) and
one client that runs the tool-calling loop against OpenAI-, Anthropic- or Gemini-style endpoints.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .cancel import CancelToken
from .client import Client, Conversation, create_client, create_in_process_client
from .client.options import ClientOptions, InProcessOptions
from .dialects.output import OutputMode
from .engine.hooks import AfterLLM, AfterTool, BeforeLLM, BeforeTool, Hooks
from .engine.interceptors import Interceptor, ModelCall, RunInfo, ToolExecution
from .engine.retry import ErrorInfo, parse_retry_after
from .errors import (
    AuthenticationError,
    ConfigError,
    LLMError,
    ModelRetry,
    RateLimitError,
    RunCancelled,
    RunTimeout,
    ServerError,
    StreamError,
    ToolnexusError,
)
from .events import (
    DoneEvent,
    Event,
    PendingEvent,
    TextEvent,
    ToolCallDeltaEvent,
    ToolCallEvent,
    ToolProgressEvent,
    ToolResultEvent,
    UsageEvent,
)
from .messages import (
    AnthropicBlock,
    AnthropicMessage,
    GeminiContent,
    GeminiPart,
    Message,
    OpenAIMessage,
    OpenAIToolCall,
    ResponsesItem,
    Style,
)
from .metrics_registry import MetricsRegistry
from .schemas import to_anthropic, to_gemini, to_openai
from .stores.memory import InMemoryConversationStore
from .suspension import Answer, Request, auth_required, pending, pending_of
from .toolkit import Toolkit, create_toolkit
from .tools.native import define_tool, tool
from .types import (
    ConversationStore,
    JSONObject,
    ProgressFn,
    RunResult,
    ServeHandle,
    Tool,
    ToolCall,
    ToolContext,
    ToolResult,
    ToolSource,
    Usage,
    WaitFor,
    sanitize,
)

if TYPE_CHECKING:
    from .compaction import FLUSH_REMINDER, SUMMARY_HEADER, compactor
    from .dialects.translate import TranslatedToolCall, TranslateResult
    from .stores.sqlite import SqliteConversationStore
    from .tools.a2a import RemoteAgent, agent
    from .tools.http import http_tool
    from .tools.mcp import (
        FileTokenStore,
        McpInventory,
        MemoryTokenStore,
        TokenStore,
        ToolInfo,
        list_mcp_tools,
    )
    from .tools.openapi import http_tools_from_openapi
    from .tools.skills import (
        NO_SKILLS_TEXT,
        SKILL_TOOL_DESCRIPTION,
        SKILLS_PROMPT_PREAMBLE,
        SkillDef,
        SkillInfo,
        SkillInventory,
        SkillSkip,
        list_skills,
    )

__version__ = "0.1.0"

__all__ = [
    "FLUSH_REMINDER",
    "NO_SKILLS_TEXT",
    "SKILLS_PROMPT_PREAMBLE",
    "SKILL_TOOL_DESCRIPTION",
    "SUMMARY_HEADER",
    "AfterLLM",
    "AfterTool",
    "Answer",
    "AnthropicBlock",
    "AnthropicMessage",
    "AuthenticationError",
    "BeforeLLM",
    "BeforeTool",
    "CancelToken",
    "Client",
    "ClientOptions",
    "ConfigError",
    "Conversation",
    "ConversationStore",
    "DoneEvent",
    "ErrorInfo",
    "Event",
    "FileTokenStore",
    "GeminiContent",
    "GeminiPart",
    "Hooks",
    "InMemoryConversationStore",
    "InProcessOptions",
    "Interceptor",
    "JSONObject",
    "LLMError",
    "McpInventory",
    "MemoryTokenStore",
    "Message",
    "MetricsRegistry",
    "ModelCall",
    "ModelRetry",
    "OpenAIMessage",
    "OpenAIToolCall",
    "OutputMode",
    "PendingEvent",
    "ProgressFn",
    "RateLimitError",
    "RemoteAgent",
    "Request",
    "ResponsesItem",
    "RunCancelled",
    "RunInfo",
    "RunResult",
    "RunTimeout",
    "ServeHandle",
    "ServerError",
    "SkillDef",
    "SkillInfo",
    "SkillInventory",
    "SkillSkip",
    "SqliteConversationStore",
    "StreamError",
    "Style",
    "TextEvent",
    "TokenStore",
    "Tool",
    "ToolCall",
    "ToolCallDeltaEvent",
    "ToolCallEvent",
    "ToolContext",
    "ToolExecution",
    "ToolInfo",
    "ToolProgressEvent",
    "ToolResult",
    "ToolResultEvent",
    "ToolSource",
    "Toolkit",
    "ToolnexusError",
    "TranslateResult",
    "TranslatedToolCall",
    "Usage",
    "UsageEvent",
    "WaitFor",
    "__version__",
    "agent",
    "auth_required",
    "compactor",
    "create_client",
    "create_in_process_client",
    "create_toolkit",
    "define_tool",
    "http_tool",
    "http_tools_from_openapi",
    "list_mcp_tools",
    "list_skills",
    "parse_retry_after",
    "pending",
    "pending_of",
    "sanitize",
    "to_anthropic",
    "to_gemini",
    "to_openai",
    "tool",
]


_LAZY = {
    "SqliteConversationStore": "stores.sqlite",
    **dict.fromkeys(("FLUSH_REMINDER", "SUMMARY_HEADER", "compactor"), "compaction"),
    "http_tool": "tools.http",
    **dict.fromkeys(("TranslatedToolCall", "TranslateResult"), "dialects.translate"),
    "http_tools_from_openapi": "tools.openapi",
    **dict.fromkeys(("RemoteAgent", "agent"), "tools.a2a"),
    **dict.fromkeys(
        (
            "FileTokenStore",
            "McpInventory",
            "MemoryTokenStore",
            "TokenStore",
            "ToolInfo",
            "list_mcp_tools",
        ),
        "tools.mcp",
    ),
    **dict.fromkeys(
        (
            "NO_SKILLS_TEXT",
            "SKILL_TOOL_DESCRIPTION",
            "SKILLS_PROMPT_PREAMBLE",
            "SkillDef",
            "SkillInfo",
            "SkillInventory",
            "SkillSkip",
            "list_skills",
        ),
        "tools.skills",
    ),
}
"""Names whose modules load on first use, so ``import toolnexus`` stays fast: no sqlite3, and
the MCP, skills, A2A, OpenAPI, translation, compaction and HTTP-tool modules only when asked
for (together about a fifth of the import time, as ``benchmarks/suite.py`` measures it)."""


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'toolnexus' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
