"""The toolkit: every tool source merged into one ordered, de-duplicated set."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

from . import schemas
from ._redact import redact, redact_exception, redact_value, secret_in
from ._toolkit_options import (
    check_kinds,
    checked_dirs,
    checked_names,
    checked_positive,
    checked_tools,
)
from .cancel import CancelToken
from .errors import ConfigError, RunCancelled
from .tools.threads import DEFAULT_TOOL_THREADS, ToolThreads, reset_tool_threads, use_tool_threads
from .types import JSONObject, Tool, ToolContext, ToolResult

if TYPE_CHECKING:
    from .serve import ServeHandle
    from .serve.mcp_server import OnCall
    from .tools.a2a.config import RemoteAgent
    from .tools.a2a.source import A2ASource
    from .tools.mcp.config import McpConfig
    from .tools.mcp.source import McpSource
    from .tools.mcp.tokens import TokenStore
    from .tools.skills import SkillDef, SkillInfo, SkillSource

__all__ = [
    "DEFAULT_MAX_OUTPUT_CHARS",
    "Toolkit",
    "assemble_tools",
    "bounded_result",
    "create_toolkit",
]

logger = logging.getLogger("toolnexus")

DEFAULT_MAX_OUTPUT_CHARS = 1_000_000
"""Longest tool output handed to the model; longer ones are cut (see ``bounded_result``)."""

SkillProvider = Callable[[], Any]
"""A callable returning ``list[SkillDef]`` (or an awaitable of it)."""


class Toolkit:
    """An ordered set of uniquely named tools, plus the resources behind them.

    Build one with ``create_toolkit`` (which loads MCP servers and skills), or directly from
    tools with ``Toolkit([...])``; close it with ``await tk.close()`` or ``async with``.
    ``on_close`` callbacks run at close (the built-ins kill their running processes there).
    """

    def __init__(
        self,
        tools: Iterable[Tool] = (),
        *,
        skills: SkillSource | None = None,
        mcp: McpSource | None = None,
        config: McpConfig | None = None,
        max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
        max_tool_threads: int = DEFAULT_TOOL_THREADS,
        on_close: Sequence[Callable[[], Awaitable[None]]] = (),
    ) -> None:
        self._on_close = list(on_close)
        self._max_output_chars = _checked_max_output(max_output_chars)
        self._threads = ToolThreads(checked_positive(max_tool_threads, "max_tool_threads"))
        self._tools: dict[str, Tool] = {}
        self.register(*tools)
        self._skills = skills
        self._mcp = mcp
        self._config = config
        self._closed = False

    @property
    def config(self) -> McpConfig | None:
        """The parsed MCP config this toolkit was built from, if any (with its sibling blocks)."""
        return self._config

    def tools(self) -> list[Tool]:
        """Every tool, in the order the model sees them."""
        return list(self._tools.values())

    def running_after_cancel(self) -> list[str]:
        """Names of sync tools whose calls were cancelled but whose threads still run."""
        return self._threads.abandoned()

    @property
    def max_output_chars(self) -> int:
        """Longest output a tool call hands back; longer ones are cut (``truncated``)."""
        return self._max_output_chars

    def get(self, name: str) -> Tool | None:
        """The tool named ``name``, or ``None``."""
        return self._tools.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def register(self, *tools: Tool) -> Toolkit:
        """Append tools; a name already present is ignored with a warning. Returns ``self``."""
        for t in tools:
            if t.name in self._tools:
                logger.warning("tool %r is already registered; the new one is ignored", t.name)
            else:
                self._tools[t.name] = t
        return self

    async def execute(
        self, name: str, args: JSONObject | None = None, ctx: ToolContext | None = None
    ) -> ToolResult:
        """Run one tool. Failures come back as error results; cancellation propagates.

        The output is redacted (secrets become ``***``) and cut to ``max_output_chars``.
        """
        found = self._tools.get(name)
        if found is None:
            return ToolResult(f"Unknown tool: {name}", is_error=True)
        token = use_tool_threads(self._threads)  # sync tools run in this toolkit's own pool
        try:
            result = await found.execute(args if args is not None else {}, ctx)
        except Exception as exc:
            redact_exception(exc)  # the traceback is logged: no secret in its text
            logger.debug("tool %r raised; the model sees its message", name, exc_info=True)
            result = ToolResult(str(exc) or type(exc).__name__, is_error=True)
        finally:
            reset_tool_threads(token)
        return bounded_result(result, self._max_output_chars)

    def skills(self) -> list[SkillInfo]:
        """The toolkit's skills, in load order (``[]`` without a skill source)."""
        return self._skills.skills if self._skills is not None else []

    def skills_prompt(self) -> str:
        """The system-prompt section listing the skills, or ``""`` without a skill source."""
        return self._skills.prompt() if self._skills is not None else ""

    def mcp_status(self) -> dict[str, str]:
        """``{server: "connected" | "failed" | "disabled"}`` for every configured MCP server."""
        return self._mcp.status() if self._mcp is not None else {}

    def to_openai(self) -> list[JSONObject]:
        """The tools as OpenAI chat-completions ``tools`` entries."""
        return schemas.to_openai(self.tools())

    def to_anthropic(self) -> list[JSONObject]:
        """The tools as Anthropic messages ``tools`` entries."""
        return schemas.to_anthropic(self.tools())

    def to_gemini(self) -> list[JSONObject]:
        """The tools as Gemini ``functionDeclarations`` (``[]`` without tools)."""
        return schemas.to_gemini(self.tools())

    async def add_agent(
        self, agent_or_card_url: RemoteAgent | str, **agent_options: Any
    ) -> list[Tool]:
        """Resolve one more remote A2A agent and append its tools (as ``register`` does).

        ``agent_or_card_url`` is an ``agent(...)`` descriptor or a card URL; ``agent_options``
        (``headers``, ``timeout``, ``poll_every``, ``name``: those of ``agent``) override the
        descriptor's. Returns the tools added: none when the agent could not be resolved (a
        warning names it) or its names were taken. Its HTTP client closes with the toolkit.
        """
        from .tools.a2a.config import RemoteAgent, agent
        from .tools.a2a.source import A2ASource

        if isinstance(agent_or_card_url, RemoteAgent):
            given = agent_or_card_url
            options: dict[str, Any] = {
                "headers": given.headers,
                "timeout": given.timeout,
                "poll_every": given.poll_every,
                "name": given.name,
            }
            url = given.card_url
        elif isinstance(agent_or_card_url, str):
            options, url = {}, agent_or_card_url
        else:
            raise ConfigError(
                "add_agent takes an agent(...) descriptor or a card URL, "
                f"not {type(agent_or_card_url).__name__}"
            )
        unknown = sorted(set(agent_options) - {"headers", "timeout", "poll_every", "name"})
        if unknown:
            raise ConfigError(f"add_agent got unknown options: {', '.join(unknown)}")
        spec = agent(url, **{**options, **agent_options})
        source = await A2ASource.connect([spec])
        self._on_close.append(source.close)
        added = [t for t in source.tools() if t.name not in self._tools]
        self.register(*source.tools())
        return added

    async def serve(
        self,
        addr: str,
        *,
        mcp: Mapping[str, Any] | None = None,
        on_call: OnCall | None = None,
        client: object | None = None,
        a2a: Mapping[str, Any] | None = None,
        on_task: Callable[..., Any] | None = None,
    ) -> ServeHandle:
        """Serve this toolkit over HTTP at ``addr`` (``"HOST:PORT"``, port 0 = any free port).

        With an MCP profile (``mcp={}`` exposes every tool; ``{"name", "version", "tools"}``
        narrow it; ``None`` falls back to the config's ``mcpServer`` block) the toolkit is an
        MCP server at ``/mcp`` (stateless streamable HTTP, JSON responses).

        With an A2A profile (``a2a={}`` for the defaults, or ``{"name", "description",
        "version", "provider", "skills", "store", "url", "streaming"}``; ``None`` falls back to
        the config's ``a2a`` block) the toolkit is an A2A agent: its card (listing the
        toolkit's skills) at ``/.well-known/agent-card.json`` and JSON-RPC at ``/``, each task
        run by ``client`` (required then). ``on_task({"id", "task", "result", "state"})``
        fires when a task completes, fails, is canceled or waits for input.

        Every other path answers 404. Returns once listening; ``await handle.stop()`` closes
        the listener and leaves the toolkit open. ``on_call({"name", "source", "ms",
        "is_error"})`` fires after each executed MCP call.
        """
        from .serve import serve_toolkit

        return await serve_toolkit(
            self, addr, mcp=mcp, on_call=on_call, client=client, a2a=a2a, on_task=on_task
        )

    async def serve_stdio(
        self, *, mcp: Mapping[str, Any] | None = None, on_call: OnCall | None = None
    ) -> None:
        """Serve this toolkit as an MCP server on stdin/stdout; returns when stdin closes."""
        from .serve import serve_toolkit_stdio

        await serve_toolkit_stdio(self, mcp=mcp, on_call=on_call)

    async def close(self) -> None:
        """End MCP sessions and stop their processes. Safe to call more than once."""
        if self._closed:
            return
        if self._mcp is not None:
            await self._mcp.close()
        for cleanup in self._on_close:
            await cleanup()
        self._threads.shutdown()
        self._closed = True

    async def __aenter__(self) -> Toolkit:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"Toolkit({', '.join(self._tools)})"


