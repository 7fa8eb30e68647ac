"""OAuth-protected MCP servers: discovery, registration, PKCE, the browser step as a
suspension, token stores, refresh and scope step-up, against a server built on the MCP SDK's
own authorization server support (``oauth_server.py``)."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import aiohttp
import pytest
from aiohttp import web

import toolnexus as tn
from toolnexus import Answer, Request
from toolnexus.testing import StubLLMServer, reply

SERVER = Path(__file__).with_name("oauth_server.py")
REDIRECT = "http://127.0.0.1:8976/oauth/callback"


@pytest.fixture
def oauth_server() -> Iterator[Callable[..., str]]:
    """Start the OAuth-protected fixture server (flags as for the script); returns its URL."""
    started: list[subprocess.Popen[str]] = []

    def start(*flags: str) -> str:
        proc = subprocess.Popen(
            [sys.executable, str(SERVER), *flags], stdout=subprocess.PIPE, text=True
        )
        started.append(proc)
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), f"the OAuth server printed {url!r}"
        return url

    yield start
    for proc in started:
        proc.kill()
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()


class Browser:
    """A person with a browser: opens the authorization URL and reads where it sends them."""

    def __init__(self, *, whole_url: bool = False) -> None:
        self.requests: list[Request] = []
        self.whole_url = whole_url

    async def __call__(self, request: Request) -> Answer:
        self.requests.append(request)
        assert request.url is not None
        async with aiohttp.ClientSession() as http:
            async with http.get(request.url, allow_redirects=False) as response:
                assert response.status in (302, 303, 307), await response.text()
                location = response.headers["Location"]
        if self.whole_url:
            return Answer(request.id, ok=True, data={"url": location})
        query = parse_qs(urlparse(location).query)
        return Answer(request.id, ok=True, data={"code": query["code"][0]})


def never_asked(request: Request) -> Answer:
    raise AssertionError(f"wait_for was asked: {request}")


async def server_state(url: str) -> dict[str, Any]:
    async with aiohttp.ClientSession() as http:
        async with http.get(url.removesuffix("/mcp") + "/test/state") as response:
            state: dict[str, Any] = await response.json()
            return state


def config(url: str) -> dict[str, Any]:
    return {"mcpServers": {"secure": {"url": url, "oauth": True}}}


async def test_the_browser_step_goes_to_wait_for_and_the_tool_then_works(
    oauth_server: Callable[..., str],
) -> None:
    url = oauth_server()
    browser = Browser()
    async with await tn.create_toolkit(
        mcp_config=config(url), builtins=False, wait_for=browser
    ) as tk:
        assert tk.mcp_status() == {"secure": "connected"}
        result = await tk.execute("secure_echo", {"text": "signed in"})

    assert (result.output, result.is_error) == ("signed in", False)
    (request,) = browser.requests
    assert request.kind == "authorization"
    assert request.data == {"server": "secure"}
    assert "secure" in request.prompt
    assert request.url is not None
    assert request.url.startswith(url.removesuffix("/mcp"))
    query = parse_qs(urlparse(request.url).query)
    state = await server_state(url)
    assert (state["registrations"], state["authorizations"], state["codeGrants"]) == (1, 1, 1)
    assert query["client_id"] == state["clients"]  # registered dynamically, then used
    assert query["code_challenge_method"] == ["S256"]
    assert query["code_challenge"] == state["codeChallenges"]
    assert query["redirect_uri"] == [REDIRECT]
    assert query["scope"] == ["mcp"]  # from the protected resource metadata
    assert query["resource"] == [url]


async def test_a_run_calls_a_protected_tool_after_wait_for_authorized_the_server(
    oauth_server: Callable[..., str],
) -> None:
    url = oauth_server()
    browser = Browser(whole_url=True)
    script = [reply.tool_calls(reply.call("secure_echo", {"text": "hi"})), reply.text("done")]
    async with await tn.create_toolkit(
        mcp_config=config(url), builtins=False, wait_for=browser
    ) as tk:
        with StubLLMServer(script) as stub:
            client = tn.create_client(stub.url, model="m", api_key="k", wait_for=browser)
            result = await client.run("echo hi", tk)

    assert result.status == "done"
    assert [(c.name, c.output) for c in result.tool_calls] == [("secure_echo", "hi")]
    assert len(browser.requests) == 1


async def test_a_scope_step_up_during_a_run_is_answered_through_the_runs_wait_for(
    oauth_server: Callable[..., str],
) -> None:
    url = oauth_server()
    browser = Browser()
    script = [reply.tool_calls(reply.call("secure_admin_echo", {"text": "x"})), reply.text("ok")]
    async with await tn.create_toolkit(
        mcp_config=config(url), builtins=False, wait_for=browser
    ) as tk:
        with StubLLMServer(script) as stub:
            events: list[tn.Event] = []
            client = tn.create_client(stub.url, model="m", api_key="k", wait_for=browser)
            result = await client.run("admin", tk, on_event=events.append)

    assert result.status == "done"
    assert [c.output for c in result.tool_calls] == ["admin: x"]
    first, second = browser.requests
    assert first.kind == second.kind == "authorization"
    assert parse_qs(urlparse(second.url or "").query)["scope"] == ["mcp admin"]
    assert [e.request for e in events if isinstance(e, tn.PendingEvent)] == [second]
    state = await server_state(url)
    assert state["requestedScopes"] == ["mcp", "mcp admin"]


async def test_without_wait_for_the_run_halts_pending_and_the_answer_resumes_it(
    oauth_server: Callable[..., str],
) -> None:
    url = oauth_server()
    browser = Browser()
    script = [
        reply.tool_calls(reply.call("secure_admin_echo", {"text": "later"})),
        reply.text("finished"),
    ]
    async with await tn.create_toolkit(
        mcp_config=config(url), builtins=False, wait_for=browser
    ) as tk:
        with StubLLMServer(script) as stub:
            client = tn.create_client(stub.url, model="m", api_key="k")
            halted = await client.run("admin later", tk)
            assert halted.status == "pending"
            request = halted.pending
            assert request is not None
            assert request.kind == "authorization"
            assert request.url is not None
            assert "/authorize?" in request.url
            assert halted.text == request.prompt

            answer = await Browser()(request)
            resumed = await client.run_with_answer(request, answer, tk, history=halted.messages)

    assert resumed.status == "done"
    assert [c.output for c in resumed.tool_calls] == ["admin: later"]
    assert resumed.text == "finished"


@pytest.mark.parametrize("kind", ["memory", "file"])
async def test_tokens_are_kept_in_the_store_and_a_second_toolkit_does_not_ask_again(
    oauth_server: Callable[..., str], tmp_path: Path, kind: str
) -> None:
    url = oauth_server()
    path = tmp_path / "tokens.json"
    store: tn.TokenStore = tn.MemoryTokenStore() if kind == "memory" else tn.FileTokenStore(path)
    async with await tn.create_toolkit(
        mcp_config=config(url), builtins=False, wait_for=Browser(), token_store=store
    ) as tk:
        assert (await tk.execute("secure_echo", {"text": "one"})).output == "one"

    record = await store.get(f"secure {url}")
    assert record is not None
    state = await server_state(url)
    assert record["tokens"]["access_token"] in state["issued"]
    assert record["tokens"]["refresh_token"] in state["issued"]
    assert record["client"]["client_id"] in state["clients"]
    if kind == "file":
        assert path.stat().st_mode & 0o777 == 0o600
        store = tn.FileTokenStore(path)  # a fresh process would read the same file

    async with await tn.create_toolkit(
        mcp_config=config(url), builtins=False, wait_for=never_asked, token_store=store
    ) as again:
        assert again.mcp_status() == {"secure": "connected"}
        assert (await again.execute("secure_echo", {"text": "two"})).output == "two"
    assert (await server_state(url))["authorizations"] == 1


async def expire_on_the_server(url: str) -> None:
    """Every access token the server issued so far expires (refresh tokens stay valid)."""
    async with aiohttp.ClientSession() as http:
        async with http.post(url.removesuffix("/mcp") + "/test/expire") as response:
            assert response.status == 200


async def expire_everything(url: str, store: tn.TokenStore) -> None:
    """Time passes: the server's access tokens expire, and the stored record says so too."""
    await expire_on_the_server(url)
    key = f"secure {url}"
    record = await store.get(key)
    assert record is not None
    assert record["expiresAt"] > 0
    await store.set(key, {**record, "expiresAt": record["expiresAt"] - 7200})


