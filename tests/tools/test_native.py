"""Native tools: schema inference, execution and result mapping.

This module deliberately has no ``from __future__ import annotations``, so the tools below
carry real annotation objects; string annotations are covered by compiling a source text with
that future import.
"""

import __future__

import asyncio
import threading
import typing
from typing import Any, Optional, Union

import pytest

from toolnexus import Tool, ToolContext, ToolResult, define_tool, tool


@tool
def add(a: int, b: float, label: str = "x") -> str:
    """Add two numbers.

    More.
    """
    return f"{label}={a + b}"


def test_decorator_infers_name_description_and_schema() -> None:
    assert isinstance(add, Tool)
    assert add.name == "add"
    assert add.description == "Add two numbers."
    assert add.source == "native"
    assert add.input_schema == {
        "type": "object",
        "properties": {
            "a": {"type": "number"},
            "b": {"type": "number"},
            "label": {"type": "string"},
        },
        "required": ["a", "b"],
        "additionalProperties": False,
    }
    assert list(add.input_schema["properties"]) == ["a", "b", "label"]  # signature order


async def test_decorated_tool_executes_with_keyword_arguments() -> None:
    assert await add.execute({"b": 2.5, "a": 1}, None) == ToolResult("x=3.5")


class Point:
    pass


def _every_type(  # type: ignore[no-untyped-def]
    s: str,
    i: int,
    f: float,
    b: bool,
    bare_list: list,  # type: ignore[type-arg]
    strings: list[str],
    old_list: typing.List[int],  # noqa: UP006
    bare_tuple: tuple,  # type: ignore[type-arg]
    pair: tuple[int, str],
    numbers: set[int],
    bare_dict: dict,  # type: ignore[type-arg]
    counts: dict[str, int],
    old_dict: typing.Dict[str, Any],  # noqa: UP006
    maybe: Optional[int],  # noqa: UP045
    maybe_list: list[str] | None,
    either: Union[int, str],  # noqa: UP007
    anything: Any,
    point: Point,
    literal: typing.Literal["a", "b"],
    untyped,
):
    return None


EXPECTED_TYPES = {
    "s": {"type": "string"},
    "i": {"type": "number"},
    "f": {"type": "number"},
    "b": {"type": "boolean"},
    "bare_list": {"type": "array"},
    "strings": {"type": "array"},
    "old_list": {"type": "array"},
    "bare_tuple": {"type": "array"},
    "pair": {"type": "array"},
    "numbers": {"type": "array"},
    "bare_dict": {"type": "object"},
    "counts": {"type": "object"},
    "old_dict": {"type": "object"},
    "maybe": {"type": "number"},
    "maybe_list": {"type": "array"},
    "either": {},
    "anything": {},
    "point": {},
    "literal": {},
    "untyped": {},
}


def test_type_map_covers_scalars_containers_optionals_and_the_rest() -> None:
    schema = define_tool(_every_type).input_schema
    assert schema["properties"] == EXPECTED_TYPES
    assert schema["required"] == list(EXPECTED_TYPES)


def test_self_cls_ctx_and_variadic_parameters_are_not_in_the_schema() -> None:
    def method_like(self, cls, a: int, *args: int, ctx: ToolContext | None = None, **kw: int):  # type: ignore[no-untyped-def]
        return None

    schema = define_tool(method_like).input_schema
    assert schema == {
        "type": "object",
        "properties": {"a": {"type": "number"}},
        "required": ["a"],
        "additionalProperties": False,
    }


def test_keyword_only_parameters_are_inferred_and_required_without_default() -> None:
    def kw(*, a: str, b: bool = False) -> None:
        return None

    assert define_tool(kw).input_schema["required"] == ["a"]
    assert define_tool(kw).input_schema["properties"] == {
        "a": {"type": "string"},
        "b": {"type": "boolean"},
    }


def test_required_is_omitted_when_every_parameter_has_a_default() -> None:
    def optional_only(a: int = 1, b: str = "") -> None:
        return None

    def no_parameters() -> None:
        return None

    assert "required" not in define_tool(optional_only).input_schema
    assert define_tool(no_parameters).input_schema == {
        "type": "object",
        "properties": {},
        "additionalProperties": False,
    }


