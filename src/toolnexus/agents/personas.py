"""Personas: an agent whose soul lives in a folder of Markdown files, and its memory tool.

``from_dir(folder)`` makes an agent named after the folder. At the start of every run (a
session) its system prompt is composed from the files present among ``AGENTS.md``,
``SOUL.md``, ``IDENTITY.md``, ``USER.md``, ``TOOLS.md``, ``HEARTBEAT.md`` and ``MEMORY.md``,
in that order, each as a section ``## <filename>``. With ``memory=True`` the agent gets a
``memory`` tool that edits ``MEMORY.md`` (about itself) or ``USER.md`` (about its user) on disk
at once; the running session keeps its prompt, the next one reads the change.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..types import JSONObject, Tool, ToolContext, ToolResult
from .agent import Agent, agent

__all__ = ["PERSONA_FILES", "compose_soul", "from_dir", "memory_tool"]

PERSONA_FILES = (
    "AGENTS.md",
    "SOUL.md",
    "IDENTITY.md",
    "USER.md",
    "TOOLS.md",
    "HEARTBEAT.md",
    "MEMORY.md",
)
MAX_FILE_BYTES = 2_097_152
TRUNCATED_NOTICE = "[truncated: this file is longer than 2097152 bytes]"

_TARGETS = {"self": "MEMORY.md", "user": "USER.md"}


def compose_soul(folder: Path) -> str:
    """The persona's system prompt as the files in ``folder`` say now (files are only read)."""
    sections: list[str] = []
    for name in PERSONA_FILES:
        path = folder / name
        if not path.is_file():
            continue
        with path.open("rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
        text = raw[:MAX_FILE_BYTES].decode("utf-8", "ignore")
        if len(raw) > MAX_FILE_BYTES:
            text = f"{text}\n{TRUNCATED_NOTICE}"
        sections.append(f"## {name}\n\n{text}")
    return "\n\n".join(sections)


def from_dir(folder: str | Path, *, memory: bool = False, **agent_options: Any) -> Agent:
    """An agent named after ``folder`` whose soul is composed from its files at each run.

    ``memory=True`` adds the ``memory`` tool. ``agent_options`` are those of ``agent(...)``
    (``does`` defaults to the persona's name); ``soul`` and ``soul_file`` are not accepted.
    """
    root = Path(folder)
    if not root.is_dir():
        raise ConfigError(f"from_dir: {root} is not a folder")
    for taken in ("soul", "soul_file"):
        if taken in agent_options:
            raise ConfigError(f"from_dir: {taken} comes from the folder's files")
    name = root.resolve().name
    agent_options.setdefault("does", f"the {name} persona")
    uses = dict(agent_options.pop("uses", None) or {})
    if memory:
        uses["tools"] = [*(uses.get("tools") or []), memory_tool(root)]
    persona = agent(name, uses=uses, **agent_options)
    persona.set_soul(lambda: compose_soul(root))
    return persona


def memory_tool(folder: Path) -> Tool:
    """The ``memory`` tool: add, replace or remove a line of ``MEMORY.md`` or ``USER.md``."""
    lock = asyncio.Lock()
    schema: JSONObject = {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["add", "replace", "remove"]},
            "target": {
                "type": "string",
                "enum": ["self", "user"],
                "description": "self: what you keep about yourself; user: about your user.",
            },
            "text": {"type": "string", "description": "The note (or the one to change)."},
            "with": {"type": "string", "description": "For replace: the new text."},
        },
        "required": ["action"],
    }

    async def execute(args: JSONObject, ctx: ToolContext | None = None) -> ToolResult:
        action, target = args.get("action"), args.get("target", "self")
        text, new = args.get("text"), args.get("with")
        if action not in ("add", "replace", "remove"):
            return ToolResult("memory: action must be add, replace or remove", is_error=True)
        if target not in _TARGETS:
            return ToolResult("memory: target must be self or user", is_error=True)
        if not isinstance(text, str) or not text:
            return ToolResult(f"memory: {action} needs 'text'", is_error=True)
        if action == "replace" and not isinstance(new, str):
            return ToolResult("memory: replace needs 'with'", is_error=True)
        path = folder / _TARGETS[target]
        async with lock:
            return await asyncio.to_thread(_edit, path, action, text, new)

    return Tool(
        "memory",
        "Keep notes across sessions: add, replace or remove a line of your memory "
        "(target self) or of what you know about your user (target user). Changes apply "
        "from the next session on.",
        schema,
        "agent",
        execute,
    )


def _edit(path: Path, action: str, text: str, new: object) -> ToolResult:
    current = path.read_text(encoding="utf-8") if path.is_file() else ""
    if action == "add":
        updated = current + ("" if not current or current.endswith("\n") else "\n") + text + "\n"
    elif text not in current:
        return ToolResult(f"memory: {text!r} is not in {path.name}", is_error=True)
    elif action == "replace":
        updated = current.replace(text, str(new), 1)
    else:
        lines = current.split("\n")
        if text in lines:  # a whole note: drop its line
            lines.remove(text)
            updated = "\n".join(lines)
        else:
            updated = current.replace(text, "", 1)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(updated, encoding="utf-8")
    tmp.replace(path)
    return ToolResult(f"memory: {action} done in {path.name}")
