"""Native tools: execution, overrides and result mapping (schemas and validation have their
own modules)."""

import asyncio
import dataclasses
import threading

import pytest
from pydantic import BaseModel

from toolnexus import ToolContext, ToolResult, define_tool, tool


@tool
def add(a: int, b: float, label: str = "x") -> str:
    """Add two numbers.

    More.
    """
    return f"{label}={a + b}"


async def test_decorated_tool_executes_with_keyword_arguments() -> None:
    assert await add.execute({"b": 2.5, "a": 1}, None) == ToolResult("x=3.5")


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
    assert made.input_schema["properties"] == {"a": {"type": "integer"}}


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
    assert bump.input_schema["properties"] == {"by": {"type": "integer"}}
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


async def test_a_returned_dataclass_or_model_becomes_its_json() -> None:
    @dataclasses.dataclass
    class Point:
        x: int
        label: str

    class Reading(BaseModel):
        value: float
        unit: str = "C"

    @tool
    def point() -> Point:
        return Point(1, "a")

    @tool
    async def reading() -> Reading:
        return Reading(value=21.5)

    assert await point.execute({}, None) == ToolResult('{"x":1,"label":"a"}')
    assert await reading.execute({}, None) == ToolResult('{"value":21.5,"unit":"C"}')


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
