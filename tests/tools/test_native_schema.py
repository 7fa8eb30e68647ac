"""Native tools: the JSON Schema inferred from a function's signature and docstring.

No ``from __future__ import annotations`` here, so the functions below carry real annotation
objects; postponed (string) annotations are covered by compiling a source text with it.
"""

import __future__

import dataclasses
import datetime
import enum
import typing
import uuid
from typing import Annotated, Any, Literal, Optional, Union

import pytest
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from toolnexus import ConfigError, Tool, ToolContext, define_tool, tool


@tool
def add(a: int, b: float, label: str = "x") -> str:
    """Add two numbers.

    More.
    """
    return f"{label}={a + b}"


def test_decorator_infers_name_description_and_schema() -> None:
    assert isinstance(add, Tool)
    assert (add.name, add.description, add.source) == ("add", "Add two numbers.", "native")
    assert add.input_schema == {
        "type": "object",
        "properties": {
            "a": {"type": "integer"},
            "b": {"type": "number"},
            "label": {"type": "string", "default": "x"},
        },
        "required": ["a", "b"],
        "additionalProperties": False,
    }
    assert list(add.input_schema["properties"]) == ["a", "b", "label"]  # signature order


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Opaque:
    """A class pydantic cannot describe."""


def _every_type(  # type: ignore[no-untyped-def]
    s: str,
    i: int,
    f: float,
    b: bool,
    bare_list: list,  # type: ignore[type-arg]
    strings: list[str],
    old_list: typing.List[int],  # noqa: UP006
    bare_tuple: tuple,  # type: ignore[type-arg]
    many: tuple[int, ...],
    numbers: set[int],
    bare_dict: dict,  # type: ignore[type-arg]
    counts: dict[str, int],
    old_dict: typing.Dict[str, Any],  # noqa: UP006
    maybe: Optional[int],  # noqa: UP045
    maybe_list: list[str] | None,
    either: Union[int, str],  # noqa: UP007
    anything: Any,
    literal: Literal["a", "b"],
    mixed_literal: Literal["a", 1],
    color: Color,
    level: Level,
    when: datetime.datetime,
    day: datetime.date,
    key: uuid.UUID,
    opaque: Opaque,
    untyped,
):
    return None


EXPECTED_TYPES = {
    "s": {"type": "string"},
    "i": {"type": "integer"},
    "f": {"type": "number"},
    "b": {"type": "boolean"},
    "bare_list": {"type": "array"},
    "strings": {"type": "array", "items": {"type": "string"}},
    "old_list": {"type": "array", "items": {"type": "integer"}},
    "bare_tuple": {"type": "array"},
    "many": {"type": "array", "items": {"type": "integer"}},
    "numbers": {"type": "array", "items": {"type": "integer"}},
    "bare_dict": {"type": "object"},
    "counts": {"type": "object", "additionalProperties": {"type": "integer"}},
    "old_dict": {"type": "object"},
    "maybe": {"type": "integer"},
    "maybe_list": {"type": "array", "items": {"type": "string"}},
    "either": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
    "anything": {},
    "literal": {"enum": ["a", "b"], "type": "string"},
    "mixed_literal": {"enum": ["a", 1]},
    "color": {"enum": ["red", "blue"], "type": "string"},
    "level": {"enum": [1, 2], "type": "integer"},
    "when": {"type": "string", "format": "date-time"},
    "day": {"type": "string", "format": "date"},
    "key": {"type": "string", "format": "uuid"},
    "opaque": {},
    "untyped": {},
}


def test_type_map_covers_scalars_containers_optionals_enums_and_the_rest() -> None:
    schema = define_tool(_every_type).input_schema
    assert schema["properties"] == EXPECTED_TYPES
    assert schema["required"] == list(EXPECTED_TYPES)


@dataclasses.dataclass
class Point:
    x: int
    y: float = 0.0


class Size(TypedDict):
    width: int
    height: int


class Label(BaseModel):
    text: str
    color: Color = Color.RED
    at: Point | None = None


def test_nested_dataclasses_typeddicts_and_models_are_inlined_objects() -> None:
    def place(p: Point, size: Size, labels: list[Label]) -> None:
        return None

    properties = define_tool(place).input_schema["properties"]
    point = {
        "type": "object",
        "properties": {"x": {"type": "integer"}, "y": {"type": "number", "default": 0.0}},
        "required": ["x"],
        "additionalProperties": False,
    }
    assert properties["p"] == point
    assert properties["size"] == {
        "type": "object",
        "properties": {"width": {"type": "integer"}, "height": {"type": "integer"}},
        "required": ["width", "height"],
        "additionalProperties": False,
    }
    assert properties["labels"] == {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {
                "text": {"type": "string"},
                "color": {"enum": ["red", "blue"], "type": "string", "default": "red"},
                "at": point,
            },
            "required": ["text"],
            "additionalProperties": False,
        },
    }


def test_a_recursive_model_is_cut_to_a_plain_object_instead_of_a_reference() -> None:
    class Tree(BaseModel):
        name: str
        children: list["Tree"] = []

    def walk(tree: Tree) -> None:
        return None

    tree = define_tool(walk).input_schema["properties"]["tree"]
    assert tree["properties"]["children"]["items"] == {"type": "object"}
    assert "$ref" not in repr(tree)


