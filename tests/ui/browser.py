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
from typing import Any

import pytest

from toolnexus import create_client

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
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

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


@contextmanager
def ui_server(stub_url: str, **client_options: Any) -> Iterator[str]:
    """``tk.serve(..., ui={})`` of the test toolkit, on a thread of its own; yields its URL."""
    loop = asyncio.new_event_loop()
    ready: Future[str] = Future()
    stop = threading.Event()

    async def serve() -> None:
        client = create_client(stub_url, "openai", model="test-model", api_key="test-key")
        async with client, await build_toolkit() as toolkit:
            handle = await toolkit.serve("127.0.0.1:0", client=client, ui={**client_options})
            ready.set_result(handle.url)
            try:
                await asyncio.to_thread(stop.wait)
            finally:
                await handle.stop()

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
