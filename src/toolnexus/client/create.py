"""``create_client`` and ``create_in_process_client``: the factories SPEC names, as thin
wrappers of ``Client``. Their options are ``ClientOptions`` / ``InProcessOptions``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Unpack

from .core import Client
from .options import ClientOptions, InProcessOptions, Style

if TYPE_CHECKING:  # loaded on first use: not every program runs a local model
    from ..engine.in_process import Generate

__all__ = ["create_client", "create_in_process_client"]


def create_client(
    base_url: str, style: Style = "openai", *, model: str, **options: Unpack[ClientOptions]
) -> Client:
    """A client for a provider's HTTP API: the same as ``Client(base_url, style, ...)``.

    Args:
        base_url: The provider's API root (see ``Client``).
        style: The wire style, ``"openai"`` by default (see ``Style``).
        model: The model name, sent verbatim.
        **options: The ``ClientOptions``; a misspelt one is a type error.

    Returns:
        The client; nothing is contacted until a run.

    Raises:
        ConfigError: An unknown style, an unknown option or an invalid value (naming it).
    """
    return Client(base_url, style, model=model, **options)


def create_in_process_client(
    *, model: str, generate: Generate, **options: Unpack[InProcessOptions]
) -> Client:
    """A client whose model runs in this process: ``generate(request)`` answers each call.

    The same loop, hooks, memory, suspension, retries and metrics as ``create_client``, with
    no API key and no HTTP. Transcripts are OpenAI-shaped; ``retries`` is 0 by default.

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
        **options: The ``InProcessOptions``. The wire-only options of ``create_client``
            (``base_url``, ``style``, ``api_key``, ``http_client``, ``headers``,
            ``max_response_bytes``) and unknown ones are a type error, and at run time a
            ``ConfigError`` (also a ``TypeError``) naming them.

    Returns:
        The client.

    Raises:
        ConfigError: An invalid option or one that only an HTTP client takes.
    """
    return Client._in_process(model, generate, options)
