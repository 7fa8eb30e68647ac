"""Building a client's engine from its options: endpoint, transport, retries and metrics.

The options were checked already (``check_client_options``); what is left here are the checks
that need the wire itself (the style, the URL, the headers, the HTTP client).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .._credentials import ApiKey, checked_headers, key_variables, request_headers
from ..dialects import dialect_for, endpoint_urls
from ..dialects.base import Dialect
from ..engine.hooks import Hooks
from ..engine.llm import DEFAULT_MAX_RESPONSE_BYTES, LLMCaller, ModelCaller
from ..engine.loop import Engine
from ..engine.retry import DEFAULT_MAX_RETRY_AFTER_S, RetryPolicy
from ..errors import ConfigError
from ..metrics import Metrics
from ..metrics_registry import MetricsRegistry
from ..stores.memory import InMemoryConversationStore
from ..transport.http import Transport, transport_for
from ..transport.streams import StreamTransport
from .options import ClientOptions, InProcessOptions, check_client_options, cleaned_params

if TYPE_CHECKING:  # loaded on first use: not every program runs a local model
    from ..engine.in_process import Generate

__all__ = ["http_engine", "in_process_engine"]


def http_engine(
    base_url: str, style: str, model: str, options: ClientOptions
) -> tuple[Engine, Transport]:
    """The engine of a client that talks to ``base_url`` in ``style``, and its transport."""
    try:
        dialect = dialect_for(style)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if not isinstance(base_url, str) or base_url == "":
        raise ConfigError("base_url must be a non-empty URL")
    _check_model(model)
    check_client_options(options, wire=True)
    extra_headers = checked_headers(options.get("headers"))
    http_client = options.get("http_client")
    transport = transport_for(http_client) if http_client is not None else StreamTransport()
    keys = ApiKey(options.get("api_key"), key_variables(style, base_url))
    max_bytes = options.get("max_response_bytes", DEFAULT_MAX_RESPONSE_BYTES)
    url, stream_url = endpoint_urls(dialect, base_url, model)
    caller = LLMCaller(transport, dialect, url, _retry_policy(options, 2), max_bytes, stream_url)
    engine = _engine(
        dialect,
        caller,
        model,
        options,
        headers=lambda: request_headers(dialect.headers(keys.resolve()), extra_headers),
        style=style,
    )
    return engine, transport


def in_process_engine(model: str, generate: Generate, options: InProcessOptions) -> Engine:
    """The engine of a client whose model is ``generate``, in this process."""
    check_client_options(options, wire=False)
    if not callable(generate):
        raise ConfigError("generate must be a function, coroutine function or async generator")
    _check_model(model)
    from ..engine.in_process import InProcessCaller

    dialect = dialect_for("openai")
    caller = InProcessCaller(generate, dialect, model, _retry_policy(options, 0))
    return _engine(dialect, caller, model, options, headers=dict)


def _engine(
    dialect: Dialect,
    caller: ModelCaller,
    model: str,
    options: InProcessOptions,
    *,
    headers: Callable[[], dict[str, str]],
    style: str = "openai",
) -> Engine:
    registry = options.get("metrics_registry")
    store = options.get("store")
    return Engine(
        dialect=dialect,
        caller=caller,
        model=model,
        system_prompt=options.get("system_prompt") or "",
        max_turns=options.get("max_turns", 10),
        hooks=Hooks.coerce(options.get("hooks")),
        metrics=Metrics(
            options.get("on_metric"), registry if registry is not None else MetricsRegistry()
        ),
        store=store if store is not None else InMemoryConversationStore(),
        headers=headers,
        wait_for=options.get("wait_for"),
        request_params=cleaned_params(options.get("request_params"), style),
        body_transform=options.get("body_transform"),
        timeout_ms=options.get("timeout_ms"),
        output_mode=options.get("output_mode"),
    )


def _retry_policy(options: InProcessOptions, default_retries: int) -> RetryPolicy:
    return RetryPolicy(
        options.get("retries", default_retries),
        float(options.get("retry_base_ms", 500)),
        options.get("on_error"),
        float(options.get("max_retry_after_s", DEFAULT_MAX_RETRY_AFTER_S)),
    )


def _check_model(model: object) -> None:
    if not isinstance(model, str) or model == "":
        raise ConfigError("model must be a non-empty string")
