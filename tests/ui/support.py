"""Shared pieces of the UI tests: a toolkit with a plain tool and one that asks for approval."""

from __future__ import annotations

from typing import Any

from toolnexus import Request, Tool, ToolContext, ToolResult, create_toolkit, pending
from toolnexus.toolkit import Toolkit

APPROVAL = "Delete the file notes.txt?"
WEATHER_SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}}
DELETE_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}}


async def weather(args: dict[str, Any], ctx: ToolContext | None) -> ToolResult:
    return ToolResult(f"sunny in {args.get('city')}")


async def delete(args: dict[str, Any], ctx: ToolContext | None) -> ToolResult:
    """Suspends for approval; run again with the answer, it reports what it did."""
    if ctx is not None and ctx.answer is not None:
        note = (ctx.answer.data or {}).get("note", "")
        return ToolResult(f"deleted {args.get('name')}{' ' + note if note else ''}")
    return pending(Request.new("approval", APPROVAL, data={"name": args.get("name")}))


async def ask_name(args: dict[str, Any], ctx: ToolContext | None) -> ToolResult:
    """Asks a person for a value (``kind="input"``) and echoes the answer."""
    if ctx is not None and ctx.answer is not None:
        answers = (ctx.answer.data or {}).get("answers") or [""]
        return ToolResult(f"the name is {answers[0]}")
    return pending(Request.new("input", "What should the file be called?"))


async def build_toolkit() -> Toolkit:
    tools = [
        Tool("get_weather", "The weather in a city.", WEATHER_SCHEMA, "native", weather),
        Tool("delete_file", "Delete a file (asks first).", DELETE_SCHEMA, "native", delete),
        Tool("ask_name", "Ask the user for a file name.", {"type": "object"}, "native", ask_name),
    ]
    return await create_toolkit(extra_tools=tools, builtins=False)