@pytest.mark.parametrize("kind", ["memory", "file"])
async def test_an_expired_access_token_is_refreshed_by_the_next_toolkit_without_asking(
    oauth_server: Callable[..., str], tmp_path: Path, kind: str
) -> None:
    url = oauth_server()
    path = tmp_path / "tokens.json"
    store: tn.TokenStore = tn.MemoryTokenStore() if kind == "memory" else tn.FileTokenStore(path)
    async with await tn.create_toolkit(
        mcp_config=config(url), builtins=False, wait_for=Browser(), token_store=store
    ) as tk:
        assert (await tk.execute("secure_echo", {"text": "before"})).output == "before"
    await expire_everything(url, store)

    async with await tn.create_toolkit(
        mcp_config=config(url), builtins=False, wait_for=never_asked, token_store=store
    ) as again:
        assert again.mcp_status() == {"secure": "connected"}
        assert (await again.execute("secure_echo", {"text": "after"})).output == "after"

    state = await server_state(url)
    assert (state["authorizations"], state["refreshes"]) == (1, 1)
    record = await store.get(f"secure {url}")
    assert record is not None
    assert record["tokens"]["access_token"] == state["issued"][-2]  # the refreshed pair


async def test_a_token_the_server_stops_accepting_is_refreshed_without_asking_again(
    oauth_server: Callable[..., str],
) -> None:
    url = oauth_server()
    browser = Browser()
    async with await tn.create_toolkit(
        mcp_config=config(url), builtins=False, wait_for=browser
    ) as tk:
        assert (await tk.execute("secure_echo", {"text": "before"})).output == "before"
        await expire_on_the_server(url)  # earlier than the client was told
        after = await tk.execute("secure_echo", {"text": "after"})

    assert (after.output, after.is_error) == ("after", False)
    state = await server_state(url)
    assert (state["authorizations"], state["refreshes"]) == (1, 1)
    assert len(browser.requests) == 1


