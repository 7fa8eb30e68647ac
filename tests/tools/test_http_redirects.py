"""HTTP tools follow redirects on the library's transport as a browser does: ``303`` (and
``301``/``302`` after a ``POST``) becomes a ``GET`` without a body, ``307``/``308`` repeat the
request, credentials never go to another origin, and a loop stops after ten hops."""

from __future__ import annotations

from aiohttp import web

from toolnexus import http_tool

from ..http_server import Seen, serving

SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}}


async def test_a_303_turns_a_post_into_a_get_and_a_307_repeats_it() -> None:
    seen: list[Seen] = []

    async def handle(request: web.Request) -> web.StreamResponse:
        seen.append(await Seen.of(request))
        if request.path == "/see-other":
            raise web.HTTPSeeOther("/done")
        if request.path == "/temporary":
            raise web.HTTPTemporaryRedirect("/done")
        return web.Response(text=f"{request.method} {request.path}")

    async with serving(handle) as base:
        results = [
            await http_tool(
                name="t", description="T.", url=base + path, method="POST", input_schema=SCHEMA
            ).execute({"q": "x"}, None)
            for path in ("/see-other", "/temporary")
        ]
    assert [r.output for r in results] == ["GET /done", "POST /done"]
    assert [(s.method, s.body) for s in seen] == [
        ("POST", b'{"q":"x"}'),
        ("GET", b""),
        ("POST", b'{"q":"x"}'),
        ("POST", b'{"q":"x"}'),
    ]


async def test_credentials_stay_with_their_origin() -> None:
    seen: list[Seen] = []

    async def other(request: web.Request) -> web.StreamResponse:
        seen.append(await Seen.of(request))
        return web.Response(text="elsewhere")

    async with serving(other) as elsewhere:

        async def first(request: web.Request) -> web.StreamResponse:
            seen.append(await Seen.of(request))
            raise web.HTTPFound(elsewhere + "/landing")

        async with serving(first) as base:
            tool = http_tool(
                name="t",
                description="T.",
                url=base + "/start",
                headers={"Authorization": "Bearer secret", "X-Trace": "1"},
                input_schema=SCHEMA,
            )
            result = await tool.execute({}, None)
    assert result.output == "elsewhere"
    assert seen[0].headers["Authorization"] == "Bearer secret"
    assert "Authorization" not in seen[1].headers
    assert seen[1].headers["X-Trace"] == "1"


async def test_a_redirect_loop_stops_after_ten_hops_with_the_last_redirect() -> None:
    hops = 0

    async def loop(request: web.Request) -> web.StreamResponse:
        nonlocal hops
        hops += 1
        raise web.HTTPFound("/again")

    async with serving(loop) as base:
        tool = http_tool(name="t", description="T.", url=base + "/", input_schema=SCHEMA)
        result = await tool.execute({}, None)
    assert result.is_error
    assert result.output.startswith("HTTP 302")
    assert hops == 11