def test_descriptions_come_from_annotated_then_the_docstring() -> None:
    def search(
        query: Annotated[str, "What to look for."],
        limit: Annotated[int, Field(description="At most this many.", ge=1)] = 10,
        exact: bool = False,
        since: Optional[str] = None,  # noqa: UP045
    ) -> None:
        """Search the archive.

        Args:
            query: Ignored: Annotated wins.
            exact (bool): Match the whole phrase,
                not single words.
        """

    made = define_tool(search)
    assert made.description == "Search the archive."
    assert made.input_schema["properties"] == {
        "query": {"type": "string", "description": "What to look for."},
        "limit": {
            "type": "integer",
            "default": 10,
            "minimum": 1,
            "description": "At most this many.",
        },
        "exact": {
            "type": "boolean",
            "default": False,
            "description": "Match the whole phrase, not single words.",
        },
        "since": {"type": "string"},
    }


def test_numpy_and_sphinx_docstrings_describe_arguments_too() -> None:
    def numpy_style(city: str, days: int = 1) -> None:
        """Forecast.

        Parameters
        ----------
        city : str
            The city, by name.
        days : int
            How many days ahead.

        Returns
        -------
        str
        """

    def sphinx_style(city: str, days: int = 1) -> None:
        """Forecast.

        :param city: The city, by name.
        :param int days: How many days ahead.
        :returns: the forecast
        """

    for fn in (numpy_style, sphinx_style):
        properties = define_tool(fn).input_schema["properties"]
        assert properties["city"]["description"] == "The city, by name."
        assert properties["days"]["description"] == "How many days ahead."


def test_self_cls_ctx_and_variadic_parameters_are_not_in_the_schema() -> None:
    def method_like(self, cls, a: int, *args: int, ctx: ToolContext | None = None, **kw: int):  # type: ignore[no-untyped-def]
        return None

    assert define_tool(method_like).input_schema == {
        "type": "object",
        "properties": {"a": {"type": "integer"}},
        "required": ["a"],
        "additionalProperties": False,
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


def test_parameter_names_pydantic_reserves_are_ordinary_arguments() -> None:
    def odd_names(schema: str, json: int, model_config: bool = True) -> None:
        return None

    assert list(define_tool(odd_names).input_schema["properties"]) == [
        "schema",
        "json",
        "model_config",
    ]


def test_a_default_json_cannot_render_is_left_out_quietly() -> None:
    marker = object()

    def with_marker(a: Any = marker) -> None:
        return None

    assert define_tool(with_marker).input_schema["properties"] == {"a": {}}


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
            "a": {"type": "integer"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "note": {"type": "string"},
            "flag": {"type": "boolean", "default": True},
            "other": {},
        },
        "required": ["a", "tags"],
        "additionalProperties": False,
    }


def test_an_unresolvable_annotation_is_a_config_error_naming_the_parameter() -> None:
    namespace = _compile_with_future_annotations()
    with pytest.raises(ConfigError, match=r"tool 'partly_unresolvable'.*parameter 'b'") as info:
        define_tool(namespace["partly_unresolvable"])
    assert "DoesNotExist" in str(info.value)
    assert "AlsoMissing" not in str(info.value)  # the return annotation is not part of it


_FUTURE_FACTORY = """
from toolnexus import tool

def make_tool():
    from decimal import Decimal
    from typing import Literal

    @tool
    def price(amount: Decimal, unit: Literal["eur", "usd"]) -> str:
        \"\"\"Price something.\"\"\"
        return f"{amount} {unit}"

    return price
"""


async def test_a_type_imported_inside_the_defining_function_is_resolved_there() -> None:
    namespace: dict[str, Any] = {}
    flags = __future__.annotations.compiler_flag
    exec(compile(_FUTURE_FACTORY, "<factory>", "exec", flags=flags, dont_inherit=True), namespace)
    made = namespace["make_tool"]()
    assert made.input_schema["properties"]["unit"] == {"enum": ["eur", "usd"], "type": "string"}
    assert made.input_schema["properties"]["amount"] != {}
    assert (await made.execute({"amount": "1.50", "unit": "eur"})).output == "1.50 eur"


def test_keyword_only_parameters_are_inferred_and_required_without_default() -> None:
    def kw(*, a: str, b: bool = False) -> None:
        return None

    schema = define_tool(kw).input_schema
    assert schema["required"] == ["a"]
    assert schema["properties"] == {
        "a": {"type": "string"},
        "b": {"type": "boolean", "default": False},
    }


_SHADOWING_FACTORY = """
from toolnexus import tool

def make_tool():
    list = ["a local that happens to be named like a builtin"]
    from decimal import Decimal

    @tool
    def f(items: list[str], amount: Decimal) -> str:
        return ",".join(items)

    return f
"""


def test_a_local_variable_named_like_a_builtin_does_not_change_an_annotation() -> None:
    namespace: dict[str, Any] = {}
    flags = __future__.annotations.compiler_flag
    exec(
        compile(_SHADOWING_FACTORY, "<shadowing>", "exec", flags=flags, dont_inherit=True),
        namespace,
    )
    made = namespace["make_tool"]()
    assert made.input_schema["properties"]["items"] == {
        "type": "array",
        "items": {"type": "string"},
    }
