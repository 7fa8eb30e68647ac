"""Property-based fuzzing of everything that parses outside input.

Each target gets arbitrary input and may only fail in its documented way: the SSE decoder with
``SSEError``, response parsers with ``MalformedResponse`` (a stream's ``error`` event with
``LLMError``, a cut stream with ``MalformedResponse``), tool arguments never raise (an error
text instead), ``mcp.json`` with ``ConfigError``, ``SKILL.md`` never raises (a skip instead).
Never ``RecursionError``, ``TypeError``, ``KeyError`` and the like. Example counts are fixed,
so the whole module runs in well under a minute.
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolnexus import ConfigError, LLMError
from toolnexus._json import JSONDepthError, loads
from toolnexus.dialects import (
    AnthropicDialect,
    ArgumentsDelta,
    GeminiDialect,
    MalformedResponse,
    OpenAIDialect,
    ResponsesDialect,
    Turn,
)
from toolnexus.dialects.base import parse_arguments
from toolnexus.dialects.sse import SSEDecoder, SSEError
from toolnexus.tools.mcp.config import McpConfig, load_mcp_config
from toolnexus.tools.skills.discovery import read_skill_file
from toolnexus.tools.skills.model import SkillInfo, SkillSkip

EXAMPLES = 200
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
DIALECTS = (OpenAIDialect(), AnthropicDialect(), ResponsesDialect(), GeminiDialect())

scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=30,
)
KEYS = (
    "choices",
    "message",
    "delta",
    "content",
    "tool_calls",
    "function",
    "arguments",
    "index",
    "id",
    "name",
    "type",
    "text",
    "input",
    "partial_json",
    "usage",
    "error",
    "content_block",
    "stop_reason",
    "finish_reason",
    "role",
    "output",
    "item",
    "item_id",
    "call_id",
    "output_index",
    "status",
    "response",
    "incomplete_details",
    "candidates",
    "parts",
    "functionCall",
    "args",
    "finishReason",
    "usageMetadata",
    "promptFeedback",
    "blockReason",
    "thought",
    "thoughtSignature",
)
WIRE_TYPES = (
    "text",
    "tool_use",
    "text_delta",
    "input_json_delta",
    "content_block_start",
    "content_block_delta",
    "message_start",
    "message_delta",
    "error",
    "function",
    "message",
    "function_call",
    "function_call_output",
    "reasoning",
    "output_text",
    "refusal",
    "completed",
    "incomplete",
    "failed",
    "response.completed",
    "response.incomplete",
    "response.failed",
    "response.output_item.added",
    "response.output_item.done",
    "response.output_text.delta",
    "response.function_call_arguments.delta",
    "STOP",
    "MAX_TOKENS",
    "SAFETY",
    "MALFORMED_FUNCTION_CALL",
    "model",
)
wire_values = st.recursive(
    scalars | st.sampled_from(WIRE_TYPES),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=5)
    ),
    max_leaves=40,
)
"""JSON shaped like provider replies: their keys and type names, arbitrary values."""


def deep(levels: int) -> str:
    return "[" * levels + "]" * levels


def sse_lines() -> st.SearchStrategy[bytes]:
    line = st.one_of(
        st.builds(lambda v: b"data: " + json.dumps(v).encode(), wire_values),
        st.sampled_from([b"data: [DONE]", b"", b":comment", b"event: x", b"data:", b"data"]),
        st.binary(max_size=30),
        st.integers(500, 2000).map(lambda n: b"data: " + deep(n).encode()),
    )
    eol = st.sampled_from([b"\n", b"\r\n", b"\r"])
    return st.lists(st.tuples(line, eol).map(lambda p: p[0] + p[1]), max_size=12).map(b"".join)


@FUZZ
@given(body=sse_lines(), cuts=st.lists(st.integers(0, 400), max_size=8))
def test_the_sse_decoder_raises_only_sse_errors_and_ignores_chunking(
    body: bytes, cuts: list[int]
) -> None:
    def decode(pieces: list[bytes]) -> tuple[list[Any], str | None]:
        decoder, events = SSEDecoder(), []
        try:
            for piece in pieces:
                events += decoder.feed(piece)
            events += decoder.close()
        except SSEError as exc:
            return events, str(exc).split(":")[0]
        return events, None

    points = sorted({min(c, len(body)) for c in cuts})
    pieces = [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]
    assert decode(pieces) == decode([body])


@FUZZ
@given(body=wire_values)
def test_response_parsers_raise_only_malformed_response(body: Any) -> None:
    """Or ``LLMError`` for a reply that reports its own failure (a ``failed`` response, an
    unusable Gemini finish reason)."""
    for dialect in DIALECTS:
        try:
            turn = dialect.parse_response(body, turn=0)
        except (MalformedResponse, LLMError):
            continue
        assert isinstance(turn, Turn)
        json.dumps(turn.message)


@FUZZ
@given(events=st.lists(st.dictionaries(st.sampled_from(KEYS), wire_values, max_size=5), max_size=8))
def test_stream_parsers_raise_only_llm_or_malformed_errors(events: list[dict[str, Any]]) -> None:
    for dialect in DIALECTS:
        parser = dialect.stream_parser(turn=1)
        try:
            for event in events:
                deltas = parser.feed(event)
                assert all(isinstance(d, str | ArgumentsDelta) for d in deltas)
            turn = parser.finish()
        except (LLMError, MalformedResponse):  # an error event; a cut or malformed stream
            continue
        assert isinstance(turn, Turn)
        json.dumps(turn.message)


@FUZZ
@given(
    raw=st.one_of(
        json_values,
        st.text(max_size=60),
        json_values.map(json.dumps),
        st.integers(400, 3000).map(lambda n: '{"a":' + deep(n) + "}"),
    )
)
def test_tool_arguments_never_raise(raw: Any) -> None:
    args, error = parse_arguments("fuzzed", raw)
    assert isinstance(args, dict)
    if error is not None:
        assert args == {}
        assert error.startswith("invalid arguments for fuzzed: ")


@FUZZ
@given(
    text=st.one_of(
        st.text(max_size=80), json_values.map(json.dumps), st.integers(1, 5000).map(deep)
    )
)
def test_json_loads_raises_only_value_errors(text: str) -> None:
    try:
        loads(text)
    except JSONDepthError:
        pass
    except ValueError:
        pass


mcp_entries = st.dictionaries(
    st.sampled_from(
        [
            "command",
            "args",
            "url",
            "type",
            "headers",
            "env",
            "environment",
            "cwd",
            "timeout",
            "enabled",
            "disabled",
            "tools",
        ]
    ),
    json_values | st.sampled_from([float("inf"), float("nan"), -1, 0, "stdio", "remote"]),
    max_size=6,
)
mcp_configs = st.one_of(
    st.dictionaries(st.text(max_size=6), mcp_entries | json_values, max_size=3),
    st.dictionaries(
        st.sampled_from(["mcpServers", "servers", "mcp", "builtins"]),
        st.dictionaries(st.text(max_size=6), mcp_entries, max_size=3) | json_values,
        max_size=2,
    ),
)


@FUZZ
@given(config=mcp_configs)
def test_mcp_config_raises_only_config_errors(config: dict[str, Any]) -> None:
    try:
        parsed = load_mcp_config(config)
    except ConfigError:
        return
    assert isinstance(parsed, McpConfig)


@settings(FUZZ, max_examples=EXAMPLES // 3)
@given(
    text=st.one_of(
        mcp_configs.map(json.dumps),
        st.text(max_size=80),
        st.integers(400, 4000).map(lambda n: '{"a": {"args": ' + deep(n) + "}}"),
    )
)
def test_mcp_config_files_raise_only_config_errors(text: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "mcp.json")
        with open(path, "w", encoding="utf-8", errors="surrogatepass") as fh:
            fh.write(text)
        try:
            load_mcp_config(path)
        except ConfigError:
            pass


frontmatter = st.builds(
    lambda header, body, eol: f"---{eol}{header}{eol}---{eol}{body}",
    st.one_of(
        st.text(max_size=60),
        st.dictionaries(st.sampled_from(["name", "description", "x"]), json_values, max_size=3).map(
            lambda d: json.dumps(d)
        ),
        st.integers(100, 3000).map(lambda n: "name: " + deep(n)),
        st.just("a: &a [1]\nb: [*a, *a, *a]\nname: bomb"),
    ),
    st.text(max_size=40),
    st.sampled_from(["\n", "\r\n"]),
)


@settings(FUZZ, max_examples=EXAMPLES // 3)
@given(
    content=st.one_of(
        frontmatter.map(lambda t: t.encode("utf-8", "surrogatepass")), st.binary(max_size=80)
    )
)
def test_skill_files_never_raise(content: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "SKILL.md")
        with open(path, "wb") as fh:
            fh.write(content)
        parsed = read_skill_file(path)
    assert isinstance(parsed, SkillInfo | SkillSkip)
