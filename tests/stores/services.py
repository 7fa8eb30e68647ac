"""Reaching the real Redis and PostgreSQL servers the store tests run against.

``TOOLNEXUS_TEST_REDIS_URL`` (default ``redis://127.0.0.1:6379/0``) and
``TOOLNEXUS_TEST_POSTGRES_DSN`` (default ``postgresql://postgres@127.0.0.1:5432/test``) name
them. A test that needs an unreachable server is skipped with the reason, unless
``TOOLNEXUS_REQUIRE_SERVICES=1`` (set by CI), which turns the skip into a failure.
"""

from __future__ import annotations

import os
import socket
from urllib.parse import urlsplit

import pytest

REDIS_URL = os.environ.get("TOOLNEXUS_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
POSTGRES_DSN = os.environ.get(
    "TOOLNEXUS_TEST_POSTGRES_DSN", "postgresql://postgres@127.0.0.1:5432/test"
)
REQUIRED = os.environ.get("TOOLNEXUS_REQUIRE_SERVICES") == "1"


def reachable(url: str, default_port: int) -> bool:
    parts = urlsplit(url)
    try:
        with socket.create_connection(
            (parts.hostname or "127.0.0.1", parts.port or default_port), 2
        ):
            return True
    except OSError:
        return False


def need(url: str, default_port: int, what: str) -> None:
    """Skip (or, with ``TOOLNEXUS_REQUIRE_SERVICES=1``, fail) when ``url`` is unreachable."""
    if reachable(url, default_port):
        return
    reason = (
        f"{what} is not reachable at {urlsplit(url).hostname}:{urlsplit(url).port or default_port}"
    )
    if REQUIRED:
        pytest.fail(f"{reason}, and TOOLNEXUS_REQUIRE_SERVICES=1 requires it")
    pytest.skip(reason)
