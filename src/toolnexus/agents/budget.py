"""Limits on one agent run, enforced through the loop's interceptor seam.

``Budget`` bounds what a run may spend: model round trips, tokens (its children's included),
tool calls, wall time, and how many sub-agents it may start, at once and in depth. The
``BudgetGuard`` interceptor watches every model call and tool execution of the run; when a
limit is reached it stops the run before the next model call with ``BudgetExceeded``, which
the agent turns into ``status="incomplete"`` with the limit's name, keeping the partial work.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..engine.interceptors import CallModel, ExecuteTool, Interceptor, ModelCall, ToolExecution
from ..errors import ConfigError
from ..types import JSONObject, ToolResult

__all__ = ["Budget", "BudgetExceeded", "BudgetGuard", "RunTally"]


@dataclass(frozen=True, slots=True)
class Budget:
    """What one agent run may spend; ``None`` means no limit (``max_turns`` defaults to 10).

    ``max_turns``: model round trips. ``max_tokens``: no model call starts once the run's
    tokens, its children's included, exceed it. ``max_tool_calls``: a call beyond it is not
    executed. ``max_wall_ms``: no model call or tool starts once this much time has passed
    since the run began. ``max_children``: ``task`` calls per run; ``max_concurrent``: ``task``
    calls running at once (the others wait); ``max_depth``: how many levels of sub-agents may
    sit below the top agent.
    """

    max_turns: int | None = None
    max_tokens: int | None = None
    max_tool_calls: int | None = None
    max_wall_ms: float | None = None
    max_children: int | None = None
    max_concurrent: int | None = None
    max_depth: int | None = None

    def __post_init__(self) -> None:
        for name in (
            "max_turns",
            "max_tokens",
            "max_tool_calls",
            "max_wall_ms",
            "max_children",
            "max_concurrent",
            "max_depth",
        ):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not value >= 0):
                raise ConfigError(f"Budget.{name} must be 0 or more, got {value!r}")
        if self.max_turns is not None and self.max_turns < 1:
            raise ConfigError(f"Budget.max_turns must be at least 1, got {self.max_turns!r}")
        if self.max_concurrent is not None and self.max_concurrent < 1:
            raise ConfigError(
                f"Budget.max_concurrent must be at least 1, got {self.max_concurrent!r}"
            )

    @property
    def turns(self) -> int:
        return self.max_turns if self.max_turns is not None else 10


class BudgetExceeded(Exception):
    """Raised inside a run to stop it; ``limit`` is the camelCase name of the limit."""

    def __init__(self, limit: str) -> None:
        super().__init__(f"budget limit reached: {limit}")
        self.limit = limit


@dataclass(slots=True)
class RunTally:
    """What one agent run has spent so far (children's tokens included)."""

    started: float = field(default_factory=time.monotonic)
    turns: int = 0
    own_tokens: int = 0
    child_tokens: int = 0
    tool_calls: int = 0
    children: int = 0
    last_text: str = ""
    stopped: str | None = None
    """The limit that refused a tool call; the run stops before its next model call."""

    @property
    def total_tokens(self) -> int:
        return self.own_tokens + self.child_tokens

    def elapsed_ms(self) -> float:
        return (time.monotonic() - self.started) * 1000.0


class BudgetGuard(Interceptor):
    """Enforces a ``Budget`` on the run it is installed for, counting into a ``RunTally``."""

    def __init__(self, budget: Budget, tally: RunTally) -> None:
        self.budget = budget
        self.tally = tally

    async def around_llm(self, call_next: CallModel, call: ModelCall) -> JSONObject:
        budget, tally = self.budget, self.tally
        if tally.stopped is not None:
            raise BudgetExceeded(tally.stopped)
        if budget.max_tokens is not None and tally.total_tokens > budget.max_tokens:
            raise BudgetExceeded("maxTokens")
        if budget.max_wall_ms is not None and tally.elapsed_ms() >= budget.max_wall_ms:
            raise BudgetExceeded("maxWallMs")
        reply = await call_next(call)
        turn = call.parse(reply)
        tally.turns += 1
        tally.own_tokens += turn.usage.total_tokens
        tally.last_text = turn.text or tally.last_text
        return reply

    async def around_tool(self, call_next: ExecuteTool, call: ToolExecution) -> ToolResult:
        budget, tally = self.budget, self.tally
        if call.attempt == 0:
            if budget.max_wall_ms is not None and tally.elapsed_ms() >= budget.max_wall_ms:
                tally.stopped = tally.stopped or "maxWallMs"
                return ToolResult(f"not executed: the run reached maxWallMs ({call.name})", True)
            if budget.max_tool_calls is not None and tally.tool_calls >= budget.max_tool_calls:
                tally.stopped = tally.stopped or "maxToolCalls"
                return ToolResult(
                    f"not executed: the run reached maxToolCalls ({call.name})", is_error=True
                )
            tally.tool_calls += 1
        return await call_next(call)
