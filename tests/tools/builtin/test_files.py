"""``read``, ``write`` and ``edit``: schemas, windows, byte counts, replacements, failures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from toolnexus import ToolResult
from toolnexus.tools.builtin import builtin_tools

from .support import call

FOUR_LINES = "alpha\nbeta\ngamma\ndelta\n"


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test works in its own folder: relative paths resolve against it."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


# schemas ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "properties", "required"),
    [
        ("read", {"path": "string", "offset": "number", "limit": "number"}, ["path"]),
        ("write", {"path": "string", "content": "string"}, ["path", "content"]),
        (
            "edit",
            {
                "path": "string",
                "oldString": "string",
                "newString": "string",
                "replaceAll": "boolean",
            },
            ["path", "oldString", "newString"],
        ),
        (
            "grep",
            {"pattern": "string", "path": "string", "include": "string", "limit": "number"},
            ["pattern"],
        ),
        ("glob", {"pattern": "string", "path": "string", "limit": "number"}, ["pattern"]),
        ("apply_patch", {"patchText": "string"}, ["patchText"]),
    ],
)
def test_file_tool_schemas_are_closed_objects_with_the_documented_arguments(
    name: str, properties: dict[str, str], required: list[str]
) -> None:
    [tool] = [t for t in builtin_tools() if t.name == name]
    schema = tool.input_schema
    assert tool.source == "builtin"
    assert tool.description
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert {k: v["type"] for k, v in schema["properties"].items()} == properties
    assert schema["required"] == required


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("read", {}, "read: path is required"),
        ("write", {"path": "x.txt"}, "write: content is required"),
        ("edit", {"path": "x.txt", "newString": "b"}, "edit: oldString is required"),
        ("edit", {"path": "x.txt", "oldString": "a"}, "edit: newString is required"),
    ],
)
async def test_a_missing_required_argument_is_an_error_naming_it(
    name: str, args: dict[str, str], message: str
) -> None:
    assert await call(name, args) == ToolResult(message, is_error=True)


# read ---------------------------------------------------------------------------------------------


async def test_read_returns_the_whole_file_byte_for_byte(in_tmp: Path) -> None:
    (in_tmp / "notes.txt").write_bytes("héllo\r\nwörld\n\n".encode())
    assert await call("read", {"path": "notes.txt"}) == ToolResult("héllo\r\nwörld\n\n")


async def test_read_with_offset_and_limit_returns_that_window_of_lines(in_tmp: Path) -> None:
    (in_tmp / "four.txt").write_text(FOUR_LINES)
    result = await call("read", {"path": "four.txt", "offset": 2, "limit": 2})
    assert result == ToolResult("beta\ngamma")


@pytest.mark.parametrize(
    ("window", "expected"),
    [
        ({"offset": 3}, "gamma\ndelta\n"),
        ({"limit": 1}, "alpha"),
        ({"offset": 4, "limit": 10}, "delta\n"),
        ({"offset": 5, "limit": 1}, ""),
        ({"offset": 9}, ""),
        ({"offset": 1.0, "limit": 2.0}, "alpha\nbeta"),
    ],
)
async def test_read_windows_match_splitting_the_text_on_newlines(
    in_tmp: Path, window: dict[str, float], expected: str
) -> None:
    (in_tmp / "four.txt").write_text(FOUR_LINES)
    lines = FOUR_LINES.split("\n")
    start = int(window.get("offset", 1)) - 1
    stop = start + int(window["limit"]) if "limit" in window else None
    assert "\n".join(lines[start:stop]) == expected
    assert (await call("read", {"path": "four.txt", **window})).output == expected


async def test_reading_a_missing_file_is_an_error_naming_it() -> None:
    result = await call("read", {"path": "notes.txt"})
    assert result == ToolResult("read: no such file: notes.txt", is_error=True)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"offset": 0}, "read: offset must be a whole number of at least 1"),
        ({"offset": 1.5}, "read: offset must be a whole number of at least 1"),
        ({"limit": 0}, "read: limit must be a whole number of at least 1"),
        ({"limit": "2"}, "read: limit must be a number"),
    ],
)
async def test_read_refuses_a_bad_window(
    in_tmp: Path, args: dict[str, object], message: str
) -> None:
    (in_tmp / "four.txt").write_text(FOUR_LINES)
    assert await call("read", {"path": "four.txt", **args}) == ToolResult(message, is_error=True)


async def test_read_refuses_a_folder_binary_data_and_a_fifo(in_tmp: Path) -> None:
    (in_tmp / "folder").mkdir()
    (in_tmp / "blob.bin").write_bytes(b"\xff\xfe\x00binary")
    os.mkfifo(in_tmp / "pipe")
    assert await call("read", {"path": "folder"}) == ToolResult(
        "read: is a directory: folder", is_error=True
    )
    assert await call("read", {"path": "blob.bin"}) == ToolResult(
        "read: not UTF-8 text: blob.bin", is_error=True
    )
    assert await call("read", {"path": "pipe"}) == ToolResult(
        "read: not a regular file: pipe", is_error=True
    )


async def test_a_read_longer_than_the_cap_keeps_the_head_and_says_truncated(
    in_tmp: Path,
) -> None:
    text = "".join(f"line {n:06d}\n" for n in range(20_000))  # 240,000 characters
    (in_tmp / "big.txt").write_text(text)
    result = await call("read", {"path": "big.txt"})
    assert not result.is_error
    assert result.metadata == {"truncated": True}
    assert result.output.startswith(text[:100_000])
    note = result.output[100_000:]
    assert "truncated" in note
    assert str(len(text) - 100_000) in note
    assert len(result.output) < 100_200


async def test_a_window_longer_than_the_cap_is_cut_too(in_tmp: Path) -> None:
    (in_tmp / "big.txt").write_text("x" * 70_000 + "\n" + "y" * 70_000 + "\n")
    result = await call("read", {"path": "big.txt", "offset": 1, "limit": 2})
    assert result.metadata == {"truncated": True}
    assert result.output.startswith("x" * 70_000 + "\n" + "y" * 29_999)
    assert "truncated" in result.output[100_000:]


async def test_a_read_within_the_cap_has_no_truncation_note(in_tmp: Path) -> None:
    (in_tmp / "exact.txt").write_text("z" * 100_000)
    assert await call("read", {"path": "exact.txt"}) == ToolResult("z" * 100_000)


# write --------------------------------------------------------------------------------------------


async def test_write_creates_parent_folders_and_reports_the_utf8_byte_count(in_tmp: Path) -> None:
    content = "héllo, wörld ✓\n"
    size = len(content.encode("utf-8"))
    assert size > len(content)
    result = await call("write", {"path": "a/b/c.txt", "content": content})
    assert result == ToolResult(f"Wrote {size} bytes to a/b/c.txt", metadata={"bytes": size})
    assert (in_tmp / "a/b/c.txt").read_bytes() == content.encode("utf-8")


async def test_write_replaces_a_file_and_accepts_empty_content(in_tmp: Path) -> None:
    (in_tmp / "old.txt").write_text("something long\n")
    result = await call("write", {"path": "old.txt", "content": ""})
    assert result == ToolResult("Wrote 0 bytes to old.txt", metadata={"bytes": 0})
    assert (in_tmp / "old.txt").read_bytes() == b""


async def test_write_keeps_line_endings_as_given(in_tmp: Path) -> None:
    await call("write", {"path": "crlf.txt", "content": "a\r\nb\n"})
    assert (in_tmp / "crlf.txt").read_bytes() == b"a\r\nb\n"


async def test_write_to_a_folder_or_below_a_file_is_an_error(in_tmp: Path) -> None:
    (in_tmp / "folder").mkdir()
    (in_tmp / "plain.txt").write_text("x")
    assert await call("write", {"path": "folder", "content": "x"}) == ToolResult(
        "write: is a directory: folder", is_error=True
    )
    result = await call("write", {"path": "plain.txt/inner.txt", "content": "x"})
    assert result.is_error
    assert result.output.startswith("write: ")
    assert "plain.txt/inner.txt" in result.output
    assert (in_tmp / "plain.txt").read_text() == "x"


# edit ---------------------------------------------------------------------------------------------


async def test_edit_replaces_a_unique_occurrence(in_tmp: Path) -> None:
    (in_tmp / "f.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    result = await call("edit", {"path": "f.txt", "oldString": "two", "newString": "2"})
    assert result == ToolResult("Edited f.txt (1 replacement)", metadata={"replacements": 1})
    assert (in_tmp / "f.txt").read_bytes() == b"one\r\n2\r\nthree\r\n"


async def test_edit_refuses_a_non_unique_string_naming_the_count(in_tmp: Path) -> None:
    (in_tmp / "f.txt").write_text("ab ab ab")
    result = await call("edit", {"path": "f.txt", "oldString": "ab", "newString": "x"})
    assert result.is_error
    assert result.output.startswith("edit: oldString occurs 3 times in f.txt")
    assert "replaceAll" in result.output
    assert (in_tmp / "f.txt").read_text() == "ab ab ab"


async def test_edit_with_replace_all_replaces_every_occurrence(in_tmp: Path) -> None:
    (in_tmp / "f.txt").write_text("ab ab ab")
    args = {"path": "f.txt", "oldString": "ab", "newString": "", "replaceAll": True}
    result = await call("edit", args)
    assert result == ToolResult("Edited f.txt (3 replacements)", metadata={"replacements": 3})
    assert (in_tmp / "f.txt").read_text() == "  "


async def test_edit_of_a_missing_string_says_not_found(in_tmp: Path) -> None:
    (in_tmp / "f.txt").write_text("hello")
    result = await call("edit", {"path": "f.txt", "oldString": "bye", "newString": "x"})
    assert result == ToolResult("edit: oldString not found in f.txt", is_error=True)
    assert (in_tmp / "f.txt").read_text() == "hello"


async def test_edit_of_a_missing_file_is_an_error_naming_it() -> None:
    result = await call("edit", {"path": "gone.txt", "oldString": "a", "newString": "b"})
    assert result == ToolResult("edit: no such file: gone.txt", is_error=True)
