"""Helpers shared by the engine tests.

- ``client_for(stub, style, **options)``: a client whose retries wait no backoff, for the files
  that make their clients themselves (runs go through ``drive`` of ``tests/running.py``).
- ``make_tool``, ``toolkit_of``, ``Counter``, ``get_weather``: tools and toolkits.
- ``first_id``, ``call_ids``, ``results_of``, ``assert_balanced``: the stub's call ids, and
  reading tool calls and results out of a transcript in either wire style.
"""

from __future__ import annotations

from typing import Any

from toolnexus import (
    Client,
    Tool,
    ToolContext,
    Toolkit,
    ToolResult,
    create_client,
    create_toolkit,
    tool,
)
from toolnexus.testing import StubLLMServer

Message = dict[str, Any]


# --- running --------------------------------------------------------------------------------------


def client_for(stub: StubLLMServer, style: str, **options: Any) -> Client:
    """A client for ``stub`` in wire ``style``; ``options`` go to ``create_client``.

    ``model`` is ``"test-model"`` and ``api_key`` ``"test-key"``. Retries wait no backoff unless
    ``retry_base_ms`` is given, so a scripted failure costs no time.
    """
    options.setdefault("retry_base_ms", 0)
    return create_client(stub.url, style, model="test-model", api_key="test-key", **options)


# --- tools ----------------------------------------------------------------------------------------


def make_tool(name: str, execute: Any) -> Tool:
    """A native tool called ``name`` taking no arguments, run by ``execute(args, ctx)``."""
    return Tool(
        name=name,
        description=f"The {name} tool.",
        input_schema={"type": "object", "properties": {}},
        source="native",
        execute=execute,
    )


async def toolkit_of(*tools: Tool) -> Toolkit:
    """A toolkit of exactly ``tools`` (no built-ins)."""
    return await create_toolkit(extra_tools=list(tools), builtins=False)


class Counter:
    """A tool that completes at once with ``output`` and counts its executions in ``runs``."""

    def __init__(self, output: str = "noted") -> None:
        self.output = output
        self.runs = 0

    async def __call__(self, args: dict[str, Any], ctx: ToolContext | None) -> ToolResult:
        self.runs += 1
        return ToolResult(self.output)


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"sunny in {city}"


# --- transcripts ----------------------------------------------------------------------------------


def first_id(style: str, n: int = 1) -> str:
    """The id the stub gives the ``n``-th call of a reply."""
    return f"call_{n}" if style == "openai" else f"toolu_{n}"


def call_ids(message: Message, style: str) -> list[str]:
    """The ids of the tool calls an assistant message makes (none for other messages)."""
    if message.get("role") != "assistant":
        return []
    if style == "openai":
        return [c["id"] for c in message.get("tool_calls") or []]
    content = message.get("content")
    blocks = content if isinstance(content, list) else []
    return [b["id"] for b in blocks if b.get("type") == "tool_use"]


def results_of(message: Message, style: str) -> list[tuple[str, str, bool | None]]:
    """``(call id, content, is_error)`` of the tool results in one message (openai: no flag)."""
    if style == "openai":
        if message.get("role") != "tool":
            return []
        return [(message["tool_call_id"], message["content"], None)]
    content = message.get("content")
    if message.get("role") != "user" or not isinstance(content, list):
        return []
    return [
        (b["tool_use_id"], b["content"], b["is_error"])
        for b in content
        if b.get("type") == "tool_result"
    ]


def assert_balanced(messages: list[Message], style: str) -> None:
    """Every tool-calling assistant message is followed by exactly one result per call."""
    i = 0
    while i < len(messages):
        calls = call_ids(messages[i], style)
        assert not results_of(messages[i], style), f"message {i}: results without calls"
        i += 1
        if not calls:
            continue
        answered: list[str] = []
        while i < len(messages) and results_of(messages[i], style):
            answered += [r[0] for r in results_of(messages[i], style)]
            i += 1
        assert answered == calls, f"calls {calls} answered by {answered}"
