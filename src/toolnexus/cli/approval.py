"""Asking before a built-in tool changes something (``bash``, ``write``, ``edit``,
``apply_patch``), as a ``before_tool`` hook of the ``run`` command.

In a terminal each call prints ``allow {name} {json}? [y/N/a]`` and reads one line: ``y``
allows this call, ``a`` allows the tool for the rest of the session, anything else refuses it.
Without a terminal the calls are refused unless ``--yes`` (or ``TOOLNEXUS_YES=1``) allowed them
all. A refused call is not run: the model gets an error result saying the user did not allow it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._json import compact_json
from ..types import JSONObject, ToolResult

if TYPE_CHECKING:
    from ..toolkit import Toolkit
    from .console import Console
    from .lines import LineReader

__all__ = ["CHANGING_BUILTINS", "Approval"]

CHANGING_BUILTINS = frozenset({"bash", "write", "edit", "apply_patch"})
"""The built-in tools that change things (run commands, write files)."""


class Approval:
    """The ``before_tool`` hook deciding whether a changing built-in may run.

    ``reader`` is the terminal to ask on (``None``: no terminal, so refuse); ``allow_all`` is
    ``--yes``. ``toolkit`` is set once loaded: only the built-ins themselves are asked about
    (an MCP server's own tool is the server's business).
    """

    def __init__(self, console: Console, reader: LineReader | None, *, allow_all: bool) -> None:
        self._console = console
        self._reader = reader
        self._allow_all = allow_all
        self._allowed: set[str] = set()
        self.toolkit: Toolkit | None = None

    async def __call__(self, call: JSONObject) -> dict[str, Any] | None:
        name = str(call.get("name", ""))
        if self._allow_all or name in self._allowed or not self._asks_about(name):
            return None
        if self._reader is None:
            return _refused(
                f"the user did not allow {name}: toolnexus runs without a terminal to ask in; "
                "run it with --yes (or TOOLNEXUS_YES=1) to allow the tools that change things"
            )
        args = call.get("args")
        shown = compact_json(args if args is not None else {})
        self._console.prompt(f"allow {name} {shown}? [y/N/a] ")
        line = await self._reader.readline()
        self._console.thinking()
        choice = (line or "").strip().lower()
        if choice in ("a", "all", "always"):
            self._allowed.add(name)
            return None
        if choice in ("y", "yes"):
            return None
        return _refused(f"the user did not allow this {name} call")

    def _asks_about(self, name: str) -> bool:
        if name not in CHANGING_BUILTINS:
            return False
        found = self.toolkit.get(name) if self.toolkit is not None else None
        return found is None or found.source == "builtin"


def _refused(message: str) -> dict[str, Any]:
    return {"result": ToolResult(message, is_error=True)}
