"""How the library talks HTTP: a small seam. Model calls go over ``StreamTransport`` (HTTP/1.1 on
asyncio streams) unless a client is given an ``http_client``; HTTP tools use aiohttp."""

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
from .streams import StreamTransport

__all__ = [
    "AiohttpTransport",
    "HttpResponse",
    "HttpxTransport",
    "NetworkError",
    "StreamResponse",
    "StreamTransport",
    "Transport",
    "transport_for",
]
