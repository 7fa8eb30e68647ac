"""The ``todowrite`` built-in: renders the list it is given and keeps nothing."""

from __future__ import annotations

from typing import Any

import pytest

from toolnexus.tools.builtin import builtin_tools


def todowrite() -> Any:
    return next(t for t in builtin_tools() if t.name == "todowrite")


async def test_todos_render_as_checked_and_unchecked_lines() -> None:
    todos = [
        {"id": "1", "text": "a", "completed": True},
        {"id": "2", "text": "b", "completed": False},
    ]

    result = await todowrite().execute({"todos": todos}, None)

    assert (result.output, result.is_error) == ("[x] a\n[ ] b", False)
    assert result.metadata == {"todos": todos}


async def test_an_empty_list_says_there_are_no_todos() -> None:
    result = await todowrite().execute({"todos": []}, None)

    assert (result.output, result.is_error) == ("(no todos)", False)
    assert result.metadata == {"todos": []}


async def test_no_state_is_kept_between_calls() -> None:
    tool = todowrite()
    await tool.execute({"todos": [{"id": "1", "text": "a", "completed": False}]}, None)

    second = await tool.execute({"todos": [{"id": "2", "text": "b", "completed": True}]}, None)

    assert second.output == "[x] b"


def test_the_schema_is_closed_and_describes_each_todo() -> None:
    schema = todowrite().input_schema
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["todos"]
    item = schema["properties"]["todos"]["items"]
    assert set(item["properties"]) == {"id", "text", "completed"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({}, "todowrite: todos is required"),
        ({"todos": "buy milk"}, "todowrite: todos must be an array"),
        ({"todos": [["a"]]}, "todowrite: todos[0] must be an object"),
        (
            {"todos": [{"id": "1", "text": "a", "completed": True}, {"id": 2, "text": "b"}]},
            "todowrite: todos[1].id must be a string",
        ),
        (
            {"todos": [{"id": "1", "text": "a", "completed": "no"}]},
            "todowrite: todos[0].completed must be true or false",
        ),
    ],
)
async def test_malformed_todos_are_error_results_naming_the_entry(
    args: dict[str, Any], message: str
) -> None:
    result = await todowrite().execute(args, None)

    assert result.is_error
    assert result.output.startswith(message)
