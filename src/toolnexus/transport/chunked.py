"""``Transfer-Encoding: chunked``, decoded from pieces split anywhere."""

from __future__ import annotations

__all__ = ["Dechunker"]


class Dechunker:
    """Decodes ``Transfer-Encoding: chunked`` from pieces split anywhere."""

    __slots__ = ("_left", "_trailers", "done", "rest")

    def __init__(self) -> None:
        self.rest = b""
        """Bytes not decoded yet: a partial size line, or a partial CRLF after a chunk."""
        self._left = 0
        """Bytes of the current chunk still to come."""
        self._trailers = False
        self.done = False

    def feed(self, data: bytes) -> list[bytes]:
        """The chunk data ``data`` completes or continues; ``done`` once the last chunk and
        its trailers are in (bytes past them are left in ``rest``)."""
        out: list[bytes] = []
        if self.rest:
            data, self.rest = self.rest + data, b""
        pos, size = 0, len(data)
        while pos < size and not self.done:
            if self._left > 0:
                end = min(size, pos + self._left)
                out.append(data[pos:end])
                self._left -= end - pos
                pos = end
                continue
            eol = data.find(b"\r\n", pos)
            if eol < 0:
                if size - pos > 4096:
                    raise ValueError("a chunk size line longer than 4096 bytes")
                self.rest = data[pos:]
                break
            line = data[pos:eol]
            pos = eol + 2
            if self._trailers:
                self.done = not line  # trailer fields end with an empty line
            elif line:  # a size line ("" is the CRLF that ends a chunk's data)
                self._left = int(line.split(b";", 1)[0].strip(), 16)
                self._trailers = self._left == 0
        if self.done and pos < size:
            self.rest = data[pos:]
        return out
