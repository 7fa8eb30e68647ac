"""The benchmark's model: a small OpenAI-style HTTP server, run in its own process.

``python benchmarks/bench/stub.py`` prints its base URL and serves until stdin closes. Being a
separate process, its CPU is never counted as the client's.

For ``POST /v1/chat/completions`` it answers like this:

- the last message is a tool result: the final answer, ``"echo said <x>; add said <y>."``, built
  from the results of the tools whose names end in ``echo`` and ``add`` (so a wrong or missing
  tool result makes a wrong answer);
- otherwise, when the request offers a tool ending in ``echo`` and one ending in ``add``: one
  reply with two tool calls, ``echo(text="hi")`` and ``add(a=2, b=3)``;
- otherwise: the text ``ok``.

The other wire styles get the same conversation in their own JSON: ``POST /v1/messages``
(anthropic), ``POST /v1/responses`` (responses) and ``POST /v1/models/<m>:generateContent``
(gemini).

``"stream": true`` gets the same reply as SSE chunks (text in words, arguments in two pieces,
a usage chunk, ``[DONE]``), written one event at a time.

Control: ``POST /control`` with ``{"delay_ms": D, "gate": N}`` makes every reply wait ``D`` ms,
and holds the first request of each run (one with no tool result yet) until ``N`` requests are
in flight at once (or ``GATE_TIMEOUT`` passes); ``{"gate": 0}`` turns the gate off. ``GET
/stats`` returns ``{"requests", "max_in_flight"}`` and resets both.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import threading
from typing import Any

from aiohttp import web

GATE_TIMEOUT = 20.0
USAGE = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


def answer_for(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
    """The assistant message for a request: tool calls, the final answer, or ``ok``."""
    if messages and messages[-1].get("role") == "tool":
        names = {}
        for message in messages:
            for call in message.get("tool_calls") or ():
                names[call["id"]] = call["function"]["name"]
        said = {}
        for message in messages:
            if message.get("role") == "tool":
                name = names.get(message.get("tool_call_id"), "")
                said[name.rsplit("_", 1)[-1]] = message.get("content")
        return {
            "role": "assistant",
            "content": f"echo said {said.get('echo')}; add said {said.get('add')}.",
        }
    offered = [t["function"]["name"] for t in tools if isinstance(t, dict) and "function" in t]
    echo = next((n for n in offered if n.endswith("echo")), None)
    add = next((n for n in offered if n.endswith("add")), None)
    if echo and add:
        calls = [
            _call("call_1", echo, {"text": "hi"}),
            _call("call_2", add, {"a": 2, "b": 3}),
        ]
        return {"role": "assistant", "content": None, "tool_calls": calls}
    return {"role": "assistant", "content": "ok"}


def _call(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    arguments = json.dumps(args, separators=(",", ":"))
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def json_reply(message: dict[str, Any]) -> bytes:
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    body = {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "model": "bench",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": USAGE,
    }
    return json.dumps(body, separators=(",", ":")).encode()


def sse_events(message: dict[str, Any]) -> list[bytes]:
    """The reply as SSE events, each ``data: ...`` plus a blank line."""
    top = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "model": "bench"}
    chunks: list[dict[str, Any]] = []

    def delta(d: dict[str, Any], finish: str | None = None) -> None:
        chunks.append({**top, "choices": [{"index": 0, "delta": d, "finish_reason": finish}]})

    delta({"role": "assistant", "content": ""})
    for word in re.findall(r"\S+\s*", message.get("content") or ""):
        delta({"content": word})
    for index, call in enumerate(message.get("tool_calls") or ()):
        head = {"index": index, "id": call["id"], "type": "function"}
        delta({"tool_calls": [{**head, "function": {"name": call["function"]["name"]}}]})
        arguments = call["function"]["arguments"]
        half = len(arguments) // 2
        for piece in (arguments[:half], arguments[half:]):
            delta({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    delta({}, "tool_calls" if message.get("tool_calls") else "stop")
    chunks.append({**top, "choices": [], "usage": USAGE})
    events = [b"data: " + json.dumps(c, separators=(",", ":")).encode() + b"\n\n" for c in chunks]
    return [*events, b"data: [DONE]\n\n"]


def styled_reply(style: str, body: dict[str, Any]) -> dict[str, Any]:
    """``answer_for`` in another wire style: what the request's transcript says, read in that
    style, and the reply written in it."""
    said, offered = _seen(style, body)
    echo = next((n for n in offered if n.endswith("echo")), None)
    add = next((n for n in offered if n.endswith("add")), None)
    calls: list[tuple[str, str, dict[str, Any]]] = []
    text = "ok"
    if said is not None:
        text = f"echo said {said.get('echo')}; add said {said.get('add')}."
    elif echo and add:
        calls = [("call_1", echo, {"text": "hi"}), ("call_2", add, {"a": 2, "b": 3})]
    if style == "anthropic":
        blocks: list[dict[str, Any]] = [
            {"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in calls
        ] or [{"type": "text", "text": text}]
        stop = "tool_use" if calls else "end_turn"
        usage = {"input_tokens": 10, "output_tokens": 5}
        return {
            "id": "msg_bench",
            "type": "message",
            "role": "assistant",
            "content": blocks,
            "stop_reason": stop,
            "usage": usage,
        }
    if style == "responses":
        output: list[dict[str, Any]] = [
            {
                "id": f"fc_{i}",
                "type": "function_call",
                "call_id": i,
                "name": n,
                "arguments": json.dumps(a, separators=(",", ":")),
                "status": "completed",
            }
            for i, n, a in calls
        ] or [
            {
                "id": "msg_bench",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        ]
        usage = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
        return {
            "id": "resp_bench",
            "object": "response",
            "status": "completed",
            "output": output,
            "usage": usage,
        }
    parts = [{"functionCall": {"name": n, "args": a}} for _, n, a in calls] or [{"text": text}]
    return {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5},
    }


def _seen(style: str, body: dict[str, Any]) -> tuple[dict[str, Any] | None, list[str]]:
    """The tool outputs by name suffix when the transcript ends with results (else ``None``),
    and the names of the tools offered."""
    said: dict[str, Any] = {}
    if style == "anthropic":
        messages = body.get("messages") or []
        names = {
            b["id"]: b["name"]
            for m in messages
            if isinstance(m.get("content"), list)
            for b in m["content"]
            if b.get("type") == "tool_use"
        }
        last = messages[-1].get("content") if messages else None
        for block in last if isinstance(last, list) else ():
            if block.get("type") == "tool_result":
                said[names.get(block["tool_use_id"], "").rsplit("_", 1)[-1]] = block["content"]
        offered = [t["name"] for t in body.get("tools") or ()]
    elif style == "responses":
        items = body.get("input") or []
        names = {i["call_id"]: i["name"] for i in items if i.get("type") == "function_call"}
        for item in items:
            if item.get("type") == "function_call_output":
                said[names.get(item["call_id"], "").rsplit("_", 1)[-1]] = item["output"]
        if items and items[-1].get("type") != "function_call_output":
            said = {}
        offered = [t["name"] for t in body.get("tools") or ()]
    else:
        contents = body.get("contents") or []
        for part in contents[-1].get("parts", ()) if contents else ():
            response = part.get("functionResponse")
            if response:
                said[response["name"].rsplit("_", 1)[-1]] = response["response"]["result"]
        offered = [d["name"] for t in body.get("tools") or () for d in t["functionDeclarations"]]
    return (said or None), offered


class Stub:
    def __init__(self) -> None:
        self.delay = 0.0
        self.gate = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.requests = 0
        self.opened = asyncio.Event()

    async def completions(self, request: web.Request) -> web.StreamResponse:
        self.in_flight += 1
        self.requests += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            body = json.loads(await request.read())
            messages = body.get("messages") or []
            if self.gate and (not messages or messages[-1].get("role") != "tool"):
                if self.in_flight >= self.gate:
                    self.opened.set()
                try:
                    await asyncio.wait_for(self.opened.wait(), GATE_TIMEOUT)
                except TimeoutError:
                    self.opened.set()
            if self.delay:
                await asyncio.sleep(self.delay)
            message = answer_for(messages, body.get("tools") or [])
            if not body.get("stream"):
                return web.Response(body=json_reply(message), content_type="application/json")
            resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            resp.enable_chunked_encoding()
            await resp.prepare(request)
            for event in sse_events(message):
                await resp.write(event)
            await resp.write_eof()
            return resp
        finally:
            self.in_flight -= 1

    async def styled(self, request: web.Request) -> web.Response:
        """A model call in the anthropic, responses or gemini style (JSON only)."""
        self.requests += 1
        path = request.path
        style = "anthropic" if path.endswith("/messages") else "responses"
        if path.endswith(":generateContent"):
            style = "gemini"
        body = json.loads(await request.read())
        if self.delay:
            await asyncio.sleep(self.delay)
        reply = json.dumps(styled_reply(style, body), separators=(",", ":")).encode()
        return web.Response(body=reply, content_type="application/json")

    async def control(self, request: web.Request) -> web.Response:
        settings = await request.json()
        self.delay = float(settings.get("delay_ms", 0)) / 1000
        self.gate = int(settings.get("gate", 0))
        self.opened = asyncio.Event()
        return web.json_response({"ok": True})

    async def stats(self, request: web.Request) -> web.Response:
        result = {"requests": self.requests, "max_in_flight": self.max_in_flight}
        self.requests = self.max_in_flight = 0
        return web.json_response(result)


async def serve() -> None:
    stub = Stub()
    app = web.Application(client_max_size=256 * 1024 * 1024)
    app.router.add_post("/v1/chat/completions", stub.completions)
    app.router.add_post("/v1/messages", stub.styled)
    app.router.add_post("/v1/responses", stub.styled)
    app.router.add_post("/v1/models/{method}", stub.styled)
    app.router.add_post("/control", stub.control)
    app.router.add_get("/stats", stub.stats)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, backlog=4096)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    print(f"http://127.0.0.1:{port}/v1", flush=True)
    stopped = asyncio.Event()
    loop = asyncio.get_running_loop()
    threading.Thread(
        target=lambda: (sys.stdin.read(), loop.call_soon_threadsafe(stopped.set)), daemon=True
    ).start()
    await stopped.wait()
    await runner.cleanup()


if __name__ == "__main__":
    asyncio.run(serve())
