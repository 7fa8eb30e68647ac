"""What a client and a run are given: the option sets, and their checks.

``ClientOptions`` is written once and shared, through ``typing.Unpack``, by ``Client``,
``create_client`` and (the subset without the wire, ``InProcessOptions``)
``create_in_process_client``: a misspelt option is a type error on each of them, and a
``ConfigError`` naming it at run time. A run's options are checked by ``check_run``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeAlias, TypedDict

from .._checks import Kinds, check_kinds, finite, instance_of, optional
from ..cancel import CancelToken
from ..dialects.output import OUTPUT_MODES, OutputMode
from ..engine.hooks import Hook, Hooks
from ..engine.retry import ErrorInfo
from ..errors import ConfigError
from ..messages import Style
from ..metrics import MetricSink
from ..metrics_registry import MetricsRegistry
from ..toolkit import Toolkit
from ..types import Answer, ConversationStore, JSONObject, Request, WaitFor

if TYPE_CHECKING:
    import aiohttp
    import httpx

__all__ = [
    "ClientOptions",
    "HTTPClient",
    "InProcessOptions",
    "Style",
    "check_answer",
    "check_client_options",
    "check_run",
]

logger = logging.getLogger("toolnexus")

Accepts: TypeAlias = Callable[[object], bool]

HTTPClient: TypeAlias = "aiohttp.ClientSession | httpx.AsyncClient"
"""An HTTP client a ``Client`` can send through instead of its own connections."""


class InProcessOptions(TypedDict, total=False):
    """The options every client takes, whether its model is remote or in this process.

    Each is optional; a misspelt one is a type error (``mypy``) and a ``ConfigError``.
    """

    system_prompt: str | None
    """Sent first in every run (the toolkit's skills list follows it)."""
    max_turns: int
    """Model round trips per run before it ends ``incomplete`` (at least 1; 10 by default)."""
    hooks: Hooks | Mapping[str, Hook | None] | None
    """``Hooks(before_llm=, after_llm=, before_tool=, after_tool=)`` or a dict of them."""
    retries: int
    """Extra attempts per model call: for 408, 409, 429, every 5xx (529 included) and
    network errors over HTTP (2 by default); when ``generate`` raises in process (0)."""
    retry_base_ms: float
    """The first backoff delay; it doubles per attempt, with jitter (500 by default)."""
    max_retry_after_s: float
    """The longest ``Retry-After`` honoured (60 s by default); a longer one falls back to the
    backoff delay."""
    timeout_ms: float | None
    """One deadline for a whole run (``RunTimeout``); ``None`` (the default) for none."""
    on_error: Callable[[ErrorInfo], Any] | None
    """Decides for each failed model call (given an ``ErrorInfo``): return ``"retry"`` to
    retry it (within ``retries``), anything else to fail."""
    store: ConversationStore | None
    """Where ``conversation_id``/``ask(id=...)`` transcripts (and pending requests) live; an
    ``InMemoryConversationStore`` by default."""
    on_metric: MetricSink | None
    """Receives one ``llm`` event per model call, one ``tool`` event per execution and one
    ``run`` event per run."""
    wait_for: WaitFor | None
    """Answers a tool's ``Request`` inline (the run waits); without it a suspension halts the
    run as ``pending``."""
    request_params: Mapping[str, Any] | None
    """Extra body fields (``temperature``, ``max_tokens``, ...)."""
    body_transform: Callable[[JSONObject], Any] | None
    """Sees (and may replace) each request body last, before it is sent."""
    metrics_registry: MetricsRegistry | None
    """Where metric events are counted (a new one per client when not given);
    ``client.metrics()`` renders it."""
    output_mode: OutputMode | None
    """How runs with an ``output_type`` ask for it unless they say otherwise: ``"native"``,
    ``"tool"`` or ``"prompted"`` (``None``: the style's own, ``native`` in process)."""


class ClientOptions(InProcessOptions, total=False):
    """Every option of a client that talks to its model over HTTP (``Client``,
    ``create_client``): those of ``InProcessOptions`` and the wire's own."""

    api_key: str | None
    """The key; without it the environment's ``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``,
    ``OPENROUTER_API_KEY``, ``GEMINI_API_KEY`` or ``GOOGLE_API_KEY`` (by style and host), read
    when a run starts. Never logged or put in an error."""
    headers: Mapping[str, str] | None
    """Extra request headers; they replace the library's own of the same name."""
    http_client: HTTPClient | None
    """An ``aiohttp.ClientSession`` or ``httpx.AsyncClient`` to send through (the client then
    never closes it); without one, requests go over the client's own kept-alive HTTP/1.1
    connections (no proxy support: give a client for that)."""
    max_response_bytes: int
    """A response body (JSON, or a whole SSE stream) larger than this (64 MiB by default)
    raises ``LLMError`` as soon as that much was read."""


_SHARED = InProcessOptions.__optional_keys__
_WIRE = ClientOptions.__optional_keys__ - _SHARED
WIRE_ONLY = ("base_url", "style", *sorted(_WIRE))
"""What only a client that talks HTTP takes: its endpoint, its style and the wire options."""

_RESERVED_PARAMS = ("messages", "tools", "stream")
_RESERVED_BY_STYLE = {"responses": ("input",), "gemini": ("contents",)}
"""The transcript's key in the styles that do not call it ``messages``: set by the loop too."""


class _WireOptionError(ConfigError, TypeError):
    """An HTTP-only option (or an unknown one) given to the in-process client."""


def check_client_options(options: Mapping[str, object], *, wire: bool) -> None:
    """A ``ConfigError`` naming the first unknown or invalid client option, before anything
    is built. ``wire`` says whether the client talks HTTP (else the wire options are refused,
    as an in-process model has none of them)."""
    unknown = sorted(k for k in options if k not in _SHARED and (not wire or k not in _WIRE))
    if unknown:
        wire_given = [k for k in unknown if k in WIRE_ONLY]
        if wire_given:
            raise _WireOptionError(
                f"create_in_process_client does not take {', '.join(wire_given)}: "
                "an in-process model has no endpoint, wire style, API key or HTTP client"
            )
        where = "the client" if wire else "create_in_process_client"
        raise _WireOptionError(f"{where} got unknown options: {', '.join(unknown)}")
    for option, value in options.items():
        accepts, expected = _CLIENT_OPTIONS[option]
        if not accepts(value):
            shown = repr(value) if option in _NUMBERS else type(value).__name__
            raise ConfigError(f"{option} must be {expected}, not {shown:.60}")


def cleaned_params(
    params: Mapping[str, Any] | None, style: str = "openai"
) -> dict[str, Any] | None:
    """``request_params`` without the fields the loop sets itself (each removal is logged)."""
    if not params:
        return None
    cleaned = dict(params)
    for key in (*_RESERVED_PARAMS, *_RESERVED_BY_STYLE.get(style, ())):
        if key in cleaned:
            del cleaned[key]
            logger.warning("request_params: %r is set by the loop itself and was removed", key)
    return cleaned


def _number(
    at_least: float, *, above: bool = False, whole: bool = False, inf: bool = False
) -> Accepts:
    """A test that a value is a finite number (no ``bool``; ``inf`` too when ``inf``) of at
    least / above ``at_least``."""

    def accepts(value: object) -> bool:
        kinds = int if whole else (int, float)
        if isinstance(value, bool) or not isinstance(value, kinds):
            return False
        if not (finite(value) or (inf and value == float("inf"))):
            return False
        return value > at_least if above else value >= at_least

    return accepts


def _callable_or_none(value: object) -> bool:
    return value is None or callable(value)


def _anything(value: object) -> bool:
    return True


_NUMBERS = frozenset(
    {
        "max_turns",
        "retries",
        "retry_base_ms",
        "max_retry_after_s",
        "timeout_ms",
        "max_response_bytes",
    }
)
_CLIENT_OPTIONS: dict[str, tuple[Accepts, str]] = {
    "system_prompt": (optional(instance_of(str)), "a string"),
    "max_turns": (_number(1, whole=True), "an integer, at least 1"),
    "hooks": (_anything, ""),  # Hooks.coerce names what is wrong in a hooks dict
    "retries": (_number(0, whole=True), "an integer, 0 or more"),
    "retry_base_ms": (_number(0), "a finite number, 0 or more"),
    "max_retry_after_s": (_number(0, inf=True), "a number of seconds, 0 or more (inf: any)"),
    "timeout_ms": (
        optional(_number(0, above=True)),
        "a positive, finite number of milliseconds",
    ),
    "on_error": (_callable_or_none, "a function"),
    "store": (_anything, ""),
    "on_metric": (_callable_or_none, "a function"),
    "wait_for": (_callable_or_none, "a function"),
    "request_params": (optional(instance_of(Mapping)), "a dict"),
    "body_transform": (_callable_or_none, "a function"),
    "metrics_registry": (optional(instance_of(MetricsRegistry)), "a MetricsRegistry"),
    "output_mode": (
        lambda value: value is None or value in OUTPUT_MODES,
        f"one of {', '.join(OUTPUT_MODES)}",
    ),
    "api_key": (optional(instance_of(str)), "a string"),
    "headers": (_anything, ""),  # checked_headers names a bad header
    "http_client": (_anything, ""),  # transport_for names an unsupported client
    "max_response_bytes": (_number(1, whole=True), "a positive integer"),
}
"""What each client option accepts, and the words a ``ConfigError`` uses for it."""


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise ConfigError(message)


_RUN_OPTIONS: Kinds = {
    "prompt": (instance_of(str), "a string"),
    "toolkit": (optional(instance_of(Toolkit)), "a Toolkit (see create_toolkit)"),
    "history": (optional(instance_of(list, tuple)), "a list of messages"),
    "conversation_id": (optional(instance_of(str)), "a string"),
    "id": (optional(instance_of(str)), "a string"),
    "cancel": (optional(instance_of(CancelToken)), "a CancelToken"),
    "pending": (instance_of(Request), "the halted run's Request (result.pending)"),
    "answer": (instance_of(Answer), "an Answer"),
    "on_event": (optional(callable), "a function"),
    "on_text": (optional(callable), "a function"),
}
"""What each option of a run accepts."""


def check_run(**options: object) -> None:
    """A ``ConfigError`` naming the first of a run's ``options`` of the wrong kind, raised
    before the run starts. A few ``isinstance`` calls: a history is not walked or copied."""
    check_kinds(_RUN_OPTIONS, options)


def check_answer(pending: Request, answer: Answer) -> None:
    """A ``ConfigError`` when ``answer`` is not the answer to ``pending`` (another id)."""
    if answer.id != pending.id:
        raise ConfigError(
            f"answer id {answer.id!r} does not match the pending request id {pending.id!r}"
        )
