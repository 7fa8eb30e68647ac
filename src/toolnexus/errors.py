"""The exception tree.

Tool failures are data (``ToolResult(is_error=True)``), never exceptions. What is raised out of
a run is one of these::

    ToolnexusError
    ├── LLMError          the model call failed (HTTP status, network, malformed reply)
    ├── RunCancelled      the run's CancelToken fired
    ├── RunTimeout        the run's deadline passed (also a TimeoutError)
    └── ConfigError       a bad option or config value (also a ValueError)
"""

from __future__ import annotations

from ._redact import redact

__all__ = ["ConfigError", "LLMError", "RunCancelled", "RunTimeout", "ToolnexusError"]


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


class RunCancelled(ToolnexusError):
    """The run was cancelled through its ``CancelToken``."""


class RunTimeout(ToolnexusError, TimeoutError):
    """The run's ``timeout_ms`` deadline passed before it finished."""


class ConfigError(ToolnexusError, ValueError):
    """A configuration value is invalid or missing (bad option, bad config file, no API key)."""
