"""How the library talks HTTP: a small seam. Model calls and tools' own requests go over
``StreamTransport`` (HTTP/1.1 on asyncio, responses framed by ``httptools``) unless an
``http_client`` (aiohttp or httpx) is given."""

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
