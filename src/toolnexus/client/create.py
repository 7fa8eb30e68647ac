"""Making a ``Client``: its options checked, its endpoint, transport, retries and metrics."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from .._checks import finite
from .._credentials import ApiKey, checked_headers, key_variables, request_headers
from ..dialects import dialect_for, endpoint_urls
from ..dialects.output import OUTPUT_MODES, OutputMode
from ..engine.hooks import Hooks
from ..engine.llm import DEFAULT_MAX_RESPONSE_BYTES, LLMCaller
from ..engine.loop import Engine, WaitFor
from ..engine.retry import DEFAULT_MAX_RETRY_AFTER_S, ErrorInfo, RetryPolicy
from ..errors import ConfigError
from ..metrics import Metrics, MetricSink
from ..metrics_registry import MetricsRegistry
from ..stores.memory import InMemoryConversationStore
from ..transport.http import transport_for
from ..transport.streams import StreamTransport
from ..types import ConversationStore, JSONObject
from .core import Client

if TYPE_CHECKING:  # loaded on first use: not every program runs a local model
    from ..engine.in_process import Generate

__all__ = ["create_client", "create_in_process_client"]

logger = logging.getLogger("toolnexus")

_RESERVED_PARAMS = ("messages", "tools", "stream")
_RESERVED_BY_STYLE = {"responses": ("input",), "gemini": ("contents",)}
"""The transcript's key in the styles that do not call it ``messages``: set by the loop too."""