async def create_toolkit(
    mcp_config: str | os.PathLike[str] | Mapping[str, Any] | None = None,
    skills_dir: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None,
    extra_tools: Sequence[Tool] | None = None,
    builtins: bool | Mapping[str, Any] | None = None,
    wait_for: Callable[..., Any] | None = None,
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
) -> Toolkit:
    """Load every configured tool source and merge them.

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

    Raises:
        ConfigError: An option of the wrong kind (named, before any file is read or server
            started), an invalid MCP config, or an incomplete load with ``strict=True``.
        RunCancelled: ``cancel`` was set during the load.
    """
    from .tools.a2a.config import checked_agents
    from .tools.skills import load_skills, validate_sample_limit

    check_kinds(
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
    _checked_max_output(max_output_chars)
    checked_positive(max_tool_threads, "max_tool_threads")
    extra = checked_tools(extra_tools, "extra_tools")
    remote = checked_agents(agents)
    if cancel is not None and cancel.cancelled:
        raise RunCancelled("toolkit load cancelled")

    config = None
    if mcp_config is not None:
        from .tools.mcp.config import load_mcp_config

        if isinstance(mcp_config, Mapping):
            config = load_mcp_config(mcp_config)
        else:  # reading the file is blocking I/O: keep it off the event loop
            config = await asyncio.to_thread(load_mcp_config, mcp_config)
        if builtins is None and config.builtins is not None:
            builtins = config.builtins
    from .tools.builtin import builtin_scope, builtin_tools, select_builtins

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
        from .tools.mcp.source import McpSource

        return await McpSource.connect(
            config, cancel=cancel, wait_for=wait_for, token_store=token_store
        )

    async def load_agents() -> A2ASource | None:
        every = [*(config.agents if config is not None else ()), *remote]
        if not every:
            return None
        from .tools.a2a.source import A2ASource

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


def bounded_result(result: ToolResult, max_chars: int | None = None) -> ToolResult:
    """``result`` with secrets masked and its output cut to ``max_chars`` characters.

    A cut output keeps its head and ends with a line saying how much was ``truncated``;
    ``metadata["truncated"]`` is then ``True``. Without ``max_chars`` nothing is cut.
    """
    output = result.output if isinstance(result.output, str) else str(result.output)
    metadata = result.metadata
    if max_chars is not None and len(output) > max_chars:
        dropped = len(output) - max_chars
        output = output[:max_chars] + f"\n[output truncated: {dropped} more characters]"
        metadata = {**(metadata or {}), "truncated": True}
    if secret_in(output) or (metadata and secret_in(repr(metadata))):
        output = redact(output)
        metadata = redact_value(metadata)
    if output is result.output and metadata is result.metadata:
        return result
    return ToolResult(output, result.is_error, metadata)


def _checked_max_output(value: object) -> int:
    return checked_positive(value, "max_output_chars")


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
