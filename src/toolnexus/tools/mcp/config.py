"""Parsing an ``mcp.json`` (a file or a dict) into server configurations.

Pure data: nothing here contacts a server or imports the MCP SDK. A malformed config raises
``ConfigError`` naming the file, the server and the key; a server that is merely incomplete
(neither ``url`` nor ``command``) gets a ``problem`` and is reported ``failed`` at load.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..._checks import finite
from ..._json import JSONDepthError, loads
from ...errors import ConfigError
from ..a2a.config import RemoteAgent, parse_agents_block
from .oauth_config import OAuthConfig, parse_oauth

__all__ = [
    "DEFAULT_TIMEOUT_MS",
    "RESERVED_KEYS",
    "WRAPPER_KEYS",
    "McpConfig",
    "McpServerConfig",
    "load_mcp_config",
]

DEFAULT_TIMEOUT_MS = 30_000
WRAPPER_KEYS: tuple[str, ...] = ("mcpServers", "servers", "mcp")
"""The first of these present at the top level holds the server map."""
RESERVED_KEYS: frozenset[str] = frozenset({"builtins", "agents", "a2a", "mcpServer"})
"""Sibling sections of a bare server map; they never name a server."""

ServerType = Literal["local", "remote"]
_Fail = Callable[[str], ConfigError]
_TYPE_ALIASES: dict[str, ServerType] = {
    "local": "local",
    "stdio": "local",
    "remote": "remote",
    "http": "remote",
    "streamable-http": "remote",
    "streamableHttp": "remote",
    "sse": "remote",
}


@dataclass(slots=True)
class McpServerConfig:
    """One server entry of an MCP config, validated but not yet contacted."""

    name: str
    type: ServerType | None = None
    """``local`` (stdio) or ``remote`` (HTTP); ``None`` only when ``problem`` is set."""
    command: list[str] = field(default_factory=list)
    """Program and arguments for a local server (``args`` already appended)."""
    env: dict[str, str] = field(default_factory=dict)
    """Extra environment variables, merged over the SDK's safe default environment (or over
    ``os.environ`` with ``inherit_env``) when the server starts."""
    inherit_env: bool = False
    """``inheritEnv: true``: start from the whole host environment instead of the safe set."""
    cwd: str | None = None
    """Working directory; a relative one in a config file is resolved against its folder."""
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    """Raw header values; ``${NAME}`` is expanded only when connecting (never logged)."""
    enabled: bool = True
    timeout_ms: int = DEFAULT_TIMEOUT_MS
    """Budget of each connection phase and of each tool call, in milliseconds."""
    reset_timeout_on_progress: bool = False
    """``resetTimeoutOnProgress: true``: each progress report gives a call a fresh budget."""
    tools: dict[str, bool] | None = None
    """Per-server filter by original tool name (same rules as the skill filter)."""
    problem: str | None = None
    """Why this entry cannot be started (the server is then ``failed`` without contact)."""
    oauth: OAuthConfig | None = None
    """OAuth settings for a remote server (``oauth`` key); ``None`` when absent."""


@dataclass(slots=True)
class McpConfig:
    """Every configured server in config order, plus the top-level ``builtins`` value."""

    servers: list[McpServerConfig] = field(default_factory=list)
    builtins: bool | dict[str, Any] | None = None
    """The top-level ``builtins`` value (a bool or an object), ``None`` when the key is absent."""
    mcp_server: dict[str, Any] | None = None
    """The top-level ``mcpServer`` block (how ``Toolkit.serve`` exposes the toolkit over MCP)."""
    agents: list[RemoteAgent] = field(default_factory=list)
    """The enabled entries of the top-level ``agents`` block (remote A2A agents), in order."""
    a2a: dict[str, Any] | None = None
    """The top-level ``a2a`` block (how ``Toolkit.serve`` presents the toolkit as an A2A agent)."""


MAX_CONFIG_BYTES = 16 * 1024 * 1024
"""Largest MCP config file read (a config is a few kilobytes; a bigger one is a mistake)."""


def _read_config_file(path: Path, where: str) -> str:
    """The text of a config file: a regular file of at most ``MAX_CONFIG_BYTES``, else a
    ``ConfigError`` (a FIFO, a device such as ``/dev/zero`` or a folder would hang or never
    end). Opened without blocking, so a FIFO nobody writes to is refused, not waited on."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise ConfigError(f"{where}: file not found") from None
    except OSError as exc:
        raise ConfigError(
            f"{where}: cannot be read ({exc.strerror or type(exc).__name__})"
        ) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(f"{where}: not a regular file ({_file_kind(info.st_mode)})")
        if info.st_size > MAX_CONFIG_BYTES:
            raise ConfigError(
                f"{where}: {info.st_size} bytes, more than an MCP config may have "
                f"({MAX_CONFIG_BYTES} bytes)"
            )
        with os.fdopen(os.dup(fd), "rb") as file:
            data = file.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ConfigError(f"{where}: cannot be read ({reason})") from None
    finally:
        os.close(fd)
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{where}: more than an MCP config may have ({MAX_CONFIG_BYTES} bytes)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{where}: cannot be read (not UTF-8 text)") from None


