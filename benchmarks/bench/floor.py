"""The floor: the least code that makes the same round trips as the library.

``RawHTTP`` speaks HTTP/1.1 with keep-alive on plain asyncio streams (no HTTP library);
``RawMCP`` speaks JSON-RPC over a stdio MCP server's pipes (no MCP SDK). ``scenario`` is the
fixed two-round-trip conversation with both, the shape the library's run has to match.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

Tools = Callable[[str, dict[str, Any]], Awaitable[str]]

MODEL = "bench"


def wire_of(style: str, api_key: str) -> tuple[str, dict[str, str]]:
    """The path (after the base URL) and the headers of a style's model call."""
    if style == "anthropic":
        return "/messages", {"x-api-key": api_key, "anthropic-version": "2023-06-01"}
    if style == "responses":
        return "/responses", {"Authorization": f"Bearer {api_key}"}
    if style == "gemini":
        return f"/models/{MODEL}:generateContent", {"x-goog-api-key": api_key}
    return "/chat/completions", {"Authorization": f"Bearer {api_key}"}


class RawHTTP:
    """POSTs over pooled keep-alive connections on asyncio streams."""

    def __init__(self, base_url: str, api_key: str = "bench-key", style: str = "openai") -> None:
        parts = urlsplit(base_url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        path, headers = wire_of(style, api_key)
        self.path = parts.path.rstrip("/") + path
        lines = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        self.head = (
            f"POST {self.path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
            f"{lines}Content-Type: application/json\r\n"
        ).encode()
        self.idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []

    async def _connection(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self.idle:
            return self.idle.pop()
        return await asyncio.open_connection(self.host, self.port, limit=1 << 24)

    async def post(self, body: bytes) -> bytes:
        """The whole response body (a 200 is assumed: the stub sends nothing else)."""
        reader, writer = await self._connection()
        writer.write(self.head + b"Content-Length: %d\r\n\r\n" % len(body) + body)
        headers = await reader.readuntil(b"\r\n\r\n")
        if b"chunked" in headers.lower():
            data = b"".join([chunk async for chunk in _chunks(reader)])
        else:
            length = int(headers.lower().split(b"content-length:")[1].split(b"\r\n")[0])
            data = await reader.readexactly(length)
        self.idle.append((reader, writer))
        return data

    async def stream(self, body: bytes) -> Any:
        """The events of an SSE response, each ``data:`` payload parsed as JSON."""
        reader, writer = await self._connection()
        writer.write(self.head + b"Content-Length: %d\r\n\r\n" % len(body) + body)
        await reader.readuntil(b"\r\n\r\n")
        rest = b""
        async for chunk in _chunks(reader):
            rest += chunk
            *events, rest = rest.split(b"\n\n")
            for event in events:
                if event.startswith(b"data: ") and event != b"data: [DONE]":
                    yield json.loads(event[6:])
        self.idle.append((reader, writer))

    def close(self) -> None:
        for _, writer in self.idle:
            writer.close()
        self.idle.clear()


class AiohttpHTTP:
    """The same POSTs through one pooled ``aiohttp`` session: the floor of the HTTP library the
    default transport uses, to tell the library's cost from the loop's."""

    def __init__(self, base_url: str, api_key: str = "bench-key", style: str = "openai") -> None:
        path, headers = wire_of(style, api_key)
        self.url = base_url.rstrip("/") + path
        self.headers = {**headers, "Content-Type": "application/json"}
        self.session: Any = None

    def _session(self) -> Any:
        if self.session is None:
            import aiohttp

            self.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
        return self.session

    async def post(self, body: bytes) -> bytes:
        async with self._session().post(self.url, data=body, headers=self.headers) as resp:
            data: bytes = await resp.read()
            return data

    async def stream(self, body: bytes) -> Any:
        async with self._session().post(self.url, data=body, headers=self.headers) as resp:
            rest = b""
            async for chunk in resp.content.iter_any():
                rest += chunk
                *events, rest = rest.split(b"\n\n")
                for event in events:
                    if event.startswith(b"data: ") and event != b"data: [DONE]":
                        yield json.loads(event[6:])

    async def aclose(self) -> None:
        if self.session is not None:
            await self.session.close()


async def _chunks(reader: asyncio.StreamReader) -> Any:
    while True:
        size = int((await reader.readuntil(b"\r\n"))[:-2], 16)
        if size == 0:
            await reader.readuntil(b"\r\n")
            return
        chunk = await reader.readexactly(size + 2)
        yield chunk[:-2]


class RawMCP:
    """One stdio MCP server spoken to in raw JSON-RPC: initialize, then ``tools/call``."""

    def __init__(self, command: list[str]) -> None:
        self.command = command
        self.ids = itertools.count(1)
        self.waiting: dict[int, asyncio.Future[Any]] = {}
        self.proc: asyncio.subprocess.Process | None = None
        self.reader: asyncio.Task[None] | None = None

    async def start(self) -> list[dict[str, Any]]:
        """Spawn, initialize, list: the server's tools."""
        self.proc = await asyncio.create_subprocess_exec(
            *self.command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            limit=1 << 24,
        )
        self.reader = asyncio.create_task(self._read())
        params = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "floor", "version": "1"},
        }
        await self.request("initialize", params)
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        listed = await self.request("tools/list", {})
        tools: list[dict[str, Any]] = listed["tools"]
        return tools

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc is not None
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        number = next(self.ids)
        future = self.waiting[number] = asyncio.get_running_loop().create_future()
        self._send({"jsonrpc": "2.0", "id": number, "method": method, "params": params})
        return await future

    async def call(self, name: str, args: dict[str, Any]) -> str:
        result = await self.request("tools/call", {"name": name, "arguments": args})
        return "".join(block.get("text", "") for block in result["content"])

    async def _read(self) -> None:
        assert self.proc is not None
        assert self.proc.stdout is not None
        async for line in self.proc.stdout:
            message = json.loads(line)
            future = self.waiting.pop(message.get("id"), None)
            if future is not None:
                future.set_result(message.get("result"))

    async def close(self) -> None:
        if self.proc is not None and self.proc.stdin is not None:
            self.proc.stdin.close()
            await self.proc.wait()
        if self.reader is not None:
            await self.reader


