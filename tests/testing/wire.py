"""Talking to a ``StubLLMServer`` with a plain aiohttp client: paths, requests, SSE parsing."""

from __future__ import annotations

import json
from typing import Any

import aiohttp

from toolnexus.testing import StubLLMServer, reply

OPENAI = "/v1/chat/completions"
ANTHROPIC = "/v1/messages"


def parse_sse(raw: bytes) -> list[tuple[str | None, Any]]:
    """(event name, parsed data) per event; ``[DONE]`` stays a string."""
    text = raw.decode()
    assert text.endswith("\n\n"), f"stream does not end with a blank line: {text[-40:]!r}"
    events: list[tuple[str | None, Any]] = []
    for block in text[:-2].split("\n\n"):
        name, data = None, []
        for line in block.split("\n"):
            field, _, value = line.partition(": ")
            if field == "event":
                name = value
            elif field == "data":
                data.append(value)
            else:
                raise AssertionError(f"unexpected SSE line {line!r}")
        joined = "\n".join(data)
        events.append((name, joined if joined == "[DONE]" else json.loads(joined)))
    return events


async def post(
    session: aiohttp.ClientSession, stub: StubLLMServer, path: str, body: dict[str, Any]
) -> tuple[int, Any, bytes]:
    async with session.post(stub.url + path, json=body) as response:
        return response.status, response.headers, await response.read()


async def exchange(
    session: aiohttp.ClientSession, stub: StubLLMServer, made: reply.Reply, path: str, stream: bool
) -> tuple[int, Any, bytes]:
    stub.enqueue(made)
    return await post(session, stub, path, {"model": "m-1", "stream": stream})
