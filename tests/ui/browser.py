"""Headless Chromium for the browser tests, and a UI server running on its own thread.

Without ``chromium`` and ``chromedriver`` the browser tests skip with the reason, unless
``TOOLNEXUS_REQUIRE_BROWSER=1`` (CI), where a missing browser is a failure.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import threading
from collections.abc import Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import pytest

from toolnexus import create_client
from toolnexus.serve.access import HostRules, bearer_auth
from toolnexus.serve.http import Access, ASGIApp, start_http
from toolnexus.serve.ui import ui_profile, ui_routes

from .support import build_toolkit

REQUIRED = os.environ.get("TOOLNEXUS_REQUIRE_BROWSER") == "1"


def browser_paths() -> tuple[str, str]:
    """``(chromium, chromedriver)``; skips (or fails when required) when either is missing."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if chromium and driver:
        return chromium, driver
    missing = "chromium" if not chromium else "chromedriver"
    reason = f"no {missing} on PATH (apt-get install chromium chromium-driver)"
    if REQUIRED:
        pytest.fail(f"TOOLNEXUS_REQUIRE_BROWSER=1 but {reason}")
    pytest.skip(reason)


@contextmanager
def chromium(width: int = 1100, height: int = 1040) -> Iterator[Any]:
    """A headless Chromium driven by Selenium, quit afterwards."""
    binary, driver_path = browser_paths()
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        if REQUIRED:
            pytest.fail("TOOLNEXUS_REQUIRE_BROWSER=1 but selenium is not installed")
        pytest.skip("selenium is not installed (pip install -e '.[dev]')")

    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--no-first-run",
        "--disable-extensions",
        "--disable-background-networking",
        f"--window-size={width},{height}",
        "--force-device-scale-factor=1",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    driver.set_page_load_timeout(20)
    try:
        yield driver
    finally:
        driver.quit()


def bearer_only(app: ASGIApp, token: str, seen: list[str]) -> ASGIApp:
    """``app`` answering 401 unless the request carries ``Authorization: Bearer <token>``;
    every ``Authorization`` value received is appended to ``seen``."""

    async def checked(scope: Any, receive: Any, send: Any) -> None:
        headers = dict(scope.get("headers", []))
        given = headers.get(b"authorization", b"").decode()
        if given:
            seen.append(given)
        if given != f"Bearer {token}":
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [(b"www-authenticate", b"Bearer"), (b"content-length", b"0")],
                }
            )
            await send({"type": "http.response.body", "body": b""})
            return
        await app(scope, receive, send)

    return checked


@contextmanager
def ui_server(
    stub_url: str, *, token: str | None = None, seen: list[str] | None = None
) -> Iterator[str]:
    """The test toolkit's UI routes, on a thread of its own; yields the server's URL.

    With ``token``, every route but the public ones (the page and its files) needs it as a
    bearer token, as a server with ``auth`` does.
    """
    loop = asyncio.new_event_loop()
    ready: Future[str] = Future()
    stop = threading.Event()

    async def serve() -> None:
        client = create_client(stub_url, "openai", model="test-model", api_key="test-key")
        async with client, await build_toolkit() as toolkit:
            routes = ui_routes(toolkit, client, ui_profile({}))
            access = None
            if token is not None:  # the server's own bearer auth; the test also sees the header
                received = seen if seen is not None else []
                routes = [
                    r if r.public else replace(r, app=bearer_only(r.app, token, received))
                    for r in routes
                ]
                access = Access(bearer_auth([token]), HostRules.build("127.0.0.1"))
            handle = await start_http("127.0.0.1:0", routes, access=access)
            ready.set_result(handle.url)
            try:
                await asyncio.to_thread(stop.wait)
            finally:
                await handle.aclose()

    def main() -> None:
        try:
            loop.run_until_complete(serve())
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
        finally:
            loop.close()

    thread = threading.Thread(target=main, name="ui-server", daemon=True)
    thread.start()
    try:
        yield ready.result(timeout=20)
    finally:
        stop.set()
        thread.join(timeout=20)
