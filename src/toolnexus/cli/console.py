"""What the ``run`` command shows: answer text on stdout, tool activity on stderr.

Piped, every activity line is plain text a script can parse (``-> name {json}``,
``<- name ok``/``<- name error``). When stderr is a terminal and ``rich`` is installed, the
same lines are coloured and a spinner runs while the model is thinking; ``rich`` is imported
only then.
"""

from __future__ import annotations

from typing import IO, Any

from .._json import compact_json

__all__ = ["Console", "create_console"]


class Console:
    """Plain output: the format scripts rely on."""

    def __init__(self, out: IO[str], err: IO[str]) -> None:
        self.out = out
        self.err = err
        self._last_char = "\n"
        self._wrote_text = False

    # -- the answer (stdout) ---------------------------------------------------------------
    def text(self, delta: str) -> None:
        """One streamed text delta, written as it arrives."""
        if not delta:
            return
        self.idle()
        self.out.write(delta)
        self.out.flush()
        self._last_char = delta[-1]
        self._wrote_text = True

    def end_answer(self) -> None:
        """End the answer with a newline unless its text already ended with one."""
        self.idle()
        if self._wrote_text and self._last_char != "\n":
            self.out.write("\n")
            self.out.flush()
        self._last_char = "\n"
        self._wrote_text = False

    # -- activity (stderr) -----------------------------------------------------------------
    def tool_call(self, name: str, args: dict[str, Any]) -> None:
        self.line(f"-> {name} {compact_json(args)}")

    def tool_result(self, name: str, is_error: bool) -> None:
        self.line(f"<- {name} {'error' if is_error else 'ok'}")

    def line(self, text: str, style: str | None = None) -> None:
        """One line on stderr."""
        self.idle()
        self.err.write(text + "\n")
        self.err.flush()

    def error(self, message: str) -> None:
        self.line(f"toolnexus: {message}", "bold red")

    def prompt(self, text: str) -> None:
        """A prompt on stderr, without a newline (the user types after it)."""
        self.idle()
        self.err.write(text)
        self.err.flush()

    def thinking(self) -> None:
        """The model is working (a spinner in a terminal; nothing when piped)."""

    def idle(self) -> None:
        """Stop the spinner, if one runs."""


class FancyConsole(Console):
    """A terminal on stderr: coloured activity lines and a spinner while the model thinks."""

    def __init__(self, out: IO[str], err: IO[str], rich_console: Any) -> None:
        super().__init__(out, err)
        self._rich = rich_console
        self._status: Any = None

    def tool_call(self, name: str, args: dict[str, Any]) -> None:
        self._styled([("-> ", "cyan"), (name, "bold cyan"), (" " + compact_json(args), "dim")])

    def tool_result(self, name: str, is_error: bool) -> None:
        word, colour = ("error", "bold red") if is_error else ("ok", "green")
        self._styled([("<- ", "cyan"), (name, "bold cyan"), (" ", ""), (word, colour)])

    def line(self, text: str, style: str | None = None) -> None:
        self._styled([(text, style or "")])

    def thinking(self) -> None:
        if self._status is None:
            self._status = self._rich.status("thinking", spinner="dots")
            self._status.start()

    def idle(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None

    def _styled(self, parts: list[tuple[str, str]]) -> None:
        from rich.text import Text

        self.idle()
        self._rich.print(Text.assemble(*parts), highlight=False, soft_wrap=True)


def create_console(out: IO[str], err: IO[str]) -> Console:
    """``FancyConsole`` when ``err`` is a terminal and ``rich`` is installed, else plain."""
    if not _is_terminal(err):
        return Console(out, err)
    try:
        from rich.console import Console as RichConsole
    except ImportError:
        return Console(out, err)
    return FancyConsole(out, err, RichConsole(file=err, force_terminal=True, highlight=False))


def _is_terminal(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
