"""The ``webfetch`` built-in against pages served by a local aiohttp server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from toolnexus import ToolContext, ToolResult
from toolnexus.tools.builtin import builtin_tools
from toolnexus.tools.builtin.html_text import html_to_text

from ...http_server import serving

PAGE = """<!doctype html>
<html><head><title>Release  notes</title>
<style>body { color: red }</style>
<script>document.write("<p>hidden</p>")</script></head>
<body>
<h1>Version   2</h1>
<p>Faster <b>startup</b> &amp; fewer
   dependencies.</p>



<p>See <a href="/docs/upgrade">the upgrade guide</a>.</p>
<ul><li>one</li><li>two</li></ul>
<pre>def f():
    return 1


end()</pre>
<noscript>Enable JavaScript</noscript>
</body></html>"""


class Site:
    """Routes of the local server: path -> (status, content type, body bytes)."""

    def __init__(self) -> None:
        self.url = ""
        self.pages: dict[str, tuple[int, str | None, bytes]] = {}
        self.release = asyncio.Event()
        self.paths: list[str] = []

    def add(self, path: str, body: str | bytes, content_type: str | None = "text/html") -> str:
        data = body.encode() if isinstance(body, str) else body
        self.pages[path] = (200, content_type, data)
        return self.url + path


@pytest.fixture
async def site() -> AsyncIterator[Site]:
    site = Site()

    async def handle(request: web.Request) -> web.StreamResponse:
        site.paths.append(request.path)
        if request.path == "/slow":
            await site.release.wait()
        if request.path == "/huge":
            resp = web.StreamResponse(headers={"Content-Type": "text/plain"})
            await resp.prepare(request)
            for _ in range(12 * 1024):  # 12 MiB, past the fetch cap
                await resp.write(b"x" * 1023 + b"\n")
            return resp
        if request.path == "/moved":
            raise web.HTTPFound("/text")
        if request.path not in site.pages:
            return web.Response(status=404, text="<h1>Not found</h1>", content_type="text/html")
        status, content_type, body = site.pages[request.path]
        headers = {"Content-Type": content_type} if content_type else {}
        resp = web.Response(status=status, body=body, headers=headers)
        if content_type is None:
            resp.content_type = ""
            del resp.headers["Content-Type"]
        return resp

    async with serving(handle, method="GET") as url:
        site.url = url
        yield site
        site.release.set()


async def fetch(args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
    [tool] = [t for t in builtin_tools() if t.name == "webfetch"]
    async with asyncio.timeout(20):
        return await tool.execute(args, ctx)


# --- statuses and formats -------------------------------------------------------------------------


async def test_a_404_is_an_error_saying_http_404(site: Site) -> None:
    result = await fetch({"url": site.url + "/missing"})

    assert (result.output, result.is_error) == ("HTTP 404", True)
    assert result.metadata == {"status": 404, "format": "markdown"}


async def test_html_format_returns_the_raw_markup(site: Site) -> None:
    result = await fetch({"url": site.add("/page", PAGE), "format": "html"})

    assert (result.output, result.is_error) == (PAGE, False)
    assert result.metadata == {"status": 200, "format": "html"}


async def test_text_format_strips_scripts_styles_and_tags(site: Site) -> None:
    result = await fetch({"url": site.add("/page", PAGE), "format": "text"})

    assert not result.is_error
    assert result.output == (
        "Release notes\n\nVersion 2\n\nFaster startup & fewer dependencies.\n\n"
        "See the upgrade guide.\n\none\ntwo\n\ndef f():\n    return 1\n\n\nend()"
    )
    assert result.metadata == {"status": 200, "format": "text"}


async def test_markdown_is_the_default_and_keeps_headings_links_and_lists(site: Site) -> None:
    url = site.add("/notes/page", PAGE)

    result = await fetch({"url": url})

    assert result.output == (
        "Release notes\n\n# Version 2\n\nFaster startup & fewer dependencies.\n\n"
        f"See [the upgrade guide]({site.url}/docs/upgrade).\n\n- one\n- two\n\n"
        "```\ndef f():\n    return 1\n\n\nend()\n```"
    )
    assert result.metadata == {"status": 200, "format": "markdown"}


async def test_non_html_content_comes_back_unchanged(site: Site) -> None:
    body = '{"a": "<b>not markup</b>"}'

    result = await fetch({"url": site.add("/data", body, "application/json")})

    assert (result.output, result.is_error) == (body, False)


async def test_a_page_without_a_content_type_is_recognised_as_html(site: Site) -> None:
    result = await fetch({"url": site.add("/bare", PAGE, None), "format": "text"})

    assert result.output.startswith("Release notes\n\nVersion 2")


async def test_the_declared_charset_decodes_the_body(site: Site) -> None:
    body = "<p>Café crème</p>".encode("latin-1")

    result = await fetch({"url": site.add("/latin", body, "text/html; charset=iso-8859-1")})

    assert result.output == "Café crème"


async def test_a_meta_charset_decodes_the_body_when_the_header_has_none(site: Site) -> None:
    body = '<meta charset="windows-1252"><p>“quoted”</p>'.encode("cp1252")

    result = await fetch({"url": site.add("/meta", body, "text/html")})

    assert result.output == "“quoted”"


async def test_redirects_are_followed(site: Site) -> None:
    site.add("/text", "moved here", "text/plain")

    result = await fetch({"url": site.url + "/moved"})

    assert (result.output, result.metadata) == ("moved here", {"status": 200, "format": "markdown"})


# --- limits ---------------------------------------------------------------------------------------


async def test_long_output_keeps_its_head_and_says_truncated(site: Site) -> None:
    lines = "".join(f"line {i}\n" for i in range(30_000))

    result = await fetch({"url": site.add("/long", lines, "text/plain")})

    assert not result.is_error
    assert result.output.startswith("line 0\nline 1\n")
    assert "truncated" in result.output.splitlines()[-1]
    assert "line 29999" not in result.output
    assert result.metadata == {"status": 200, "format": "markdown", "truncated": True}


async def test_a_long_html_page_keeps_the_head_of_its_text_and_says_truncated(
    site: Site,
) -> None:
    page = "<html><body>" + "".join(f"<p>para {i}</p>" for i in range(60_000)) + "</body></html>"

    result = await fetch({"url": site.add("/long.html", page), "format": "text"})

    assert not result.is_error
    assert result.output.startswith("para 0\n\npara 1\n\n")
    assert "truncated" in result.output.splitlines()[-1]
    assert "para 59999" not in result.output
    assert len(result.output) < 100_100
    assert result.metadata == {"status": 200, "format": "text", "truncated": True}


async def test_a_body_past_the_byte_cap_is_read_only_that_far(site: Site) -> None:
    result = await fetch({"url": site.url + "/huge"})

    assert not result.is_error
    assert result.output.startswith("x" * 1023 + "\n")
    assert "truncated" in result.output
    assert result.metadata is not None
    assert result.metadata["truncated"] is True


async def test_a_slow_server_times_out_with_an_error(site: Site) -> None:
    result = await fetch({"url": site.url + "/slow", "timeout": 0.2})

    assert result.is_error
    assert result.output == f"webfetch: request timed out after 0.2s: {site.url}/slow"


async def test_the_run_deadline_bounds_the_fetch(site: Site) -> None:
    result = await fetch({"url": site.url + "/slow"}, ToolContext(timeout=0.2))

    assert result.is_error
    assert "timed out" in result.output


async def test_an_unreachable_server_is_an_error_naming_the_url() -> None:
    result = await fetch({"url": "http://127.0.0.1:9/nothing"})

    assert result.is_error
    assert result.output.startswith("webfetch: ")
    assert result.output.endswith("http://127.0.0.1:9/nothing")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({}, "webfetch: url is required"),
        ({"url": "file:///etc/passwd"}, "webfetch: url must start with http:// or https://"),
        ({"url": "http://x", "format": "pdf"}, "webfetch: format must be one of"),
        ({"url": "http://x", "timeout": -1}, "webfetch: timeout must be a positive number"),
    ],
)
async def test_bad_arguments_are_error_results(args: dict[str, Any], message: str) -> None:
    result = await fetch(args)

    assert result.is_error
    assert result.output.startswith(message)


# --- the HTML reader ------------------------------------------------------------------------------


def test_nested_lists_are_indented_and_ordered_lists_numbered() -> None:
    html = "<ol><li>a<ul><li>x</li><li>y</li></ul></li><li>b</li></ol>"

    assert html_to_text(html, markdown=True) == ("1. a\n  - x\n  - y\n2. b", True)


def test_hidden_elements_and_unclosed_tags_are_handled() -> None:
    html = "<p>keep<template><p>no</p></template> <svg><text>no</text></svg>this<p>and this"

    assert html_to_text(html) == ("keep this\n\nand this", True)


def test_fragment_and_script_links_keep_only_their_text() -> None:
    html = '<a href="#top">Top</a> <a href="javascript:void(0)">Menu</a> <a>Bare</a>'

    assert html_to_text(html, markdown=True, base_url="https://x.org/") == ("Top Menu Bare", True)


def test_a_rule_is_a_paragraph_of_its_own() -> None:
    assert html_to_text("above<hr>below", markdown=True) == ("above\n\n---\n\nbelow", True)
    assert html_to_text("above<hr/>below") == ("above\n\nbelow", True)


def test_with_a_limit_reading_stops_soon_after_it_and_says_so() -> None:
    html = "<p>" + "word " * 200_000 + "</p><p>the end</p>"

    text, whole = html_to_text(html, limit=1000)

    assert not whole
    assert 1000 < len(text) < 200_000
    assert "the end" not in text
    assert html_to_text("<p>short</p>", limit=1000) == ("short", True)
