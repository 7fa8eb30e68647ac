"""The ``Toolkit``: an ordered set of uniquely named tools and the resources behind them."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

from .. import schemas
from .._deprecated import renamed
from .._redact import redact, redact_exception, redact_value, secret_in
from .._text import invalid_note, valid_text, valid_value
from ..errors import ConfigError
from ..tools.threads import DEFAULT_TOOL_THREADS, ToolThreads, reset_tool_threads, use_tool_threads
from ..types import JSONObject, OnCall, ServeHandle, Tool, ToolContext, ToolResult
from .options import checked_max_output, checked_positive, checked_tools

if TYPE_CHECKING:
    from ..serve.access import AuthOption
    from ..tools.a2a.config import RemoteAgent
    from ..tools.mcp.config import McpConfig
    from ..tools.mcp.source import McpSource
    from ..tools.skills import SkillInfo, SkillSource

__all__ = ["DEFAULT_MAX_OUTPUT_CHARS", "Toolkit", "bounded_result"]

logger = logging.getLogger("toolnexus")

DEFAULT_MAX_OUTPUT_CHARS = 1_000_000
"""Longest tool output handed to the model; longer ones are cut (see ``bounded_result``)."""


class Toolkit:
    """An ordered set of uniquely named tools, plus the resources behind them.

    Build one with ``create_toolkit`` (which loads MCP servers and skills), or directly from
    tools with ``Toolkit([...])``; close it with ``await tk.aclose()`` or ``async with``.
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
        self._max_output_chars = checked_max_output(max_output_chars)
        self._threads = ToolThreads(checked_positive(max_tool_threads, "max_tool_threads"))
        self._tools: dict[str, Tool] = {}
        self.register(*checked_tools(tools, "tools"))
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
        """Append tools; a name already present is ignored with a warning. Returns ``self``.

        Anything that is not a ``Tool`` (a plain function, say) is a ``ConfigError``."""
        checked_tools(tools, "register")
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
        from ..tools.a2a.config import RemoteAgent, agent
        from ..tools.a2a.source import A2ASource

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
        ui: Mapping[str, Any] | None = None,
        auth: AuthOption = None,
        allow_unauthenticated: bool = False,
        allowed_hosts: Sequence[str] | None = None,
        allowed_origins: Sequence[str] | None = None,
        max_request_bytes: int = 4 * 1024 * 1024,
        read_timeout_s: float = 30.0,
        max_connections: int = 1000,
        max_tasks: int = 10_000,
        task_ttl_s: float = 86_400.0,
    ) -> ServeHandle:
        """Serve this toolkit over HTTP at ``addr`` (``"HOST:PORT"``, port 0 = any free port).

        With an MCP profile (``mcp={}`` exposes every tool; ``{"name", "version", "tools"}``
        narrow it; ``None`` falls back to the config's ``mcpServer`` block) the toolkit is an
        MCP server at ``/mcp`` (stateless streamable HTTP, JSON responses; ``GET`` → 405).
        Every call goes through ``execute``, exactly as in a local run (validation, secrets
        masked, output cut at ``max_output_chars``).

        With an A2A profile (``a2a={}`` for the defaults, or ``{"name", "description",
        "version", "provider", "skills", "store", "url", "streaming"}``; ``None`` falls back to
        the config's ``a2a`` block) the toolkit is an A2A agent: its card (listing the
        toolkit's skills) at ``/.well-known/agent-card.json`` and JSON-RPC at ``/``, each task
        run by ``client`` (required then). ``on_task({"id", "task", "result", "state"})``
        fires when a task completes, fails, is canceled or waits for input.

        With ``ui={}`` (options: ``{"title"}``) the toolkit is a chat agent run by ``client``
        (required then): AG-UI at ``POST /agui``, the AI SDK UI message stream at ``POST
        /api/chat``, a stored thread at ``GET /api/threads/{id}`` and the chat page at ``GET /``
        (its files under ``/static/``).

        Who may connect:

        - ``auth``: a bearer token, a list of them, or a callable ``(token) -> bool`` (sync or
          async; it may return the caller's identity as a ``str`` instead of ``True``). Every
          route but the agent card then needs ``Authorization: Bearer <token>`` (else 401 with
          ``WWW-Authenticate: Bearer``); the card declares and requires the scheme. Over A2A
          each task and context then belongs to its caller (another caller's is "not found").
        - An ``addr`` that is not loopback needs ``auth`` (else ``ConfigError`` naming it),
          unless ``allow_unauthenticated=True``, which logs a warning. Serving ``bash``
          without ``auth`` logs a warning too.
        - ``allowed_hosts`` (``"name"`` or ``"name:port"``) and ``allowed_origins``
          (``"scheme://host[:port]"``) extend the Host/Origin allow-list; loopback names and a
          specific bind's own host are always allowed, a wildcard bind's ``0.0.0.0`` never.
          Another ``Host`` → 421, another ``Origin`` → 403 (the card checks no Origin).

        Limits: bodies over ``max_request_bytes`` → 413 before parsing; a POST that is not
        ``application/json`` → 415; JSON nested deeper than 512 or not UTF-8 → a JSON-RPC
        parse error; a client whose request (headers, then body) takes longer than
        ``read_timeout_s``, or that sits idle, is disconnected; at most ``max_connections``
        open at once (more are closed at once). The A2A memory task store keeps at most
        ``max_tasks`` tasks (the oldest finished evicted first) and drops finished tasks
        after ``task_ttl_s`` seconds. With auth or on a non-loopback address a failed task
        reads ``"the agent failed (error <id>)"``, the detail logged under that id.

        Every other path answers 404. Returns once listening; ``await handle.aclose()`` closes
        the listener and leaves the toolkit open. ``on_call({"name", "source", "ms",
        "is_error"})`` fires after each executed MCP call.
        """
        from ..serve import serve_toolkit

        return await serve_toolkit(
            self,
            addr,
            mcp=mcp,
            on_call=on_call,
            client=client,
            a2a=a2a,
            on_task=on_task,
            ui=ui,
            auth=auth,
            allow_unauthenticated=allow_unauthenticated,
            allowed_hosts=allowed_hosts,
            allowed_origins=allowed_origins,
            max_request_bytes=max_request_bytes,
            read_timeout_s=read_timeout_s,
            max_connections=max_connections,
            max_tasks=max_tasks,
            task_ttl_s=task_ttl_s,
        )

    async def serve_stdio(
        self, *, mcp: Mapping[str, Any] | None = None, on_call: OnCall | None = None
    ) -> None:
        """Serve this toolkit as an MCP server on stdin/stdout; returns when stdin closes."""
        from ..serve import serve_toolkit_stdio

        await serve_toolkit_stdio(self, mcp=mcp, on_call=on_call)

    async def aclose(self) -> None:
        """End MCP sessions and stop their processes. Safe to call more than once."""
        if self._closed:
            return
        if self._mcp is not None:
            await self._mcp.close()
        for cleanup in self._on_close:
            await cleanup()
        self._threads.shutdown()
        self._closed = True

    async def close(self) -> None:
        """Deprecated alias of ``aclose``."""
        renamed("Toolkit.close()", "Toolkit.aclose()")
        await self.aclose()

    async def __aenter__(self) -> Toolkit:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"Toolkit({', '.join(self._tools)})"


def bounded_result(result: ToolResult, max_chars: int | None = None) -> ToolResult:
    """``result`` with secrets masked and its output cut to ``max_chars`` characters.

    A cut output keeps its head and ends with a line saying how much was ``truncated``;
    ``metadata["truncated"]`` is then ``True``. Without ``max_chars`` nothing is cut. Text
    that is not valid Unicode (lone surrogates, as a file name that is not UTF-8 gives) is
    made valid (``toolnexus._text``) and a last line says so.
    """
    output = result.output if isinstance(result.output, str) else str(result.output)
    metadata = result.metadata
    if max_chars is not None and len(output) > max_chars:
        dropped = len(output) - max_chars
        output = output[:max_chars] + f"\n[output truncated: {dropped} more characters]"
        metadata = {**(metadata or {}), "truncated": True}
    output, invalid = valid_text(output)
    if invalid:  # said in the output, where the model reads it
        output = f"{output}\n{invalid_note(invalid)}"
    metadata, _ = valid_value(metadata)
    if secret_in(output) or (metadata and secret_in(repr(metadata))):
        output = redact(output)
        metadata = redact_value(metadata)
    if output is result.output and metadata is result.metadata:
        return result
    return ToolResult(output, result.is_error, metadata)
