"""StubLLMServer and the reply builders, exercised with plain aiohttp and httpx clients."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import threading
import time

import aiohttp
import httpx
import pytest

from toolnexus.testing import RecordedRequest, StubLLMServer, reply

from .wire import ANTHROPIC, OPENAI, exchange, post

# --- recording ------------------------------------------------------------------------------------


async def test_records_method_path_headers_body_json_style_and_stream(stub, session):
    stub.enqueue(reply.text("ok"))
    body = {"model": "gpt-x", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    async with session.post(
        stub.url + "/v1/chat/completions", json=body, headers={"Authorization": "Bearer k"}
    ) as response:
        assert response.status == 200
        await response.read()

    [req] = stub.requests
    assert isinstance(req, RecordedRequest)
    assert (req.index, req.method, req.path) == (0, "POST", "/v1/chat/completions")
    assert req.headers["authorization"] == "Bearer k"
    assert req.headers["AUTHORIZATION"] == "Bearer k"
    assert req.headers["Content-Type"] == "application/json"
    assert json.loads(req.body) == body
    assert req.json == body
    assert (req.style, req.stream, req.disconnected) == ("openai", True, False)


async def test_style_comes_from_the_path_and_stream_from_the_body(stub, session):
    stub.enqueue(reply.text("a"), reply.text("b"))
    await post(session, stub, "/messages", {"stream": False})
    async with session.post(stub.url + "/x/chat/completions", data=b"not json") as response:
        await response.read()

    first, second = stub.requests
    assert (first.style, first.stream, first.json) == ("anthropic", False, {"stream": False})
    assert (second.style, second.stream, second.json) == ("openai", False, None)
    assert second.body == b"not json"


async def test_unknown_path_is_404_recorded_and_consumes_no_reply(stub, session):
    stub.enqueue(reply.text("kept"))
    status, _, body = await post(session, stub, "/v1/completions", {})
    assert status == 404
    assert "no route for POST /v1/completions" in json.loads(body)["error"]
    assert stub.requests[0].style is None

    status, _, body = await post(session, stub, OPENAI, {})
    assert status == 200
    assert json.loads(body)["choices"][0]["message"]["content"] == "kept"


async def test_empty_queue_answers_500_naming_the_request(stub, session):
    status, headers, body = await post(session, stub, OPENAI, {})
    assert status == 500
    assert headers["Content-Type"] == "application/json"
    assert json.loads(body) == {"error": "StubLLMServer: no reply scripted for request #0"}
    assert len(stub.requests) == 1


async def test_replies_given_at_construction_play_in_order(session):
    async with StubLLMServer([reply.text("one"), reply.text("two")]) as stub:
        contents = []
        for _ in range(2):
            _, _, body = await post(session, stub, OPENAI, {})
            contents.append(json.loads(body)["choices"][0]["message"]["content"])
    assert contents == ["one", "two"]


async def test_assert_consumed_passes_when_every_reply_was_taken(stub, session):
    stub.enqueue(reply.text("one"), reply.text("two"))
    for _ in range(2):
        await post(session, stub, OPENAI, {})
    stub.assert_consumed()


async def test_assert_consumed_fails_when_scripted_replies_are_left(stub, session):
    stub.enqueue(reply.text("one"), reply.tool_calls(reply.call("f")), reply.error(500))
    await post(session, stub, OPENAI, {})
    with pytest.raises(AssertionError, match=r"2 scripted replies left \(message, "):
        stub.assert_consumed()


async def test_assert_consumed_fails_when_a_request_found_no_reply(stub, session):
    stub.enqueue(reply.text("one"))
    for _ in range(2):
        await post(session, stub, OPENAI, {})
    with pytest.raises(AssertionError, match=r"request #1 found no reply scripted"):
        stub.assert_consumed()
    stub.reset()
    stub.assert_consumed()


# --- errors, raw replies, drops and breaks --------------------------------------------------------


@pytest.mark.parametrize("path", [OPENAI, ANTHROPIC])
@pytest.mark.parametrize("stream", [False, True])
async def test_error_has_its_status_body_and_retry_after_in_any_style_or_mode(
    stub, session, path, stream
):
    made = reply.error(429, {"error": {"message": "slow down"}}, headers={"Retry-After": "1"})
    status, headers, body = await exchange(session, stub, made, path, stream)
    assert (status, headers["Retry-After"]) == (429, "1")
    assert headers["Content-Type"] == "application/json"
    assert json.loads(body) == {"error": {"message": "slow down"}}


async def test_error_with_a_text_body_is_text_plain(stub, session):
    status, headers, body = await exchange(session, stub, reply.error(503, "busy"), OPENAI, False)
    assert (status, body) == (503, b"busy")
    assert headers["Content-Type"].startswith("text/plain")


async def test_raw_replies_are_sent_verbatim(stub, session):
    status, headers, body = await exchange(
        session, stub, reply.raw_json({"choices": []}, status=201), OPENAI, True
    )
    assert (status, headers["Content-Type"], body) == (201, "application/json", b'{"choices":[]}')

    made = reply.raw_bytes(b"\x00\x01", status=202, content_type="application/octet-stream")
    status, headers, body = await exchange(session, stub, made, ANTHROPIC, False)
    assert (status, headers["Content-Type"], body) == (202, "application/octet-stream", b"\x00\x01")

    made = reply.raw_sse([{"a": 1}, "event: ping\ndata: {}", "data: [DONE]"])
    status, headers, body = await exchange(session, stub, made, OPENAI, False)
    assert (status, headers["Content-Type"]) == (200, "text/event-stream")
    assert body == b'data: {"a":1}\n\nevent: ping\ndata: {}\n\ndata: [DONE]\n\n'


async def test_with_headers_adds_and_replaces_headers(stub, session):
    made = reply.text("x").with_headers({"content-type": "application/x-custom", "X-Req": "7"})
    _, headers, _ = await exchange(session, stub, made, OPENAI, False)
    assert headers["Content-Type"] == "application/x-custom"
    assert headers["X-Req"] == "7"


async def test_drop_closes_the_connection_without_a_response(stub, session):
    stub.enqueue(reply.drop(), reply.text("after"))
    with pytest.raises(aiohttp.ServerDisconnectedError):
        await post(session, stub, OPENAI, {})
    status, _, _ = await post(session, stub, OPENAI, {})
    assert status == 200
    assert [r.disconnected for r in stub.requests] == [False, False]


async def test_break_after_sends_some_events_then_breaks_the_stream(stub, session):
    stub.enqueue(reply.text("one two three four").break_after(2))
    received: list[bytes] = []

    async def read_lines(response: aiohttp.ClientResponse) -> None:
        async for line in response.content:
            received.append(line)

    async with session.post(stub.url + OPENAI, json={"stream": True}) as response:
        assert response.status == 200
        with pytest.raises(aiohttp.ClientPayloadError):
            await read_lines(response)
    events = [line for line in received if line.startswith(b"data: ")]
    assert [json.loads(e[6:])["choices"][0]["delta"]["content"] for e in events] == ["one ", "two "]
    assert stub.disconnects == 0


async def test_break_after_on_a_json_reply_sends_part_of_the_body(stub, session):
    stub.enqueue(reply.text("a fairly long answer").break_after(0))
    async with session.post(stub.url + ANTHROPIC, json={}) as response:
        assert response.status == 200
        with pytest.raises(aiohttp.ClientPayloadError):
            await response.read()


async def test_delayed_reply_arrives_after_the_delay(stub, session):
    stub.enqueue(reply.text("late").with_delay(0.2))
    started = time.monotonic()
    status, _, _ = await post(session, stub, OPENAI, {})
    assert status == 200
    assert time.monotonic() - started >= 0.2


async def test_client_giving_up_during_a_delay_is_recorded_as_disconnected(stub, session):
    stub.enqueue(reply.text("never seen").with_delay(30))
    with pytest.raises(asyncio.TimeoutError):
        async with session.post(
            stub.url + OPENAI, json={}, timeout=aiohttp.ClientTimeout(total=0.2)
        ) as response:
            await response.read()
    await stub.until_disconnects(1, timeout=2)
    assert stub.disconnects == 1
    assert stub.requests[0].disconnected is True
    assert stub.in_flight == 0


async def test_client_closing_mid_stream_is_recorded_as_disconnected(stub, session):
    big = "x" * 65536
    stub.enqueue(reply.raw_sse([{"n": i, "pad": big} for i in range(400)]))
    async with session.post(stub.url + OPENAI, json={"stream": True}) as response:
        first = await response.content.readline()
        assert first.startswith(b'data: {"n":0,')
        response.close()
    await stub.until_disconnects(1)
    assert stub.requests[0].disconnected is True


def test_a_port_in_use_fails_start_with_a_clear_error():
    with StubLLMServer() as first:
        port = int(first.url.rsplit(":", 1)[1])
        with pytest.raises(RuntimeError, match=f"could not listen on 127.0.0.1:{port}"):
            StubLLMServer(port=port).start()


# --- handler --------------------------------------------------------------------------------------


async def test_sync_handler_answers_from_the_request(stub, session):
    stub.handler = lambda req: reply.text(f"you sent {req.json['n']} to {req.style}")
    _, _, body = await post(session, stub, ANTHROPIC, {"n": 7})
    assert json.loads(body)["content"][0]["text"] == "you sent 7 to anthropic"


async def test_async_handler_is_awaited_and_wins_over_the_queue(session):
    async def answer(req: RecordedRequest) -> reply.Reply:
        await asyncio.sleep(0)
        return reply.text(f"#{req.index}")

    async with StubLLMServer([reply.text("queued")], handler=answer) as stub:
        _, _, body = await post(session, stub, OPENAI, {})
    assert json.loads(body)["choices"][0]["message"]["content"] == "#0"


async def test_raising_handler_answers_500_with_the_exception_text(stub, session):
    def boom(req: RecordedRequest) -> reply.Reply:
        raise ValueError("no such scenario")

    stub.handler = boom
    status, _, body = await post(session, stub, OPENAI, {})
    assert status == 500
    assert json.loads(body)["error"] == "StubLLMServer: handler raised ValueError: no such scenario"


async def test_handler_returning_something_else_answers_500(stub, session):
    stub.handler = lambda req: "text"
    status, _, body = await post(session, stub, OPENAI, {})
    assert status == 500
    assert "expected a Reply" in json.loads(body)["error"]


# --- counters, waiting, lifecycle -----------------------------------------------------------------


async def test_max_in_flight_counts_concurrent_delayed_requests(stub, session):
    stub.handler = lambda req: reply.text("ok").with_delay(1.0)
    results = await asyncio.gather(*(post(session, stub, OPENAI, {}) for _ in range(50)))
    assert [status for status, _, _ in results] == [200] * 50
    assert stub.max_in_flight == 50
    assert stub.in_flight == 0
    assert len(stub.requests) == 50


async def test_handler_can_hold_replies_until_enough_requests_arrived(stub, session):
    async def barrier(req: RecordedRequest) -> reply.Reply:
        await stub.until_requests(20)
        return reply.text(str(req.index))

    stub.handler = barrier
    results = await asyncio.gather(*(post(session, stub, ANTHROPIC, {}) for _ in range(20)))
    assert sorted(json.loads(body)["content"][0]["text"] for _, _, body in results) == sorted(
        str(i) for i in range(20)
    )
    assert stub.max_in_flight == 20


async def test_in_flight_counts_a_pending_request(stub, session):
    release = threading.Event()

    async def held(req: RecordedRequest) -> reply.Reply:
        await asyncio.to_thread(release.wait, 5)
        return reply.text("done")

    stub.handler = held
    pending = asyncio.ensure_future(post(session, stub, OPENAI, {}))
    await stub.until_requests(1)
    assert stub.in_flight == 1
    release.set()
    status, _, _ = await pending
    assert status == 200
    assert stub.in_flight == 0


async def test_reset_clears_requests_queue_and_counters(stub, session):
    stub.enqueue(reply.text("a"), reply.text("b"), reply.text("c"))
    await asyncio.gather(post(session, stub, OPENAI, {}), post(session, stub, OPENAI, {}))
    assert stub.max_in_flight >= 1
    stub.reset()
    assert (stub.requests, stub.max_in_flight, stub.disconnects) == ([], 0, 0)

    status, _, body = await post(session, stub, OPENAI, {})
    assert status == 500
    assert "request #0" in json.loads(body)["error"]
    assert stub.requests[0].index == 0


async def test_until_requests_times_out_with_a_clear_message(stub):
    with pytest.raises(TimeoutError, match=r"expected 2 requests, saw 0 within 0.05s"):
        await stub.until_requests(2, timeout=0.05)
    with pytest.raises(TimeoutError, match=r"expected 1 disconnects, saw 0"):
        await stub.until_disconnects(1, timeout=0.05)


async def test_stop_closes_a_connection_whose_reply_is_still_delayed(session):
    stub = StubLLMServer([reply.text("late").with_delay(60)]).start()
    try:
        pending = asyncio.ensure_future(post(session, stub, OPENAI, {}))
        await stub.until_requests(1)
        started = time.monotonic()
    finally:
        stub.stop()
    assert time.monotonic() - started < 5
    with pytest.raises(aiohttp.ClientError):
        await pending
    assert stub.disconnects == 0


async def test_connections_are_kept_alive_between_requests(stub):
    stub.enqueue(reply.text("one"), reply.text("two"))
    host, port = stub.url.removeprefix("http://").split(":")
    request = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}\r\n"
        "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
    ).encode()

    def two_requests_on_one_socket() -> bytes:
        with socket.create_connection((host, int(port)), timeout=5) as sock:
            sock.sendall(request + request)
            data = b""
            while data.count(b"HTTP/1.1 200") < 2 or not data.endswith(b"}"):
                chunk = sock.recv(65536)
                assert chunk, f"connection closed early: {data!r}"
                data += chunk
        return data

    data = await asyncio.to_thread(two_requests_on_one_socket)
    assert b'"content":"one"' in data
    assert b'"content":"two"' in data


def test_plain_sync_test_with_httpx_client_and_blocking_waits():
    with StubLLMServer() as stub, httpx.Client(base_url=stub.url) as client:
        stub.enqueue(reply.text("sync"))
        worker = threading.Thread(target=client.post, args=(OPENAI,), kwargs={"json": {}})
        worker.start()
        [req] = stub.wait_for_requests(1)
        worker.join(5)
        assert req.style == "openai"
        response = client.post(OPENAI, json={})
        assert response.status_code == 500
        with pytest.raises(TimeoutError, match="expected 3 requests, saw 2"):
            stub.wait_for_requests(3, timeout=0.05)
        with pytest.raises(TimeoutError, match="disconnects"):
            stub.wait_for_disconnects(1, timeout=0.05)


def test_usable_from_repeated_asyncio_run_calls():
    async def ask(stub: StubLLMServer) -> str:
        async with aiohttp.ClientSession() as session:
            _, _, body = await post(session, stub, OPENAI, {})
        await stub.until_requests(1)
        return str(json.loads(body)["choices"][0]["message"]["content"])

    with StubLLMServer([reply.text("first"), reply.text("second")]) as stub:
        assert asyncio.run(ask(stub)) == "first"
        assert asyncio.run(ask(stub)) == "second"


def test_usable_from_a_subprocess():
    code = (
        "import json, sys, urllib.request\n"
        "req = urllib.request.Request(sys.argv[1] + '/v1/messages', data=b'{}', method='POST')\n"
        "print(json.load(urllib.request.urlopen(req))['content'][0]['text'])\n"
    )
    with StubLLMServer([reply.text("from a child")]) as stub:
        done = subprocess.run(
            [sys.executable, "-c", code, stub.url], capture_output=True, text=True, timeout=60
        )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "from a child"


def test_stop_twice_and_url_only_while_running():
    stub = StubLLMServer()
    with pytest.raises(RuntimeError, match="not running"):
        _ = stub.url
    assert stub.start() is stub
    assert stub.start().url.startswith("http://127.0.0.1:")
    stub.stop()
    stub.stop()
    with pytest.raises(RuntimeError, match="not running"):
        _ = stub.url


def test_importing_the_stub_does_not_import_mcp():
    code = "import sys, toolnexus.testing.llm_stub; print('mcp' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


# --- builder validation ---------------------------------------------------------------------------


def test_builders_reject_bad_arguments_with_clear_messages():
    with pytest.raises(ValueError, match="do not join"):
        reply.text("abc", chunks=["a", "b"])
    with pytest.raises(ValueError, match="at least one call"):
        reply.tool_calls()
    with pytest.raises(TypeError, match="not JSON-serializable"):
        reply.call("f", {"x": object()})
    with pytest.raises(ValueError, match="usage"):
        reply.text("x", usage=(1,))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="status"):
        reply.error(42)
    with pytest.raises(ValueError, match="seconds"):
        reply.text("x").with_delay(-1)
    with pytest.raises(ValueError, match="events"):
        reply.text("x").break_after(-1)
    with pytest.raises(TypeError, match="expected a Reply"):
        StubLLMServer(["not a reply"])


def test_replies_are_frozen_and_modifiers_return_new_replies():
    base = reply.text("x")
    changed = base.with_delay(1).break_after(2).with_headers({"A": "b"})
    assert (base.delay, base.broken_after, base.headers) == (0.0, None, ())
    assert (changed.delay, changed.broken_after, changed.headers) == (1.0, 2, (("A", "b"),))
    with pytest.raises(AttributeError):
        base.delay = 3  # type: ignore[misc]
