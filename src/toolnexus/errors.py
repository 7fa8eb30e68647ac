"""The exception tree.

Tool failures are data (``ToolResult(is_error=True)``), never exceptions. What is raised out of
a run is one of these::

    ToolnexusError
    ├── LLMError          the model call failed (HTTP status, network, malformed reply)
    │   ├── RateLimitError       HTTP 429: too many requests
    │   ├── AuthenticationError  HTTP 401/403: the key is missing, wrong or not allowed
    │   ├── ServerError          HTTP 5xx, Anthropic's 529 "overloaded" included
    │   └── StreamError          the provider sent an error event inside a stream
    ├── RunCancelled      the run's CancelToken fired
    ├── RunTimeout        the run's deadline passed (also a TimeoutError)
    ├── ConfigError       a bad option or config value (also a ValueError)
    └── ModelRetry        raised by an ``output_validator`` to ask the model again (it never
                          leaves a run)
"""

from __future__ import annotations

from ._redact import redact

__all__ = [
    "AuthenticationError",
    "ConfigError",
    "LLMError",
    "ModelRetry",
    "RateLimitError",
    "RunCancelled",
    "RunTimeout",
    "ServerError",
    "StreamError",
    "ToolnexusError",
    "llm_error_for_status",
]


class ToolnexusError(Exception):
    """Base class of every exception the library raises on purpose."""


class LLMError(ToolnexusError):
    """A model call failed.

    ``status`` is the HTTP status when the provider answered (``None`` for network failures,
    stream ``error`` events and in-process generators, whose cause is chained). ``body`` is the
    response text when there was one. Both are redacted: API keys and expanded header values
    the provider echoed back appear as ``***``.
    """

    def __init__(self, message: str, *, status: int | None = None, body: str | None = None):
        super().__init__(redact(message))
        self.status = status
        self.body = redact(body) if body is not None else None


class RateLimitError(LLMError):
    """The provider refused the call for its rate limit (HTTP 429), after any retries."""


class AuthenticationError(LLMError):
    """The provider rejected the credentials (HTTP 401 or 403)."""


class ServerError(LLMError):
    """The provider failed or is overloaded (HTTP 5xx, 529 included), after any retries."""


class StreamError(LLMError):
    """The provider reported an error inside a stream (an ``error`` event); ``body`` holds it."""


def llm_error_for_status(status: int, message: str, body: str | None = None) -> LLMError:
    """The ``LLMError`` (sub)class for a provider's non-2xx answer, keeping ``status``."""
    cls: type[LLMError] = LLMError
    if status == 429:
        cls = RateLimitError
    elif status in (401, 403):
        cls = AuthenticationError
    elif 500 <= status <= 599:
        cls = ServerError
    return cls(message, status=status, body=body)


class RunCancelled(ToolnexusError):
    """The run was cancelled through its ``CancelToken``."""


class RunTimeout(ToolnexusError, TimeoutError):
    """The run's ``timeout_ms`` deadline passed before it finished."""


class ConfigError(ToolnexusError, ValueError):
    """A configuration value is invalid or missing (bad option, bad config file, no API key)."""


class ModelRetry(ToolnexusError):
    """Raised by an ``output_validator`` to refuse an answer: the model is asked again with
    the message (a retry, within ``output_retries``)."""
