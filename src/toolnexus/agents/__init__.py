"""Sub-agents, teams and personas.

``agent(name, does=..., uses={"tools": [...]}, soul=..., team=[...], budget=Budget(...))``
makes a named agent. ``await a.run(prompt, llm={...})`` runs it on a fresh transcript and
returns an ``AgentResult`` (never raises for a failed run); ``a.as_tool(llm=...)`` makes it a
tool of another toolkit; an agent with a ``team`` gets the ``task`` tool to hand work to a
teammate. ``Budget`` bounds turns, tokens, tool calls, wall time, and sub-agents (how many, at
once, how deep). ``from_dir(folder)`` makes a persona whose soul is a folder of Markdown files.
"""

from __future__ import annotations

from .agent import HEARTBEAT_OK, HEARTBEAT_PROMPT, Agent, AgentResult, AgentStatus, agent
from .budget import Budget
from .personas import PERSONA_FILES, compose_soul, from_dir, memory_tool

__all__ = [
    "HEARTBEAT_OK",
    "HEARTBEAT_PROMPT",
    "PERSONA_FILES",
    "Agent",
    "AgentResult",
    "AgentStatus",
    "Budget",
    "agent",
    "compose_soul",
    "from_dir",
    "memory_tool",
]
