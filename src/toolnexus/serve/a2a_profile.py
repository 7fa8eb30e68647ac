"""The ``a2a`` serving profile: how a toolkit presents itself to Agent2Agent clients.

Pure data, no SDK import: the profile (card fields, skill filter, task store, public URL) is
validated here once, before anything listens.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError
from .profile_fields import name_set, profile_mapping, text

__all__ = [
    "DEFAULT_AGENT_NAME",
    "DEFAULT_AGENT_VERSION",
    "A2aProfile",
    "a2a_profile",
]

DEFAULT_AGENT_NAME = "toolnexus-agent"
DEFAULT_AGENT_VERSION = "0.1.0"
_KEYS = ("name", "description", "version", "provider", "skills", "store", "url", "streaming")


@dataclass(frozen=True, slots=True)
class A2aProfile:
    """How a toolkit is served over A2A: the agent card's fields and where tasks are kept."""

    name: str = DEFAULT_AGENT_NAME
    description: str = ""
    version: str = DEFAULT_AGENT_VERSION
    provider: Mapping[str, str] | None = None
    """``{"organization", "url"}``, put in the card as given; ``None`` leaves it out."""
    skills: frozenset[str] | None = None
    """Names of the skills the card lists (unknown names are ignored); ``None`` lists all."""
    store: object = "memory"
    """``"memory"``, ``"file:<dir>"``, or an object with ``get(id)`` and ``save(task)`` (task
    dicts; plain or async methods), or an ``a2a-sdk`` ``TaskStore``."""
    url: str | None = None
    """The JSON-RPC URL the card announces; ``None`` announces ``<server url>/``."""
    streaming: bool = False
    """Whether ``SendStreamingMessage`` is offered (and announced in the card)."""


def a2a_profile(value: Mapping[str, Any] | A2aProfile, *, where: str = "a2a") -> A2aProfile:
    """Validate an ``a2a`` mapping (``{}`` = every default).

    Raises ``ConfigError`` naming the key for an unknown key or a value of the wrong type.
    """
    if isinstance(value, A2aProfile):
        return value
    fields = profile_mapping(value, _KEYS, "A2A", where)
    streaming = fields.get("streaming", False)
    if not isinstance(streaming, bool):
        raise ConfigError(f'{where}: "streaming" must be true or false')
    return A2aProfile(
        name=text(fields, "name", DEFAULT_AGENT_NAME, where),
        description=text(fields, "description", "", where, empty_ok=True),
        version=text(fields, "version", DEFAULT_AGENT_VERSION, where),
        provider=_provider(fields.get("provider"), where),
        skills=name_set(fields, "skills", "skill", where),
        store=_store(fields.get("store", "memory"), where),
        url=_url(fields.get("url"), where),
        streaming=streaming,
    )


def _provider(value: object, where: str) -> Mapping[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping) or set(value) - {"organization", "url"}:
        raise ConfigError(f'{where}: "provider" must be an object with "organization" and "url"')
    if not all(isinstance(v, str) for v in value.values()):
        raise ConfigError(f'{where}: "provider" values must be strings')
    return {str(k): str(v) for k, v in value.items()}


def _store(value: object, where: str) -> object:
    if isinstance(value, str):
        if value == "memory":
            return value
        if value.startswith("file:") and len(value) > len("file:"):
            return value
        raise ConfigError(
            f'{where}: "store" must be "memory", "file:<dir>" or a task store object, not {value!r}'
        )
    if callable(getattr(value, "get", None)) and callable(getattr(value, "save", None)):
        return value
    raise ConfigError(
        f'{where}: "store" must be "memory", "file:<dir>" or an object with async get and '
        f"save methods, not {type(value).__name__}"
    )


def _url(value: object, where: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.startswith(("http://", "https://")):
        raise ConfigError(f'{where}: "url" must be an http:// or https:// URL')
    return value
