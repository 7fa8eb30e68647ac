"""How the library talks HTTP: a small seam with aiohttp behind it by default."""

from __future__ import annotations

from .http import (
    AiohttpTransport,
    HttpResponse,
    HttpxTransport,
    NetworkError,
    StreamResponse,
    Transport,
    transport_for,
)

__all__ = [
    "AiohttpTransport",
    "HttpResponse",
    "HttpxTransport",
    "NetworkError",
    "StreamResponse",
    "Transport",
    "transport_for",
]
