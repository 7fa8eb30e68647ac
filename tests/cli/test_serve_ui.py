"""``toolnexus serve --ui``: the chat page and its streams from the shell."""

from __future__ import annotations

import httpx

from toolnexus.testing import StubLLMServer, reply

from .support import TIMEOUT, first_line, started, stop, toolnexus


async def test_serve_ui_serves_the_page_and_streams_a_run() -> None:
    with StubLLMServer([reply.text("Hello from the page.")]) as stub, started(
        "serve", "--ui", "--addr", "127.0.0.1:0", "--name", "Shell chat",
        "--base-url", stub.url, "--model", "m", "--api-key", "k", "--no-builtins",
    ) as proc:  # fmt: skip
        line = await first_line(proc)
        assert line.startswith("serving the chat page at http://127.0.0.1:"), line
        url = line.split()[-1].rstrip("/")
        async with httpx.AsyncClient(timeout=TIMEOUT) as http:
            page = await http.get(url + "/")
            assert "<title>Shell chat</title>" in page.text
            body = {
                "threadId": "t",
                "runId": "r",
                "messages": [{"id": "1", "role": "user", "content": "hi"}],
            }
            answer = await http.post(url + "/agui", json=body)
        assert answer.headers["content-type"].startswith("text/event-stream")
        assert '"delta":"Hello "' in answer.text
        assert await stop(proc) == 0


def test_serve_ui_over_stdio_exits_2() -> None:
    done = toolnexus("serve", "--ui", "--stdio", "--no-builtins")
    assert done.returncode == 2
    assert "--stdio" in done.stderr


def test_serve_without_anything_to_serve_names_ui_too() -> None:
    done = toolnexus("serve", "--no-builtins")
    assert done.returncode == 2
    assert "--ui" in done.stderr