def create_client(
    base_url: str,
    style: Literal["openai", "anthropic", "responses", "gemini"] = "openai",
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
    output_mode: OutputMode | None = None,
) -> Client:
    """A client for an OpenAI-, Anthropic- or Gemini-style endpoint. Nothing is contacted until
    a run.

    Args:
        base_url: The provider's API root: ``https://api.openai.com/v1``,
            ``https://api.anthropic.com``, ``https://openrouter.ai/api/v1``, a local server.
        style: The wire format: ``"openai"`` (chat completions), ``"anthropic"`` (messages),
            ``"responses"`` (OpenAI's Responses API) or ``"gemini"`` (Gemini's
            ``generateContent``).
        model: The model name, sent verbatim.
        api_key: The key; without it the environment's ``OPENAI_API_KEY``,
            ``ANTHROPIC_API_KEY``, ``OPENROUTER_API_KEY``, ``GEMINI_API_KEY`` or
            ``GOOGLE_API_KEY`` (by style and host), read when a run starts. Never logged or
            put in an error.
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
        output_mode: How runs with an ``output_type`` ask for it unless they say otherwise:
            ``"native"``, ``"tool"`` or ``"prompted"`` (``None``: ``native`` for openai,
            ``tool`` for anthropic).

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
    url, stream_url = endpoint_urls(dialect, base_url, model)
    engine = Engine(
        dialect=dialect,
        caller=LLMCaller(transport, dialect, url, policy, max_response_bytes, stream_url),
        model=model,
        system_prompt=system_prompt or "",
        max_turns=max_turns,
        hooks=Hooks.coerce(hooks),
        metrics=_metrics(on_metric, metrics_registry),
        store=store if store is not None else InMemoryConversationStore(),
        headers=lambda: request_headers(dialect.headers(keys.resolve()), extra_headers),
        wait_for=wait_for,
        request_params=_clean_params(request_params, style),
        body_transform=body_transform,
        timeout_ms=timeout_ms,
        output_mode=_output_mode(output_mode),
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
    output_mode: OutputMode | None = None,
    **wire_options: Any,
) -> Client:
    """A client whose model runs in this process: ``generate(request)`` answers each call.

    The same loop, hooks, memory, suspension, retries and metrics as ``create_client``, with
    no API key and no HTTP. Transcripts are OpenAI-shaped.

    Args:
        model: The model name, handed to ``generate`` and reported in metrics.
        generate: Answers each model call. It receives ``{"messages", "tools", "model",
            "body"}`` (``body`` is the chat-completions body an HTTP client would send, after
            ``request_params`` and ``body_transform``) and returns ``{"content": str}`` or
            ``{"tool_calls": [{"id"?, "name", "arguments"}]}``, optionally with ``"usage"``.
            It may be a plain function (run in a worker thread, so the event loop stays free),
            a coroutine function, or an async generator yielding text deltas and optionally a
            final dict: then ``stream()`` and ``ask(on_text=...)`` show each delta. An
            exception from it raises ``LLMError(status=None)`` with it as ``__cause__``.
        system_prompt: Sent first in every run (the toolkit's skills list follows it).
        max_turns: Model round trips per run before it ends ``incomplete`` (at least 1).
        hooks: ``Hooks(before_llm=, after_llm=, before_tool=, after_tool=)`` or a dict of them.
        retries: Extra attempts when ``generate`` raises (0 by default; ``on_error`` may
            decide otherwise).
        retry_base_ms: The first backoff delay; it doubles per attempt (with jitter).
        max_retry_after_s: The longest ``Retry-After`` honoured, as for ``create_client``.
        timeout_ms: One deadline for a whole run (``RunTimeout``); ``None`` for none.
        on_error: Decides for each failed call (given an ``ErrorInfo``): return ``"retry"`` to
            retry it (within ``retries``), anything else to fail.
        store: Where ``conversation_id``/``ask(id=...)`` transcripts (and pending approvals)
            live; an ``InMemoryConversationStore`` by default.
        on_metric: Receives one ``llm`` event per model call, one ``tool`` event per
            execution and one ``run`` event per run.
        wait_for: Answers a tool's ``Request`` inline (the run waits); without it a
            suspension halts the run as ``pending``.
        request_params: Extra body fields (``temperature``, ``max_tokens``, ...).
        body_transform: Sees (and may replace) each request body last, before ``generate``.
        metrics_registry: Where metric events are counted (a new one per client when not
            given); ``client.metrics()`` renders it.
        output_mode: The default structured-output mode of runs with an ``output_type``
            (``None``: ``native``, the body's ``response_format``).
        wire_options: Refused: the wire-only options of ``create_client`` (``base_url``,
            ``style``, ``api_key``, ``http_client``, ``headers``, ``max_response_bytes``) or
            any unknown one raise ``ConfigError`` (also a ``TypeError``) naming them.

    Raises:
        ConfigError: An invalid option or one that only an HTTP client takes.
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
    from ..engine.in_process import InProcessCaller

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
        output_mode=_output_mode(output_mode),
    )
    return Client(engine, None, base_url="in-process", style="openai")


class _WireOptionError(ConfigError, TypeError):
    """An HTTP-only option given to the in-process client."""


def _output_mode(mode: object) -> OutputMode | None:
    _check(
        mode is None or mode in OUTPUT_MODES,
        f"output_mode must be one of {', '.join(OUTPUT_MODES)}, not {mode!r}",
    )
    return mode  # type: ignore[return-value]


def _check_callbacks(**callbacks: object) -> None:
    """Each named callback option is ``None`` or callable (a ``ConfigError`` names it)."""
    for option, value in callbacks.items():
        _check(value is None or callable(value), f"{option} must be a function, not {value!r:.60}")


def _clean_params(params: Mapping[str, Any] | None, style: str = "openai") -> dict[str, Any] | None:
    _check(
        params is None or isinstance(params, Mapping),
        f"request_params must be a dict, not {type(params).__name__}",
    )
    if not params:
        return None
    cleaned = dict(params)
    for key in (*_RESERVED_PARAMS, *_RESERVED_BY_STYLE.get(style, ())):
        if key in cleaned:
            del cleaned[key]
            logger.warning("request_params: %r is set by the loop itself and was removed", key)
    return cleaned


def _check_options(
    model: object, max_turns: object, retries: object, retry_base_ms: float, timeout_ms: object
) -> None:
    _check(isinstance(model, str) and model != "", "model must be a non-empty string")
    _check(isinstance(max_turns, int) and max_turns >= 1, "max_turns must be at least 1")
    _check(isinstance(retries, int) and retries >= 0, "retries must be 0 or more")
    _check(
        isinstance(retry_base_ms, int | float)
        and not isinstance(retry_base_ms, bool)
        and finite(retry_base_ms)
        and retry_base_ms >= 0,
        "retry_base_ms must be a finite number, 0 or more",
    )
    _check(
        timeout_ms is None
        or (
            isinstance(timeout_ms, int | float)
            and not isinstance(timeout_ms, bool)
            and finite(timeout_ms)
            and timeout_ms > 0
        ),
        "timeout_ms must be a positive, finite number of milliseconds",
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
        and (finite(max_retry_after_s) or max_retry_after_s == float("inf"))
        and max_retry_after_s >= 0,
        "max_retry_after_s must be a number of seconds, 0 or more (inf: any)",
    )
    _check(on_error is None or callable(on_error), "on_error must be a function")
    return RetryPolicy(retries, float(retry_base_ms), on_error, float(max_retry_after_s))  # type: ignore[arg-type]


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise ConfigError(message)
