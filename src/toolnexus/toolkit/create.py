"""``create_toolkit``: load every configured tool source and merge them into a ``Toolkit``."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Coroutine, Generator, Iterable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

from ..cancel import CancelToken
from ..errors import ConfigError, RunCancelled
from ..tools.threads import DEFAULT_TOOL_THREADS
from ..types import Tool, WaitFor
from .core import DEFAULT_MAX_OUTPUT_CHARS, Toolkit
from .options import (
    check_options,
    checked_dirs,
    checked_max_output,
    checked_names,
    checked_positive,
    checked_tools,
)

if TYPE_CHECKING:
    from ..tools.a2a.config import RemoteAgent
    from ..tools.a2a.source import A2ASource
    from ..tools.mcp.source import McpSource
    from ..tools.mcp.tokens import TokenStore
    from ..tools.skills import SkillDef, SkillSource

__all__ = ["ToolkitLoad", "assemble_tools", "create_toolkit"]

logger = logging.getLogger("toolnexus")

SkillProvider = Callable[[], Any]
"""A callable returning ``list[SkillDef]`` (or an awaitable of it)."""


def create_toolkit(
    mcp_config: str | os.PathLike[str] | Mapping[str, Any] | None = None,
    *,
    skills_dir: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None,
    extra_tools: Sequence[Tool] | None = None,
    builtins: bool | Mapping[str, Any] | None = None,
    wait_for: WaitFor | None = None,
    disable_tools: Iterable[str] | None = None,
    disable_skills: Iterable[str] | None = None,
    skills: Sequence[SkillDef] | None = None,
    skill_provider: SkillProvider | None = None,
    skill_filter: Mapping[str, bool] | None = None,
    sample_limit: int = 0,
    agents: Sequence[RemoteAgent | str] | None = None,
    cancel: CancelToken | None = None,
    max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
    token_store: TokenStore | None = None,
    max_tool_threads: int = DEFAULT_TOOL_THREADS,
    strict: bool = False,
) -> ToolkitLoad:
    """Load every configured tool source and merge them.

    Use it as ``tk = await create_toolkit(...)`` (then ``await tk.aclose()``), or as
    ``async with create_toolkit(...) as tk:``, which closes the toolkit on the way out.

    Order: MCP tools (config order), the ``skill`` tool, built-ins, remote A2A agents' tools
    (the config's ``agents`` block, then ``agents``), then ``extra_tools``; an
    ``extra_tools`` entry replaces the built-in of the same name; for any other clash the
    first tool wins (with a warning). A failing MCP server or a skipped ``SKILL.md`` is a
    warning on the ``toolnexus`` logger and never makes this raise (see ``tk.mcp_status()``),
    unless ``strict=True``. Any failure after the MCP servers started closes them again.

    Args:
        mcp_config: An MCP config: the path of a JSON file or an already parsed dict
            (``mcpServers``, and optional ``builtins``, ``agents``, ``mcpServer``, ``a2a``
            blocks). Its servers start concurrently with the other sources' loads.
        skills_dir: A folder (or a list of folders) searched for ``SKILL.md`` files at any
            depth.
        extra_tools: Your own ``Tool`` objects, appended last.
        builtins: ``None`` means on (unless the MCP config has a top-level ``builtins``),
            ``True``/``False``, or a dict: ``{"tools": {name: bool}}`` turns single built-ins
            off, ``{"root": DIR}`` confines the file tools to ``DIR``.
        wait_for: Answers MCP elicitations and the sign-in of servers that use OAuth.
        disable_tools: Names of tools removed from the merged set (by final name).
        disable_skills: Names of skills left out (each counts as ``False`` in
            ``skill_filter`` unless that names it already).
        skills: ``SkillDef`` data skills, after those found in ``skills_dir``.
        skill_provider: A function (sync or async) returning more ``SkillDef``s, called once
            at load; if it raises, a warning is logged and it contributes nothing.
        skill_filter: ``{name: bool}``: with any ``True`` value exactly those skills are kept,
            otherwise the ``False`` ones are dropped.
        sample_limit: How many of a skill's files the ``skill`` tool lists: ``0`` for the
            default of 10, ``-1`` for no list, or a positive count.
        agents: ``agent(...)`` descriptors or card URLs of remote A2A agents (each card skill
            becomes a tool); one that cannot be resolved contributes no tools, with a warning.
        cancel: A ``CancelToken`` that aborts the load with ``RunCancelled`` after closing
            whatever was connected.
        max_output_chars: A tool output longer than this is cut, says ``truncated`` and has
            ``metadata["truncated"]``.
        token_store: Keeps the OAuth tokens of MCP servers (``MemoryTokenStore`` by default,
            ``FileTokenStore`` or any ``TokenStore``).
        max_tool_threads: The size of the toolkit's own pool of threads that sync tool
            functions run in.
        strict: Raise instead of warning when any server failed, any skill file was skipped
            as broken, a skills folder is missing or ``skill_provider`` raised; the
            ``ConfigError`` lists every problem (after closing what was connected).

    Returns:
        The load: awaiting it (or entering it) gives the ``Toolkit``.

    Raises:
        ConfigError: An option of the wrong kind (named, before any file is read or server
            started), an invalid MCP config, or an incomplete load with ``strict=True``.
        RunCancelled: ``cancel`` was set during the load.
    """
    return ToolkitLoad(
        _load(
            mcp_config,
            skills_dir=skills_dir,
            extra_tools=extra_tools,
            builtins=builtins,
            wait_for=wait_for,
            disable_tools=disable_tools,
            disable_skills=disable_skills,
            skills=skills,
            skill_provider=skill_provider,
            skill_filter=skill_filter,
            sample_limit=sample_limit,
            agents=agents,
            cancel=cancel,
            max_output_chars=max_output_chars,
            token_store=token_store,
            max_tool_threads=max_tool_threads,
            strict=strict,
        )
    )


class ToolkitLoad(Coroutine[Any, Any, Toolkit]):
    """A ``create_toolkit`` call under way: awaitable, and an async context manager.

    ``await`` it for the ``Toolkit``; ``async with`` it to get the toolkit and have it closed
    on the way out (``async with await create_toolkit(...)`` works too).
    """

    __slots__ = ("_load", "_toolkit")

    def __init__(self, load: Coroutine[Any, Any, Toolkit]) -> None:
        self._load = load
        self._toolkit: Toolkit | None = None

    def send(self, value: Any) -> Any:
        return self._load.send(value)

    def throw(self, *args: Any) -> Any:
        return self._load.throw(*args)

    def close(self) -> None:
        self._load.close()

    def __await__(self) -> Generator[Any, None, Toolkit]:
        return self._load.__await__()

    async def __aenter__(self) -> Toolkit:
        self._toolkit = await self._load
        return self._toolkit

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._toolkit is not None:
            await self._toolkit.aclose()


async def _load(
    mcp_config: str | os.PathLike[str] | Mapping[str, Any] | None,
    *,
    skills_dir: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None,
    extra_tools: Sequence[Tool] | None,
    builtins: bool | Mapping[str, Any] | None,
    wait_for: WaitFor | None,
    disable_tools: Iterable[str] | None,
    disable_skills: Iterable[str] | None,
    skills: Sequence[SkillDef] | None,
    skill_provider: SkillProvider | None,
    skill_filter: Mapping[str, bool] | None,
    sample_limit: int,
    agents: Sequence[RemoteAgent | str] | None,
    cancel: CancelToken | None,
    max_output_chars: int,
    token_store: TokenStore | None,
    max_tool_threads: int,
    strict: bool,
) -> Toolkit:
    """The work of ``create_toolkit``."""
    from ..tools.a2a.config import checked_agents
    from ..tools.skills import load_skills, validate_sample_limit

    check_options(
        mcp_config=mcp_config,
        builtins=builtins,
        skill_filter=skill_filter,
        skills=skills,
        cancel=cancel,
        token_store=token_store,
        strict=strict,
        wait_for=wait_for,
        skill_provider=skill_provider,
    )
    skills_dir = checked_dirs(skills_dir, "skills_dir")
    disabled_tools = checked_names(disable_tools, "disable_tools")
    disabled_skills = checked_names(disable_skills, "disable_skills")
    validate_sample_limit(sample_limit)
    checked_max_output(max_output_chars)
    checked_positive(max_tool_threads, "max_tool_threads")
    extra = checked_tools(extra_tools, "extra_tools")
    remote = checked_agents(agents)
    if cancel is not None and cancel.cancelled:
        raise RunCancelled("toolkit load cancelled")

    config = None
    if mcp_config is not None:
        from ..tools.mcp.config import load_mcp_config

        if isinstance(mcp_config, Mapping):
            config = load_mcp_config(mcp_config)
        else:  # reading the file is blocking I/O: keep it off the event loop
            config = await asyncio.to_thread(load_mcp_config, mcp_config)
        if builtins is None and config.builtins is not None:
            builtins = config.builtins
    from ..tools.builtin import builtin_scope, builtin_tools, select_builtins

    scope = builtin_scope(builtins)
    builtin = select_builtins(builtins, builtin_tools(scope))

    skill_source_given = skills_dir is not None or skills is not None or skill_provider is not None

    async def load_skill_source() -> SkillSource | None:
        if not skill_source_given:
            return None
        return await load_skills(
            skills_dir=skills_dir,
            skills=skills,
            skill_provider=skill_provider,
            skill_filter=skill_filter,
            disable_skills=disabled_skills,
            sample_limit=sample_limit,
        )

    async def load_mcp() -> McpSource | None:
        if config is None:
            return None
        from ..tools.mcp.source import McpSource

        return await McpSource.connect(
            config, cancel=cancel, wait_for=wait_for, token_store=token_store
        )

    async def load_agents() -> A2ASource | None:
        every = [*(config.agents if config is not None else ()), *remote]
        if not every:
            return None
        from ..tools.a2a.source import A2ASource

        return await A2ASource.connect(every, cancel=cancel)

    skill_source, mcp_source, a2a_source = await _gather_or_close(
        load_skill_source(), load_mcp(), load_agents()
    )
    closers = [scope.close, *([a2a_source.close] if a2a_source is not None else [])]
    try:
        if strict:
            _raise_on_problems(skill_source, mcp_source, a2a_source)
        tools = assemble_tools(
            mcp=mcp_source.tools() if mcp_source is not None else (),
            skill=skill_source.tool if skill_source is not None else None,
            builtins=builtin,
            a2a=a2a_source.tools() if a2a_source is not None else (),
            extra=extra,
            disable=disabled_tools,
        )
        return Toolkit(
            tools,
            skills=skill_source,
            mcp=mcp_source,
            config=config,
            max_output_chars=max_output_chars,
            max_tool_threads=max_tool_threads,
            on_close=closers,
        )
    except BaseException:  # close what the toolkit would have closed
        if mcp_source is not None:
            await mcp_source.close()
        for close in closers:
            await close()
        raise


def _raise_on_problems(
    skills: SkillSource | None, mcp: McpSource | None, a2a: A2ASource | None
) -> None:
    """``ConfigError`` listing what failed to load (``strict=True``)."""
    problems = list(skills.problems) if skills is not None else []
    if mcp is not None:
        problems += [f'MCP server "{n}" failed: {why}' for n, why in mcp.failures().items()]
    if a2a is not None:
        problems += [f'A2A agent "{n}" failed: {why}' for n, why in a2a.failures.items()]
    if problems:
        raise ConfigError(
            f"the toolkit did not load completely (strict=True): {'; '.join(problems)}"
        )


async def _gather_or_close(
    skills_load: Coroutine[Any, Any, SkillSource | None],
    mcp_load: Coroutine[Any, Any, McpSource | None],
    a2a_load: Coroutine[Any, Any, A2ASource | None],
) -> tuple[SkillSource | None, McpSource | None, A2ASource | None]:
    """Run the loads concurrently; if any fails, close what the others connected."""
    skills, mcp, a2a = await asyncio.gather(skills_load, mcp_load, a2a_load, return_exceptions=True)
    failure = next((r for r in (skills, mcp, a2a) if isinstance(r, BaseException)), None)
    if failure is not None:
        for opened in (mcp, a2a):
            if opened is not None and not isinstance(opened, BaseException):
                await opened.close()
        raise failure
    assert not isinstance(skills, BaseException)
    assert not isinstance(mcp, BaseException)
    assert not isinstance(a2a, BaseException)
    return skills, mcp, a2a


def assemble_tools(
    *,
    mcp: Sequence[Tool] = (),
    skill: Tool | None = None,
    builtins: Sequence[Tool] = (),
    a2a: Sequence[Tool] = (),
    extra: Sequence[Tool] = (),
    disable: Iterable[str] = (),
) -> list[Tool]:
    """Merge tool sources in the toolkit's order.

    1. built-ins shadowed by an ``extra`` tool of the same name are dropped;
    2. concatenate MCP → ``skill`` → built-ins → A2A → extra;
    3. drop names listed in ``disable``;
    4. keep the first tool of each name, warning about the later ones.
    """
    extra_names = {t.name for t in extra}
    disabled = set(disable)
    ordered = [
        *mcp,
        *([skill] if skill is not None else []),
        *(t for t in builtins if t.name not in extra_names),
        *a2a,
        *extra,
    ]
    out: dict[str, Tool] = {}
    for t in ordered:
        if t.name in disabled:
            continue
        if t.name in out:
            logger.warning(
                "duplicate tool name %r: keeping the %s tool, dropping the %s one",
                t.name,
                out[t.name].source,
                t.source,
            )
            continue
        out[t.name] = t
    return list(out.values())
