"""The framing of one HTTP/1.1 response, read by ``httptools`` (llhttp, the parser of Node.js).

``ResponseFrame`` is fed the bytes of a connection as they arrive, split anywhere, and keeps
what llhttp makes of them: the status, the headers, the body's pieces, whether the response is
complete, and whether the connection may carry another request afterwards. llhttp runs strict:
conflicting or malformed ``Content-Length``, ``Transfer-Encoding`` together with
``Content-Length``, bad chunk sizes, head lines without ``:``, bare CR or LF line ends and
obsolete line folding are all refused (RFC 9112 §§2.2, 5, 6.3, 7.1), as is a head longer than
``HEAD_LIMIT`` bytes or a transfer coding other than ``chunked``. A refusal is a
``FramingError``; the connection it came on must be closed, never reused.

A connection is reused only when its response was read to its exact end: a byte that follows
the end (a second response, or anything else) marks the frame ``trailing`` and the
connection is not kept (blank lines between responses, which RFC 9112 §2.2 lets a reader skip,
are the one thing llhttp consumes silently).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["HEAD_LIMIT", "FramingError", "ResponseFrame"]

HEAD_LIMIT = 64 * 1024
"""Most bytes of a response head (status line and header fields) accepted."""
_NO_BODY = frozenset({204, 304})


class FramingError(ValueError):
    """The bytes are not a well-framed HTTP/1.1 response; the connection must be closed."""

    def __init__(self, message: str, *, in_head: bool) -> None:
        super().__init__(message)
        self.in_head = in_head
        """Whether the fault is in the status line or headers (else in the body's framing)."""


class _Stop(Exception):
    """Raised from a callback to stop llhttp where it is (nothing further is parsed)."""


class ResponseFrame:
    """One response's framing, fed as the bytes arrive (see the module docstring).

    ``status`` and ``headers`` are set once ``head_done``; ``body`` collects the body's pieces
    (``take()`` empties it); ``complete`` once the body ended, when ``keep_alive`` says whether
    the connection may serve another request. Interim ``1xx`` answers are skipped.
    """

    __slots__ = (
        "_fed",
        "_head_size",
        "_method",
        "_names",
        "_parser",
        "_values",
        "body",
        "buffered",
        "complete",
        "head_done",
        "headers",
        "keep_alive",
        "status",
        "trailing",
        "until_close",
    )

    def __init__(self, method: str = "GET") -> None:
        import httptools  # imported on first use, so ``import toolnexus`` stays fast

        self._method = method
        self._parser: Any = httptools.HttpResponseParser(self)
        self._names: list[bytes] = []
        self._values: list[bytes] = []
        self._head_size = 0
        self._fed = 0
        """Bytes fed while the head was not done yet."""
        self.status = 0
        self.headers: Mapping[str, str] = {}
        self.head_done = False
        self.complete = False
        self.keep_alive = False
        self.trailing = False
        """Bytes came after the end of the response."""
        self.until_close = False
        """The body has neither a length nor chunks: it ends when the server closes."""
        self.body: list[bytes] = []
        self.buffered = 0
        """Bytes in ``body``."""

    # -- feeding ---------------------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        """Parse ``data``, the next bytes of the connection. Raises ``FramingError``."""
        if self.complete:
            if data:
                self.trailing = True
                self.keep_alive = False
            return
        try:
            self._parser.feed_data(data)
        except Exception as exc:  # sorted out by _stopped
            self._stopped(exc)
        if not self.head_done:
            self._fed += len(data)
            if self._fed > HEAD_LIMIT:
                raise self._fault(f"the response head is longer than {HEAD_LIMIT} bytes")

    def _stopped(self, exc: Exception) -> None:
        """llhttp stopped at ``exc``: raise it as a ``FramingError``, unless one of our
        callbacks stopped it on purpose or the response was complete before the fault."""
        import httptools

        if isinstance(exc, httptools.HttpParserUpgrade):
            raise self._fault("the server switched protocols unasked") from None
        if isinstance(exc, httptools.HttpParserCallbackError):
            cause = exc.__context__
            if isinstance(cause, FramingError):
                raise cause from None
            if isinstance(cause, _Stop):
                return
            raise exc
        if not isinstance(exc, httptools.HttpParserError):
            raise exc
        if self.complete:  # what follows the end (after a ``Connection: close``, say)
            self.trailing = True
            self.keep_alive = False
            return
        raise self._fault(str(exc) or type(exc).__name__) from None

    def end_of_input(self) -> None:
        """The server closed the connection: the end of a body read until then, else an error
        (``FramingError`` naming what was cut short) unless the response was complete."""
        if self.complete:
            return
        if self.head_done and self.until_close:
            self.complete = True
            self.keep_alive = False
            return
        raise FramingError(
            "the server closed the connection before the response was complete",
            in_head=not self.head_done,
        )

    def take(self) -> bytes:
        """The body's bytes received and not taken yet."""
        body = self.body
        data = body[0] if len(body) == 1 else b"".join(body)
        body.clear()
        self.buffered = 0
        return data

    def _fault(self, reason: str) -> FramingError:
        where = "head" if not self.head_done else "body"
        self.keep_alive = False
        return FramingError(f"malformed response {where}: {reason}", in_head=not self.head_done)

    # -- llhttp callbacks ------------------------------------------------------------------

    def on_message_begin(self) -> None:
        if self.complete:  # a second message after the end of this one
            self.trailing = True
            self.keep_alive = False
            raise _Stop

    def on_status(self, status: bytes) -> None:
        self._grow(len(status) + 16)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._grow(len(name) + len(value) + 4)
        self._names.append(name)
        self._values.append(value)

    def on_headers_complete(self) -> None:
        status = self._parser.get_status_code()
        if 100 <= status < 200:  # an interim answer: the real one follows
            self._names.clear()
            self._values.clear()
            return
        from multidict import CIMultiDict, CIMultiDictProxy

        headers = CIMultiDict(
            zip(
                [name.decode("latin-1") for name in self._names],
                [value.decode("latin-1") for value in self._values],
                strict=True,
            )
        )
        self.status = status
        self.headers = CIMultiDictProxy(headers)
        self.head_done = True
        codings = headers.getall("Transfer-Encoding", ())
        if codings:
            listed = [c.strip().lower() for value in codings for c in value.split(",")]
            if listed != ["chunked"]:
                raise FramingError(
                    f"malformed response head: unsupported Transfer-Encoding "
                    f"{', '.join(codings)[:80]!r} (only 'chunked' is understood)",
                    in_head=True,
                )
        elif "Content-Length" not in headers and status not in _NO_BODY:
            self.until_close = self._method != "HEAD"
        if self._method == "HEAD":  # no body follows, whatever the headers say
            self.complete = True
            self.keep_alive = False  # llhttp would wait for a body: do not guess where it ends
            raise _Stop

    def on_body(self, data: bytes) -> None:
        self.body.append(data)
        self.buffered += len(data)

    def on_message_complete(self) -> None:
        if not self.head_done:  # the end of an interim answer
            return
        self.keep_alive = self._parser.should_keep_alive() and not self.until_close
        self.complete = True

    def _grow(self, size: int) -> None:
        self._head_size += size
        if self._head_size > HEAD_LIMIT:
            raise self._fault(f"the response head is longer than {HEAD_LIMIT} bytes")
