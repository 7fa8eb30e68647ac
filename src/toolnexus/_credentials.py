"""API keys and the extra headers of LLM requests: resolved, checked, registered as secrets."""

from __future__ import annotations

import os
from collections.abc import Mapping
from urllib.parse import urlsplit

from ._env import unsendable
from ._redact import add_secret
from .errors import ConfigError

__all__ = ["ApiKey", "checked_headers", "key_variables", "merge_headers", "request_headers"]


class ApiKey:
    """The explicit key, or the first set variable among ``names`` (read at each run)."""

    def __init__(self, explicit: str | None, names: tuple[str, ...]) -> None:
        self._explicit = explicit
        self._names = names

    def resolve(self) -> str:
        if self._explicit:
            return checked_key(self._explicit, "api_key")
        for name in self._names:
            value = os.environ.get(name)
            if value:
                return checked_key(value, f"the API key in ${name}")
        raise ConfigError(
            f"no API key: pass api_key= or set {' or '.join(self._names)} in the environment"
        )


def checked_key(key: str, where: str) -> str:
    """``key``, registered as a secret; a control character in it is a ``ConfigError``."""
    add_secret(key)
    if unsendable(key):
        raise ConfigError(
            f"{where} contains a line break or another control character "
            "(a trailing newline copied with it?); it cannot be sent in a header"
        )
    return key


_PUBLIC_HEADERS = frozenset({"content-type", "anthropic-version", "accept", "user-agent"})


def checked_headers(headers: Mapping[str, str] | None) -> dict[str, str]:
    """The caller's extra headers, checked: string names and values without line breaks."""
    if headers is not None and not isinstance(headers, Mapping):
        raise ConfigError(
            f"headers must be a dict of header names to values (such as {{'X-A': 'b'}}), "
            f"not {type(headers).__name__}"
        )
    out: dict[str, str] = {}
    for name, value in (headers or {}).items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise ConfigError(f"headers: names and values must be strings (header {name!r})")
        if name.lower() not in _PUBLIC_HEADERS:
            add_secret(value)
            add_secret(value.rpartition(" ")[2])
        if unsendable(name) or unsendable(value):
            raise ConfigError(
                f"headers: the value of {name!r} contains a line break or another control "
                "character; it cannot be sent in a header"
            )
        out[name] = value
    return out


def request_headers(own: dict[str, str], extra: Mapping[str, str]) -> dict[str, str]:
    """The headers of one run's requests; every credential in them is a registered secret."""
    headers = merge_headers(own, extra)
    for name, value in headers.items():
        if name.lower() not in _PUBLIC_HEADERS:
            add_secret(value)
            add_secret(value.rpartition(" ")[2])
    return headers


def merge_headers(own: dict[str, str], extra: Mapping[str, str] | None) -> dict[str, str]:
    """The library's headers, overridden by the caller's on a case-insensitive name match."""
    for name, value in (extra or {}).items():
        for existing in [k for k in own if k.lower() == name.lower()]:
            del own[existing]
        own[name] = value
    return own


def key_variables(style: str, base_url: str) -> tuple[str, ...]:
    """The variables whose key may go to ``base_url`` (SPEC §2.1): a provider's key goes only to
    that provider's hosts, so ``OPENROUTER_API_KEY`` is read for OpenRouter hosts alone."""
    if style == "gemini":
        return ("GEMINI_API_KEY", "GOOGLE_API_KEY")
    host = (urlsplit(base_url).hostname or "").lower()
    openrouter = host == "openrouter.ai" or host.endswith(".openrouter.ai")
    if style == "anthropic":
        return ("ANTHROPIC_API_KEY", "OPENROUTER_API_KEY") if openrouter else ("ANTHROPIC_API_KEY",)
    return ("OPENROUTER_API_KEY", "OPENAI_API_KEY") if openrouter else ("OPENAI_API_KEY",)
