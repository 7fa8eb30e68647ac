"""The client: one provider endpoint, one model, and the agent loop around it."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncGenerator, Callable, Coroutine, Mapping, Sequence
from contextlib import aclosing
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from ._callbacks import call_quietly, snapshot
from ._credentials import ApiKey, checked_headers, key_variables, request_headers
from ._sync import run_blocking
from .cancel import CancelToken
from .dialects import dialect_for
from .engine.hooks import Hooks
from .engine.interceptors import Interceptor
from .engine.llm import DEFAULT_MAX_RESPONSE_BYTES, LLMCaller
from .engine.loop import Engine, RunInput, WaitFor
from .engine.retry import DEFAULT_MAX_RETRY_AFTER_S, ErrorInfo, RetryPolicy
from .engine.scope import RunScope, guarded
from .engine.waiting import (
    claim_pending,
    keeps_pending,
    load_pending,
    require_pending_store,
    save_pending,
)
from .errors import ConfigError
from .events import DoneEvent, Event, TextEvent
from .metrics import Metrics, MetricSink
from .metrics_registry import MetricsRegistry
from .stores.memory import InMemoryConversationStore
from .suspension import Answer, Request
from .toolkit import Toolkit
from .transport.http import Transport, transport_for
from .transport.streams import StreamTransport
from .types import ConversationStore, JSONObject, RunResult

if TYPE_CHECKING:  # loaded on first use: not every program translates or runs a local model
    from .dialects.translate import TranslateResult
    from .engine.in_process import Generate

__all__ = ["Client", "Conversation", "create_client", "create_in_process_client"]

logger = logging.getLogger("toolnexus")
T = TypeVar("T")

_RESERVED_PARAMS = ("messages", "tools", "stream")


def create_client(
    base_url: str,
    style: Literal["openai", "anthropic"] = "openai",
    *,
    model: str,
    api_key: str | None = None,
    headers: Mapping[str, str] | None = None,
    system_prompt: str | None = None,
    max_turns: int = 10,
    hooks: Hooks | Mapping[str, Any] | None = None,
    retries: int = 2,
    retry_base_ms: float = 500,
    max_retry_after_s: float = DEFAULT_MAX_RETRY_AFTER_S,
    timeout_ms: float | None = None,
    on_error: Callable[[ErrorInfo], Any] | None = None,
    store: ConversationStore | None = None,
    on_metric: MetricSink | None = None,
    wait_for: WaitFor | None = None,
    request_params: Mapping[str, Any] | None = None,
    body_transform: Callable[[JSONObject], Any] | None = None,
    http_client: object | None = None,
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    metrics_registry: MetricsRegistry | None = None,
) -> Client:
    """A client for an OpenAI- or Anthropic-style endpoint. Nothing is contacted until a run.

    Args:
        base_url: The provider's API root: ``https://api.openai.com/v1``,
            ``https://api.anthropic.com``, ``https://openrouter.ai/api/v1``, a local server.
        style: The wire format, ``"openai"`` (chat completions) or ``"anthropic"`` (messages).
        model: The model name, sent verbatim.
        api_key: The key; without it the environment's ``OPENAI_API_KEY``,
            ``ANTHROPIC_API_KEY`` or ``OPENROUTER_API_KEY`` (by style and host), read when a
            run starts. Never logged or put in an error.
        headers: Extra request headers; they replace the library's own of the same name.
        system_prompt: Sent first in every run (the toolkit's skills list follows it).
        max_turns: Model round trips per run before it ends ``incomplete`` (at least 1).
        hooks: ``Hooks(before_llm=, after_llm=, before_tool=, after_tool=)`` or a dict of them.
        retries: Extra attempts per model call for 408, 409, 429, every 5xx (529 included)
            and network errors.
        retry_base_ms: The first backoff delay; it doubles per attempt (with jitter).
        max_retry_after_s: The longest ``Retry-After`` honoured (60 s by default); a longer
            one falls back to the backoff delay.
        timeout_ms: One deadline for a whole run (``RunTimeout``); ``None`` for none.
        on_error: Decides for each failed model call (given an ``ErrorInfo``): return
            ``"retry"`` to retry it (within ``retries``), anything else to fail.
        store: Where ``conversation_id``/``ask(id=...)`` transcripts (and pending approvals)
            live; an ``InMemoryConversationStore`` by default.
        on_metric: Receives one ``llm`` event per model call, one ``tool`` event per
            execution and one ``run`` event per run.
        wait_for: Answers a tool's ``Request`` inline (the run waits); without it a
            suspension halts the run as ``pending``.
        request_params: Extra body fields (``temperature``, ``max_tokens``, ...).
        body_transform: Sees (and may replace) each request body last, before it is sent.
        http_client: An ``aiohttp.ClientSession`` or ``httpx.AsyncClient`` to send through
            (the client then never closes it); without one, requests go over the client's own
            kept-alive HTTP/1.1 connections (no proxy support: give a client for that).
        max_response_bytes: A response body (JSON, or a whole SSE stream) larger than this
            (64 MiB by default) raises ``LLMError`` as soon as that much was read.
        metrics_registry: Where metric events are counted (a new one per client when not
            given); ``client.metrics()`` renders it.

    Raises:
        ConfigError: An unknown style or an invalid option.
    """
    try:
        dialect = dialect_for(style)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    _check(isinstance(base_url, str) and base_url != "", "base_url must be a non-empty URL")
    _check_options(model, max_turns, retries, retry_base_ms, timeout_ms)
    _check_callbacks(
        on_error=on_error, on_metric=on_metric, wait_for=wait_for, body_transform=body_transform
    )
    _check(
        system_prompt is None or isinstance(system_prompt, str), "system_prompt must be a string"
    )
    _check(
        isinstance(max_response_bytes, int)
        and not isinstance(max_response_bytes, bool)
        and max_response_bytes > 0,
        "max_response_bytes must be a positive integer",
    )
    transport = transport_for(http_client) if http_client is not None else StreamTransport()
    _check(api_key is None or isinstance(api_key, str), "api_key must be a string")
    keys = ApiKey(api_key, key_variables(style, base_url))
    extra_headers = checked_headers(headers)
    policy = _retry_policy(retries, retry_base_ms, on_error, max_retry_after_s)
    engine = Engine(
        dialect=dialect,
        caller=LLMCaller(transport, dialect, dialect.url(base_url), policy, max_response_bytes),
        model=model,
        system_prompt=system_prompt or "",
        max_turns=max_turns,
        hooks=Hooks.coerce(hooks),
        metrics=_metrics(on_metric, metrics_registry),
        store=store if store is not None else InMemoryConversationStore(),
        headers=lambda: request_headers(dialect.headers(keys.resolve()), extra_headers),
        wait_for=wait_for,
        request_params=_clean_params(request_params),
        body_transform=body_transform,
        timeout_ms=timeout_ms,
    )
    return Client(engine, transport, base_url=base_url, style=style)


_WIRE_ONLY = ("base_url", "style", "api_key", "http_client", "headers", "max_response_bytes")


def create_in_process_client(
    *,
    model: str,
    generate: Generate,
    system_prompt: str | None = None,
    max_turns: int = 10,
    hooks: Hooks | Mapping[str, Any] | None = None,
    retries: int = 0,
    retry_base_ms: float = 500,
    max_retry_after_s: float = DEFAULT_MAX_RETRY_AFTER_S,
    timeout_ms: float | None = None,
    on_error: Callable[[ErrorInfo], Any] | None = None,
    store: ConversationStore | None = None,
    on_metric: MetricSink | None = None,
    wait_for: WaitFor | None = None,
    request_params: Mapping[str, Any] | None = None,
    body_transform: Callable[[JSONObject], Any] | None = None,
    metrics_registry: MetricsRegistry | None = None,
    **wire_options: Any,
) -> Client:
    """A client whose model runs in this process: ``generate(request)`` answers each call.

    The same loop, hooks, memory, suspension, retries and metrics as ``create_client``, with
    no API key and no HTTP. Transcripts are OpenAI-shaped. ``generate`` receives
    ``{"messages", "tools", "model", "body"}`` (``body`` is the chat-completions body an HTTP
    client would send, after ``request_params`` and ``body_transform``) and returns
    ``{"content": str}`` or ``{"tool_calls": [{"id"?, "name", "arguments"}]}``, optionally
    with ``"usage"``. It may be a plain function (run in a worker thread, so the event loop
    stays free), a coroutine function, or an async generator yielding text deltas and
    optionally a final dict: then ``stream()`` and ``ask(on_text=...)`` show each delta.
    An exception from ``generate`` raises ``LLMError(status=None)`` with it as ``__cause__``.
    Wire-only options (``base_url``, ``style``, ``api_key``, ``http_client``, ``headers``)
    raise ``ConfigError`` (also a ``TypeError``) naming them.
    """
    if wire_options:
        wire = sorted(k for k in wire_options if k in _WIRE_ONLY)
        other = sorted(k for k in wire_options if k not in _WIRE_ONLY)
        if wire:
            raise _WireOptionError(
                f"create_in_process_client does not take {', '.join(wire)}: "
                "an in-process model has no endpoint, wire style, API key or HTTP client"
            )
        raise _WireOptionError(f"create_in_process_client got unknown options: {', '.join(other)}")
    _check(callable(generate), "generate must be a function, coroutine function or async generator")
    _check_options(model, max_turns, retries, retry_base_ms, timeout_ms)
    _check_callbacks(
        on_error=on_error, on_metric=on_metric, wait_for=wait_for, body_transform=body_transform
    )
    _check(
        system_prompt is None or isinstance(system_prompt, str), "system_prompt must be a string"
    )
    from .engine.in_process import InProcessCaller

    dialect = dialect_for("openai")
    policy = _retry_policy(retries, retry_base_ms, on_error, max_retry_after_s)
    engine = Engine(
        dialect=dialect,
        caller=InProcessCaller(generate, dialect, model, policy),
        model=model,
        system_prompt=system_prompt or "",
        max_turns=max_turns,
        hooks=Hooks.coerce(hooks),
        metrics=_metrics(on_metric, metrics_registry),
        store=store if store is not None else InMemoryConversationStore(),
        headers=dict,
        wait_for=wait_for,
        request_params=_clean_params(request_params),
        body_transform=body_transform,
        timeout_ms=timeout_ms,
    )
    return Client(engine, None, base_url="in-process", style="openai")


class _WireOptionError(ConfigError, TypeError):
    """An HTTP-only option given to the in-process client."""


class Client:
    """Runs prompts through the agent loop. Create one with ``create_client``.

    Holds one pooled HTTP session (keep-alive); close it with ``await client.aclose()`` or
    ``async with client:``.
    """

    def __init__(
        self, engine: Engine, transport: Transport | None, *, base_url: str, style: str
    ) -> None:
        self.base_url = base_url
        self.style = style
        self.model = engine.model
        self._engine = engine
        self._transport = transport
        self._store = engine.store

    @property
    def metrics_registry(self) -> MetricsRegistry:
        """The registry this client's metric events are counted in."""
        registry = self._engine.metrics.registry
        assert registry is not None
        return registry

    def metrics(self) -> str:
        """This client's metrics (its registry's) in the Prometheus text format.

        Safe to call from any thread, for example a ``GET /metrics`` handler.
        """
        return self.metrics_registry.render()

    @property
    def interceptors(self) -> tuple[Interceptor, ...]:
        """The installed interceptors, outermost first."""
        return self._engine.interceptors

    def add_interceptor(self, interceptor: Interceptor) -> None:
        """Wrap this client's model calls and tool executions with ``interceptor``.

        It becomes the innermost of those installed so far and applies to runs started from
        now on. See ``Interceptor`` for what it may do.
        """
        if not isinstance(interceptor, Interceptor):
            raise ConfigError(
                f"add_interceptor needs an Interceptor, not {type(interceptor).__name__}"
            )
        self._engine.interceptors = (*self._engine.interceptors, interceptor)

    def remove_interceptor(self, interceptor: Interceptor) -> None:
        """Uninstall ``interceptor`` (runs already started keep it); unknown ones are ignored."""
        self._engine.interceptors = tuple(
            i for i in self._engine.interceptors if i is not interceptor
        )

    @property
    def conversation_store(self) -> ConversationStore:
        """The store behind ``conversation_id``/``ask(id=...)``: the one given, or our default."""
        return self._store

    async def run(
        self,
        prompt: str,
        toolkit: Toolkit | None = None,
        *,
        history: list[JSONObject] | None = None,
        conversation_id: str | None = None,
        cancel: CancelToken | None = None,
        on_event: Callable[[Event], Any] | None = None,
    ) -> RunResult:
        """Run ``prompt`` through the loop until the model answers or ``max_turns``.

        ``history`` continues a transcript (it wins over the store); ``conversation_id`` loads
        and saves the transcript in the client's store. ``on_event`` sees every event but text.
        """
        quiet = on_event is None  # the loop makes only the events someone reads
        run = RunInput(prompt, toolkit, history, conversation_id, cancel, quiet=quiet)
        return await self._drain(self._engine.events(run), on_event)

    def run_sync(
        self,
        prompt: str,
        toolkit: Toolkit | None = None,
        *,
        history: list[JSONObject] | None = None,
        conversation_id: str | None = None,
        cancel: CancelToken | None = None,
        on_event: Callable[[Event], Any] | None = None,
    ) -> RunResult:
        """Blocking ``run`` (on a fresh event loop); ``RuntimeError`` inside a running loop.

        Not available with an injected ``http_client``, which belongs to its own event loop.
        """
        if self._transport is not None and self._transport.injected:
            raise ConfigError(
                "run_sync needs its own event loop, but this client uses an injected "
                "http_client bound to another one; await client.run(...) instead"
            )
        return run_blocking(
            self._released(
                lambda: self.run(
                    prompt,
                    toolkit,
                    history=history,
                    conversation_id=conversation_id,
                    cancel=cancel,
                    on_event=on_event,
                )
            )
        )

    def stream(
        self,
        prompt: str,
        toolkit: Toolkit | None = None,
        *,
        history: list[JSONObject] | None = None,
        conversation_id: str | None = None,
        cancel: CancelToken | None = None,
    ) -> AsyncGenerator[Event, None]:
        """The same loop as ``run`` over the streaming wire format, as events.

        Yields text deltas as they arrive; the last event is ``DoneEvent`` with the result.
        Leaving the iteration early aborts the request in flight and saves nothing (wrap it
        in ``contextlib.aclosing`` to make that immediate).
        """
        run = RunInput(prompt, toolkit, history, conversation_id, cancel, stream=True)
        return self._engine.events(run)

    async def ask(
        self,
        prompt: str,
        toolkit: Toolkit | None = None,
        *,
        id: str | None = None,
        on_text: Callable[[str], Any] | None = None,
        cancel: CancelToken | None = None,
        on_event: Callable[[Event], Any] | None = None,
    ) -> RunResult:
        """A turn of the conversation ``id`` (stateless without it).

        With ``on_text`` the reply streams: ``on_text(delta)`` is called for each text delta.
        ``on_event`` sees every other event (tool calls and results, usage, done).
        """
        if on_text is None:
            return await self.run(
                prompt, toolkit, conversation_id=id, cancel=cancel, on_event=on_event
            )
        run = RunInput(prompt, toolkit, None, id, cancel, stream=True)
        return await self._drain(self._engine.events(run), on_event, on_text)

    def conversation(self, toolkit: Toolkit | None = None) -> Conversation:
        """A transcript held in memory by the returned object (the store is not used)."""
        return Conversation(self, toolkit)

    async def run_with_answer(
        self,
        pending: Request,
        answer: Answer,
        toolkit: Toolkit | None = None,
        *,
        history: list[JSONObject],
        cancel: CancelToken | None = None,
        on_event: Callable[[Event], Any] | None = None,
    ) -> RunResult:
        """Resume a run that halted with ``status="pending"``, given the host's answer.

        ``history`` is the halted run's ``messages``. The halted call gets its result (run
        again with ``ctx.answer``, or ``declined/expired`` when the answer is not ok), calls of
        that turn without a result run, then the loop goes on with no new user message.
        """
        _check_answer(pending, answer)
        run = RunInput(None, toolkit, history, None, cancel, resume=(pending, answer))
        return await self._drain(self._engine.events(run), on_event)

    async def ask_with_answer(
        self,
        pending: Request,
        answer: Answer,
        toolkit: Toolkit | None = None,
        *,
        id: str,
        cancel: CancelToken | None = None,
    ) -> RunResult:
        """``run_with_answer`` for the conversation ``id``: loads and saves through the store.

        With a store that keeps pending requests, the request is claimed first: a second
        resume of it (or a concurrent one, from any process) is a ``ConfigError``.
        """
        _check_answer(pending, answer)
        return await self._resume_stored(pending, answer, toolkit, id, cancel, None)

    async def pending(self, id: str) -> Request | None:
        """The request conversation ``id`` waits for (``None``: it waits for nothing or does
        not exist). ``ConfigError`` when the store does not keep pending requests."""
        return await load_pending(require_pending_store(self._store), id)

    async def resume(
        self,
        id: str,
        answer: Answer,
        toolkit: Toolkit | None = None,
        *,
        cancel: CancelToken | None = None,
        on_event: Callable[[Event], Any] | None = None,
    ) -> RunResult:
        """Answer what conversation ``id`` waits for and continue its run, given nothing else:
        the transcript and the pending request come from the store (in another process too,
        with a shared ``SqliteConversationStore``).

        ``answer.id`` must be the pending request's id (else ``ConfigError``, a ``ValueError``).
        The request is claimed before anything runs, so a second resume, or a concurrent one,
        is a ``ConfigError``. If the resume fails (a model error, a timeout, cancellation),
        nothing is saved and the conversation waits for an answer again.
        """
        request = await load_pending(require_pending_store(self._store), id)
        if request is None:
            raise ConfigError(
                f"conversation {id!r} is not waiting for an answer: nothing to resume"
            )
        _check_answer(request, answer)
        return await self._resume_stored(request, answer, toolkit, id, cancel, on_event)

    async def _resume_stored(
        self,
        request: Request,
        answer: Answer,
        toolkit: Toolkit | None,
        id: str,
        cancel: CancelToken | None,
        on_event: Callable[[Event], Any] | None,
    ) -> RunResult:
        claimed = keeps_pending(self._store)
        if claimed:
            await claim_pending(self._store, id, request.id)
        try:
            history = await self._store.get(id)
            if history is None:
                raise ConfigError(f"no conversation {id!r} in the store to resume")
            run = RunInput(None, toolkit, history, id, cancel, resume=(request, answer))
            return await self._drain(self._engine.events(run), on_event)
        except BaseException:
            if claimed:  # nothing was saved: the conversation still waits for this request
                await save_pending(self._store, id, request)
            raise

    async def call_provider(
        self, body: JSONObject, *, cancel: CancelToken | None = None
    ) -> JSONObject:
        """Send ``body`` verbatim to the endpoint (same headers, retries, deadline, ``llm``
        metric) and return the parsed JSON reply. No loop, hooks or toolkit."""
        engine = self._engine
        model = str(body.get("model", self.model))

        async def one_call() -> AsyncGenerator[JSONObject, None]:
            started = time.perf_counter()
            try:
                reply = await engine.caller.call_raw(body, engine.headers())
            except BaseException:
                await engine.metrics.llm(model=model, ok=False, ms=_ms_since(started))
                raise
            usage = engine.caller.usage_of(reply)
            await engine.metrics.llm(
                model=model,
                ok=True,
                ms=_ms_since(started),
                prompt_tokens=usage.prompt_tokens,
                completion_tokens=usage.completion_tokens,
            )
            yield reply

        async def no_run_metric(_: BaseException) -> None:
            return None

        scope = RunScope(cancel, engine.timeout_ms)
        calls = guarded(one_call(), scope, no_run_metric, final=lambda _: True)
        async with aclosing(calls):
            async for answer in calls:
                return answer
        raise AssertionError("unreachable")  # pragma: no cover

    async def translate(
        self,
        messages: Sequence[JSONObject],
        *,
        tools: Sequence[JSONObject] | None = None,
        toolkit: Toolkit | None = None,
        tool_choice: object = None,
        system: str | None = None,
        max_tokens: int = 0,
        cancel: CancelToken | None = None,
    ) -> TranslateResult:
        """One provider call for an OpenAI-shaped request, answered in OpenAI terms.

        ``messages``, ``tools`` and ``tool_choice`` are chat-completions shapes whatever this
        client's style; an Anthropic client converts them (tool calls to ``tool_use`` blocks,
        consecutive tool messages to one user message of ``tool_result`` blocks, system and
        developer messages to ``system``). ``toolkit`` tools are declared first and never run.
        ``system=`` wins over the messages' system text, which wins over ``system_prompt``.
        The reply's ``arguments`` are compact JSON text and ``finish_reason`` is
        ``tool_calls``, ``length``, ``content_filter`` or ``stop``. The same endpoint, headers,
        retries, request shaping, deadline and ``llm`` metric as a run; ``before_llm`` and
        ``after_llm`` fire once; no tools run and nothing is stored.
        """
        from .engine.translate import translate as translate_once

        return await translate_once(
            self._engine,
            messages,
            tools=tools,
            toolkit=toolkit,
            tool_choice=tool_choice,
            system=system,
            max_tokens=max_tokens,
            cancel=cancel,
        )

    async def aclose(self) -> None:
        """Close the client's HTTP session (an injected ``http_client`` stays open)."""
        if self._transport is not None:
            await self._transport.aclose()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"Client(style={self.style!r}, model={self.model!r}, base_url={self.base_url!r})"

    async def _drain(
        self,
        events: AsyncGenerator[Event, None],
        on_event: Callable[[Event], Any] | None,
        on_text: Callable[[str], Any] | None = None,
    ) -> RunResult:
        result: RunResult | None = None
        async with aclosing(events):
            async for event in events:
                if isinstance(event, TextEvent):
                    if on_text is not None:
                        await call_quietly(on_text, event.delta, what="on_text")
                    continue
                if isinstance(event, DoneEvent):
                    result = event.result
                if on_event is not None:
                    await call_quietly(on_event, snapshot(event), what="on_event")
        assert result is not None, "the loop ended without a done event"
        return result

    async def _released(self, start: Callable[[], Coroutine[Any, Any, T]]) -> T:
        """Await ``start()``, then close the session bound to this (temporary) event loop.

        Takes a factory so that nothing is created when ``run_blocking`` refuses to run (a
        coroutine created and never awaited would be reported as a ``RuntimeWarning``).
        """
        try:
            return await start()
        finally:
            if self._transport is not None:
                await self._transport.aclose()


class Conversation:
    """A transcript kept in memory across ``send`` calls (see ``Client.conversation``)."""

    def __init__(self, client: Client, toolkit: Toolkit | None = None) -> None:
        self._client = client
        self._toolkit = toolkit
        self.messages: list[JSONObject] = []

    async def send(
        self,
        prompt: str,
        *,
        cancel: CancelToken | None = None,
        on_event: Callable[[Event], Any] | None = None,
    ) -> RunResult:
        """Run ``prompt`` after the transcript so far; it becomes the result's ``messages``."""
        result = await self._client.run(
            prompt, self._toolkit, history=self.messages, cancel=cancel, on_event=on_event
        )
        self.messages = result.messages
        return result

    def reset(self) -> None:
        """Forget the transcript: the next ``send`` starts a new conversation."""
        self.messages = []


def _check_callbacks(**callbacks: object) -> None:
    """Each named callback option is ``None`` or callable (a ``ConfigError`` names it)."""
    for option, value in callbacks.items():
        _check(value is None or callable(value), f"{option} must be a function, not {value!r:.60}")


def _clean_params(params: Mapping[str, Any] | None) -> dict[str, Any] | None:
    _check(
        params is None or isinstance(params, Mapping),
        f"request_params must be a dict, not {type(params).__name__}",
    )
    if not params:
        return None
    cleaned = dict(params)
    for key in _RESERVED_PARAMS:
        if key in cleaned:
            del cleaned[key]
            logger.warning("request_params: %r is set by the loop itself and was removed", key)
    return cleaned


def _ms_since(started: float) -> float:
    return (time.perf_counter() - started) * 1000.0


def _check_options(
    model: object, max_turns: object, retries: object, retry_base_ms: float, timeout_ms: object
) -> None:
    _check(isinstance(model, str) and model != "", "model must be a non-empty string")
    _check(isinstance(max_turns, int) and max_turns >= 1, "max_turns must be at least 1")
    _check(isinstance(retries, int) and retries >= 0, "retries must be 0 or more")
    _check(
        isinstance(retry_base_ms, int | float)
        and not isinstance(retry_base_ms, bool)
        and retry_base_ms >= 0,
        "retry_base_ms must be a number, 0 or more",
    )
    _check(
        timeout_ms is None
        or (
            isinstance(timeout_ms, int | float)
            and not isinstance(timeout_ms, bool)
            and timeout_ms > 0
        ),
        "timeout_ms must be a positive number of milliseconds",
    )
    _check(
        isinstance(max_turns, int) and not isinstance(max_turns, bool),
        "max_turns must be an integer",
    )


def _metrics(sink: MetricSink | None, registry: MetricsRegistry | None) -> Metrics:
    """Metric events for ``on_metric`` and the registry (a new one unless shared)."""
    _check(
        registry is None or isinstance(registry, MetricsRegistry),
        "metrics_registry must be a MetricsRegistry",
    )
    return Metrics(sink, registry if registry is not None else MetricsRegistry())


def _retry_policy(
    retries: int, retry_base_ms: float, on_error: object, max_retry_after_s: object
) -> RetryPolicy:
    _check(
        isinstance(max_retry_after_s, int | float)
        and not isinstance(max_retry_after_s, bool)
        and max_retry_after_s >= 0,
        "max_retry_after_s must be a number of seconds, 0 or more",
    )
    _check(on_error is None or callable(on_error), "on_error must be a function")
    return RetryPolicy(retries, float(retry_base_ms), on_error, float(max_retry_after_s))  # type: ignore[arg-type]


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise ConfigError(message)


def _check_answer(pending: Request, answer: Answer) -> None:
    if answer.id != pending.id:
        raise ConfigError(
            f"answer id {answer.id!r} does not match the pending request id {pending.id!r}"
        )