def python_tools() -> Tools:
    """The scenario's tools as plain functions, called directly."""

    async def call(name: str, args: dict[str, Any]) -> str:
        if name.endswith("echo"):
            return str(args["text"])
        return str(args["a"] + args["b"])

    return call


def mcp_tools(mcp: RawMCP, server: str) -> Tools:
    """The scenario's tools on the MCP server (names carry the ``<server>_`` prefix)."""

    async def call(name: str, args: dict[str, Any]) -> str:
        return await mcp.call(name.removeprefix(server + "_"), args)

    return call


async def scenario(
    http: RawHTTP | AiohttpHTTP,
    tools: Tools,
    schemas: list[dict[str, Any]],
    prompt: str,
    stream: bool = False,
) -> str:
    """Two round trips around two concurrent tool calls; returns the final answer."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    while True:
        body: dict[str, Any] = {
            "model": "bench",
            "messages": messages,
            "tools": schemas,
            "tool_choice": "auto",
        }
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
            message = await _streamed(http, json.dumps(body).encode())
        else:
            reply = json.loads(await http.post(json.dumps(body).encode()))
            message = reply["choices"][0]["message"]
        messages.append(message)
        calls = message.get("tool_calls")
        if not calls:
            return str(message["content"])
        outputs = await asyncio.gather(
            *(tools(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in calls)
        )
        for call, output in zip(calls, outputs, strict=True):
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": output})


async def styled_scenario(
    http: RawHTTP | AiohttpHTTP, style: str, tools: Tools, schemas: list[Any], prompt: str
) -> str:
    """``scenario`` (answered whole) in any of the four wire styles."""
    if style == "openai":
        return await scenario(http, tools, schemas, prompt)
    transcript: list[dict[str, Any]] = [_prompt(style, prompt)]
    while True:
        reply = json.loads(await http.post(json.dumps(_body(style, transcript, schemas)).encode()))
        items, text, calls = _read(style, reply)
        transcript.extend(items)
        if not calls:
            return text
        outputs = await asyncio.gather(*(tools(name, args) for _, name, args in calls))
        transcript.extend(_results(style, calls, outputs))


def _prompt(style: str, prompt: str) -> dict[str, Any]:
    if style == "gemini":
        return {"role": "user", "parts": [{"text": prompt}]}
    return {"role": "user", "content": prompt}


def _body(style: str, transcript: list[dict[str, Any]], schemas: list[Any]) -> dict[str, Any]:
    if style == "anthropic":
        return {"model": MODEL, "max_tokens": 4096, "messages": transcript, "tools": schemas}
    if style == "responses":
        items = [{k: v for k, v in i.items() if k != "id"} for i in transcript]
        return {"model": MODEL, "input": items, "tools": schemas, "store": False}
    return {"contents": transcript, "tools": [{"functionDeclarations": schemas}]}


Call = tuple[str, str, dict[str, Any]]


def _read(style: str, reply: dict[str, Any]) -> tuple[list[dict[str, Any]], str, list[Call]]:
    """The transcript entries, the text and the calls ``(id, name, args)`` of a reply."""
    if style == "anthropic":
        blocks = reply["content"]
        text = "".join(b["text"] for b in blocks if b["type"] == "text")
        calls = [(b["id"], b["name"], b["input"]) for b in blocks if b["type"] == "tool_use"]
        return [{"role": "assistant", "content": blocks}], text, calls
    if style == "responses":
        output = reply["output"]
        text = "".join(p["text"] for i in output if i["type"] == "message" for p in i["content"])
        calls = [
            (i["call_id"], i["name"], json.loads(i["arguments"]))
            for i in output
            if i["type"] == "function_call"
        ]
        return output, text, calls
    content = reply["candidates"][0]["content"]
    text = "".join(p.get("text", "") for p in content["parts"])
    calls = [
        (str(n), p["functionCall"]["name"], p["functionCall"]["args"])
        for n, p in enumerate(content["parts"])
        if "functionCall" in p
    ]
    return [content], text, calls


def _results(style: str, calls: list[Call], outputs: list[str]) -> list[dict[str, Any]]:
    if style == "anthropic":
        blocks = [
            {"type": "tool_result", "tool_use_id": i, "content": o, "is_error": False}
            for (i, _, _), o in zip(calls, outputs, strict=True)
        ]
        return [{"role": "user", "content": blocks}]
    if style == "responses":
        return [
            {"type": "function_call_output", "call_id": i, "output": o}
            for (i, _, _), o in zip(calls, outputs, strict=True)
        ]
    parts = [
        {"functionResponse": {"name": name, "response": {"result": o}}}
        for (_, name, _), o in zip(calls, outputs, strict=True)
    ]
    return [{"role": "user", "parts": parts}]


async def _streamed(http: RawHTTP | AiohttpHTTP, body: bytes) -> dict[str, Any]:
    """An SSE reply folded into one assistant message."""
    text: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    async for event in http.stream(body):
        for choice in event.get("choices") or ():
            delta = choice.get("delta") or {}
            if delta.get("content"):
                text.append(delta["content"])
            for piece in delta.get("tool_calls") or ():
                call = calls.setdefault(piece["index"], {"id": "", "name": "", "arguments": ""})
                call["id"] = piece.get("id") or call["id"]
                function = piece.get("function") or {}
                call["name"] += function.get("name") or ""
                call["arguments"] += function.get("arguments") or ""
    message: dict[str, Any] = {"role": "assistant", "content": "".join(text) or None}
    if calls:
        message["tool_calls"] = [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": c["arguments"]},
            }
            for _, c in sorted(calls.items())
        ]
    return message


def fixture_command() -> list[str]:
    """The bundled fixture MCP server's argv."""
    return [sys.executable, "-m", "toolnexus.testing.mcp_server"]
