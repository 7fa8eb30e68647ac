"""Agents as tools: ``Agent.as_tool`` and the ``task`` tool of an agent with a team."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from ..suspension import pending
from ..types import JSONObject, Tool, ToolContext, ToolResult, sanitize
from .agent import _DEPTH, _PATH, PROMPT_SCHEMA, Agent, AgentResult, run_child
from .budget import RunTally

__all__ = ["agent_tool", "task_tool"]


def agent_tool(agent: Agent, llm: Mapping[str, Any]) -> Tool:
    """``agent`` as a tool: runs it on ``prompt``, returns only its final text."""

    async def execute(args: JSONObject, ctx: ToolContext | None = None) -> ToolResult:
        prompt = args.get("prompt")
        if not isinstance(prompt, str):
            return ToolResult(f"{agent.name}: 'prompt' must be a string", is_error=True)
        depth = _DEPTH.get() if _PATH.get() else -1  # -1: not inside another agent's run
        result = await _run_or_resume(agent, prompt, llm, depth, ctx)
        return _as_result(agent, result)

    return Tool(sanitize(agent.name), agent.does, dict(PROMPT_SCHEMA), "agent", execute)


def task_tool(parent: Agent, llm: Mapping[str, Any], tally: RunTally, *, depth: int) -> Tool:
    """The ``task`` tool of one run of ``parent``: hand a prompt to a teammate."""
    team = parent.team
    budget = parent.budget
    slots = asyncio.Semaphore(budget.max_concurrent) if budget.max_concurrent else None
    roster = "\n".join(f"- {name}: {member.does}" for name, member in team.items())
    description = (
        "Hand a task to a teammate, who works on it from a fresh start and answers with its "
        f"final text. Teammates:\n{roster}"
    )
    schema: JSONObject = {
        "type": "object",
        "properties": {
            "agent": {"type": "string", "description": "The teammate's name."},
            "prompt": {"type": "string", "description": "The task, in full."},
        },
        "required": ["agent", "prompt"],
    }

    async def execute(args: JSONObject, ctx: ToolContext | None = None) -> ToolResult:
        name, prompt = args.get("agent"), args.get("prompt")
        if not isinstance(name, str) or not isinstance(prompt, str):
            return ToolResult("task: 'agent' and 'prompt' must be strings", is_error=True)
        member = team.get(name)
        if member is None:
            return ToolResult(
                f"task: no agent named {name!r} in the team; the team is {', '.join(sorted(team))}",
                is_error=True,
            )
        resuming = ctx is not None and ctx.answer is not None
        if not resuming:
            if budget.max_children is not None and tally.children >= budget.max_children:
                return ToolResult(
                    f"task: not run, {parent.name} reached maxChildren "
                    f"({budget.max_children} sub-agents)",
                    is_error=True,
                )
            if budget.max_depth is not None and depth + 1 > budget.max_depth:
                return ToolResult(
                    f"task: not run, {name} would exceed maxDepth ({budget.max_depth})",
                    is_error=True,
                )
            tally.children += 1
        if slots is None:
            result = await _run_or_resume(member, prompt, llm, depth, ctx)
        else:
            async with slots:
                result = await _run_or_resume(member, prompt, llm, depth, ctx)
        tally.child_tokens += result.total_tokens
        return _as_result(member, result)

    return Tool("task", description, schema, "agent", execute)


async def _run_or_resume(
    child: Agent, prompt: str, llm: Mapping[str, Any], depth: int, ctx: ToolContext | None
) -> AgentResult:
    answer = ctx.answer if ctx is not None else None
    if answer is not None:
        waiting = child.waiting(answer.id)
        if waiting is not None:
            return await run_child(child, prompt, llm, depth, resume=(waiting, answer))
    return await run_child(child, prompt, llm, depth)


def _as_result(child: Agent, result: AgentResult) -> ToolResult:
    metadata: JSONObject = {
        "agent": child.name,
        "turns": result.turns,
        "totalTokens": result.total_tokens,
    }
    if result.status == "pending" and result.pending is not None:
        suspended = pending(result.pending)
        return ToolResult(suspended.output, True, {**metadata, **(suspended.metadata or {})})
    return ToolResult(result.text, result.status != "done", metadata)