async def revoke_on_the_server(url: str) -> None:
    """The person signed out: every access and refresh token is revoked."""
    async with aiohttp.ClientSession() as http:
        async with http.post(url.removesuffix("/mcp") + "/test/revoke") as response:
            assert response.status == 200


async def test_a_revoked_grant_suspends_the_call_for_a_new_sign_in(
    oauth_server: Callable[..., str],
) -> None:
    url = oauth_server()
    async with await tn.create_toolkit(
        mcp_config=config(url), builtins=False, wait_for=Browser()
    ) as tk:
        assert (await tk.execute("secure_echo", {"text": "before"})).output == "before"
        await revoke_on_the_server(url)
        suspended = await tk.execute("secure_echo", {"text": "after"})
        request = tn.pending_of(suspended)
        assert request is not None
        assert request.kind == "authorization"
        answer = await Browser()(request)
        after = await tk.execute("secure_echo", {"text": "after"}, tn.ToolContext(answer=answer))

    assert (after.output, after.is_error) == ("after", False)
    state = await server_state(url)
    assert (state["authorizations"], state["codeGrants"]) == (2, 2)


async def test_closing_with_a_sign_in_nobody_answered_does_not_wait_for_it(
    oauth_server: Callable[..., str],
) -> None:
    url = oauth_server()
    tk = await tn.create_toolkit(mcp_config=config(url), builtins=False, wait_for=Browser())
    try:
        await revoke_on_the_server(url)
        suspended = await tk.execute("secure_echo", {"text": "never"})
        assert tn.pending_of(suspended) is not None
    finally:
        async with asyncio.timeout(30):  # the sign-in itself would wait for 15 minutes
            await tk.aclose()


