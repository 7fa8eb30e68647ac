"""``StubLLMServer``: a scripted OpenAI/Anthropic/Gemini-compatible HTTP server for tests.

The server runs ``aiohttp.web`` on its own thread with its own event loop, so the same object
serves sync tests, async tests, code that calls ``asyncio.run`` and subprocesses given its
``url``. Each request is recorded, then answered with the next scripted ``Reply`` (or with what
``handler`` returns, when one is set), rendered for the request's style and mode as described in
``toolnexus.testing.reply``::

    from toolnexus.testing import StubLLMServer, reply

    with StubLLMServer([reply.tool_calls(reply.call("add", {"a": 1})), reply.text("2")]) as stub:
        ...  # point a client at stub.url
        assert stub.requests[0].json["model"] == "m"

Answers the server makes up itself (all JSON ``{"error": "StubLLMServer: ..."}``, recorded like
any request): 404 for a path that ends in none of ``/chat/completions``, ``/messages``,
``/responses``, ``:generateContent`` and ``:streamGenerateContent`` (no reply is consumed);
500 when no reply is scripted, when the handler raises or returns something other than a
``Reply``, or when rendering fails; 503 while the server is stopping.

``assert_consumed()`` at the end of a test checks the script was played exactly: every scripted
reply was taken and no request found the script empty.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import threading
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from .recorded import RecordedRequest, read_request
from .reply import Reply, _error_wire, _Message, _render, _Wire

__all__ = ["RecordedRequest", "StubLLMServer"]

log = logging.getLogger("toolnexus.testing")

Handler = Callable[["RecordedRequest"], Reply | Awaitable[Reply]]


@dataclass
class _Exchange:
    generation: int
    record: RecordedRequest | None = None
    done: bool = False
    """The reply is complete (or the server itself closed the connection)."""
    counted: bool = True
    """Still counted in ``in_flight``."""


@dataclass
class _Waiter:
    loop: asyncio.AbstractEventLoop
    wake: asyncio.Event = field(default_factory=asyncio.Event)


class StubLLMServer:
    """A real HTTP server on ``127.0.0.1`` that plays scripted LLM replies and records requests.

    Replies are taken first-in first-out from the script (``replies`` and ``enqueue``); when
    ``handler`` is set it is called instead, with the ``RecordedRequest``, on the server's loop
    (it may be sync or async). Counters and lists are safe to read from any thread.
    """

    def __init__(
        self,
        replies: Iterable[Reply] = (),
        *,
        handler: Handler | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self._queue: deque[Reply] = deque()
        self.handler: Handler | None = handler
        """Called for every request when set, instead of taking the next scripted reply."""
        self._host = host
        self._port = port
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._requests: list[RecordedRequest] = []
        self._in_flight = 0
        self._max_in_flight = 0
        self._disconnects = 0
        self._unscripted: list[int] = []
        self._calls_sent = 0
        self._generation = 0
        self._waiters: list[_Waiter] = []
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._url: str | None = None
        self._stopping = False
        self._tasks: set[asyncio.Task[Any]] = set()
        self.enqueue(*replies)

    # --- lifecycle ----------------------------------------------------------------------

    def start(self) -> StubLLMServer:
        """Start listening (no-op when running); returns the server."""
        if self._thread is not None:
            return self
        loop = asyncio.new_event_loop()
        thread = threading.Thread(
            target=self._run_loop, args=(loop,), name="StubLLMServer", daemon=True
        )
        self._stopping = False
        thread.start()
        try:
            future = asyncio.run_coroutine_threadsafe(self._listen(), loop)
            port = future.result(timeout=30)
        except BaseException as exc:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=30)
            raise RuntimeError(
                f"StubLLMServer could not listen on {self._host}:{self._port}: {exc!r}"
            ) from exc
        self._thread, self._loop = thread, loop
        self._url = f"http://{self._host}:{port}"
        return self

    def stop(self) -> None:
        """Close every connection, stop the server and join its thread (idempotent)."""
        thread, loop = self._thread, self._loop
        if thread is None or loop is None:
            return
        if threading.current_thread() is thread:
            raise RuntimeError("StubLLMServer.stop() cannot be called from its own handler")
        try:
            asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(timeout=30)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=30)
            self._thread = self._loop = self._url = None

    def __enter__(self) -> StubLLMServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    async def __aenter__(self) -> StubLLMServer:
        return self.start()

    async def __aexit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """The base URL to give a client, ``http://127.0.0.1:<port>``."""
        if self._url is None:
            raise RuntimeError("StubLLMServer is not running: call start() or use `with` first")
        return self._url

    # --- script and observations --------------------------------------------------------

    def enqueue(self, *replies: Reply) -> None:
        """Append replies to the script (first in, first out)."""
        for item in replies:
            if not isinstance(item, Reply):
                raise TypeError(f"StubLLMServer.enqueue: expected a Reply, got {item!r}")
        with self._lock:
            self._queue.extend(replies)

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of the recorded requests, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def in_flight(self) -> int:
        """Requests being handled right now."""
        with self._lock:
            return self._in_flight

    @property
    def max_in_flight(self) -> int:
        """The peak of ``in_flight`` since start or ``reset``."""
        with self._lock:
            return self._max_in_flight

    @property
    def disconnects(self) -> int:
        """Requests whose client closed the connection before the reply was complete."""
        with self._lock:
            return self._disconnects

    def assert_consumed(self) -> None:
        """Raise ``AssertionError`` unless the script was played exactly.

        Fails when scripted replies are left over (the code under test made fewer requests than
        the test expected) or when a request found no reply scripted (it made more).
        """
        with self._lock:
            left, unscripted = list(self._queue), list(self._unscripted)
        problems = []
        if left:
            kinds = ", ".join(type(r.content).__name__.strip("_").lower() for r in left)
            problems.append(f"{len(left)} scripted replies left ({kinds})")
        if unscripted:
            numbers = ", ".join(f"#{i}" for i in unscripted)
            problems.append(f"request {numbers} found no reply scripted")
        if problems:
            raise AssertionError("StubLLMServer: " + "; ".join(problems))

    def reset(self) -> None:
        """Forget recorded requests, scripted replies and counters, the tool-call id count
        included (``handler`` is kept)."""
        with self._lock:
            self._requests.clear()
            self._queue.clear()
            self._unscripted.clear()
            self._disconnects = 0
            self._calls_sent = 0
            self._max_in_flight = self._in_flight
            self._generation += 1
            self._notify_locked()

    def wait_for_requests(self, n: int, timeout: float = 5.0) -> list[RecordedRequest]:
        """Block until ``n`` requests are recorded; returns all of them (``TimeoutError``).

        From async code use ``until_requests``; a blocking wait would stall the caller's loop.
        """
        self._wait(lambda: len(self._requests) >= n, timeout, lambda: self._describe("requests", n))
        return self.requests

    async def until_requests(
        self,
        n: int,
        timeout: float = 5.0,  # noqa: ASYNC109 (part of the public API)
    ) -> list[RecordedRequest]:
        """Wait (without blocking the loop) until ``n`` requests are recorded; returns them all.

        Also usable inside an async ``handler`` as a barrier: ``await stub.until_requests(k)``
        holds every reply until ``k`` requests are in.
        """
        await self._until(
            lambda: len(self._requests) >= n, timeout, lambda: self._describe("requests", n)
        )
        return self.requests

    def wait_for_disconnects(self, n: int, timeout: float = 5.0) -> None:
        """Block until ``n`` client disconnects are recorded (``TimeoutError``)."""
        self._wait(
            lambda: self._disconnects >= n, timeout, lambda: self._describe("disconnects", n)
        )

    async def until_disconnects(
        self,
        n: int,
        timeout: float = 5.0,  # noqa: ASYNC109 (part of the public API)
    ) -> None:
        """Wait (without blocking the loop) until ``n`` client disconnects are recorded."""
        await self._until(
            lambda: self._disconnects >= n, timeout, lambda: self._describe("disconnects", n)
        )

    def _describe(self, what: str, n: int) -> str:
        seen = len(self._requests) if what == "requests" else self._disconnects
        return f"StubLLMServer: expected {n} {what}, saw {seen}"

    def _wait(self, ready: Callable[[], bool], timeout: float, why: Callable[[], str]) -> None:
        if self._thread is not None and threading.current_thread() is self._thread:
            raise RuntimeError("StubLLMServer: cannot block on the server's own thread")
        with self._changed:
            if not self._changed.wait_for(ready, timeout):
                raise TimeoutError(f"{why()} within {timeout}s")

    async def _until(self, ready: Callable[[], bool], limit: float, why: Callable[[], str]) -> None:
        waiter = _Waiter(asyncio.get_running_loop())
        with self._lock:
            self._waiters.append(waiter)
        try:
            async with asyncio.timeout(limit):
                while True:
                    with self._lock:
                        if ready():
                            return
                        waiter.wake.clear()
                    await waiter.wake.wait()
        except TimeoutError:
            with self._lock:
                message = why()
            raise TimeoutError(f"{message} within {limit}s") from None
        finally:
            with self._lock:
                self._waiters.remove(waiter)

    def _notify_locked(self) -> None:
        self._changed.notify_all()
        for waiter in self._waiters:
            with contextlib.suppress(RuntimeError):  # the waiter's loop is closed
                waiter.loop.call_soon_threadsafe(waiter.wake.set)

    # --- server thread ------------------------------------------------------------------

    @staticmethod
    def _run_loop(loop: asyncio.AbstractEventLoop) -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
            loop.close()

    async def _listen(self) -> int:
        app = web.Application(client_max_size=256 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        runner = web.AppRunner(
            app, handler_cancellation=True, access_log=None, shutdown_timeout=2.0
        )
        await runner.setup()
        try:
            site = web.TCPSite(runner, self._host, self._port, backlog=2048)
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        port: int = runner.addresses[0][1]
        return port

    async def _shutdown(self) -> None:
        self._stopping = True
        current = asyncio.current_task()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        leftovers = [t for t in asyncio.all_tasks() if t is not current]
        for task in leftovers:
            task.cancel()
        await asyncio.gather(*leftovers, return_exceptions=True)

    # --- one request --------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        with self._lock:
            exchange = _Exchange(self._generation)
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)
        try:
            if self._stopping:
                return await self._send(request, exchange, _error_wire(503, "stopping"))
            return await self._exchange(request, exchange)
        except asyncio.CancelledError:
            self._leave(exchange)
            if not self._stopping:
                self._mark_disconnected(exchange)
            raise
        finally:
            self._leave(exchange)
            self._tasks.discard(task)

    def _leave(self, exchange: _Exchange) -> None:
        """Stop counting ``exchange`` in flight: done before its last bytes are written, so a
        client that has read a complete reply never sees it still counted."""
        if exchange.counted:
            exchange.counted = False
            with self._lock:
                self._in_flight -= 1
                self._notify_locked()

    async def _exchange(self, request: web.Request, exchange: _Exchange) -> web.StreamResponse:
        record = await self._record(request, exchange)
        if record.style is None:
            message = (
                f"no route for {record.method} {record.path}: expected a path ending in "
                "/chat/completions (openai), /messages (anthropic), /responses (responses) or "
                ":generateContent / :streamGenerateContent (gemini)"
            )
            return await self._send(request, exchange, _error_wire(404, message))
        chosen = await self._choose(record)
        if isinstance(chosen, str):
            return await self._send(request, exchange, _error_wire(500, chosen))
        model = record.json.get("model") if isinstance(record.json, dict) else None
        if record.style == "gemini":  # .../models/<model>:generateContent
            model = record.path.rpartition("/")[2].partition(":")[0] or None
        model = "stub-model" if model is None else model
        calls = chosen.content.calls if isinstance(chosen.content, _Message) else ()
        with self._lock:  # default tool-call ids never repeat within this server's life
            ids_from, self._calls_sent = self._calls_sent, self._calls_sent + len(calls)
        try:
            wire = _render(
                chosen,
                style=record.style,
                stream=record.stream,
                model=model,
                n=record.index,
                ids_from=ids_from,
            )
        except Exception as exc:
            log.exception("StubLLMServer: could not render the reply for request #%d", record.index)
            message = f"could not render the reply for request #{record.index}: {exc!r}"
            return await self._send(request, exchange, _error_wire(500, message))
        if chosen.delay:
            await asyncio.sleep(chosen.delay)
        return await self._send(request, exchange, wire, chosen.broken_after)

    async def _record(self, request: web.Request, exchange: _Exchange) -> RecordedRequest:
        record = await read_request(request)
        with self._lock:
            record.index = len(self._requests)
            self._requests.append(record)
            exchange.record = record
            exchange.generation = self._generation
            self._notify_locked()
        return record

    async def _choose(self, record: RecordedRequest) -> Reply | str:
        """The reply for ``record``, or the text of a 500 answer."""
        handler = self.handler
        if handler is None:
            with self._lock:
                if self._queue:
                    return self._queue.popleft()
                self._unscripted.append(record.index)
            return f"no reply scripted for request #{record.index}"
        try:
            result = handler(record)
            if inspect.isawaitable(result):
                result = await result
        except Exception as exc:
            return f"handler raised {type(exc).__name__}: {exc}"
        if not isinstance(result, Reply):
            return f"handler returned {result!r} for request #{record.index}, expected a Reply"
        return result

    async def _send(
        self,
        request: web.Request,
        exchange: _Exchange,
        wire: _Wire | None,
        broken_after: int | None = None,
    ) -> web.StreamResponse:
        """Write the reply; ``wire=None`` closes the connection without one."""
        if wire is None:
            return self._hang_up(request, exchange, web.StreamResponse())
        response = web.StreamResponse(status=wire.status, headers=wire.headers)
        if wire.events is None:
            parts = [wire.body] if broken_after is None else [wire.body[: len(wire.body) // 2]]
            response.content_length = len(wire.body)
        else:
            parts = list(wire.events[:broken_after])
        try:
            await response.prepare(request)
            for i, part in enumerate(parts):
                if broken_after is None and i == len(parts) - 1:
                    self._leave(exchange)
                await response.write(part)
            if broken_after is not None:
                return self._hang_up(request, exchange, response)
            self._leave(exchange)
            await response.write_eof()
        except ConnectionError:
            self._leave(exchange)
            self._mark_disconnected(exchange)
            return response
        exchange.done = True
        return response

    def _hang_up(
        self, request: web.Request, exchange: _Exchange, response: web.StreamResponse
    ) -> web.StreamResponse:
        self._leave(exchange)
        exchange.done = True
        request.protocol.force_close()  # flushes what was written, then closes
        return response

    def _mark_disconnected(self, exchange: _Exchange) -> None:
        if exchange.done:
            return
        exchange.done = True
        record = exchange.record
        if record is None:
            return
        with self._lock:
            record.disconnected = True
            if exchange.generation == self._generation:
                self._disconnects += 1
            self._notify_locked()
