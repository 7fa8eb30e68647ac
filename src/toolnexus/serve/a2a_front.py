"""What the A2A JSON-RPC endpoint answers before ``a2a-sdk``'s dispatcher sees a request.

JSON-RPC says a notification (a request without ``id``) gets no reply; the SDK's dispatcher
answers it anyway, so it is answered 204 here and not run. ``ListTasks`` with a ``status``
that is not a task state is ``-32602`` invalid params (the SDK would read it as "any state").
Everything else goes to the SDK unchanged. No SDK import here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["jsonrpc_front"]


def jsonrpc_front(app: Any, states: Mapping[str, int]) -> Any:
    """``app`` behind the JSON-RPC rules the SDK's dispatcher misses: a notification (a
    request without ``id``) gets no reply (204, not run), and ``ListTasks`` with a ``status``
    that is not one of ``states`` (task state names and numbers) is ``-32602`` invalid params."""

    async def front(scope: Any, receive: Any, send: Any) -> None:
        if scope.get("method") != "POST":
            await app(scope, receive, send)
            return
        message = await receive()
        body = message.get("body", b"")
        try:
            request = json.loads(body)
        except (ValueError, RecursionError):
            request = None  # the SDK answers the parse error
        refusal = _refusal(request, states)
        if refusal is not None:
            status, answer = refusal
            await _answer(send, status, answer)
            return
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if not replayed:
                replayed = True
                return message
            return await receive()

        await app(scope, replay, send)

    return front


def _refusal(request: object, states: Mapping[str, int]) -> tuple[int, bytes] | None:
    if not isinstance(request, dict) or request.get("jsonrpc") != "2.0":
        return None
    if "id" not in request:
        return 204, b""
    params = request.get("params")
    if request.get("method") == "ListTasks" and isinstance(params, dict) and "status" in params:
        status = params["status"]
        known = status in states if isinstance(status, str) else status in states.values()
        if isinstance(status, bool) or not known:
            error = {
                "code": -32602,
                "message": f"Invalid params: status {status!r} is not a task state",
            }
            answer = {"jsonrpc": "2.0", "id": request["id"], "error": error}
            return 200, json.dumps(answer).encode()
    return None


async def _answer(send: Any, status: int, body: bytes) -> None:
    headers = [(b"content-length", str(len(body)).encode())]
    if body:
        headers.append((b"content-type", b"application/json"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