_FUTURE_SOURCE = '''
from typing import Optional

class Local:
    pass

def tagged(a: int, tags: list[str], note: Optional[str] = None, flag: bool = True,
           other: "Local" = None) -> dict[str, int]:
    """Tag something."""
    return {"a": a}

def partly_unresolvable(a: int, b: "DoesNotExist", c: dict[str, int]) -> "AlsoMissing":
    return None
'''


def _compile_with_future_annotations() -> dict[str, Any]:
    namespace: dict[str, Any] = {}
    code = compile(
        _FUTURE_SOURCE,
        "<future-annotations>",
        "exec",
        flags=__future__.annotations.compiler_flag,
        dont_inherit=True,
    )
    exec(code, namespace)
    return namespace


def test_inference_resolves_string_annotations_from_future_import() -> None:
    namespace = _compile_with_future_annotations()
    assert namespace["tagged"].__annotations__["a"] == "int"  # really postponed
    found = define_tool(namespace["tagged"])
    assert found.description == "Tag something."
    assert found.input_schema == {
        "type": "object",
        "properties": {
            "a": {"type": "number"},
            "tags": {"type": "array"},
            "note": {"type": "string"},
            "flag": {"type": "boolean"},
            "other": {},
        },
        "required": ["a", "tags"],
        "additionalProperties": False,
    }


def test_an_unresolvable_annotation_does_not_spoil_the_other_parameters() -> None:
    namespace = _compile_with_future_annotations()
    schema = define_tool(namespace["partly_unresolvable"]).input_schema
    assert schema["properties"] == {
        "a": {"type": "number"},
        "b": {},
        "c": {"type": "object"},
    }


async def test_ctx_parameter_receives_the_context_given_to_execute() -> None:
    seen: list[ToolContext | None] = []

    @tool
    def remember(x: int, ctx: ToolContext | None = None) -> str:
        seen.append(ctx)
        return str(x)

    assert "ctx" not in remember.input_schema["properties"]
    ctx = ToolContext(timeout=1.5)
    assert await remember.execute({"x": 1}, ctx) == ToolResult("1")
    assert await remember.execute({"x": 2}, None) == ToolResult("2")
    assert seen[0] is ctx
    assert seen[1] is None


async def test_async_tool_receives_ctx_too() -> None:
    @tool
    async def timeout_left(ctx: ToolContext | None) -> str:
        return str(ctx.timeout if ctx else None)

    assert timeout_left.input_schema["properties"] == {}
    assert (await timeout_left.execute({}, ToolContext(timeout=2.0))).output == "2.0"


def test_explicit_name_description_and_schema_replace_inference() -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}

    @tool(name="search_docs", description="Search the docs.", input_schema=schema)
    def search(a: int) -> str:
        """Ignored docstring."""
        return ""

    assert (search.name, search.description, search.input_schema) == (
        "search_docs",
        "Search the docs.",
        schema,
    )


def test_define_tool_accepts_the_same_overrides_and_an_empty_description() -> None:
    def documented(a: int) -> str:
        """Documented."""
        return ""

    made = define_tool(documented, name="renamed", description="")
    assert (made.name, made.description) == ("renamed", "")
    assert made.input_schema["properties"] == {"a": {"type": "number"}}


def test_decorator_with_only_a_name_keeps_the_inferred_rest() -> None:
    @tool(name="other")
    def original(a: str) -> str:
        """Doc line."""
        return a

    assert (original.name, original.description) == ("other", "Doc line.")
    assert original.input_schema["required"] == ["a"]


def test_description_is_the_first_non_empty_docstring_line_or_empty() -> None:
    def padded() -> None:
        """

           First real line.
        Second line.
        """

    def undocumented() -> None:
        return None

    assert define_tool(padded).description == "First real line."
    assert define_tool(undocumented).description == ""


