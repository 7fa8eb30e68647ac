"""Text that is not valid Unicode never ends a run: a file name that is not UTF-8 listed by
``glob``/``grep``, a tool returning lone surrogates, a model's JSON ``"\\ud800"``. What reaches
the transcript, the model and the store is valid UTF-8, and a tool's output says what was
replaced (real files with byte names, the stub LLM server, a real SQLite store)."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.running import MakeClient
from toolnexus import (
    ConversationStore,
    InMemoryConversationStore,
    ToolResult,
    create_toolkit,
    tool,
)
from toolnexus._text import valid_text
from toolnexus.stores.sqlite import SqliteConversationStore
from toolnexus.testing import StubLLMServer, reply

NOTE = (
    "[note: 1 character that was not valid Unicode replaced: \\xNN stands for a byte that is "
    "not UTF-8 (as in a file name), U+FFFD for anything else]"
)


@pytest.fixture(params=["sqlite", "memory"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[ConversationStore]:
    if request.param == "memory":
        yield InMemoryConversationStore()
        return
    sqlite = SqliteConversationStore(tmp_path / "chats.db")
    yield sqlite
    await sqlite.aclose()


@tool
def lone() -> str:
    """A tool whose output holds a lone surrogate."""
    return "half \ud800 of a pair"


@tool
def labelled() -> ToolResult:
    """A tool whose metadata holds a lone surrogate."""
    return ToolResult("ok", metadata={"label": "x\udcff"})


def model_text(text: str, style: str) -> reply.Reply:
    """A JSON reply of ``text`` with its non-ASCII characters as ``\\uXXXX`` escapes (the only
    way JSON can carry a lone surrogate)."""
    if style == "openai":
        body: dict[str, object] = {
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ]
        }
    else:
        body = {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
        }
    return reply.raw_bytes(json.dumps(body).encode("ascii"), content_type="application/json")


def utf8(value: object) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode("utf-8")


async def test_odd_text_from_files_tools_and_the_model_reaches_model_and_store_as_utf8(
    tmp_path: Path,
    stub: StubLLMServer,
    make_client: MakeClient,
    style: str,
    store: ConversationStore,
) -> None:
    folder = tmp_path / "files"
    folder.mkdir()
    with open(os.path.join(os.fsencode(folder), b"caf\xe9.txt"), "wb") as file:
        file.write(b"a needle\n")
    stub.enqueue(
        reply.tool_calls(
            reply.call("glob", {"pattern": "*.txt"}),
            reply.call("grep", {"pattern": "needle"}),
            reply.call("lone"),
            reply.call("labelled"),
        ),
        model_text("the model says \ud800 too", style),
    )
    async with await create_toolkit(
        extra_tools=[lone, labelled], builtins={"root": str(folder)}
    ) as tk:
        client = make_client(style, store=store)
        result = await client.run("list the files", tk, conversation_id="odd")

    assert result.status == "done"
    assert result.text == "the model says \ufffd too"
    outputs = {c.name: c.output for c in result.tool_calls}
    assert outputs["glob"] == f"caf\\xe9.txt\n{NOTE}"
    assert outputs["grep"] == f"{folder.resolve()}/caf\\xe9.txt:1:a needle\n{NOTE}"
    assert outputs["lone"] == f"half \ufffd of a pair\n{NOTE}"
    assert outputs["labelled"] == "ok"
    assert [c.metadata for c in result.tool_calls if c.name == "labelled"] == [{"label": "x\\xff"}]
    utf8(result.to_dict())
    sent = stub.requests[-1].json
    assert "caf\\\\xe9.txt" in json.dumps(sent)
    saved = await store.get("odd")
    assert saved is not None
    utf8(saved)
    assert "caf\\\\xe9.txt" in json.dumps(saved)
    assert "\\ufffd too" in json.dumps(saved)


@pytest.mark.parametrize(
    ("text", "expected", "count"),
    [
        ("plain", "plain", 0),
        ("caf\udce9", "caf\\xe9", 1),
        ("a \ud800 b \udfff", "a \ufffd b \ufffd", 2),
        ("\ud83d\ude00 joined", "\U0001f600 joined", 0),
        ("\U0001f600 kept", "\U0001f600 kept", 0),
    ],
)
def test_valid_text_escapes_bytes_replaces_lone_surrogates_and_joins_pairs(
    text: str, expected: str, count: int
) -> None:
    assert valid_text(text) == (expected, count)
    expected.encode("utf-8")
