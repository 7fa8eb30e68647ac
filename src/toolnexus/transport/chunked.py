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
        # The state in locals while the loop runs: a stream of small chunks (an SSE event each)
        # spends more here than in parsing its JSON otherwise (benchmarks/suite.py, streaming).
        left, trailers, done = self._left, self._trailers, self.done
        while pos < size and not done:
            if left > 0:
                end = pos + left if pos + left < size else size
                out.append(data[pos:end])
                left -= end - pos
                pos = end
                if left == 0 and data.startswith(b"\r\n", pos):
                    pos += 2  # the CRLF that ends the chunk's data
                continue
            eol = data.find(b"\r\n", pos)
            if eol < 0:
                if size - pos > 4096:
                    raise ValueError("a chunk size line longer than 4096 bytes")
                self.rest = data[pos:]
                break
            line = data[pos:eol]
            pos = eol + 2
            if trailers:
                done = not line  # trailer fields end with an empty line
            elif line:  # a size line ("" is a chunk's CRLF that came in a later piece)
                left = int(line.partition(b";")[0], 16)
                trailers = left == 0
        self._left, self._trailers, self.done = left, trailers, done
        if done and pos < size:
            self.rest = data[pos:]
        return out
