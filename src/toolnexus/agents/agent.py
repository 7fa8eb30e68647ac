"""``agent(...)``: a named, bounded agent that runs on its own, as a tool, or in a team."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..cancel import CancelToken
from ..client import Client, create_client, create_in_process_client
from ..dialects.output import OutputMode
from ..engine.hooks import Hooks
from ..engine.output import output_options
from ..errors import ConfigError, RunCancelled, RunTimeout
from ..messages import Message
from ..metrics import MetricSink
from ..suspension import Answer, Request
from ..toolkit import Toolkit
from ..types import JSONObject, RunResult, Tool
from .budget import Budget, BudgetExceeded, BudgetGuard, RunTally

__all__ = ["HEARTBEAT_OK", "HEARTBEAT_PROMPT", "Agent", "AgentResult", "AgentStatus", "agent"]

AgentStatus = Literal["done", "pending", "incomplete", "interrupted", "closed", "timeout", "error"]
"""How an agent run ended: ``done``; ``pending`` (waits for a human); ``incomplete`` (a budget
limit, named in ``limit``); ``interrupted`` (cancelled); ``closed`` (the agent was closed);
``timeout`` (the client's ``timeout_ms``); ``error`` (the text says what failed)."""

PROMPT_SCHEMA: JSONObject = {
    "type": "object",
    "properties": {"prompt": {"type": "string"}},
    "required": ["prompt"],
}

HEARTBEAT_OK = "HEARTBEAT_OK"
"""The whole reply of a heartbeat with nothing to report."""
HEARTBEAT_PROMPT = (
    "Heartbeat: check whether anything needs your attention now (see HEARTBEAT.md if you "
    f"have one). If nothing does, reply exactly {HEARTBEAT_OK}."
)

_DEPTH: contextvars.ContextVar[int] = contextvars.ContextVar("toolnexus_agent_depth", default=0)
"""How many agents sit above the one running in this context (0 for the top agent)."""
_PATH: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar(
    "toolnexus_agent_path", default=()
)


@dataclass(frozen=True, slots=True)
class AgentResult:
    """The outcome of one agent run. Failures are results (``status="error"``), not raises."""

    text: str
    status: AgentStatus
    turns: int
    """The agent's own model round trips."""
    total_tokens: int
    """Its tokens plus its sub-agents'."""
    limit: str | None = None
    pending: Request | None = None
    """For ``pending``: the request, with ``data["path"]`` naming the agents down to it."""
    output: Any = None
    """With ``output_type``: the validated answer (``None`` otherwise, or when the run did not
    end ``done``)."""


@dataclass(slots=True)
class _Halted:
    """A run that waits for an answer, kept so that the answer can resume it."""

    request: Request
    messages: list[Message]
    llm: Mapping[str, Any]
    output: Mapping[str, Any]
    """The structured-output options of the halted run (the resume keeps them)."""


class Agent:
    """A named agent: its soul (system prompt), tools, team and budget. See ``agent(...)``."""

    def __init__(
        self,
        name: str,
        *,
        does: str,
        tools: Sequence[Tool] = (),
        soul: str | Callable[[], str] = "",
        team: Sequence[Agent] = (),
        budget: Budget | None = None,
        model: str = "inherit",
        wait_for: Callable[[Request], Any] | None = None,
        hooks: Hooks | Mapping[str, Any] | None = None,
        on_metric: MetricSink | None = None,
    ) -> None:
        self.name = name
        self.does = does
        self.tools = list(tools)
        self.team = {member.name: member for member in team}
        self.budget = budget or Budget()
        self.model = model
        self.wait_for = wait_for
        self.hooks = hooks
        self.on_metric = on_metric
        self._soul = soul
        self._halted: dict[str, _Halted] = {}
        self._running: set[CancelToken] = set()
        self._closed = False

    def soul(self) -> str:
        """The system prompt of a run starting now."""
        return self._soul() if callable(self._soul) else self._soul

    def set_soul(self, soul: str | Callable[[], str]) -> None:
        """Replace the system prompt: a text, or a function read at the start of each run."""
        self._soul = soul

    async def heartbeat(
        self, *, llm: Mapping[str, Any], prompt: str | None = None
    ) -> AgentResult | None:
        """A scheduled check-in: ``None`` when the agent answers exactly ``HEARTBEAT_OK``.

        The host calls it periodically; the agent reads its ``HEARTBEAT.md`` (for a persona)
        and either acts and reports, or stays silent.
        """
        result = await self.run(prompt or HEARTBEAT_PROMPT, llm=llm)
        if result.status == "done" and result.text.strip() == HEARTBEAT_OK:
            return None
        return result

    async def run(
        self,
        prompt: str,
        *,
        llm: Mapping[str, Any],
        cancel: CancelToken | None = None,
        output_type: Any = None,
        output_mode: OutputMode | None = None,
        output_retries: int = 2,
        output_validator: Callable[[Any], Any] | None = None,
    ) -> AgentResult:
        """Run on ``prompt`` from a fresh transcript. ``llm`` holds ``create_client`` options
        (``base_url``, ``style``, ``model``, ``api_key``, …; or ``generate`` for an in-process
        model). Never raises for a failed run: the status and text say what happened.
        ``output_type`` and the other ``output_*`` options are those of ``Client.run``: the
        validated answer is ``AgentResult.output`` (a bad option is a ``ConfigError``)."""
        output = {
            "output_type": output_type,
            "output_mode": output_mode,
            "output_retries": output_retries,
            "output_validator": output_validator,
        }
        if output_type is not None:
            output_options(
                output_type,
                output_mode,
                output_retries,
                output_validator,
                default_mode=None,
                style=str(llm.get("style") or "openai"),
            )
        result, _ = await self._run(prompt, llm, cancel, resume=None, output=output)
        return result

    async def resume(
        self,
        pending: Request,
        answer: Answer,
        *,
        llm: Mapping[str, Any],
        cancel: CancelToken | None = None,
    ) -> AgentResult:
        """Continue a run of this agent that ended ``pending``, given the host's answer.

        The request is taken before anything runs, so a second resume of it (or a concurrent
        one) is a ``ConfigError``, as with ``Client.resume``. When the resumed run fails
        before it returns (status ``error``, ``timeout``, ``interrupted``, ``closed`` or
        ``incomplete``), the request waits for an answer again.
        """
        halted = self._halted.pop(pending.id, None)
        if halted is None:
            raise ConfigError(
                f"{self.name}: no run waits for request {pending.id!r} (it was answered "
                f"already, is being answered right now, or never halted here)"
            )
        finished = False
        try:
            result, finished = await self._run(
                "", llm, cancel, resume=(halted, answer), output=halted.output
            )
        finally:
            if not finished:
                self._halted.setdefault(pending.id, halted)
        return result

    def waiting(self, request_id: str) -> Request | None:
        """The request a halted run of this agent waits on, by id (``None`` if none does)."""
        halted = self._halted.get(request_id)
        return halted.request if halted is not None else None

    def as_tool(self, *, llm: Mapping[str, Any]) -> Tool:
        """This agent as a tool named after it: ``{prompt}`` in, its final text out."""
        from .team import agent_tool

        return agent_tool(self, llm)

    async def aclose(self) -> None:
        """Close the agent: runs in flight end ``closed``, later runs too."""
        self._closed = True
        for token in list(self._running):
            token.cancel()

    async def _run(
        self,
        prompt: str,
        llm: Mapping[str, Any],
        cancel: CancelToken | None,
        resume: tuple[_Halted, Answer] | None,
        output: Mapping[str, Any] | None = None,
    ) -> tuple[AgentResult, bool]:
        """The result, and whether the client's run returned (``False``: it raised, and the
        result says why)."""
        tally = RunTally()
        output = output or {}
        if self._closed:
            return AgentResult(f"{self.name} is closed", "closed", 0, 0), False
        token = CancelToken()
        # Watch the caller's token only while this run lasts: a long-lived token used for
        # many runs must not collect one callback per run.
        unwatch = cancel.on_cancel(token.cancel) if cancel is not None else None
        self._running.add(token)
        path = _PATH.set((*_PATH.get(), self.name))
        try:
            soul = await asyncio.to_thread(self._soul) if callable(self._soul) else self._soul
            client = self._client(llm, tally, soul)
            toolkit = Toolkit([*self.tools, *self._team_tools(llm, tally)])
            try:
                if resume is None:
                    result = await client.run(prompt, toolkit, cancel=token, **output)
                else:
                    halted, answer = resume
                    result = await client.run_with_answer(
                        halted.request,
                        answer,
                        toolkit,
                        history=halted.messages,
                        cancel=token,
                        **output,
                    )
            finally:
                await client.aclose()
        except BudgetExceeded as stop:
            return AgentResult(
                tally.last_text, "incomplete", tally.turns, tally.total_tokens, stop.limit
            ), False
        except RunCancelled:
            status: AgentStatus = "closed" if self._closed else "interrupted"
            text = f"{self.name} was {status}"
            return AgentResult(text, status, tally.turns, tally.total_tokens), False
        except RunTimeout as exc:
            text = str(exc) or "timed out"
            return AgentResult(text, "timeout", tally.turns, tally.total_tokens), False
        except Exception as exc:
            text = (
                f"{self.name} failed: {exc}"
                if str(exc)
                else f"{self.name} failed: {type(exc).__name__}"
            )
            return AgentResult(text, "error", tally.turns, tally.total_tokens), False
        finally:
            _PATH.reset(path)
            self._running.discard(token)
            if unwatch is not None:
                unwatch()
        return self._result(result, tally, llm, output), True

    def _result(
        self,
        result: RunResult,
        tally: RunTally,
        llm: Mapping[str, Any],
        output: Mapping[str, Any],
    ) -> AgentResult:
        total = result.usage.total_tokens + tally.child_tokens
        if result.status != "pending" or result.pending is None:
            return AgentResult(
                result.text, result.status, result.turns, total, result.limit, output=result.output
            )
        inner = result.pending
        self._halted[inner.id] = _Halted(inner, result.messages, llm, output)
        below = (inner.data or {}).get("path")
        path = [self.name, *(below if isinstance(below, list) else [])]
        data = {**(inner.data or {}), "path": path}
        data.pop("toolCallId", None)
        surfaced = Request(inner.id, inner.kind, inner.prompt, inner.url, data, inner.expires_at)
        return AgentResult(result.text, "pending", result.turns, total, pending=surfaced)

    def _client(self, llm: Mapping[str, Any], tally: RunTally, soul: str) -> Client:
        options = dict(llm)
        if self.model != "inherit":
            options["model"] = self.model
        options.update(
            system_prompt=soul or None,
            max_turns=self.budget.turns,
            hooks=self.hooks,
            wait_for=self.wait_for,
            on_metric=self.on_metric,
        )
        if "generate" in options:
            client = create_in_process_client(**options)
        else:
            base_url = options.pop("base_url", None)
            if not base_url:
                raise ConfigError(f"{self.name}: llm needs a base_url (or a generate function)")
            client = create_client(base_url, **options)
        client.add_interceptor(BudgetGuard(self.budget, tally))
        return client

    def _team_tools(self, llm: Mapping[str, Any], tally: RunTally) -> list[Tool]:
        if not self.team:
            return []
        from .team import task_tool

        return [task_tool(self, llm, tally, depth=_DEPTH.get())]

    def __repr__(self) -> str:
        return f"Agent(name={self.name!r}, does={self.does!r})"


def agent(
    name: str,
    *,
    does: str,
    uses: Mapping[str, Any] | None = None,
    soul: str | None = None,
    soul_file: str | Path | None = None,
    team: Sequence[Agent] | None = None,
    budget: Budget | None = None,
    model: str = "inherit",
    wait_for: Callable[[Request], Any] | None = None,
    hooks: Hooks | Mapping[str, Any] | None = None,
    on_metric: MetricSink | None = None,
) -> Agent:
    """A named agent. ``does`` says what it is for (its description as a tool or teammate);
    ``uses={"tools": [...]}`` are its own tools; its system prompt is ``soul`` or the text of
    ``soul_file``; ``team`` lists the agents it may hand work to through the ``task`` tool;
    ``budget`` bounds each run; ``model="inherit"`` takes the model of the ``llm`` options."""
    if not isinstance(name, str) or not name:
        raise ConfigError("agent: name must be a non-empty string")
    if soul is not None and soul_file is not None:
        raise ConfigError(f"agent {name!r}: give soul or soul_file, not both")
    unknown = set(uses or {}) - {"tools"}
    if unknown:
        raise ConfigError(f"agent {name!r}: uses takes only 'tools', not {sorted(unknown)}")
    tools = list((uses or {}).get("tools") or [])
    for item in tools:
        if not isinstance(item, Tool):
            raise ConfigError(
                f"agent {name!r}: uses['tools'] holds a {type(item).__name__}, not a Tool"
            )
    text = soul or ""
    if soul_file is not None:
        try:
            text = Path(soul_file).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"agent {name!r}: cannot read soul_file {soul_file}: {exc}") from None
    return Agent(
        name,
        does=does,
        tools=tools,
        soul=text,
        team=list(team or []),
        budget=budget,
        model=model,
        wait_for=wait_for,
        hooks=hooks,
        on_metric=on_metric,
    )


async def run_child(
    child: Agent,
    prompt: str,
    llm: Mapping[str, Any],
    depth: int,
    resume: tuple[Request, Answer] | None = None,
) -> AgentResult:
    """Run ``child`` one level below ``depth``."""
    level = _DEPTH.set(depth + 1)
    try:
        if resume is not None:
            return await child.resume(resume[0], resume[1], llm=llm)
        return await child.run(prompt, llm=llm)
    finally:
        _DEPTH.reset(level)
