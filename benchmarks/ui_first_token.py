"""Time from starting ``toolnexus serve --ui`` to the chat page's first streamed token.

A ``StubLLMServer`` answers in this process; headless Chromium (started first, so its own
start-up is not counted) opens the page once the server says it listens, sends a prompt and
records, in the page, when the first text delta arrived. Printed (median of ``--runs``): the
server process's start-up until it listens, until the page has loaded, and until the first
token. Needs ``chromium`` and ``chromedriver`` and ``selenium``.

Usage: ``python benchmarks/ui_first_token.py [--runs 5]`` (from the repository root)
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.support.ui import WebDriverWait

from toolnexus.testing import StubLLMServer, reply

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def browser() -> webdriver.Chrome:
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(flag)
    service = Service(executable_path=shutil.which("chromedriver") or "chromedriver")
    return webdriver.Chrome(service=service, options=options)


def one_run(driver: webdriver.Chrome, stub: StubLLMServer) -> tuple[float, float, float]:
    stub.enqueue(reply.text("Hello there, this is the stub model answering."))
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    argv = [sys.executable, "-m", "toolnexus", "serve", "--ui", "--no-builtins"]
    argv += ["--addr", f"127.0.0.1:{port}", "--base-url", stub.url, "--model", "m"]
    argv += ["--api-key", "test-key"]
    started = time.time()
    server = subprocess.Popen(argv, env=env, stderr=subprocess.PIPE, text=True)
    try:
        assert server.stderr is not None
        for line in server.stderr:
            if "serving the chat page at" in line:
                break
        else:
            raise SystemExit(f"the server did not start (exit {server.wait()})")
        listening = time.time()
        driver.get(f"http://127.0.0.1:{port}/")
        loaded = time.time()
        driver.find_element("id", "prompt").send_keys("hi")
        driver.find_element("id", "send").click()
        WebDriverWait(driver, 20, poll_frequency=0.02).until(
            lambda d: d.execute_script("return window.toolnexusFirstToken")
        )
        first = driver.execute_script("return window.toolnexusFirstToken") / 1000.0
        return listening - started, loaded - started, first - started
    finally:
        server.terminate()
        server.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    driver = browser()
    try:
        with StubLLMServer() as stub:
            runs = [one_run(driver, stub) for _ in range(args.runs)]
    finally:
        driver.quit()
    listening, loaded, first = (statistics.median(x) * 1000 for x in zip(*runs, strict=True))
    print(f"runs: {args.runs} (median)")
    print(f"server listening:      {listening:7.0f} ms after the process started")
    print(f"page loaded:           {loaded:7.0f} ms")
    print(f"first streamed token:  {first:7.0f} ms")


if __name__ == "__main__":
    main()
