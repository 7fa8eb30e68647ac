"""An OpenAPI 3.0 or 3.1 document as HTTP tools, one per operation."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from typing import Any

from ...errors import ConfigError
from ...transport.http import check_http_client
from ...types import Tool
from ..http import ResultMode
from .document import load_document
from .operations import Options, build_tools

__all__ = ["http_tools_from_openapi"]


async def http_tools_from_openapi(
    spec: str | os.PathLike[str] | Mapping[str, Any],
    *,
    base_url: str | None = None,
    headers: Mapping[str, str] | None = None,
    timeout: float = 30.0,  # noqa: ASYNC109 (part of the public API)
    result_mode: ResultMode = "text",
    http_client: object | None = None,
) -> list[Tool]:
    """One ``http_tool`` per operation of an OpenAPI 3.x document, in document order.

    ``spec`` is an ``http(s)://`` URL (fetched through the library's HTTP transport, or
    ``http_client`` when given), a path to a JSON or YAML file, or an already parsed dict.
    Reading and parsing run off the event loop.

    Each tool is named ``sanitize(operationId)``, else ``sanitize(f"{method}_{path}")``; a
    name an earlier operation already has gets ``_2``, ``_3``... and a warning naming both
    operations. The description is the ``summary``, else the ``description``, else ``""``.
    The input schema has one property per path and query parameter (path-level parameters
    apply to every operation below, an operation's own replace them by name and location;
    header and cookie parameters are left out) plus the body: the properties of a JSON (or
    else form-encoded) object body, or a single ``body`` property sent as JSON for any other
    JSON body, and also when a body property would share its name with a parameter.
    ``required`` merges required parameters (path parameters always) and required body
    properties. ``GET`` and ``HEAD`` bodies, and bodies of other media types, are not offered.

    Local ``$ref``s (``#/...``, JSON pointers with ``~0``/``~1`` escapes) are inlined, in
    parameters, request bodies and nested schemas alike; other references are left as they
    are. A recursive schema is cut where it would repeat itself: that place gets the open
    schema ``{}``. A reference that points nowhere is a ``ConfigError`` giving the pointer
    and where it was written.

    The base URL is ``base_url``, else ``servers[0].url`` of the operation, its path or the
    document (server variables take their defaults); a relative one is resolved against the
    URL the document was fetched from. ``headers`` (``${ENV}`` expanded at call time) go with
    every call but not with the request for the document itself. ``timeout`` bounds fetching
    the document and each call; ``result_mode`` and ``http_client`` are passed to every tool.

    Raises ``ConfigError`` for a document that cannot be read or parsed, that is not OpenAPI
    3.x, that has no usable base URL, or whose references are broken; the message names the
    document and the place in it.
    """
    check_http_client(http_client)
    if headers is not None and not isinstance(headers, Mapping):
        raise ConfigError(
            f"http_tools_from_openapi: headers must be a mapping, not {type(headers).__name__}"
        )
    doc = await load_document(spec, http_client=http_client, time_limit=timeout)
    options = Options(
        base_url=base_url,
        headers={str(k): str(v) for k, v in (headers or {}).items()},
        timeout=timeout,
        result_mode=result_mode,
        http_client=http_client,
    )
    return await asyncio.to_thread(build_tools, doc, options)
