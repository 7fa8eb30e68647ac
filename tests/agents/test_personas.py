"""Personas from a folder of Markdown files, the memory tool, and heartbeats."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from toolnexus import ConfigError
from toolnexus.agents import HEARTBEAT_OK, PERSONA_FILES, compose_soul, from_dir


def write(folder: Path, files: dict[str, str | bytes]) -> None:
    for name, text in files.items():
        path = folder / name
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8")


def test_the_soul_is_composed_from_the_present_files_in_order(tmp_path: Path) -> None:
    write(
        tmp_path,
        {"MEMORY.md": "likes tea", "SOUL.md": "calm", "AGENTS.md": "rules", "notes.txt": "ignored"},
    )
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert (
        compose_soul(tmp_path)
        == "## AGENTS.md\n\nrules\n\n## SOUL.md\n\ncalm\n\n## MEMORY.md\n\nlikes tea"
    )
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    assert PERSONA_FILES[0] == "AGENTS.md"
    assert PERSONA_FILES[-1] == "MEMORY.md"


def test_a_file_over_two_mebibytes_is_cut_with_a_notice(tmp_path: Path) -> None:
    write(tmp_path, {"SOUL.md": b"x" * (2_097_152 + 10)})
    soul = compose_soul(tmp_path)
    assert soul.count("x") == 2_097_152
    assert soul.endswith("longer than 2097152 bytes]")


async def test_from_dir_names_the_agent_after_the_folder_and_rereads_each_session(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "ada"
    folder.mkdir()
    write(folder, {"IDENTITY.md": "I am Ada."})
    systems: list[str] = []

    def generate(request: dict[str, Any]) -> dict[str, Any]:
        systems.append(request["messages"][0]["content"])
        return {"content": "hello"}

    persona = from_dir(folder)
    assert persona.name == "ada"
    assert [t.name for t in persona.tools] == []
    await persona.run("hi", llm={"generate": generate, "model": "m"})
    write(folder, {"USER.md": "Sam, a gardener."})
    await persona.run("hi", llm={"generate": generate, "model": "m"})
    assert systems == [
        "## IDENTITY.md\n\nI am Ada.",
        "## IDENTITY.md\n\nI am Ada.\n\n## USER.md\n\nSam, a gardener.",
    ]


async def test_the_memory_tool_edits_memory_and_user_files_on_disk(tmp_path: Path) -> None:
    persona = from_dir(tmp_path, memory=True)
    memory = next(t for t in persona.tools if t.name == "memory")
    assert memory.input_schema["properties"]["action"]["enum"] == ["add", "replace", "remove"]

    async def call(**args: Any) -> tuple[str, bool]:
        result = await memory.execute(args, None)
        return result.output, result.is_error

    assert not (await call(action="add", text="prefers short answers"))[1]
    assert not (await call(action="add", text="works nights"))[1]
    assert (tmp_path / "MEMORY.md").read_text() == "prefers short answers\nworks nights\n"
    assert not (await call(action="replace", text="works nights", **{"with": "works days"}))[1]
    assert not (await call(action="remove", text="prefers short answers"))[1]
    assert (tmp_path / "MEMORY.md").read_text() == "works days\n"
    assert not (await call(action="add", target="user", text="Sam"))[1]
    assert (tmp_path / "USER.md").read_text() == "Sam\n"
    assert (await call(action="remove"))[1]
    assert (await call(action="remove", text="not there"))[1]
    assert (await call(action="replace", text="Sam"))[1]
    assert (await call(action="forget", text="x"))[1]
    assert (await call(action="add", target="boss", text="x"))[1]


async def test_a_heartbeat_answered_with_heartbeat_ok_is_silent(tmp_path: Path) -> None:
    write(tmp_path, {"HEARTBEAT.md": "Check the inbox."})
    replies = iter([HEARTBEAT_OK, "The inbox has 3 urgent mails."])
    persona = from_dir(tmp_path)
    model = {"generate": lambda request: {"content": next(replies)}, "model": "m"}
    assert await persona.heartbeat(llm=model) is None
    spoke = await persona.heartbeat(llm=model)
    assert spoke is not None
    assert spoke.text == "The inbox has 3 urgent mails."


def test_from_dir_refuses_a_missing_folder_and_a_soul_of_its_own(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a folder"):
        from_dir(tmp_path / "missing")
    with pytest.raises(ConfigError, match="soul"):
        from_dir(tmp_path, soul="x")