def _file_kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a file"


def load_mcp_config(config: str | os.PathLike[str] | Mapping[str, Any]) -> McpConfig:
    """Read and validate an MCP config from a JSON file path or an already parsed mapping.

    Raises ``ConfigError`` for a missing or unreadable file, invalid JSON, or a malformed entry.
    """
    if isinstance(config, Mapping):
        # SPEC 1.6: a dict config's relative paths resolve against the process's working
        # directory (now), never against the server's own ``cwd``
        return _parse_root(config, where="MCP config", base=Path.cwd())
    path = Path(config)
    where = os.fspath(config)
    text = _read_config_file(path, where)
    try:
        data = loads(text)
    except JSONDepthError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{where}: not valid JSON (line {exc.lineno}, column {exc.colno})"
        ) from None
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where}: the top level must be a JSON object")
    return _parse_root(data, where=where, base=path.resolve().parent)


def _parse_root(data: Mapping[str, Any], *, where: str, base: Path | None) -> McpConfig:
    wrapper = next((key for key in WRAPPER_KEYS if key in data), None)
    if wrapper is not None:
        entries = data[wrapper]
        if entries is None:
            entries = {}
        if not isinstance(entries, Mapping):
            raise ConfigError(f'{where}: "{wrapper}" must be an object mapping names to servers')
    else:
        entries = {key: value for key, value in data.items() if key not in RESERVED_KEYS}
    servers = [_parse_server(str(name), entry, where, base) for name, entry in entries.items()]
    builtins = data.get("builtins")
    if builtins is not None and not isinstance(builtins, bool | Mapping):
        raise ConfigError(f'{where}: "builtins" must be true, false or an object')
    mcp_server = data.get("mcpServer")
    if mcp_server is not None and not isinstance(mcp_server, Mapping):
        raise ConfigError(f'{where}: "mcpServer" must be an object')
    a2a = data.get("a2a")
    if a2a is not None and not isinstance(a2a, Mapping):
        raise ConfigError(f'{where}: "a2a" must be an object')
    return McpConfig(
        servers=servers,
        builtins=dict(builtins) if isinstance(builtins, Mapping) else builtins,
        mcp_server=dict(mcp_server) if mcp_server is not None else None,
        agents=parse_agents_block(data.get("agents"), where),
        a2a=dict(a2a) if a2a is not None else None,
    )


def _parse_server(name: str, entry: object, where: str, base: Path | None) -> McpServerConfig:
    def fail(message: str) -> ConfigError:
        return ConfigError(f'{where}: server "{name}": {message}')

    if not isinstance(entry, Mapping):
        raise fail("the entry must be an object")
    server = McpServerConfig(name=name)
    server.command = _command(entry, fail)
    server.url = _optional_str(entry, "url", fail)
    server.cwd = _optional_str(entry, "cwd", fail)
    if base is not None:
        server.command, server.cwd = _resolve_paths(server.command, server.cwd, base)
    server.headers = _string_map(entry, "headers", fail)
    env_key = "environment" if "environment" in entry else "env"
    server.env = _string_map(entry, env_key, fail)
    if "env" in entry and "environment" in entry:
        server.env = {**_string_map(entry, "env", fail), **server.env}
    inherit = entry.get("inheritEnv", False)
    if not isinstance(inherit, bool):
        raise fail('"inheritEnv" must be true or false')
    server.inherit_env = inherit
    resets = entry.get("resetTimeoutOnProgress", False)
    if not isinstance(resets, bool):
        raise fail('"resetTimeoutOnProgress" must be true or false')
    server.reset_timeout_on_progress = resets
    server.enabled = not (entry.get("disabled") is True or entry.get("enabled") is False)
    server.timeout_ms = _timeout(entry, fail)
    server.tools = _tool_filter(entry, fail)
    server.type, server.problem = _server_type(entry, server, fail)
    if entry.get("oauth") is not None:
        server.oauth = parse_oauth(entry["oauth"], fail)
    return server