async def test_no_token_or_code_appears_in_logs_results_or_events(
    oauth_server: Callable[..., str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    url = oauth_server()
    store = tn.MemoryTokenStore()
    browser = Browser()
    codes: list[str] = []

    async def remembering(request: Request) -> Answer:
        answer = await browser(request)
        codes.append(str((answer.data or {})["code"]))
        return answer

    script = [reply.tool_calls(reply.call("secure_admin_echo", {"text": "x"})), reply.text("ok")]
    async with await tn.create_toolkit(
        mcp_config=config(url), builtins=False, wait_for=remembering, token_store=store
    ) as tk:
        with StubLLMServer(script) as stub:
            events: list[tn.Event] = []
            client = tn.create_client(stub.url, model="m", api_key="k", wait_for=remembering)
            result = await client.run("admin", tk, on_event=events.append)
            sent = json.dumps([r.json for r in stub.requests])
    assert result.status == "done"
    await expire_everything(url, store)
    async with await tn.create_toolkit(
        mcp_config=config(url), builtins=False, wait_for=never_asked, token_store=store
    ) as again:
        refreshed = await again.execute("secure_echo", {"text": "again"})
    assert refreshed.output == "again"

    secrets = (await server_state(url))["issued"] + codes
    assert len(secrets) == 8  # two sign-ins and one refresh, two tokens each; two codes
    seen = caplog.text + sent + json.dumps([e.to_dict() for e in events]) + repr(result)
    seen += repr(refreshed)
    for secret in secrets:
        assert secret not in seen


async def test_without_wait_for_a_server_needing_a_sign_in_fails_with_a_clear_reason(
    oauth_server: Callable[..., str], caplog: pytest.LogCaptureFixture
) -> None:
    url = oauth_server()
    async with await tn.create_toolkit(mcp_config=config(url), builtins=False) as tk:
        assert tk.mcp_status() == {"secure": "failed"}
    assert 'MCP server "secure" failed' in caplog.text
    assert "connect: authorization required, and there is no wait_for" in caplog.text
    assert "SSE" not in caplog.text
    assert (await server_state(url))["authorizations"] == 0


async def test_a_declined_sign_in_fails_the_server_and_names_it(
    oauth_server: Callable[..., str], caplog: pytest.LogCaptureFixture
) -> None:
    url = oauth_server()

    asked: list[Request] = []

    def decline(request: Request) -> Answer:
        asked.append(request)
        return Answer(request.id, ok=False, reason="declined")

    async with await tn.create_toolkit(
        mcp_config=config(url), builtins=False, wait_for=decline
    ) as tk:
        assert tk.mcp_status() == {"secure": "failed"}
    assert 'MCP server "secure" failed' in caplog.text
    assert "connect: authorization declined" in caplog.text
    assert len(asked) == 1  # no second sign-in through the SSE fallback


async def test_a_refused_identity_provider_exchange_fails_the_server_naming_why(
    oauth_server: Callable[..., str],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    caplog.set_level(logging.DEBUG)
    url = oauth_server()
    issuer = url.removesuffix("/mcp")
    id_token = "eyJ-person-id-token-4f1c9a"
    monkeypatch.setenv("TN_TEST_ID_TOKEN", id_token)
    received: list[dict[str, str]] = []

    async def token(request: web.Request) -> web.Response:
        received.append({k: str(v) for k, v in (await request.post()).items()})
        return web.json_response({"error": "invalid_grant"}, status=400)

    app = web.Application()
    app.router.add_post("/token", token)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    oauth = {
        "grant": "identity_assertion",
        "clientId": "app",
        "clientSecret": "app-secret-9d2e",
        "issuer": issuer,
        "idpTokenEndpoint": f"http://127.0.0.1:{port}/token",
        "idpClientId": "idp-app",
        "idToken": "${TN_TEST_ID_TOKEN}",
    }
    try:
        config = {"mcpServers": {"secure": {"url": url, "oauth": oauth}}}
        async with await tn.create_toolkit(mcp_config=config, builtins=False) as tk:
            assert tk.mcp_status() == {"secure": "failed"}
    finally:
        await runner.cleanup()

    (form,) = received  # asked once: no second try over SSE
    assert form == {
        "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
        "subject_token": id_token,
        "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
        "requested_token_type": "urn:ietf:params:oauth:token-type:id-jag",
        "audience": issuer,
        "resource": url,
        "client_id": "idp-app",
    }
    assert (
        'MCP server "secure" failed: connect: the identity provider refused the token '
        "exchange (HTTP 400, invalid_grant)"
    ) in caplog.text
    assert id_token not in caplog.text
    assert "app-secret-9d2e" not in caplog.text


async def test_a_file_token_store_path_may_start_at_the_home_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    store = tn.FileTokenStore("~/app/tokens.json")
    await store.set("s http://x/mcp", {"tokens": {"access_token": "a"}})

    written = tmp_path / "app" / "tokens.json"
    assert json.loads(written.read_text()) == {"s http://x/mcp": {"tokens": {"access_token": "a"}}}
    assert written.stat().st_mode & 0o777 == 0o600
    assert await tn.FileTokenStore(written).get("s http://x/mcp") == {
        "tokens": {"access_token": "a"}
    }


async def test_the_inventory_lists_a_signed_in_server_with_the_same_token_store(
    oauth_server: Callable[..., str],
) -> None:
    url = oauth_server()
    store = tn.MemoryTokenStore()
    async with await tn.create_toolkit(
        mcp_config=config(url), builtins=False, wait_for=Browser(), token_store=store
    ):
        pass

    inventory = await tn.list_mcp_tools(config(url), token_store=store)
    assert inventory.status == {"secure": "connected"}
    assert [t.name for t in inventory.tools["secure"]] == ["echo", "admin_echo"]
    assert (await tn.list_mcp_tools(config(url))).status == {"secure": "failed"}
    assert (await server_state(url))["authorizations"] == 1


async def test_a_401_from_a_server_that_offers_oauth_says_to_turn_oauth_on(
    oauth_server: Callable[..., str], caplog: pytest.LogCaptureFixture
) -> None:
    url = oauth_server()
    no_oauth = {"mcpServers": {"secure": {"url": url}}}
    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        async with await tn.create_toolkit(mcp_config=no_oauth, builtins=False) as tk:
            assert tk.mcp_status() == {"secure": "failed"}
    [reason] = [
        r.getMessage() for r in caplog.records if 'MCP server "secure" failed' in r.getMessage()
    ]
    assert "HTTP 401" in reason
    assert 'set "oauth": true' in reason
    assert "SSE" not in reason  # no fallback tried: it would be refused the same way


async def test_a_plain_401_without_an_oauth_challenge_gives_no_oauth_advice(
    http_server: Callable[..., str], caplog: pytest.LogCaptureFixture
) -> None:
    url = http_server("--transport", "http", "--require-header", "X-Key=k")
    config = {"mcpServers": {"plain": {"url": url}}}
    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        async with await tn.create_toolkit(mcp_config=config, builtins=False) as tk:
            assert tk.mcp_status() == {"plain": "failed"}
    [reason] = [
        r.getMessage() for r in caplog.records if 'MCP server "plain" failed' in r.getMessage()
    ]
    assert "oauth" not in reason.lower()
