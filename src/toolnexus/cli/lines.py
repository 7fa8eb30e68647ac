"""Reading stdin a line at a time without blocking the event loop.

Each read runs on its own daemon thread: a read still waiting when the user presses Ctrl-C
never keeps the process alive (the default executor would wait for it at shutdown).

Lines are read as bytes where the stream has them and decoded as UTF-8; bytes that are not
UTF-8 (binary input, another encoding) become ``\\xNN`` escapes, and ``note`` is told so,
instead of the line ending the input or a run failing later on text that cannot be sent.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import IO

from .._text import valid_text

__all__ = ["LineReader"]


class LineReader:
    """``await reader.readline()`` → the next line without its newline, or ``None`` at EOF."""

    def __init__(self, stream: IO[str], *, note: Callable[[str], None] | None = None) -> None:
        self._stream = stream
        self._note = note
        self._eof = False

    async def readline(self) -> str | None:
        if self._eof:
            return None
        loop = asyncio.get_running_loop()
        done: asyncio.Future[str] = loop.create_future()

        def deliver(line: str | BaseException) -> None:
            if done.done():
                return
            if isinstance(line, BaseException):
                done.set_exception(line)
            else:
                done.set_result(line)

        def read() -> None:
            try:
                line: str | BaseException = self._read()
            except (OSError, ValueError) as exc:
                line = exc
            try:
                loop.call_soon_threadsafe(deliver, line)
            except RuntimeError:  # the loop is gone: nobody is waiting any more
                pass

        threading.Thread(target=read, name="toolnexus stdin", daemon=True).start()
        try:
            line = await done
        except (OSError, ValueError):
            line = ""
        if line == "":
            self._eof = True
            return None
        text, invalid = valid_text(line.removesuffix("\n").removesuffix("\r"))
        if invalid and self._note is not None:
            what = "byte that is" if invalid == 1 else "bytes that are"
            self._note(f"note: the input had {invalid} {what} not UTF-8, sent as \\xNN escapes")
        return text

    def _read(self) -> str:
        raw = getattr(self._stream, "buffer", None)
        if raw is None:
            return self._stream.readline()
        data: bytes = raw.readline()
        return data.decode("utf-8", "surrogateescape")
