"""``todowrite``: the model's todo list, rendered back to it (no state is kept)."""

from __future__ import annotations

from ...types import JSONObject, Tool, ToolContext, ToolResult
from ._common import ArgError, BuiltinScope, builtin

__all__ = ["tools"]

_DESCRIPTION = (
    "Write the current todo list. Send the whole list every time: each todo has an id, its "
    "text and whether it is completed. Returns the list as [x]/[ ] lines."
)

_TODO_ITEM: JSONObject = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "text": {"type": "string"},
        "completed": {"type": "boolean"},
    },
    "required": ["id", "text", "completed"],
    "additionalProperties": False,
}


def tools(scope: BuiltinScope) -> list[Tool]:
    """The ``todowrite`` tool (``scope`` is not needed: it touches nothing)."""
    del scope
    properties: JSONObject = {
        "todos": {"type": "array", "items": _TODO_ITEM, "description": "The complete todo list."}
    }
    return [builtin("todowrite", _DESCRIPTION, properties, ["todos"], _todowrite)]


async def _todowrite(args: JSONObject, ctx: ToolContext | None) -> ToolResult:
    todos = _todos(args.get("todos"))
    lines = [f"[{'x' if t['completed'] else ' '}] {t['text']}" for t in todos]
    return ToolResult("\n".join(lines) if lines else "(no todos)", metadata={"todos": todos})


def _todos(value: object) -> list[JSONObject]:
    if value is None:
        raise ArgError("todos is required")
    if not isinstance(value, list):
        raise ArgError("todos must be an array")
    todos: list[JSONObject] = []
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            raise ArgError(f"todos[{i}] must be an object with id, text and completed")
        for key in ("id", "text"):
            if not isinstance(item.get(key), str):
                raise ArgError(f"todos[{i}].{key} must be a string")
        if not isinstance(item.get("completed"), bool):
            raise ArgError(f"todos[{i}].completed must be true or false")
        todos.append({"id": item["id"], "text": item["text"], "completed": item["completed"]})
    return todos
