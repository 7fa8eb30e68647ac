"""HTTP endpoints as tools."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from typing import Literal
from urllib.parse import quote, urlencode

from .._env import expand_headers, unsendable, unset_variables
from .._json import compact_json, loads
from ..errors import ConfigError
from ..transport.http import (
    BodyTooLarge,
    HttpResponse,
    NetworkError,
    Transport,
    check_http_client,
    tool_transport,
)
from ..types import JSONObject, Tool, ToolContext, ToolResult

__all__ = ["http_tool"]

BodyMode = Literal["json", "form", "raw"]
ResultMode = Literal["text", "json", "status+text"]
logger = logging.getLogger("toolnexus")

_NO_BODY_METHODS = frozenset({"GET", "HEAD"})
MAX_RESPONSE_BYTES = 4 * 1024 * 1024
"""Default cap on the bytes read from an endpoint (enough for a million characters of text)."""
_PLACEHOLDER = re.compile(r"\{([A-Za-z0-9_.-]+)\}")


def http_tool(
    *,
    name: str,
    description: str,
    url: str,
    input_schema: JSONObject,
    method: str = "GET",
    headers: Mapping[str, str] | None = None,
    query: Iterable[str] | None = None,
    body: BodyMode = "json",
    timeout: float = 30.0,
    result_mode: ResultMode = "text",
    http_client: object | None = None,
    max_response_bytes: int = MAX_RESPONSE_BYTES,
) -> Tool:
    """A tool that calls an HTTP endpoint with the model's arguments.

        ``{key}`` placeholders in ``url`` take the percent-encoded argument of that name. For
        ``GET``/``HEAD`` the other arguments go to the query string; for other methods only those
        named in ``query`` do and the rest form the body (``json``, ``form`` or ``raw``, where raw
        sends ``args["body"]``). Header values expand ``${ENV}`` variables at call time.
        A non-2xx status, a network failure or a timeout is an error result, never an exception.
        ``http_client`` (an ``aiohttp.ClientSession`` or ``httpx.AsyncClient``) pools connections
        across calls; without it the tools share one kept-alive pool per event loop (the library's
    own HTTP/1.1 transport, responses framed by ``httptools``; redirects followed). At most
        ``max_response_bytes`` of a response are read: a longer body is cut there and the result
        has ``metadata["truncated"] = True``.
    """
    method = method.upper()
    query_names = frozenset(query or ())
    if body not in ("json", "form", "raw"):
        raise ConfigError(f"http_tool {name!r}: body must be 'json', 'form' or 'raw', not {body!r}")
    if result_mode not in ("text", "json", "status+text"):
        raise ConfigError(f"http_tool {name!r}: unknown result_mode {result_mode!r}")
    check_http_client(http_client)

    warned: set[str] = set()

    async def execute(args: JSONObject, ctx: ToolContext | None = None) -> ToolResult:
        remaining = dict(args or {})
        target = _fill_url(url, remaining)
        if method in _NO_BODY_METHODS:
            params, payload = remaining, {}
        else:
            params = {k: v for k, v in remaining.items() if k in query_names}
            payload = {k: v for k, v in remaining.items() if k not in query_names}
        if params:
            target += ("&" if "?" in target else "?") + urlencode(
                {k: _query_value(v) for k, v in params.items()}
            )
        for variable in unset_variables((headers or {}).values()):
            if variable not in warned:
                warned.add(variable)
                logger.warning(
                    "http tool %r: a header uses ${%s}, which is not set; it is sent as an "
                    "empty string",
                    name,
                    variable,
                )
        sent_headers = expand_headers(headers)
        for header, value in sent_headers.items():
            if unsendable(value):
                return ToolResult(
                    f"header {header!r} of {name} contains a line break or another control "
                    "character (after ${...} expansion); the request was not sent",
                    is_error=True,
                )
        data = _encode_body(body, payload, sent_headers) if payload else None
        limit = timeout if ctx is None or ctx.timeout is None else min(timeout, ctx.timeout)
        truncated = False
        try:
            resp = await _send(
                http_client, method, target, sent_headers, data, limit, max_response_bytes
            )
        except NetworkError as exc:
            return ToolResult(str(exc), is_error=True)
        except BodyTooLarge as exc:
            resp, truncated = HttpResponse(exc.status, {}, exc.head), True
        metadata: JSONObject = {"status": resp.status}
        text = resp.text()
        if truncated:
            metadata["truncated"] = True
            text += f"\n[response truncated at {max_response_bytes} bytes]"
        if not 200 <= resp.status < 300:
            return ToolResult(f"HTTP {resp.status}: {text}", is_error=True, metadata=metadata)
        return ToolResult(_render(result_mode, resp.status, text), metadata=metadata)

    return Tool(
        name=name,
        description=description,
        input_schema=input_schema,
        source="http",
        execute=execute,
    )


async def _send(
    http_client: object | None,
    method: str,
    url: str,
    headers: dict[str, str],
    data: bytes | None,
    time_limit: float,
    max_bytes: int,
) -> HttpResponse:
    transport: Transport = tool_transport(http_client)
    return await transport.request(
        method, url, headers=headers, body=data, time_limit=time_limit, max_bytes=max_bytes
    )


def _fill_url(template: str, args: JSONObject) -> str:
    """Substitute ``{key}`` placeholders (missing → ``""``), removing used keys from ``args``."""

    used: set[str] = set()

    def substitute(match: re.Match[str]) -> str:
        key = match.group(1)
        used.add(key)
        return quote(str(args[key]), safe="") if key in args else ""

    url = _PLACEHOLDER.sub(substitute, template)
    for key in used:
        args.pop(key, None)
    return url


def _query_value(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return compact_json(value)


def _encode_body(mode: BodyMode, payload: JSONObject, headers: dict[str, str]) -> bytes:
    if mode == "json":
        data, content_type = compact_json(payload).encode(), "application/json"
    elif mode == "form":
        encoded = urlencode({k: _query_value(v) for k, v in payload.items()})
        data, content_type = encoded.encode(), "application/x-www-form-urlencoded"
    else:
        data, content_type = str(payload.get("body", "")).encode(), "text/plain; charset=utf-8"
    if not any(k.lower() == "content-type" for k in headers):
        headers["Content-Type"] = content_type
    return data


def _render(mode: ResultMode, status: int, text: str) -> str:
    if mode == "json":
        try:
            return compact_json(loads(text))
        except ValueError:
            return compact_json(text)
    if mode == "status+text":
        return f"{status}\n{text}"
    return text
