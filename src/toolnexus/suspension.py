"""Suspension: a tool asks the host for something (a login, an approval, an answer).

A tool suspends by returning ``pending(request)``. The run loop then either asks the host's
``wait_for`` callback and executes the tool once more with the answer, or halts the run with
``status="pending"`` so the host can resume it later with ``run_with_answer``.

The data, ``Request`` and ``Answer``, live in ``toolnexus.types`` beside the ``ToolResult``
that carries them; they are importable from here too.
"""

from __future__ import annotations

from collections.abc import Mapping

from .types import Answer, Request, ToolResult

__all__ = ["Answer", "Request", "auth_required", "pending", "pending_of"]


def pending(request: Request) -> ToolResult:
    """The result a tool returns to suspend on ``request``."""
    output = request.prompt + ("\n" + request.url if request.url else "")
    return ToolResult(output, is_error=True, metadata={"pending": request})


def auth_required(url: str, prompt: str | None = None) -> ToolResult:
    """Suspend until the user has authorised at ``url``."""
    return pending(Request.new("authorization", prompt or "Authorization required", url=url))


def pending_of(result: ToolResult) -> Request | None:
    """The request a result suspends on, or ``None`` when it is not a suspension."""
    if not result.metadata:
        return None
    value = result.metadata.get("pending")
    if isinstance(value, Request):
        return value
    if isinstance(value, Mapping) and {"id", "kind", "prompt"} <= value.keys():
        return Request.from_dict(value)
    return None
