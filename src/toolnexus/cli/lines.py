"""Reading stdin a line at a time without blocking the event loop.

Each read runs on its own daemon thread: a read still waiting when the user presses Ctrl-C
never keeps the process alive (the default executor would wait for it at shutdown).
"""

from __future__ import annotations

import asyncio
import threading
from typing import IO

__all__ = ["LineReader"]


class LineReader:
    """``await reader.readline()`` → the next line without its newline, or ``None`` at EOF."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
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
                line: str | BaseException = self._stream.readline()
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
        return line.removesuffix("\n").removesuffix("\r")
