"""The ``mcp`` serving profile: which name, version and tools a served toolkit announces.

Pure data, no SDK import: a profile is validated here once, before anything listens.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..types import Tool
from .profile_fields import name_set, profile_mapping, text

__all__ = ["DEFAULT_SERVER_NAME", "DEFAULT_SERVER_VERSION", "McpProfile", "mcp_profile"]

DEFAULT_SERVER_NAME = "toolnexus"
DEFAULT_SERVER_VERSION = "0.1.0"
_KEYS = ("name", "version", "tools")


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
    fields = profile_mapping(value, _KEYS, "MCP", where)
    return McpProfile(
        text(fields, "name", DEFAULT_SERVER_NAME, where),
        text(fields, "version", DEFAULT_SERVER_VERSION, where),
        name_set(fields, "tools", "tool", where),
    )
