"""Remote A2A agents as configuration: ``agent(...)`` and the config ``agents`` block.

Pure data: nothing here contacts an agent or imports the A2A SDK. A malformed option raises
``ConfigError`` naming the option (and, for the config block, the file and the agent's id).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from ..._checks import finite
from ...errors import ConfigError

__all__ = [
    "DEFAULT_POLL_EVERY",
    "DEFAULT_TIMEOUT",
    "RemoteAgent",
    "agent",
    "checked_agents",
    "parse_agents_block",
]

DEFAULT_TIMEOUT = 300.0
"""Seconds a card fetch, and each task followed to its end, may take."""
DEFAULT_POLL_EVERY = 1.0
"""Seconds between two ``GetTask`` calls while a task runs."""


@dataclass(frozen=True, slots=True)
class RemoteAgent:
    """A remote agent reached over A2A, not yet contacted. Build one with ``agent(...)``."""

    card_url: str
    """Where its agent card is served (usually ``.../.well-known/agent-card.json``)."""
    headers: dict[str, str] = field(default_factory=dict, compare=False)
    """Sent with the card fetch and every call; ``${NAME}`` is expanded from the environment
    when the agent is contacted, and the values are never logged."""
    timeout: float = DEFAULT_TIMEOUT
    """Seconds for the card fetch, and for each task (capped by the run's time left)."""
    poll_every: float = DEFAULT_POLL_EVERY
    """Seconds between two ``GetTask`` calls while a task is not finished."""
    name: str | None = None
    """Prefix of its tool names instead of the card's name (two agents whose cards share a
    name stay apart this way)."""
    id: str | None = None
    """Its id in a config ``agents`` block; names the agent in warnings."""
    problem: str | None = None
    """Why this config entry cannot be used (it then fails at load, without contact)."""

    @property
    def label(self) -> str:
        """How warnings and errors name this agent before its card is known."""
        return self.id or self.name or self.card_url


def agent(
    card_url: str,
    *,
    headers: Mapping[str, str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    poll_every: float = DEFAULT_POLL_EVERY,
    name: str | None = None,
) -> RemoteAgent:
    """Describe a remote A2A agent whose skills become tools (``create_toolkit(agents=[...])``).

    ``card_url`` is the URL of its agent card. ``headers`` go with the card fetch and every
    call (``${NAME}`` is expanded from the environment when the agent is contacted).
    ``timeout`` (seconds) bounds the card fetch and each task the tools follow; ``poll_every``
    (seconds) spaces the ``GetTask`` calls. ``name`` replaces the card's name as the prefix of
    the tool names. Bad values raise ``ConfigError``.
    """
    return RemoteAgent(
        card_url=_checked_url(card_url, "card_url"),
        headers=_checked_headers(headers, "headers"),
        timeout=_checked_seconds(timeout, "timeout"),
        poll_every=_checked_seconds(poll_every, "poll_every"),
        name=_checked_name(name, "name"),
    )


def checked_agents(agents: Iterable[RemoteAgent | str] | None) -> list[RemoteAgent]:
    """The ``agents=`` option as descriptors (a plain string is a card URL)."""
    if agents is None:
        return []
    if isinstance(agents, str | bytes | Mapping) or not isinstance(agents, Iterable):
        raise ConfigError(
            f"agents must be a list of agent(...) descriptors or card URLs, "
            f"not {type(agents).__name__}"
        )
    out: list[RemoteAgent] = []
    for i, item in enumerate(agents):
        if isinstance(item, RemoteAgent):
            out.append(item)
        elif isinstance(item, str):
            out.append(agent(item))
        else:
            raise ConfigError(
                f"agents[{i}] must be an agent(...) descriptor or a card URL, "
                f"not {type(item).__name__}"
            )
    return out


def parse_agents_block(block: object, where: str) -> list[RemoteAgent]:
    """The enabled agents of a config ``agents`` block, in config order.

    ``{id: {card, headers?, timeout? (ms), pollEvery? (ms), name?, enabled?/disabled?}}``; a
    disabled entry is left out (and so never contacted).
    """
    if block is None:
        return []
    if not isinstance(block, Mapping):
        raise ConfigError(f'{where}: "agents" must be an object mapping ids to agents')
    out: list[RemoteAgent] = []
    for key, entry in block.items():
        ident = str(key)
        prefix = f'{where}: agent "{ident}"'
        if not isinstance(entry, Mapping):
            raise ConfigError(f"{prefix}: the entry must be an object")
        if entry.get("disabled") is True or entry.get("enabled") is False:
            continue
        card = entry.get("card")
        if card is None:  # incomplete, not malformed: reported when the toolkit loads
            out.append(RemoteAgent(card_url="", id=ident, problem='no "card" URL'))
            continue
        if not isinstance(card, str):
            raise ConfigError(f'{prefix}: "card" must be the URL of the agent card')
        out.append(
            RemoteAgent(
                card_url=_checked_url(card, f'{prefix}: "card"'),
                headers=_checked_headers(entry.get("headers"), f'{prefix}: "headers"'),
                timeout=_checked_ms(entry.get("timeout"), DEFAULT_TIMEOUT, prefix, "timeout"),
                poll_every=_checked_ms(
                    entry.get("pollEvery"), DEFAULT_POLL_EVERY, prefix, "pollEvery"
                ),
                name=_checked_name(entry.get("name"), f'{prefix}: "name"'),
                id=ident,
            )
        )
    return out


def _checked_url(value: object, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{what} must be an http(s) URL, not {value!r:.80}")
    parts = urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"{what} must be an http(s) URL, not {value!r:.80}")
    return value.strip()


def _checked_headers(value: object, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{what} must map header names to strings")
    out: dict[str, str] = {}
    for key, item in value.items():
        if not isinstance(key, str) or not isinstance(item, str):
            raise ConfigError(f"{what} must map header names to strings (see {key!r:.40})")
        out[key] = item
    return out


def _checked_seconds(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{what} must be a number of seconds, not {value!r:.40}")
    if not finite(value) or value <= 0:
        raise ConfigError(f"{what} must be a positive, finite number of seconds, not {value!r:.40}")
    return float(value)


def _checked_ms(value: object, default: float, prefix: str, key: str) -> float:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f'{prefix}: "{key}" must be a number of milliseconds')
    if not finite(value) or value <= 0:
        raise ConfigError(f'{prefix}: "{key}" must be a positive, finite number of milliseconds')
    return float(value) / 1000.0


def _checked_name(value: Any, what: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{what} must be a non-empty string")
    return value
