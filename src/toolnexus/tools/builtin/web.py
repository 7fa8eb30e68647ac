"""``webfetch``: GET a URL and return its body as markdown, plain text or raw HTML.

The request goes through the library's HTTP transport (``StreamTransport``), reads at most
``MAX_FETCH_BYTES`` of the body, and gives up after ``timeout`` seconds (or when the run's
deadline comes first). An HTML page is turned into readable text unless ``format`` is
``html``; any other content type comes back unchanged. The output keeps its first 100,000
characters.
"""

from __future__ import annotations

import asyncio
import codecs
import re
from collections.abc import AsyncIterator, Mapping

from ...transport.http import NetworkError, tool_transport
from ...types import JSONObject, Tool, ToolContext, ToolResult
from ._common import (
    MAX_OUTPUT_CHARS,
    ArgError,
    BuiltinScope,
    builtin,
    cut_head,
    fail,
    opt_number,
    opt_str,
    require_str,
)
from .html_text import html_to_text

__all__ = ["DEFAULT_TIMEOUT_S", "MAX_FETCH_BYTES", "tools"]

DEFAULT_TIMEOUT_S = 30.0
"""Seconds a fetch may take when the call gives no ``timeout``."""
MAX_FETCH_BYTES = 10 * 1024 * 1024
"""Most bytes of a response body read; a longer body is cut there (and said to be)."""
FORMATS = ("markdown", "text", "html")
_THREAD_ABOVE = 256 * 1024
"""Pages longer than this (in characters) are converted in a worker thread."""

_DESCRIPTION = (
    "Fetch a web page or file with GET. format: markdown (default: the page's text with "
    "headings, links and lists kept), text (tags removed) or html (the raw markup). "
    "Non-HTML content is returned as is. timeout is in seconds (default 30). Long pages keep "
    "their first 100000 characters."
)
_HEADERS = {
    "User-Agent": "toolnexus-webfetch",
    "Accept": "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.8",
}
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?([A-Za-z0-9_.:-]+)""", re.I)
_HTML_START = re.compile(r"\s*(<!doctype\s+html|<html[\s>])", re.I)


def tools(scope: BuiltinScope) -> list[Tool]:
    """The ``webfetch`` tool (``scope`` is not needed: it touches no files)."""
    del scope
    properties: JSONObject = {
        "url": {"type": "string", "description": "The http:// or https:// URL to fetch."},
        "format": {"type": "string", "enum": list(FORMATS), "description": "Output format."},
        "timeout": {"type": "number", "description": "Time limit in seconds."},
    }
    return [builtin("webfetch", _DESCRIPTION, properties, ["url"], _webfetch)]


async def _webfetch(args: JSONObject, ctx: ToolContext | None) -> ToolResult:
    url = require_str(args, "url").strip()
    if not url.lower().startswith(("http://", "https://")):
        raise ArgError(f"url must start with http:// or https://: {url}")
    fmt = opt_str(args, "format", "markdown")
    if fmt not in FORMATS:
        raise ArgError(f"format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    timeout = opt_number(args, "timeout", DEFAULT_TIMEOUT_S)
    assert timeout is not None
    if timeout <= 0:
        raise ArgError("timeout must be a positive number of seconds")
    limit = timeout if ctx is None or ctx.timeout is None else min(timeout, ctx.timeout)

    try:
        status, content_type, body, cut = await _fetch(url, limit)
    except TimeoutError:
        return fail("webfetch", f"request timed out after {limit:g}s: {url}")
    except NetworkError as exc:
        return fail("webfetch", f"{exc}: {url}")

    metadata: JSONObject = {"status": status, "format": fmt}
    if not 200 <= status < 300:
        return ToolResult(f"HTTP {status}", is_error=True, metadata=metadata)
    output, truncated = await _render(body, content_type, fmt, url)
    if cut and not truncated:
        output += f"\n[output truncated: the body is larger than {MAX_FETCH_BYTES} bytes]"
    if cut or truncated:
        metadata["truncated"] = True
    return ToolResult(output, metadata=metadata)


async def _fetch(url: str, limit: float) -> tuple[int, str, bytes, bool]:
    """Status, content type, at most ``MAX_FETCH_BYTES`` of the body, and whether it was cut
    (the body of a non-2xx response is not read)."""
    transport = tool_transport(None)
    async with (
        asyncio.timeout(limit),
        transport.stream("GET", url, headers=_HEADERS, read_timeout=limit) as resp,
    ):
        content_type = _header(resp.headers, "Content-Type")
        if not 200 <= resp.status < 300:
            return resp.status, content_type, b"", False
        body, cut = await _read_head(resp.chunks(), MAX_FETCH_BYTES)
        return resp.status, content_type, body, cut


async def _read_head(chunks: AsyncIterator[bytes], limit: int) -> tuple[bytes, bool]:
    """The first ``limit`` bytes of ``chunks``, and whether there were more."""
    parts: list[bytes] = []
    size = 0
    try:
        async for chunk in chunks:
            if size + len(chunk) > limit:
                parts.append(chunk[: limit - size])
                return b"".join(parts), True
            parts.append(chunk)
            size += len(chunk)
    finally:
        aclose = getattr(chunks, "aclose", None)
        if aclose is not None:  # stopping early: close the generator here, not at GC
            await aclose()
    return b"".join(parts), False


async def _render(body: bytes, content_type: str, fmt: str, url: str) -> tuple[str, bool]:
    """The output for ``fmt``, cut to its head, and whether it was cut. Converting a large
    page runs in a worker thread and stops once the output is long enough."""
    content_type = content_type.lower()
    text = body.decode(_charset(content_type, body), errors="replace")
    unknown = not content_type or content_type.startswith("application/octet-stream")
    is_html = "html" in content_type or (unknown and _HTML_START.match(text) is not None)
    if fmt == "html" or not is_html:
        return cut_head(text)
    markdown, limit = fmt == "markdown", MAX_OUTPUT_CHARS
    if len(text) > _THREAD_ABOVE:
        page, whole = await asyncio.to_thread(
            html_to_text, text, markdown=markdown, base_url=url, limit=limit
        )
    else:
        page, whole = html_to_text(text, markdown=markdown, base_url=url, limit=limit)
    if whole:
        return cut_head(page)
    return page[:limit] + "\n[output truncated: the rest of the page is not shown]", True


def _header(headers: Mapping[str, str], name: str) -> str:
    value = headers.get(name)
    if value is None:  # in case a transport hands out a plain dict
        value = next((v for k, v in headers.items() if k.lower() == name.lower()), "")
    return value


def _charset(content_type: str, body: bytes) -> str:
    """The body's encoding: the Content-Type charset, else an HTML meta tag's, else UTF-8."""
    declared = re.search(r"charset\s*=\s*[\"']?([A-Za-z0-9_.:-]+)", content_type)
    candidates = [declared.group(1)] if declared else []
    if "html" in content_type or not content_type:
        meta = _META_CHARSET.search(body[:4096])
        if meta:
            candidates.append(meta.group(1).decode("ascii"))
    for name in candidates:
        try:
            return codecs.lookup(name).name
        except LookupError:
            continue
    return "utf-8"
