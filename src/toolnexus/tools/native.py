"""Plain Python functions as tools: ``define_tool`` and the ``@tool`` decorator."""

from __future__ import annotations

import builtins
import dataclasses
import functools
import inspect
import logging
import sys
from collections.abc import Callable
from typing import Any, overload

from .._json import compact_json
from .._redact import redact_exception
from ..types import JSONObject, Tool, ToolContext, ToolResult
from .docstrings import first_line
from .signature import ArgumentError, Signature
from .threads import run_sync_tool

__all__ = ["define_tool", "infer_schema", "to_tool_result", "tool"]

logger = logging.getLogger("toolnexus")


def define_tool(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    input_schema: JSONObject | None = None,
) -> Tool:
    """Turn a function (sync or async) into a ``Tool`` with ``source="native"``.

    The name defaults to the function's name and the description to the first line of its
    docstring. Without ``input_schema`` the schema is inferred from the annotations (through
    pydantic: integers, enums and ``Literal``, item types, nested dataclasses, ``TypedDict``s
    and models, defaults, and per-argument descriptions from ``Annotated[T, "text"]`` or the
    docstring's ``Args:`` section), and the model's arguments are validated and coerced before
    the call: arguments that do not fit give an error result naming each bad field, and the
    function is not called. With an explicit ``input_schema`` the arguments are passed as
    received. A parameter named ``ctx`` receives the ``ToolContext``.
    """
    tool_name = name or str(getattr(fn, "__name__", ""))
    wants_ctx = "ctx" in inspect.signature(fn).parameters
    is_async = inspect.iscoroutinefunction(fn)
    signature = (
        Signature(fn, localns=_only_new_names(_defining_scope(), fn))
        if input_schema is None
        else None
    )

    async def execute(args: JSONObject, ctx: ToolContext | None = None) -> ToolResult:
        if signature is not None:
            try:
                kwargs = signature.validate(args)
            except ArgumentError as exc:
                return ToolResult(f"invalid arguments for {tool_name}: {exc}", is_error=True)
        else:
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
            redact_exception(exc)  # the traceback is logged: no secret in its text
            logger.debug("tool %r raised; the model sees its message", fn.__name__, exc_info=True)
            return ToolResult(str(exc) or type(exc).__name__, is_error=True)
        return to_tool_result(value)

    return Tool(
        name=tool_name,
        description=first_line(inspect.getdoc(fn)) if description is None else description,
        input_schema=signature.schema if signature is not None else input_schema,  # type: ignore[arg-type]
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


def _defining_scope() -> dict[str, Any]:
    """The local names of the code that called ``define_tool``/``@tool`` (the first frame
    outside this module): where a function defined inside another one finds the types it
    imported there, as pydantic resolves forward references in the defining scope."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__") == __name__:
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None or frame.f_code.co_name == "<module>":
        return {}  # module level: the function's own globals are that scope
    return dict(frame.f_locals)


def _only_new_names(localns: dict[str, Any], fn: Callable[..., Any]) -> dict[str, Any]:
    """The names of ``localns`` the function's module and the builtins do not define, so a
    local variable never changes what an annotation resolvable without it means (a local
    ``list = [...]`` leaves ``list[str]`` alone)."""
    known = getattr(fn, "__globals__", {})
    return {k: v for k, v in localns.items() if k not in known and not hasattr(builtins, k)}


def to_tool_result(value: object) -> ToolResult:
    """Map a native return value: ``ToolResult`` as is, ``str`` as output, ``None`` as ``""``,
    a dataclass or pydantic model as its JSON, anything else as compact JSON."""
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, str):
        return ToolResult(value)
    if value is None:
        return ToolResult("")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    elif callable(dump := getattr(value, "model_dump", None)) and not isinstance(value, type):
        value = dump(mode="json")  # a pydantic model
    try:
        return ToolResult(compact_json(value))
    except (TypeError, ValueError):
        return ToolResult(str(value))


def infer_schema(fn: Callable[..., Any]) -> JSONObject:
    """The JSON Schema ``define_tool`` infers for ``fn``'s parameters."""
    return Signature(fn, localns=_only_new_names(_defining_scope(), fn)).schema