def _resolve_paths(command: list[str], cwd: str | None, base: Path) -> tuple[list[str], str | None]:
    """Resolve a relative ``cwd``, and a relative program path with a ``/``, against ``base``.

    A bare program name (no ``/``) is left for the ``PATH`` lookup.
    """
    if cwd is not None and not os.path.isabs(cwd):
        cwd = os.path.normpath(base / cwd)
    if command:
        program = command[0]
        if ("/" in program or os.sep in program) and not os.path.isabs(program):
            command = [os.path.normpath(base / program), *command[1:]]
    return command, cwd


def _command(entry: Mapping[str, Any], fail: _Fail) -> list[str]:
    raw = entry.get("command")
    if raw is None:
        command: list[str] = []
    elif isinstance(raw, str):
        command = [raw] if raw.strip() else []
    elif isinstance(raw, list) and all(isinstance(part, str) for part in raw):
        command = list(raw)
    else:
        raise fail('"command" must be a list of strings or a string')
    args = entry.get("args")
    if args is not None:
        if not isinstance(args, list) or not all(isinstance(a, str | int | float) for a in args):
            raise fail('"args" must be a list of strings')
        if command:
            command.extend(str(a) for a in args)
    return command


def _optional_str(entry: Mapping[str, Any], key: str, fail: _Fail) -> str | None:
    value = entry.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise fail(f'"{key}" must be a string')
    return value or None


def _string_map(entry: Mapping[str, Any], key: str, fail: _Fail) -> dict[str, str]:
    value = entry.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise fail(f'"{key}" must be an object of string values')
    out: dict[str, str] = {}
    for item_key, item in value.items():
        if isinstance(item, bool):
            out[str(item_key)] = "true" if item else "false"
        elif isinstance(item, str | int | float):
            out[str(item_key)] = str(item)
        else:
            raise fail(f'"{key}"."{item_key}" must be a string')
    return out


def _timeout(entry: Mapping[str, Any], fail: _Fail) -> int:
    value = entry.get("timeout")
    if value is None:
        return DEFAULT_TIMEOUT_MS
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise fail('"timeout" must be a number of milliseconds')
    if not finite(value):
        raise fail(f'"timeout" must be a finite number of milliseconds, not {value!r:.40}')
    if value <= 0:
        raise fail('"timeout" must be a positive number of milliseconds')
    return max(1, round(value))


def _tool_filter(entry: Mapping[str, Any], fail: _Fail) -> dict[str, bool] | None:
    value = entry.get("tools")
    if value is None:
        return None
    if not isinstance(value, Mapping) or not all(isinstance(v, bool) for v in value.values()):
        raise fail('"tools" must map tool names to true or false')
    return {str(k): v for k, v in value.items()}


def _server_type(
    entry: Mapping[str, Any], server: McpServerConfig, fail: _Fail
) -> tuple[ServerType | None, str | None]:
    raw = entry.get("type")
    if raw is None:
        if server.url:
            return "remote", None
        if server.command:
            return "local", None
        return None, "neither url nor command"
    if not isinstance(raw, str) or raw not in _TYPE_ALIASES:
        raise fail(f'"type" must be "local" or "remote", not {raw!r}')
    kind = _TYPE_ALIASES[raw]
    if kind == "remote" and not server.url:
        return kind, 'type "remote" needs a "url"'
    if kind == "local" and not server.command:
        return kind, 'type "local" needs a "command"'
    return kind, None
