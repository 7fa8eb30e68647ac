"""Plain Python functions as tools: ``define_tool`` and the ``@tool`` decorator."""

from __future__ import annotations

import functools
import inspect
import types
import typing
from collections.abc import Callable
from typing import Any, overload

from .._json import compact_json
from ..types import JSONObject, Tool, ToolContext, ToolResult
from .threads import run_sync_tool

__all__ = ["define_tool", "infer_schema", "to_tool_result", "tool"]

_SKIPPED = frozenset({"self", "cls", "ctx"})
_SCALARS: dict[Any, JSONObject] = {
    str: {"type": "string"},
    int: {"type": "number"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
}
_ARRAYS = (list, tuple, set, frozenset)


def define_tool(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    input_schema: JSONObject | None = None,
) -> Tool:
    """Turn a function (sync or async) into a ``Tool`` with ``source="native"``.

    The name defaults to the function's name, the description to the first line of its
    docstring, and the schema is inferred from its annotations. The model's arguments are
    passed as keyword arguments; a parameter named ``ctx`` receives the ``ToolContext``.
    """
    wants_ctx = "ctx" in inspect.signature(fn).parameters
    is_async = inspect.iscoroutinefunction(fn)

    tool_name = name or fn.__name__

    async def execute(args: JSONObject, ctx: ToolContext | None = None) -> ToolResult:
        kwargs = dict(args)
        if wants_ctx:
            kwargs["ctx"] = ctx
        try:
            if is_async:
                value = await fn(**kwargs)
            else:
                value = await run_sync_tool(tool_name, functools.partial(fn, **kwargs))
                if inspect.isawaitable(value):
                    value = await value
        except Exception as exc:
            return ToolResult(str(exc) or type(exc).__name__, is_error=True)
        return to_tool_result(value)

    return Tool(
        name=name or fn.__name__,
        description=_first_doc_line(fn) if description is None else description,
        input_schema=infer_schema(fn) if input_schema is None else input_schema,
        source="native",
        execute=execute,
    )


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...
@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    input_schema: JSONObject | None = None,
) -> Callable[[Callable[..., Any]], Tool]: ...
def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    input_schema: JSONObject | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Decorator form of ``define_tool``: ``@tool`` or ``@tool(name=...)``; yields a ``Tool``."""
    if fn is not None:
        return define_tool(fn)

    def decorate(f: Callable[..., Any]) -> Tool:
        return define_tool(f, name=name, description=description, input_schema=input_schema)

    return decorate


def to_tool_result(value: object) -> ToolResult:
    """Map a native return value: ``ToolResult`` as is, ``str`` as output, ``None`` as ``""``,
    anything else as compact JSON."""
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, str):
        return ToolResult(value)
    if value is None:
        return ToolResult("")
    try:
        return ToolResult(compact_json(value))
    except (TypeError, ValueError):
        return ToolResult(str(value))


def infer_schema(fn: Callable[..., Any]) -> JSONObject:
    """A JSON Schema for ``fn``'s parameters, from its annotations."""
    hints = _type_hints(fn)
    properties: JSONObject = {}
    required: list[str] = []
    for param in inspect.signature(fn).parameters.values():
        if param.name in _SKIPPED or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        annotation = hints.get(param.name, param.annotation)
        properties[param.name] = _schema_for(annotation)
        if param.default is param.empty:
            required.append(param.name)
    schema: JSONObject = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    return schema


def _type_hints(fn: Callable[..., Any]) -> dict[str, Any]:
    """Resolved annotations; when one cannot be resolved, the others still are."""
    try:
        return typing.get_type_hints(fn)
    except Exception:
        pass
    hints: dict[str, Any] = {}
    namespace = getattr(fn, "__globals__", {})
    for name, annotation in getattr(fn, "__annotations__", {}).items():
        if isinstance(annotation, str):
            try:
                annotation = eval(annotation, namespace)  # what get_type_hints does per name
            except Exception:
                continue
        hints[name] = annotation
    return hints


def _schema_for(annotation: Any) -> JSONObject:
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType:
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _schema_for(members[0]) if len(members) == 1 else {}
    if origin is typing.Annotated:
        return _schema_for(typing.get_args(annotation)[0])
    base = origin or annotation
    if base in _SCALARS:
        return dict(_SCALARS[base])
    if isinstance(base, type):
        if issubclass(base, _ARRAYS):
            return {"type": "array"}
        if issubclass(base, dict):
            return {"type": "object"}
    return {}


def _first_doc_line(fn: Callable[..., Any]) -> str:
    for line in (inspect.getdoc(fn) or "").splitlines():
        if line.strip():
            return line.strip()
    return ""
