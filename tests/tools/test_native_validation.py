"""Native tools: arguments validated and coerced before the call; schemas providers accept."""

import dataclasses
import enum
import typing
from typing import Annotated, Any, Literal

import jsonschema
import pytest
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from toolnexus import ToolResult, define_tool, to_anthropic, to_openai, tool


def _recorder() -> tuple[list[dict[str, Any]], Any]:
    calls: list[dict[str, Any]] = []

    def f(x: int) -> str:
        calls.append({"x": x})
        return repr(x)

    return calls, define_tool(f)


async def test_a_string_holding_an_integer_is_coerced_before_the_call() -> None:
    calls, made = _recorder()
    assert await made.execute({"x": "7"}, None) == ToolResult("7")
    assert calls == [{"x": 7}]


@pytest.mark.parametrize(
    ("args", "field"),
    [({"x": "abc"}, "x: "), ({}, "x: Field required"), ({"x": 1, "y": 2}, "y: ")],
)
async def test_bad_arguments_name_the_field_and_the_function_is_not_called(
    args: dict[str, Any], field: str
) -> None:
    calls, made = _recorder()
    result = await made.execute(args, None)
    assert result.is_error
    assert result.output.startswith("invalid arguments for f: ")
    assert field in result.output
    assert calls == []


async def test_every_bad_field_is_listed_with_dotted_paths_for_nested_values() -> None:
    @dataclasses.dataclass
    class Point:
        x: int
        y: int

    @tool(name="plot")
    def draw(p: Point, tags: list[int], mode: Literal["fast", "slow"]) -> None:
        raise AssertionError("must not be called")

    result = await draw.execute({"p": {"x": "one", "y": 2}, "tags": [1, "two"], "mode": "x"}, None)
    assert result.is_error
    assert result.output.startswith("invalid arguments for plot: ")
    problems = result.output.removeprefix("invalid arguments for plot: ").split("; ")
    assert [p.split(":")[0] for p in problems] == ["p.x", "tags.1", "mode"]


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Box(TypedDict):
    width: int


class Label(BaseModel):
    text: str
    size: int = 10


async def test_nested_values_arrive_as_the_annotated_types() -> None:
    @dataclasses.dataclass
    class Point:
        x: int
        y: float = 0.0

    seen: dict[str, Any] = {}

    @tool
    async def place(p: Point, color: Color, box: Box, label: Label, tags: set[str]) -> str:
        seen.update(p=p, color=color, box=box, label=label, tags=tags)
        return "ok"

    args = {
        "p": {"x": "3"},
        "color": "blue",
        "box": {"width": 4},
        "label": {"text": "hi"},
        "tags": ["a", "a", "b"],
    }
    assert await place.execute(args, None) == ToolResult("ok")
    assert seen == {
        "p": Point(3, 0.0),
        "color": Color.BLUE,
        "box": {"width": 4},
        "label": Label(text="hi", size=10),
        "tags": {"a", "b"},
    }


async def test_left_out_optional_arguments_keep_the_python_defaults() -> None:
    marker = object()
    seen: list[object] = []

    @tool
    def keep(a: int, b: Any = marker) -> None:
        seen.append(b)

    await keep.execute({"a": 1}, None)
    assert seen == [marker]


async def test_an_explicit_schema_passes_arguments_as_received() -> None:
    seen: list[object] = []

    @tool(input_schema={"type": "object", "properties": {"x": {"type": "integer"}}})
    def raw(x: int, **rest: Any) -> None:
        seen.append((x, rest))

    assert not (await raw.execute({"x": "7", "extra": 1}, None)).is_error
    assert seen == [("7", {"extra": 1})]


# --- what providers accept --------------------------------------------------------------

# Keywords both OpenAI function parameters (including strict mode's supported subset) and
# Anthropic input schemas document; everything else (references, combinators other than
# anyOf, tuple forms) is kept out of inferred schemas.
_ACCEPTED = frozenset(
    {
        "type", "properties", "required", "additionalProperties", "items", "enum", "anyOf",
        "description", "default", "format", "pattern", "minimum", "maximum",
        "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minItems", "maxItems",
    }
)  # fmt: skip


def _wide(
    a: int,
    b: Annotated[float, Field(ge=0, lt=10)],
    c: list[dict[str, Label]],
    d: tuple[int, str],
    e: Color | None,
    f: typing.Union[int, str, None],  # noqa: UP007
    g: Box,
    h: Annotated[str, Field(pattern="^[a-z]+$")] = "x",
) -> None:
    return None


def _keywords(node: Any, found: set[str]) -> set[str]:
    if isinstance(node, list):
        for item in node:
            _keywords(item, found)
    elif isinstance(node, dict):
        for key, value in node.items():
            found.add(key)
            if key == "properties":
                for sub in value.values():
                    _keywords(sub, found)
            elif key not in ("enum", "default", "required"):
                _keywords(value, found)
    return found


def _objects(node: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if isinstance(node, dict):
        if node.get("type") == "object" and "properties" in node:
            out.append(node)
        for key, value in node.items():
            if key not in ("enum", "default"):
                out += _objects(value)
    elif isinstance(node, list):
        for item in node:
            out += _objects(item)
    return out


def test_inferred_schemas_use_only_keywords_providers_accept() -> None:
    made = define_tool(_wide)
    schema = made.input_schema
    jsonschema.Draft202012Validator.check_schema(schema)
    assert _keywords(schema, set()) <= _ACCEPTED
    for obj in _objects(schema):  # fixed-shape objects are closed, as strict mode requires
        assert obj["additionalProperties"] is False
    assert to_openai([made])[0]["function"]["parameters"] == schema
    assert to_anthropic([made])[0]["input_schema"]["type"] == "object"
    good = {
        "a": 1,
        "b": 2.5,
        "c": [{"k": {"text": "t"}}],
        "d": [1, "x"],
        "e": "red",
        "f": 3,
        "g": {"width": 2},
    }
    jsonschema.validate(good, schema)
