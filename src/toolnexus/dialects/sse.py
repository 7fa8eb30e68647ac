"""Server-sent events: bytes in, one JSON object per event out."""

from __future__ import annotations

import re

from .._json import JSONDepthError, loads
from ..types import JSONObject

__all__ = ["SSEDecoder", "SSEError"]

_EOL = re.compile(rb"\r\n|\r|\n")
_BOM = b"\xef\xbb\xbf"


class SSEError(ValueError):
    """An SSE event whose data is not a JSON object."""


class SSEDecoder:
    """Incremental decoder for ``text/event-stream`` bodies.

    ``feed`` takes raw chunks split anywhere (even inside a UTF-8 sequence or a CRLF) and
    returns the complete events they finish. Multiple ``data:`` lines of one event are joined
    with ``"\\n"``; ``event:``, ``id:``, ``retry:`` and comment lines are ignored. ``data: [DONE]``
    ends the stream: ``done`` becomes true and later input is ignored.

    Linear in the input: each byte is scanned once, and a line that arrives in many chunks is
    joined once, when its end arrives.
    """

    __slots__ = ("_after_cr", "_data", "_events", "_head", "_partial", "done")

    def __init__(self) -> None:
        self._partial: list[bytes] = []
        """Pieces of the current line, whose end has not arrived yet."""
        self._after_cr = False
        """The last line ended with a CR: a LF at the start of the next chunk belongs to it."""
        self._head: bytes | None = b""
        """The first bytes of the body until a byte-order mark can be ruled out (then None)."""
        self._data: list[str] = []
        self._events = 0
        self.done = False

    def feed(self, chunk: bytes) -> list[JSONObject]:
        out: list[JSONObject] = []
        if self.done or not chunk:
            return out
        if self._head is not None:
            chunk = self._head + chunk
            if len(chunk) < len(_BOM) and _BOM.startswith(chunk):
                self._head = chunk
                return out
            self._head = None
            if chunk.startswith(_BOM):
                chunk = chunk[len(_BOM) :]
        pos = 0
        if self._after_cr and chunk.startswith(b"\n"):
            pos = 1
        self._after_cr = False
        if b"\r" not in chunk:  # lines ended by LF alone, as providers send them: one split
            return self._feed_lf(chunk[pos:] if pos else chunk, out)
        size = len(chunk)
        while pos < size and not self.done:
            match = _EOL.search(chunk, pos)
            if match is None:
                self._partial.append(chunk[pos:])
                break
            if self._partial:
                self._partial.append(chunk[pos : match.start()])
                line = b"".join(self._partial)
                self._partial = []
            else:
                line = chunk[pos : match.start()]
            self._after_cr = match.end() == size and match.group() == b"\r"
            pos = match.end()
            self._line(line, out)
        return out

    def _feed_lf(self, chunk: bytes, out: list[JSONObject]) -> list[JSONObject]:
        lines = chunk.split(b"\n")
        tail = lines.pop()  # the start of a line whose end has not arrived (or b"")
        if self._partial and lines:
            self._partial.append(lines[0])
            lines[0] = b"".join(self._partial)
            self._partial = []
        data = self._data
        for line in lines:
            # The two lines of a provider's event, data and blank, without a call each.
            if line.startswith(b"data: "):
                data.append(line[6:].decode("utf-8", errors="replace"))
                continue
            self._line(line, out)
            if self.done:
                return out
            data = self._data
        if tail:
            self._partial.append(tail)
        return out

    def close(self) -> list[JSONObject]:
        """End of body: flush a final event not followed by a blank line."""
        out: list[JSONObject] = []
        if not self.done:
            if self._head:
                self._partial.append(self._head)
                self._head = None
            if self._partial:
                line = b"".join(self._partial)
                self._partial = []
                self._line(line, out)
            self._dispatch(out)
        return out

    def _line(self, raw: bytes, out: list[JSONObject]) -> None:
        if not raw:
            if self._data:
                self._dispatch(out)
            return
        if raw.startswith(b"data:"):  # other fields (event, id, retry) and comments are ignored
            value = raw[6:] if raw.startswith(b"data: ") else raw[5:]
            self._data.append(value.decode("utf-8", errors="replace"))
        elif raw == b"data":
            self._data.append("")

    def _dispatch(self, out: list[JSONObject]) -> None:
        if not self._data:
            return
        data = self._data[0] if len(self._data) == 1 else "\n".join(self._data)
        self._data = []
        self._events += 1
        if len(data) < 64 and data.strip() == "[DONE]":
            self.done = True
            return
        try:
            event = loads(data)
        except JSONDepthError as exc:
            raise SSEError(f"SSE event {self._events}: {exc}") from None
        except ValueError as exc:
            raise SSEError(
                f"SSE event {self._events} is not valid JSON ({exc}): {data[:200]!r}"
            ) from None
        if not isinstance(event, dict):
            raise SSEError(f"SSE event {self._events} is not a JSON object: {data[:200]!r}")
        out.append(event)