def test_a_name_that_is_not_a_valid_tool_name_raises() -> None:
    with pytest.raises(ValueError, match="invalid tool name"):
        define_tool(lambda: None)
    with pytest.raises(ValueError, match="invalid tool name"):
        define_tool(add.execute, name="has space")


async def test_bound_methods_work_as_tools() -> None:
    class Counter:
        def __init__(self) -> None:
            self.total = 0

        def bump(self, by: int) -> int:
            """Bump the counter."""
            self.total += by
            return self.total

    counter = Counter()
    bump = define_tool(counter.bump)
    assert bump.input_schema["properties"] == {"by": {"type": "number"}}
    assert (await bump.execute({"by": 3}, None)).output == "3"
    assert counter.total == 3


@pytest.mark.parametrize(
    ("value", "output"),
    [
        ({"a": 1}, '{"a":1}'),
        (None, ""),
        ("plain text", "plain text"),
        ([1, "ü", {"b": None}], '[1,"ü",{"b":null}]'),
        (42, "42"),
        (True, "true"),
    ],
)
async def test_return_values_map_to_output(value: object, output: str) -> None:
    @tool
    def sync_returning() -> object:
        return value

    @tool
    async def async_returning() -> object:
        return value

    for made in (sync_returning, async_returning):
        assert await made.execute({}, None) == ToolResult(output)


async def test_a_returned_tool_result_passes_through_unchanged() -> None:
    given = ToolResult("custom", is_error=True, metadata={"k": "v"})

    @tool
    def sync_result() -> ToolResult:
        return given

    @tool
    async def async_result() -> ToolResult:
        return given

    assert await sync_result.execute({}, None) is given
    assert await async_result.execute({}, None) is given


async def test_a_value_json_cannot_render_still_becomes_an_output() -> None:
    @tool
    def odd() -> object:
        return {1, 2}

    result = await odd.execute({}, None)
    assert result.is_error is False
    assert result.output


@pytest.mark.parametrize("is_async", [False, True])
async def test_a_raised_exception_becomes_an_error_result(is_async: bool) -> None:
    def sync_boom() -> None:
        raise ValueError("boom")

    async def async_boom() -> None:
        raise ValueError("boom")

    made = define_tool(async_boom if is_async else sync_boom, name="boom")
    assert await made.execute({}, None) == ToolResult("boom", is_error=True)


async def test_an_exception_without_message_is_named_by_its_type() -> None:
    @tool
    def silent() -> None:
        raise KeyError

    assert await silent.execute({}, None) == ToolResult("KeyError", is_error=True)


async def test_bad_arguments_become_error_results() -> None:
    missing = await add.execute({"a": 1}, None)
    unexpected = await add.execute({"a": 1, "b": 2, "nope": 3}, None)
    assert missing.is_error
    assert "b" in missing.output
    assert unexpected.is_error
    assert "nope" in unexpected.output


async def test_sync_tool_runs_in_a_worker_thread_without_blocking_the_loop() -> None:
    loop = asyncio.get_running_loop()
    started = asyncio.Event()
    release = threading.Event()

    @tool
    def blocking() -> str:
        loop.call_soon_threadsafe(started.set)
        released = release.wait(5)  # blocks this thread only, if it is a worker thread
        return f"{threading.get_ident()} {released}"

    task = asyncio.ensure_future(blocking.execute({}, None))
    async with asyncio.timeout(4):
        await started.wait()  # reachable only while the tool is still blocked elsewhere
    release.set()
    async with asyncio.timeout(5):
        result = await task
    thread_id, released = result.output.split()
    assert released == "True"
    assert int(thread_id) != threading.get_ident()


async def test_async_tool_runs_on_the_event_loop_thread() -> None:
    @tool
    async def where() -> str:
        return str(threading.get_ident())

    assert (await where.execute({}, None)).output == str(threading.get_ident())


async def test_cancellation_of_an_async_tool_propagates() -> None:
    started = asyncio.Event()

    @tool
    async def forever() -> None:
        started.set()
        await asyncio.Event().wait()

    task = asyncio.ensure_future(forever.execute({}, None))
    async with asyncio.timeout(5):
        await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
