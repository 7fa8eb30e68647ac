"""The elicitation bridge: a server's ``elicitation/create`` answered by the host's ``wait_for``.

Form mode becomes ``Request(kind="input", prompt=message, data={"schema": requestedSchema})``;
URL mode becomes ``Request(kind="authorization", prompt=message, url=url)``. An ``ok`` answer
accepts (in form mode with ``answer.data``, every property the answer leaves out taking its
schema ``default``), ``reason="declined"`` declines, anything else cancels. Without
``wait_for`` there is no callback, so the capability is not advertised.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..._callbacks import maybe_await
from ...suspension import Answer, Request

if TYPE_CHECKING:
    from mcp.client.session import ClientRequestContext, ElicitationFnT
    from mcp.types import ElicitRequestParams, ElicitResult

__all__ = ["elicitation_callback", "request_for", "with_defaults"]

logger = logging.getLogger("toolnexus")


def request_for(params: ElicitRequestParams) -> Request:
    """The ``Request`` a host sees for one elicitation (form or URL mode)."""
    if params.mode == "url":
        return Request.new("authorization", params.message, url=params.url)
    return Request.new("input", params.message, data={"schema": params.requested_schema})


def with_defaults(schema: object, data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with each top-level property's schema ``default`` filled in where absent."""
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict):
        return data
    out = dict(data)
    for name, prop in properties.items():
        if name not in out and isinstance(prop, dict) and "default" in prop:
            out[name] = prop["default"]
    return out


def elicitation_callback(
    server: str, wait_for: Callable[[Request], Any] | None
) -> ElicitationFnT | None:
    """The SDK callback bridging to ``wait_for``, or ``None`` when there is no ``wait_for``."""
    if wait_for is None:
        return None

    async def elicit(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        from mcp.types import ElicitResult

        request = request_for(params)
        try:
            answer = await maybe_await(wait_for, request)
        except Exception as exc:
            logger.warning(
                'MCP server "%s": wait_for raised %s; the elicitation is cancelled',
                server,
                type(exc).__name__,
            )
            return ElicitResult(action="cancel")
        if isinstance(answer, Answer) and answer.ok:
            content = None
            if request.kind != "authorization":
                schema = getattr(params, "requested_schema", None)
                content = with_defaults(schema, dict(answer.data or {}))
            return ElicitResult(action="accept", content=content)
        if isinstance(answer, Answer) and answer.reason == "declined":
            return ElicitResult(action="decline")
        return ElicitResult(action="cancel")

    return elicit
