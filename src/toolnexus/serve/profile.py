"""The ``mcp`` serving profile: which name, version and tools a served toolkit announces.

Pure data, no SDK import: a profile is validated here once, before anything listens.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError
from ..types import Tool

__all__ = ["DEFAULT_SERVER_NAME", "DEFAULT_SERVER_VERSION", "McpProfile", "mcp_profile"]

DEFAULT_SERVER_NAME = "toolnexus"
DEFAULT_SERVER_VERSION = "0.1.0"
_KEYS = frozenset({"name", "version", "tools"})


@dataclass(frozen=True, slots=True)
class McpProfile:
    """How a toolkit is served over MCP: ``serverInfo`` and the optional tool filter."""

    name: str = DEFAULT_SERVER_NAME
    version: str = DEFAULT_SERVER_VERSION
    tools: frozenset[str] | None = None
    """Names of the exposed tools (unknown names are ignored); ``None`` exposes every tool."""

    def exposed(self, tools: Sequence[Tool]) -> list[Tool]:
        """The tools this profile exposes, in toolkit order."""
        if self.tools is None:
            return list(tools)
        return [t for t in tools if t.name in self.tools]


def mcp_profile(value: Mapping[str, Any] | McpProfile, *, where: str = "mcp") -> McpProfile:
    """Validate a profile mapping (``{}`` = every tool, default name and version).

    Raises ``ConfigError`` naming the key for an unknown key or a value of the wrong type.
    """
    if isinstance(value, McpProfile):
        return value
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: the MCP profile must be an object")
    unknown = sorted(str(k) for k in value if k not in _KEYS)
    if unknown:
        raise ConfigError(
            f"{where}: unknown key(s) {', '.join(unknown)} (expected name, version, tools)"
        )
    name = _text(value, "name", DEFAULT_SERVER_NAME, where)
    version = _text(value, "version", DEFAULT_SERVER_VERSION, where)
    tools = value.get("tools")
    if tools is None:
        return McpProfile(name, version, None)
    if isinstance(tools, str) or not isinstance(tools, Sequence):
        raise ConfigError(f'{where}: "tools" must be a list of tool names')
    if not all(isinstance(t, str) for t in tools):
        raise ConfigError(f'{where}: "tools" must contain only strings')
    return McpProfile(name, version, frozenset(tools))


def _text(value: Mapping[str, Any], key: str, default: str, where: str) -> str:
    found = value.get(key, default)
    if not isinstance(found, str) or not found:
        raise ConfigError(f'{where}: "{key}" must be a non-empty string')
    return found
