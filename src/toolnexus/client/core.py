"""``Client``: the agent loop's entry points (run, stream, ask, resume, ...) around one model."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncGenerator, Callable, Coroutine, Sequence
from contextlib import aclosing
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar, Unpack

from .._callbacks import call_quietly, snapshot
from .._sync import run_blocking
from ..cancel import CancelToken
from ..dialects.output import OutputMode
from ..engine.interceptors import Interceptor
from ..engine.loop import Engine, RunInput
from ..engine.output import OutputOptions, output_options
from ..engine.scope import RunScope, guarded
from ..engine.waiting import (
    claim_pending,
    keeps_pending,
    load_pending,
    require_pending_store,
    save_pending,
)
from ..errors import ConfigError
from ..events import DoneEvent, Event, TextEvent
from ..messages import Message
from ..metrics_registry import MetricsRegistry
from ..suspension import Answer, Request
from ..toolkit import Toolkit
from ..transport.http import Transport
from ..types import ConversationStore, JSONObject, RunResult
from .build import http_engine, in_process_engine
from .options import ClientOptions, InProcessOptions, Style, check_answer, check_run

if TYPE_CHECKING:  # loaded on first use: not every program translates
    from ..dialects.translate import TranslateResult
    from ..engine.in_process import Generate

__all__ = ["Client", "Conversation"]

logger = logging.getLogger("toolnexus")
T = TypeVar("T")


class Client:
    """Runs prompts through the agent loop against one model. Nothing is contacted until a run.

    ``Client(base_url, style, model=...)`` talks to a provider's HTTP API;
    ``create_in_process_client`` makes one whose model runs in this process. Each holds one
    pooled HTTP session (keep-alive): close it with ``await client.aclose()`` or
    ``async with client:``.

    Args:
        base_url: The provider's API root: ``https://api.openai.com/v1``,
            ``https://api.anthropic.com``, ``https://openrouter.ai/api/v1``, a local server.
        style: The wire style (``Style``): ``"openai"`` (chat completions), ``"anthropic"``
            (messages), ``"responses"`` (OpenAI responses) or ``"gemini"``
            (``generateContent``), each where its dialect is installed.
        model: The model name, sent verbatim.
        **options: The ``ClientOptions`` (``api_key``, ``system_prompt``, ``max_turns``,
            ``hooks``, ``retries``, ``store``, ``wait_for``, ``http_client``, ...); each is
            optional and a misspelt one is a type error.

    Raises:
        ConfigError: An unknown style, an unknown option or an invalid value (naming it).
    """

    base_url: str
    """The provider's API root (``"in-process"`` for an in-process model)."""
    style: Style
    """The wire style the client speaks."""
    model: str
    """The model name sent with every call."""

    def __init__(
        self,
        base_url: str,
        style: Style = "openai",
        *,
        model: str,
        **options: Unpack[ClientOptions],
    ) -> None:
        engine, transport = http_engine(base_url, style, model, options)
        self._setup(engine, transport, base_url, style)

    @classmethod
    def _in_process(cls, model: str, generate: Generate, options: InProcessOptions) -> Client:
        """A client around ``generate`` (see ``create_in_process_client``)."""
        client = cls.__new__(cls)
        client._setup(in_process_engine(model, generate, options), None, "in-process", "openai")
        return client

    def _setup(
        self, engine: Engine, transport: Transport | None, base_url: str, style: Style
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
        history: Sequence[Message] | None = None,
        conversation_id: str | None = None,
        cancel: CancelToken | None = None,
        on_event: Callable[[Event], Any] | None = None,
        output_type: Any = None,
        output_mode: OutputMode | None = None,
        output_retries: int = 2,
        output_validator: Callable[[Any], Any] | None = None,
    ) -> RunResult:
        """Run ``prompt`` through the loop until the model answers or ``max_turns``.

        ``toolkit`` offers its tools (and its skills list) to the model. ``history`` continues a
        transcript (it wins over the store); ``conversation_id`` loads and saves the transcript
        in the client's store. ``cancel`` (a ``CancelToken``) stops the run with
        ``RunCancelled``. ``on_event`` sees every event but text. An option of the wrong kind
        is a ``ConfigError`` naming it, before anything is sent.

        ``output_type`` (a pydantic model, dataclass, ``TypedDict``, primitive, list,
        ``Literal``, ``Enum`` or a union of them) asks for a typed answer: ``result.output`` is
        the validated value. ``output_mode`` is ``"native"`` (the provider's response format),
        ``"tool"`` (a ``final_result`` tool) or ``"prompted"`` (the schema in the system
        prompt); by default the client's, else the style's. A wrong answer, or one that
        ``output_validator`` (sync or async; returns the value to keep) refuses by raising
        ``ModelRetry``, is sent back for another turn, at most ``output_retries`` times; then
        the run ends ``incomplete`` with ``limit="outputRetries"``. The same options work on
        ``run_sync``, ``stream``, ``ask`` and the resume methods.
        """
        check_run(
            prompt=prompt,
            toolkit=toolkit,
            history=history,
            conversation_id=conversation_id,
            cancel=cancel,
            on_event=on_event,
        )
        quiet = on_event is None  # the loop makes only the events someone reads
        output = self._output(output_type, output_mode, output_retries, output_validator)
        run = RunInput(
            prompt, toolkit, history, conversation_id, cancel, quiet=quiet, output=output
        )
        return await self._drain(self._engine.events(run), on_event)

    def run_sync(
        self,
        prompt: str,
        toolkit: Toolkit | None = None,
        *,
        history: Sequence[Message] | None = None,
        conversation_id: str | None = None,
        cancel: CancelToken | None = None,
        on_event: Callable[[Event], Any] | None = None,
        output_type: Any = None,
        output_mode: OutputMode | None = None,
        output_retries: int = 2,
        output_validator: Callable[[Any], Any] | None = None,
    ) -> RunResult:
        """Blocking ``run`` (on a fresh event loop); ``RuntimeError`` inside a running loop.

        Not available with an injected ``http_client``, which belongs to its own event loop.
        ``output_type``, ``output_mode``, ``output_retries`` and ``output_validator`` are those
        of ``run`` (structured output).
        """
        check_run(
            prompt=prompt,
            toolkit=toolkit,
            history=history,
            conversation_id=conversation_id,
            cancel=cancel,
            on_event=on_event,
        )
        self._output(output_type, output_mode, output_retries, output_validator)
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
                    output_type=output_type,
                    output_mode=output_mode,
                    output_retries=output_retries,
                    output_validator=output_validator,
                )
            )
        )

    def stream(
        self,
        prompt: str,
        toolkit: Toolkit | None = None,
        *,
        history: Sequence[Message] | None = None,
        conversation_id: str | None = None,
        cancel: CancelToken | None = None,
        output_type: Any = None,
        output_mode: OutputMode | None = None,
        output_retries: int = 2,
        output_validator: Callable[[Any], Any] | None = None,
    ) -> AsyncGenerator[Event, None]:
        """The same loop as ``run`` over the streaming wire format, as events.

        ``prompt``, ``toolkit``, ``history``, ``conversation_id`` and ``cancel`` are those of
        ``run`` (checked when this is called). Yields text deltas as they arrive; the last
        event is ``DoneEvent`` with the result.
        Leaving the iteration early aborts the request in flight and saves nothing (wrap it
        in ``contextlib.aclosing`` to make that immediate).
        ``output_type``, ``output_mode``, ``output_retries`` and ``output_validator`` are those
        of ``run`` (structured output).
        """
        check_run(
            prompt=prompt,
            toolkit=toolkit,
            history=history,
            conversation_id=conversation_id,
            cancel=cancel,
        )
        output = self._output(output_type, output_mode, output_retries, output_validator)
        run = RunInput(
            prompt, toolkit, history, conversation_id, cancel, stream=True, output=output
        )
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
        output_type: Any = None,
        output_mode: OutputMode | None = None,
        output_retries: int = 2,
        output_validator: Callable[[Any], Any] | None = None,
    ) -> RunResult:
        """``prompt`` as a turn of the conversation ``id`` (stateless without it).

        ``toolkit`` and ``cancel`` are those of ``run``. With ``on_text`` the reply streams:
        ``on_text(delta)`` is called for each text delta. ``on_event`` sees every other event
        (tool calls and results, usage, done).
        ``output_type``, ``output_mode``, ``output_retries`` and ``output_validator`` are those
        of ``run`` (structured output).
        """
        check_run(
            prompt=prompt, toolkit=toolkit, id=id, cancel=cancel, on_event=on_event, on_text=on_text
        )
        output = self._output(output_type, output_mode, output_retries, output_validator)
        if on_text is None:
            quiet = on_event is None
            run = RunInput(prompt, toolkit, None, id, cancel, quiet=quiet, output=output)
        else:
            run = RunInput(prompt, toolkit, None, id, cancel, stream=True, output=output)
        return await self._drain(self._engine.events(run), on_event, on_text)

    def _output(
        self,
        output_type: object,
        output_mode: object,
        output_retries: object,
        output_validator: object,
    ) -> OutputOptions | None:
        """A run's structured-output options, checked before anything is sent."""
        return output_options(
            output_type,
            output_mode,
            output_retries,
            output_validator,
            default_mode=self._engine.output_mode,
            style=self._engine.dialect.name,
        )

    def conversation(self, toolkit: Toolkit | None = None) -> Conversation:
        """A transcript held in memory by the returned object (the store is not used)."""
        return Conversation(self, toolkit)

    async def run_with_answer(
        self,
        pending: Request,
        answer: Answer,
        toolkit: Toolkit | None = None,
        *,
        history: Sequence[Message],
        cancel: CancelToken | None = None,
        on_event: Callable[[Event], Any] | None = None,
        output_type: Any = None,
        output_mode: OutputMode | None = None,
        output_retries: int = 2,
        output_validator: Callable[[Any], Any] | None = None,
    ) -> RunResult:
        """Resume a run that halted with ``status="pending"``, given the host's answer.

        ``history`` is the halted run's ``messages``. The halted call gets its result (run
        again with ``ctx.answer``, or ``declined/expired`` when the answer is not ok), calls of
        that turn without a result run, then the loop goes on with no new user message.
        ``output_type``, ``output_mode``, ``output_retries`` and ``output_validator`` are those
        of ``run`` (structured output).
        """
        check_run(
            pending=pending,
            answer=answer,
            toolkit=toolkit,
            history=history,
            cancel=cancel,
            on_event=on_event,
        )
        check_answer(pending, answer)
        output = self._output(output_type, output_mode, output_retries, output_validator)
        run = RunInput(
            None, toolkit, history, None, cancel, resume=(pending, answer), output=output
        )
        return await self._drain(self._engine.events(run), on_event)

    async def ask_with_answer(
        self,
        pending: Request,
        answer: Answer,
        toolkit: Toolkit | None = None,
        *,
        id: str,
        cancel: CancelToken | None = None,
        output_type: Any = None,
        output_mode: OutputMode | None = None,
        output_retries: int = 2,
        output_validator: Callable[[Any], Any] | None = None,
    ) -> RunResult:
        """``run_with_answer`` for the conversation ``id``: loads and saves through the store.

        With a store that keeps pending requests, the request is claimed first: a second
        resume of it (or a concurrent one, from any process) is a ``ConfigError``.
        ``output_type``, ``output_mode``, ``output_retries`` and ``output_validator`` are those
        of ``run`` (structured output).
        """
        check_run(pending=pending, answer=answer, toolkit=toolkit, id=id, cancel=cancel)
        check_answer(pending, answer)
        output = self._output(output_type, output_mode, output_retries, output_validator)
        return await self._resume_stored(pending, answer, toolkit, id, cancel, None, output)

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
        output_type: Any = None,
        output_mode: OutputMode | None = None,
        output_retries: int = 2,
        output_validator: Callable[[Any], Any] | None = None,
    ) -> RunResult:
        """Answer what conversation ``id`` waits for and continue its run, given nothing else:
        the transcript and the pending request come from the store (in another process too,
        with a shared SQLite, Redis or PostgreSQL store).

        ``answer.id`` must be the pending request's id (else ``ConfigError``, a ``ValueError``).
        The request is claimed before anything runs, so a second resume, or a concurrent one,
        is a ``ConfigError``. If the resume fails (a model error, a timeout, cancellation),
        nothing is saved and the conversation waits for an answer again.
        ``output_type``, ``output_mode``, ``output_retries`` and ``output_validator`` are those
        of ``run`` (structured output).
        """
        check_run(id=id, answer=answer, toolkit=toolkit, cancel=cancel, on_event=on_event)
        output = self._output(output_type, output_mode, output_retries, output_validator)
        request = await load_pending(require_pending_store(self._store), id)
        if request is None:
            raise ConfigError(
                f"conversation {id!r} is not waiting for an answer: nothing to resume"
            )
        check_answer(request, answer)
        return await self._resume_stored(request, answer, toolkit, id, cancel, on_event, output)

    def stream_resume(
        self,
        id: str,
        answer: Answer,
        toolkit: Toolkit | None = None,
        *,
        cancel: CancelToken | None = None,
    ) -> AsyncGenerator[Event, None]:
        """``resume`` over the streaming wire format, as events (``stream``'s counterpart).

        The same checks and claim as ``resume`` (a mismatched id, or nothing pending, is a
        ``ConfigError`` raised on the first iteration). Leaving early, or a failure, saves
        nothing and the conversation waits for the request again.
        """
        check_run(id=id, answer=answer, toolkit=toolkit, cancel=cancel)
        return self._stream_resumed(id, answer, toolkit, cancel)

    async def _stream_resumed(
        self, id: str, answer: Answer, toolkit: Toolkit | None, cancel: CancelToken | None
    ) -> AsyncGenerator[Event, None]:
        request = await load_pending(require_pending_store(self._store), id)
        if request is None:
            raise ConfigError(
                f"conversation {id!r} is not waiting for an answer: nothing to resume"
            )
        check_answer(request, answer)
        claimed = keeps_pending(self._store)
        if claimed:
            await claim_pending(self._store, id, request.id)
        finished = False
        try:
            history = await self._store.get(id)
            if history is None:
                raise ConfigError(f"no conversation {id!r} in the store to resume")
            run = RunInput(
                None, toolkit, history, id, cancel, stream=True, resume=(request, answer)
            )
            async with aclosing(self._engine.events(run)) as events:
                async for event in events:
                    finished = isinstance(event, DoneEvent)  # saved before it is yielded
                    yield event
        finally:
            if claimed and not finished:  # nothing was saved: it still waits for this request
                await save_pending(self._store, id, request)

    async def _resume_stored(
        self,
        request: Request,
        answer: Answer,
        toolkit: Toolkit | None,
        id: str,
        cancel: CancelToken | None,
        on_event: Callable[[Event], Any] | None,
        output: OutputOptions | None,
    ) -> RunResult:
        claimed = keeps_pending(self._store)
        if claimed:
            await claim_pending(self._store, id, request.id)
        try:
            history = await self._store.get(id)
            if history is None:
                raise ConfigError(f"no conversation {id!r} in the store to resume")
            run = RunInput(
                None, toolkit, history, id, cancel, resume=(request, answer), output=output
            )
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
        check_run(cancel=cancel)
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
        check_run(toolkit=toolkit, cancel=cancel)
        from ..engine.translate import translate as translate_once

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
        self.messages: list[Message] = []

    async def send(
        self,
        prompt: str,
        *,
        cancel: CancelToken | None = None,
        on_event: Callable[[Event], Any] | None = None,
        output_type: Any = None,
        output_mode: OutputMode | None = None,
        output_retries: int = 2,
        output_validator: Callable[[Any], Any] | None = None,
    ) -> RunResult:
        """Run ``prompt`` after the transcript so far; it becomes the result's ``messages``.
        ``output_type``, ``output_mode``, ``output_retries`` and ``output_validator`` are those
        of ``Client.run``."""
        result = await self._client.run(
            prompt,
            self._toolkit,
            history=self.messages,
            cancel=cancel,
            on_event=on_event,
            output_type=output_type,
            output_mode=output_mode,
            output_retries=output_retries,
            output_validator=output_validator,
        )
        self.messages = result.messages
        return result

    def reset(self) -> None:
        """Forget the transcript: the next ``send`` starts a new conversation."""
        self.messages = []


def _ms_since(started: float) -> float:
    return (time.perf_counter() - started) * 1000.0
