"""Remote A2A agents as a tool source: resolve their cards, expose one tool per skill, close.

An agent whose card cannot be fetched or read contributes no tools: a warning on the
``toolnexus`` logger names it, and the other agents and tool sources are unaffected.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from ...cancel import CancelToken, set_on_cancel
from ...errors import RunCancelled
from ...types import JSONObject, Tool, ToolContext, ToolResult, sanitize
from .calls import RemoteCalls
from .config import RemoteAgent
from .wire import AgentLink, AgentSkillInfo, WireError, open_link

__all__ = ["A2ASource", "task_schema"]

logger = logging.getLogger("toolnexus")


def task_schema() -> JSONObject:
    """The input schema of every A2A tool (a fresh copy): the task, in words."""
    return {"type": "object", "properties": {"task": {"type": "string"}}, "required": ["task"]}


class A2ASource:
    """The resolved agents of one toolkit; build one with ``connect``, close it with ``close``."""

    def __init__(self) -> None:
        self._links: dict[int, AgentLink] = {}
        self._tools: list[Tool] = []
        self.failures: dict[str, str] = {}
        """``{agent label: why}`` for every agent that contributes no tools."""
        self._closed = False

    @classmethod
    async def connect(
        cls, agents: Sequence[RemoteAgent], *, cancel: CancelToken | None = None
    ) -> A2ASource:
        """Resolve every agent concurrently. Never raises because of an agent.

        ``ConfigError`` when the A2A SDK is not installed; ``cancel`` aborts the load (what
        was opened is closed) with ``RunCancelled``.
        """
        source = cls()
        if not agents:
            return source
        if cancel is not None and cancel.cancelled:
            raise RunCancelled("A2A agent load cancelled")
        opens = [asyncio.ensure_future(source._open(i, spec)) for i, spec in enumerate(agents)]
        fired = asyncio.Event()
        unregister = set_on_cancel(cancel, fired)
        watcher = asyncio.ensure_future(fired.wait())
        all_open = asyncio.ensure_future(asyncio.wait(opens))
        try:
            await asyncio.wait({all_open, watcher}, return_when="FIRST_COMPLETED")
            if fired.is_set():
                raise RunCancelled("A2A agent load cancelled")
            for done in opens:
                done.result()  # a missing SDK (ConfigError) surfaces here
        except BaseException:
            for task in opens:
                task.cancel()
            await asyncio.wait(opens)
            await source.close()
            raise
        finally:
            unregister()
            watcher.cancel()
            all_open.cancel()
        source._tools = [t for _, link in sorted(source._links.items()) for t in _tools_of(link)]
        return source

    def tools(self) -> list[Tool]:
        """One tool per skill of every resolved agent, agents in the given order."""
        return list(self._tools)

    async def close(self) -> None:
        """Close every agent's HTTP client; safe to call more than once."""
        if self._closed:
            return
        self._closed = True
        links, self._links = self._links, {}
        for link in links.values():
            try:
                await link.close()
            except Exception:
                logger.debug('A2A agent "%s": closing raised', link.card_name, exc_info=True)

    async def _open(self, index: int, spec: RemoteAgent) -> None:
        try:
            if spec.problem is not None:
                raise WireError(spec.problem)
            link = await open_link(spec)
        except WireError as exc:
            self.failures[spec.label] = str(exc)
            logger.warning('A2A agent "%s" contributes no tools: %s', spec.label, exc)
            return
        if self._closed:  # the load was abandoned meanwhile
            await link.close()
            return
        self._links[index] = link
        if not link.skills:
            logger.warning('A2A agent "%s" lists no skills: it contributes no tools', spec.label)


def _tools_of(link: AgentLink) -> list[Tool]:
    calls = RemoteCalls(link)
    prefix = sanitize(link.spec.name or link.card_name)
    return [_make_tool(link, calls, prefix, skill) for skill in link.skills]


def _make_tool(link: AgentLink, calls: RemoteCalls, prefix: str, skill: AgentSkillInfo) -> Tool:
    async def execute(args: JSONObject, ctx: ToolContext | None = None) -> ToolResult:
        return await calls.call(args, ctx)

    return Tool(
        name=f"{prefix}_{sanitize(skill.id or skill.name)}",
        description=skill.description or skill.name or skill.id,
        input_schema=task_schema(),
        source="a2a",
        execute=execute,
        annotations={"agent": link.card_name, "skill": skill.id or skill.name},
    )
