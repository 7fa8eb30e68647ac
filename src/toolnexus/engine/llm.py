"""One logical LLM call: post the body, retry what may be retried, parse the reply.

The JSON and the SSE wire modes both end in the same ``Turn``; the loop never branches on them.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncGenerator, Mapping
from typing import Protocol
from urllib.parse import urlsplit

from .._json import JSONDepthError, loads
from ..dialects import Dialect, MalformedResponse, StreamItem, StreamParser, Turn
from ..dialects.sse import SSEDecoder, SSEError
from ..errors import LLMError, llm_error_for_status
from ..transport.http import BodyTooLarge, NetworkError, StreamResponse, Transport, read_capped
from ..types import JSONObject, Usage
from .retry import RetryPolicy

__all__ = ["ATTEMPT_TIMEOUT", "DEFAULT_MAX_RESPONSE_BYTES", "LLMCaller", "ModelCaller"]

logger = logging.getLogger("toolnexus")

ATTEMPT_TIMEOUT = 120.0
"""Seconds per attempt: the whole response (JSON), or each gap between chunks (streaming)."""
_SNIPPET = 300
DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024 * 1024
"""Largest response body (JSON, or a whole SSE stream) read from a provider."""


class ModelCaller(Protocol):
    """How the loop makes one logical model call: over HTTP (``LLMCaller``) or in-process."""

    def usage_of(self, reply: JSONObject) -> Usage:
        """The usage a raw reply reports (zeros when it cannot be read)."""
        ...

    async def call(self, body: JSONObject, headers: Mapping[str, str], *, turn: int) -> Turn:
        """One call answered whole."""
        ...

    async def call_raw(self, body: JSONObject, headers: Mapping[str, str]) -> JSONObject:
        """One call, returning the raw reply object (``call_provider``)."""
        ...

    def stream(
        self, body: JSONObject, headers: Mapping[str, str], *, turn: int
    ) -> AsyncGenerator[StreamItem | Turn, None]:
        """One streamed call: text deltas and argument pieces, then the assembled ``Turn``."""
        ...


class _Failure(Exception):
    """A non-2xx answer, kept until the retry policy has decided."""

    def __init__(
        self, error: LLMError, retry_after: str | None, retry_delay: float | None = None
    ) -> None:
        super().__init__(str(error))
        self.error = error
        self.retry_after = retry_after
        self.retry_delay = retry_delay
        """Seconds the error body asks to wait (gemini's ``RetryInfo``), when it says."""


class LLMCaller:
    """Posts bodies to one endpoint of one dialect through a transport."""

    def __init__(
        self,
        transport: Transport,
        dialect: Dialect,
        url: str,
        policy: RetryPolicy,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        stream_url: str | None = None,
    ) -> None:
        self.transport = transport
        self.dialect = dialect
        self.url = url
        self.stream_url = stream_url or url
        """Where streamed calls go (gemini streams from another method of the model)."""
        self.policy = policy
        self.max_response_bytes = max_response_bytes
        parts = urlsplit(url)  # logged without its query, which may carry a key
        self._log_url = parts._replace(query="", fragment="").geturl()

    def _log(self, started: float, outcome: object, attempt: int, stream: bool) -> None:
        """DEBUG: one line per HTTP attempt (method, URL, status, duration; no header)."""
        if logger.isEnabledFor(logging.DEBUG):
            ms = (time.perf_counter() - started) * 1000
            mode = " (stream)" if stream else ""
            logger.debug(
                "POST %s%s -> %s in %.0f ms (attempt %d)",
                self._log_url,
                mode,
                outcome,
                ms,
                attempt + 1,
            )

    def _log_retry(self, delay: float, attempt: int) -> None:
        logger.debug("retrying POST %s in %.2f s (attempt %d)", self._log_url, delay, attempt + 2)

    def usage_of(self, reply: JSONObject) -> Usage:
        """The usage a raw reply reports (zeros when it cannot be read)."""
        try:
            return self.dialect.parse_response(reply, turn=0).usage
        except (MalformedResponse, LLMError):  # a reply that reports a failure
            return Usage()

    async def call(self, body: JSONObject, headers: Mapping[str, str], *, turn: int) -> Turn:
        """Send ``body`` (JSON mode) and parse the reply, retrying per the policy."""
        status, text, data = await self._post(body, headers)
        return self._turn(status, text, data, turn)

    async def call_raw(self, body: JSONObject, headers: Mapping[str, str]) -> JSONObject:
        """Send ``body`` and return the reply's JSON object, retrying per the policy."""
        return (await self._post(body, headers))[2]

    async def _post(
        self, body: JSONObject, headers: Mapping[str, str]
    ) -> tuple[int, str, JSONObject]:
        payload = _encode(body)
        attempt = 0
        while True:
            started = time.perf_counter()
            try:
                resp = await self.transport.request(
                    "POST",
                    self.url,
                    headers=headers,
                    body=payload,
                    time_limit=ATTEMPT_TIMEOUT,
                    max_bytes=self.max_response_bytes,
                )
            except BodyTooLarge as exc:
                raise self._too_large(exc.status) from None
            except NetworkError as exc:
                self._log(started, f"network error ({type(exc).__name__})", attempt, False)
                error = self._network_error(exc)
                delay = await self.policy.delay(attempt, status=None, error=error)
                if delay is None:
                    raise error from exc
            else:
                self._log(started, resp.status, attempt, False)
                if 200 <= resp.status < 300:
                    text = resp.text()
                    return resp.status, text, self._json_object(resp.status, text)
                text = resp.text()
                failure = self._failure(resp.status, text, resp.headers)
                delay = await self.policy.delay(
                    attempt,
                    status=resp.status,
                    error=failure.error,
                    retry_after=failure.retry_after,
                    retry_delay=failure.retry_delay,
                )
                if delay is None:
                    raise failure.error
            self._log_retry(delay, attempt)
            await asyncio.sleep(delay)
            attempt += 1

    async def stream(
        self, body: JSONObject, headers: Mapping[str, str], *, turn: int
    ) -> AsyncGenerator[StreamItem | Turn, None]:
        """Send ``body`` in streaming mode: yields text deltas and argument pieces, then the
        assembled ``Turn``.

        Failures before the first event are retried per the policy; after it, they raise.
        """
        payload = _encode(body)
        attempt = 0
        while True:
            started = False
            began = time.perf_counter()
            try:
                async with self.transport.stream(
                    "POST",
                    self.stream_url,
                    headers=headers,
                    body=payload,
                    read_timeout=ATTEMPT_TIMEOUT,
                ) as resp:
                    self._log(began, resp.status, attempt, True)
                    if not 200 <= resp.status < 300:
                        text = (await self._read(resp)).decode("utf-8", "replace")
                        raise self._failure(resp.status, text, resp.headers)
                    if resp.headers.get("Content-Type", "").startswith("application/json"):
                        # A provider that ignored "stream": answer from the JSON body.
                        text = (await self._read(resp)).decode("utf-8", "replace")
                        data = self._json_object(resp.status, text)
                        reply = self._turn(resp.status, text, data, turn)
                        if reply.text:
                            yield reply.text
                        yield reply
                        return
                    decoder = SSEDecoder()
                    parser = self.dialect.stream_parser(turn=turn)
                    received = 0
                    streamed = False
                    async for chunk in resp.chunks():
                        received += len(chunk)
                        if received > self.max_response_bytes:
                            raise self._too_large(resp.status)
                        for event in decoder.feed(chunk):
                            started = True
                            for delta in parser.feed(event):
                                streamed = streamed or isinstance(delta, str)
                                yield delta
                        if decoder.done:
                            break
                    for event in decoder.close():
                        started = True
                        for delta in parser.feed(event):
                            streamed = streamed or isinstance(delta, str)
                            yield delta
                    if not started and not decoder.done:
                        raise NetworkError("the stream ended before its first event")
                    reply = self._finish(parser, resp.status, done=decoder.done)
                    if reply.text and not streamed:
                        yield reply.text  # a text that came in no delta (a refusal)
                    yield reply
                    return
            except SSEError as exc:
                raise LLMError(f"malformed stream from {self.url}: {exc}", status=200) from None
            except MalformedResponse as exc:  # an event the parser cannot take
                raise LLMError(
                    f"malformed {self.dialect.name} stream from {self.url}: {exc}", status=200
                ) from None
            except NetworkError as exc:
                if started:
                    raise LLMError(f"LLM stream from {self.url} broke: {exc}") from exc
                self._log(began, f"network error ({type(exc).__name__})", attempt, True)
                error = self._network_error(exc)
                delay = await self.policy.delay(attempt, status=None, error=error)
                if delay is None:
                    raise error from exc
            except _Failure as failure:
                delay = await self.policy.delay(
                    attempt,
                    status=failure.error.status,
                    error=failure.error,
                    retry_after=failure.retry_after,
                    retry_delay=failure.retry_delay,
                )
                if delay is None:
                    raise failure.error from None
            self._log_retry(delay, attempt)
            await asyncio.sleep(delay)
            attempt += 1

    async def _read(self, resp: StreamResponse) -> bytes:
        """A streamed response's whole body, within ``max_response_bytes``."""
        try:
            return await read_capped(resp.chunks(), self.max_response_bytes, status=resp.status)
        except BodyTooLarge as exc:
            raise self._too_large(exc.status) from None

    def _too_large(self, status: int) -> LLMError:
        return LLMError(
            f"the response from {self.url} (HTTP {status}) is larger than "
            f"max_response_bytes={self.max_response_bytes}; reading stopped there",
            status=status,
        )

    def _finish(self, parser: StreamParser, status: int, *, done: bool) -> Turn:
        try:
            return parser.finish(done=done)
        except MalformedResponse as exc:
            raise LLMError(
                f"malformed {self.dialect.name} stream from {self.url}: {exc}", status=status
            ) from None

    def _json_object(self, status: int, text: str) -> JSONObject:
        try:
            data = loads(text)
        except JSONDepthError as exc:
            raise LLMError(
                f"malformed response from {self.url} (HTTP {status}): {exc}", status=status
            ) from None
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise LLMError(
                f"malformed response from {self.url} (HTTP {status}): not a JSON object: "
                f"{text[:_SNIPPET]!r}",
                status=status,
                body=text,
            )
        return data

    def _turn(self, status: int, text: str, data: JSONObject, turn: int) -> Turn:
        try:
            return self.dialect.parse_response(data, turn=turn)
        except MalformedResponse as exc:
            raise LLMError(
                f"malformed {self.dialect.name} response from {self.url} (HTTP {status}): {exc}",
                status=status,
                body=text,
            ) from None

    def _network_error(self, exc: NetworkError) -> LLMError:
        """The error raised if this network failure is final (``on_error`` sees it too)."""
        error = LLMError(f"LLM request to {self.url} failed: {exc}")
        error.__cause__ = exc
        return error

    def _failure(self, status: int, text: str, headers: Mapping[str, str]) -> _Failure:
        snippet = text[:_SNIPPET] + ("…" if len(text) > _SNIPPET else "")
        error = llm_error_for_status(status, f"HTTP {status} from {self.url}: {snippet}", text)
        retry_delay = getattr(self.dialect, "retry_delay", None)
        return _Failure(
            error, headers.get("Retry-After"), retry_delay(text) if retry_delay else None
        )


def _encode(body: JSONObject) -> bytes:
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
