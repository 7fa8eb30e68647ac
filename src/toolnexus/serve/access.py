"""Who may reach a served toolkit: bearer-token auth and the Host/Origin allow-list.

Pure rules, no I/O and no SDK import: ``bearer_auth`` turns the ``auth=`` option into an
``Authenticator`` (tokens compared in constant time, a caller named by the SHA-256 digest of
its token, or the identity a user's callable returns), and ``HostRules`` decides which
``Host`` and ``Origin`` values a server answers (loopback names always, the bind's own host,
and what the user allowed). ``is_loopback`` says whether a bind address is loopback only.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import inspect
import ipaddress
import re
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass

from ..errors import ConfigError

__all__ = [
    "AuthCheck",
    "AuthOption",
    "Authenticator",
    "HostRules",
    "bearer_auth",
    "caller_digest",
    "is_loopback",
]

AuthCheck = Callable[[str], "bool | str | Awaitable[bool | str]"]
"""A user's own token check: ``(token) -> bool`` (or the caller's identity as a ``str``)."""
AuthOption = str | Sequence[str] | AuthCheck | None
"""What ``auth=`` takes: a token, several tokens, a check, or ``None`` (no auth)."""

_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,62})(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}))*\.?")
_WILDCARD = frozenset({"0.0.0.0", "::", ""})


def caller_digest(token: str) -> str:
    """The identity recorded for a caller that presented ``token`` (never the token itself)."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class Authenticator:
    """Checks one bearer token; ``await check(token)`` is the caller's identity or ``None``."""

    _digests: tuple[bytes, ...] = ()
    _check: AuthCheck | None = None

    async def check(self, token: str) -> str | None:
        """The caller's identity when ``token`` is accepted, else ``None``."""
        if self._check is None:
            presented = hashlib.sha256(token.encode("utf-8")).digest()
            matched = False
            for digest in self._digests:  # every digest compared: no early exit
                matched |= hmac.compare_digest(presented, digest)
            return presented.hex() if matched else None
        verdict = self._check(token)
        if inspect.isawaitable(verdict):
            verdict = await verdict
        if isinstance(verdict, str) and verdict:
            return verdict
        return caller_digest(token) if verdict is True else None


def bearer_auth(auth: object) -> Authenticator | None:
    """``auth=`` as an ``Authenticator`` (``None`` when auth is off); ``ConfigError`` for
    an empty token or a value of the wrong type."""
    if auth is None:
        return None
    if isinstance(auth, str):
        auth = [auth]
    if callable(auth):
        return Authenticator(_check=auth)
    if not isinstance(auth, Iterable) or isinstance(auth, bytes):
        raise ConfigError(
            f"auth must be a token, a list of tokens or a callable, not {type(auth).__name__}"
        )
    tokens = list(auth)
    if not tokens:
        raise ConfigError("auth is an empty list: give at least one token (or auth=None)")
    for i, token in enumerate(tokens):
        if not isinstance(token, str) or not token.strip() or token != token.strip():
            raise ConfigError(
                f"auth[{i}] must be a non-empty token without surrounding spaces "
                f"(got {type(token).__name__})"
            )
    return Authenticator(tuple(hashlib.sha256(t.encode("utf-8")).digest() for t in tokens))


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` listens on loopback only (``localhost``, ``127.x``, ``::1``)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _host_port(value: str) -> tuple[str, int | None] | None:
    """A ``Host`` header (``name``, ``name:port``, ``[v6]``, ``[v6]:port``) split strictly;
    ``None`` when it is not exactly that shape (``localhost:1@evil.example`` is not)."""
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        host, rest = value[1:end], value[end + 1 :]
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            return None
    else:
        host, sep, port_text = value.partition(":")
        rest = sep + port_text
        if not _NAME.fullmatch(host):
            return None
    if not rest:
        return host.lower().rstrip("."), None
    if rest[0] != ":" or not rest[1:].isdigit() or len(rest) > 6 or int(rest[1:]) > 65535:
        return None
    return host.lower().rstrip("."), int(rest[1:])


def _loopback_name(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True, slots=True)
class HostRules:
    """The ``Host`` and ``Origin`` values a server answers.

    Always the loopback names (``localhost``, any ``127.x`` address, ``::1``, ``*.localhost``);
    the bind's own host when it is a specific address (never ``0.0.0.0`` or ``::``);
    ``allowed_hosts`` entries (``name`` for any port, ``name:port`` for one); an ``Origin`` is
    accepted when its host passes the same rule or it is one of ``allowed_origins``.
    """

    hosts: frozenset[tuple[str, int | None]]
    origins: frozenset[str]

    @classmethod
    def build(
        cls,
        bind_host: str,
        allowed_hosts: Iterable[str] | None = None,
        allowed_origins: Iterable[str] | None = None,
    ) -> HostRules:
        """The rules for a server bound to ``bind_host``; ``ConfigError`` for a bad entry."""
        hosts: set[tuple[str, int | None]] = set()
        if bind_host.lower() not in _WILDCARD:
            hosts.add((bind_host.lower(), None))
        for i, entry in enumerate(_strings(allowed_hosts, "allowed_hosts")):
            parsed = _host_port(entry.strip())
            if parsed is None or parsed[0] in _WILDCARD:
                raise ConfigError(
                    f"allowed_hosts[{i}] {entry!r} must be a host name, optionally host:port"
                )
            hosts.add(parsed)
        origins: set[str] = set()
        for i, entry in enumerate(_strings(allowed_origins, "allowed_origins")):
            normal = _origin(entry.strip())
            if normal is None:
                raise ConfigError(
                    f"allowed_origins[{i}] {entry!r} must be scheme://host[:port] (http or https)"
                )
            origins.add(normal)
        return cls(frozenset(hosts), frozenset(origins))

    def host_ok(self, value: str) -> bool:
        """Whether a request's ``Host`` header value is answered."""
        return _verdict(self, value, False)

    def origin_ok(self, value: str) -> bool:
        """Whether a request's ``Origin`` header value is answered."""
        return _verdict(self, value, True)

    def _host_ok(self, value: str) -> bool:
        parsed = _host_port(value)
        return parsed is not None and self._allowed(*parsed)

    def _origin_ok(self, value: str) -> bool:
        normal = _origin(value)
        if normal is None:
            return False
        if normal in self.origins:
            return True
        parsed = _host_port(normal.partition("://")[2])
        return parsed is not None and self._allowed(*parsed)

    def _allowed(self, host: str, port: int | None) -> bool:
        if host in _WILDCARD:
            return False
        if _loopback_name(host):
            return True
        return (host, None) in self.hosts or (port is not None and (host, port) in self.hosts)


@functools.lru_cache(maxsize=1024)
def _verdict(rules: HostRules, value: str, origin: bool) -> bool:
    """``rules``' answer for one header value, remembered (clients send the same few)."""
    return rules._origin_ok(value) if origin else rules._host_ok(value)


def _origin(value: str) -> str | None:
    """``scheme://host[:port]`` normalised (lower case), or ``None`` for any other shape."""
    scheme, sep, rest = value.partition("://")
    if not sep or scheme.lower() not in ("http", "https") or _host_port(rest) is None:
        return None
    return f"{scheme.lower()}://{rest.lower()}"


def _strings(values: Iterable[str] | None, what: str) -> list[str]:
    if values is None:
        return []
    if isinstance(values, str) or not isinstance(values, Iterable):
        raise ConfigError(f"{what} must be a list of strings")
    found = list(values)
    for i, value in enumerate(found):
        if not isinstance(value, str):
            raise ConfigError(f"{what}[{i}] must be a string, not {type(value).__name__}")
    return found
