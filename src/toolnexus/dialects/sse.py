"""Server-sent events: bytes in, one JSON object per event out."""

from __future__ import annotations

import json
import re

from ..types import JSONObject

__all__ = ["SSEDecoder", "SSEError"]

_EOL = re.compile(rb"\r\n|\r|\n")


class SSEError(ValueError):
    """An SSE event whose data is not a JSON object."""


class SSEDecoder:
    """Incremental decoder for ``text/event-stream`` bodies.

    ``feed`` takes raw chunks split anywhere (even inside a UTF-8 sequence or a CRLF) and
    returns the complete events they finish. Multiple ``data:`` lines of one event are joined
    with ``"\\n"``; ``event:``, ``id:``, ``retry:`` and comment lines are ignored. ``data: [DONE]``
    ends the stream: ``done`` becomes true and later input is ignored.
    """

    __slots__ = ("_buffer", "_data", "_events", "done")

    def __init__(self) -> None:
        self._buffer = b""
        self._data: list[str] = []
        self._events = 0
        self.done = False

    def feed(self, chunk: bytes) -> list[JSONObject]:
        if self.done:
            return []
        buffer = self._buffer + chunk if self._buffer else chunk
        if self._events == 0 and buffer.startswith(b"\xef\xbb\xbf"):
            buffer = buffer[3:]  # a byte-order mark before the first event
        out: list[JSONObject] = []
        pos = 0
        while not self.done:
            match = _EOL.search(buffer, pos)
            if match is None or (match.end() == len(buffer) and match.group() == b"\r"):
                break  # incomplete line, or a CR that may be the first half of CRLF
            self._line(buffer[pos : match.start()], out)
            pos = match.end()
        self._buffer = buffer[pos:]
        return out

    def close(self) -> list[JSONObject]:
        """End of body: flush a final event not followed by a blank line."""
        out: list[JSONObject] = []
        if not self.done:
            if self._buffer:
                self._line(self._buffer.rstrip(b"\r"), out)
                self._buffer = b""
            self._dispatch(out)
        return out

    def _line(self, raw: bytes, out: list[JSONObject]) -> None:
        if not raw:
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
        data = "\n".join(self._data)
        self._data = []
        self._events += 1
        if data.strip() == "[DONE]":
            self.done = True
            return
        try:
            event = json.loads(data)
        except json.JSONDecodeError as exc:
            raise SSEError(
                f"SSE event {self._events} is not valid JSON ({exc}): {data[:200]!r}"
            ) from None
        if not isinstance(event, dict):
            raise SSEError(f"SSE event {self._events} is not a JSON object: {data[:200]!r}")
        out.append(event)
