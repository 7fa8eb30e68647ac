"""Non-text content, long and clashing names, annotations and task-only tools."""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import sys
from pathlib import Path

import pytest
from mcp.types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
    Tool,
    ToolAnnotations,
)

from toolnexus import create_toolkit
from toolnexus.tools.mcp.conversion import (
    requires_task,
    to_tool_result,
    tool_annotations,
    tool_name,
    tool_names,
)

PNG = "iVBORw0KGgo="  # 8 bytes once decoded


def test_every_non_text_part_is_described_and_kept_as_received() -> None:
    parts = [
        TextContent(type="text", text="intro"),
        ImageContent(type="image", data=PNG, mime_type="image/png"),
        AudioContent(type="audio", data="AAAA", mime_type="audio/wav"),
        EmbeddedResource(
            type="resource",
            resource=TextResourceContents(
                uri="file:///a.txt", text="inside", mime_type="text/plain"
            ),
        ),
        EmbeddedResource(
            type="resource",
            resource=BlobResourceContents(uri="file:///b.bin", blob="AAAAAA==", mime_type="x/y"),
        ),
        ResourceLink(type="resource_link", uri="file:///c.md", name="c"),
    ]
    mapped = to_tool_result(CallToolResult(content=parts), "srv")
    assert mapped.output.splitlines() == [
        "intro",
        "[image image/png, 8 bytes]",
        "[audio audio/wav, 3 bytes]",
        "inside",
        "[resource file:///b.bin x/y, 4 bytes]",
        "[resource file:///c.md (c)]",
    ]
    assert not mapped.is_error
    assert mapped.metadata is not None
    kept = mapped.metadata["content"]
    assert [part["type"] for part in kept] == [
        "image",
        "audio",
        "resource",
        "resource",
        "resource_link",
    ]
    assert kept[0] == {"type": "image", "data": PNG, "mimeType": "image/png"}


def test_a_result_made_only_of_an_image_is_not_empty() -> None:
    image = ImageContent(type="image", data=PNG, mime_type="image/png")
    mapped = to_tool_result(CallToolResult(content=[image]), "srv")
    assert mapped.output == "[image image/png, 8 bytes]"


def test_structured_content_replaces_the_text_but_not_the_binary_parts() -> None:
    big = "A" * 400_000
    parts = [
        TextContent(type="text", text='{"n":1}'),
        ImageContent(type="image", data=big, mime_type="image/png"),
    ]
    mapped = to_tool_result(CallToolResult(content=parts, structured_content={"n": 1}), "srv")
    assert mapped.output == '{"n":1}\n[image image/png, 300000 bytes]'


def test_long_names_are_cut_to_64_characters_with_a_hash_of_server_and_tool() -> None:
    tool = "x" * 80
    name = tool_name("srv", tool)
    digest = hashlib.sha256(b"srv\0" + tool.encode()).hexdigest()[:8]
    assert name == f"srv_{tool}"[:55] + "_" + digest
    assert len(name) == 64
    assert tool_name("srv", "short") == "srv_short"


def test_names_that_sanitise_alike_stay_distinct_with_a_warning_naming_both(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="toolnexus")
    names = tool_names("git", ["a.b", "a_b", "c"])
    assert names["a.b"] == "git_a_b"
    assert names["a_b"].startswith("git_a_b_")
    assert len(names["a_b"]) == len("git_a_b_") + 8
    assert names["c"] == "git_c"
    (warning,) = caplog.messages
    assert 'MCP server "git"' in warning
    assert '"a.b"' in warning
    assert '"a_b"' in warning


def test_annotations_title_and_output_schema_are_kept_with_the_original_name() -> None:
    definition = Tool(
        name="delete.file",
        title="Delete a file",
        input_schema={"type": "object"},
        output_schema={"type": "object", "properties": {"ok": {"type": "boolean"}}},
        annotations=ToolAnnotations(destructive_hint=True, read_only_hint=False),
    )
    assert tool_annotations("fs", definition) == {
        "destructiveHint": True,
        "readOnlyHint": False,
        "title": "Delete a file",
        "outputSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}},
        "server": "fs",
        "originalName": "delete.file",
    }


def test_only_tools_that_require_a_task_are_recognised_as_task_only() -> None:
    def listed(support: str | None) -> Tool:
        execution = {"taskSupport": support} if support else None
        return Tool.model_validate(
            {"name": "t", "inputSchema": {"type": "object"}, "execution": execution}
        )

    assert requires_task(listed("required"))
    assert not requires_task(listed("optional"))
    assert not requires_task(listed(None))


def test_an_image_copied_into_structured_content_is_described_not_sent_as_base64() -> None:
    data = base64.b64encode(bytes(range(256)) * 40).decode()  # 10,240 bytes
    parts = [ImageContent(type="image", data=data, mime_type="image/png")]
    structured = {"image": data, "caption": "a chart", "pages": [{"thumb": data}]}
    mapped = to_tool_result(CallToolResult(content=parts, structured_content=structured), "srv")
    assert data not in mapped.output
    assert json.loads(mapped.output.splitlines()[0]) == {
        "image": "[image image/png, 10240 bytes]",
        "caption": "a chart",
        "pages": [{"thumb": "[image image/png, 10240 bytes]"}],
    }
    assert mapped.metadata["structuredContent"] == structured  # kept whole
    assert mapped.metadata["content"][0]["data"] == data


def test_a_long_base64_string_in_structured_content_is_described_by_its_size() -> None:
    blob = base64.b64encode(b"\x00\x01" * 3000).decode()
    uri = "data:application/pdf;base64," + blob
    structured = {"file": blob, "inline": uri, "note": "x" * 5000 + " not base64"}
    mapped = to_tool_result(CallToolResult(content=[], structured_content=structured), "srv")
    assert json.loads(mapped.output) == {
        "file": "[binary data, 6000 bytes]",
        "inline": "[binary data, 6000 bytes]",
        "note": "x" * 5000 + " not base64",
    }
    assert mapped.metadata["structuredContent"] == structured


def test_structured_content_without_binary_is_sent_as_is_and_not_copied() -> None:
    mapped = to_tool_result(CallToolResult(content=[], structured_content={"a": "AAAA"}), "srv")
    assert mapped.output == '{"a":"AAAA"}'
    assert "structuredContent" not in mapped.metadata


IMAGE_SERVER = """
import base64
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, ImageContent

server = MCPServer("pics")
DATA = base64.b64encode(bytes(range(256)) * 400).decode()

@server.tool()
def chart() -> CallToolResult:
    return CallToolResult(
        content=[ImageContent(type="image", data=DATA, mime_type="image/png")],
        structured_content={"image": DATA, "title": "sales"},
    )

server.run()
"""


async def test_a_real_servers_image_in_structured_content_never_reaches_the_model_as_base64(
    tmp_path: Path,
) -> None:
    script = tmp_path / "pics.py"
    script.write_text(IMAGE_SERVER, encoding="utf-8")
    config = {"mcpServers": {"pics": {"command": [sys.executable, str(script)]}}}
    async with await create_toolkit(mcp_config=config, builtins=False, max_output_chars=60) as tk:
        result = await tk.execute("pics_chart", {})
    assert result.output.startswith('{"image":"[image image/png, 102400 bytes]"')
    assert len(result.output) < 200  # cut at max_output_chars, plus the truncation note
    assert result.metadata["content"][0]["mimeType"] == "image/png"
    assert len(result.metadata["content"][0]["data"]) == 136_536  # whole, for the host
