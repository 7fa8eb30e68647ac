"""What ``bash`` and ``webfetch`` cost beyond the work they wrap, and how much memory a runaway
command's output takes.

Run: ``python benchmarks/builtin_shell_web.py [--rounds N]``. Median wall time over the rounds,
each beside its floor and as a ratio to it:

- ``bash true``: one call through the tool (new session, closed stdin, group kill at the end)
  against ``asyncio.create_subprocess_shell("true")`` and ``communicate()``;
- ``bash`` of 50 MB of output: the tool keeps the last 100,000 characters while reading;
  the floor, ``communicate()``, keeps everything. Peak Python memory (``tracemalloc``) of each;
- ``html_to_text``: a generated page of about 1 MB, all of it to markdown, against
  ``HTMLParser`` fed the same page with no handlers (the parse every reader pays);
- ``webfetch`` of that page from a local aiohttp server: as ``html`` (the fetch alone, on a
  session of its own) against a bare aiohttp GET reading the body on one shared session; and
  as markdown, where conversion stops once the output passes 100,000 characters.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from html.parser import HTMLParser
from typing import Any

import aiohttp
from aiohttp import web

from toolnexus.tools.builtin import BuiltinScope, builtin_tools
from toolnexus.tools.builtin.html_text import html_to_text

FLOOD = "yes | head -c 50000000"


def page() -> str:
    """About 1 MB of ordinary markup: headings, paragraphs with links, lists, scripts."""
    section = (
        "<h2>Section {i}</h2><p>Some <b>text</b> with <a href='/p/{i}'>a link</a> and "
        "<code>code</code>.</p><ul><li>one</li><li>two</li></ul>"
        "<script>var x = {i};</script><style>.c{i} {{ color: red }}</style>\n"
    )
    body = "".join(section.format(i=i) for i in range(4500))
    return f"<!doctype html><html><head><title>Bench</title></head><body>{body}</body></html>"


async def median(rounds: int, work: Callable[[], Awaitable[Any]]) -> float:
    walls = []
    for _ in range(rounds):
        started = time.perf_counter()
        await work()
        walls.append(time.perf_counter() - started)
    return statistics.median(walls)


async def peak_bytes(work: Callable[[], Awaitable[Any]]) -> int:
    tracemalloc.start()
    try:
        await work()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


async def shell_floor(command: str) -> bytes:
    proc = await asyncio.create_subprocess_shell(
        command, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    out, _ = await proc.communicate()
    return out


def report(label: str, tool: float, floor: float) -> None:
    print(f"{label:34s} {tool * 1000:9.2f} ms  floor {floor * 1000:9.2f} ms  {tool / floor:5.2f}x")


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=20)
    rounds = parser.parse_args().rounds
    tools = {t.name: t for t in builtin_tools(BuiltinScope())}
    bash, webfetch = tools["bash"], tools["webfetch"]

    def run(command: str) -> Callable[[], Awaitable[Any]]:
        return lambda: bash.execute({"command": command}, None)

    report(
        "bash true", await median(rounds, run("true")), await median(rounds, shell_floor_of("true"))
    )
    few = max(rounds // 5, 3)
    report(
        "bash 50 MB of output",
        await median(few, run(FLOOD)),
        await median(few, shell_floor_of(FLOOD)),
    )
    kept, whole = await peak_bytes(run(FLOOD)), await peak_bytes(shell_floor_of(FLOOD))
    print(f"{'  peak memory':34s} {kept / 2**20:9.1f} MB  floor {whole / 2**20:9.1f} MB")

    html = page()

    async def convert() -> None:
        html_to_text(html, markdown=True, base_url="http://127.0.0.1/")

    async def parse_only() -> None:
        bare = HTMLParser()
        bare.feed(html)
        bare.close()

    print(f"page: {len(html) / 1e6:.2f} MB")
    report(
        "html_to_text (markdown)", await median(rounds, convert), await median(rounds, parse_only)
    )

    app = web.Application()

    async def serve(request: web.Request) -> web.Response:
        return web.Response(text=html, content_type="text/html")

    app.router.add_get("/", serve)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    url = f"http://127.0.0.1:{port}/"
    try:
        async with aiohttp.ClientSession() as session:

            async def bare_get() -> None:
                async with session.get(url) as resp:
                    await resp.read()

            raw = {"url": url, "format": "html"}
            tool = await median(rounds, lambda: webfetch.execute(raw, None))
            floor = await median(rounds, bare_get)
            report("webfetch (html)", tool, floor)
            tool = await median(rounds, lambda: webfetch.execute({"url": url}, None))
            print(f"{'webfetch (markdown, stops early)':34s} {tool * 1000:9.2f} ms")
    finally:
        await runner.cleanup()


def shell_floor_of(command: str) -> Callable[[], Awaitable[bytes]]:
    return lambda: shell_floor(command)


if __name__ == "__main__":
    asyncio.run(main())
