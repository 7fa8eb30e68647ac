"""The structured-output forms of each wire style, as whole bodies (pure functions)."""

from __future__ import annotations

import copy

import pytest

from toolnexus import ConfigError
from toolnexus.dialects.output import (
    ANTHROPIC_OUTPUT_BETA,
    OUTPUT_STYLES,
    OutputSchema,
    output_style,
)
from toolnexus.types import JSONObject

SCHEMA: JSONObject = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}
OUT = OutputSchema("Weather", SCHEMA)
SAY = "Answer with JSON."


def test_default_modes_are_native_except_tool_for_anthropic() -> None:
    assert {name: s.default_mode for name, s in OUTPUT_STYLES.items()} == {
        "openai": "native",
        "anthropic": "tool",
        "responses": "native",
        "gemini": "native",
    }


def test_an_unknown_style_is_a_config_error_naming_it() -> None:
    with pytest.raises(ConfigError, match="'bedrock'"):
        output_style("bedrock")


def test_openai_native_is_the_json_schema_response_format() -> None:
    body = {"model": "m", "messages": []}
    assert output_style("openai").native(body, OUT) == {
        "model": "m",
        "messages": [],
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "Weather", "schema": SCHEMA, "strict": False},
        },
    }
    assert body == {"model": "m", "messages": []}


def test_anthropic_native_is_output_format_with_the_beta_header() -> None:
    forms = output_style("anthropic")
    assert forms.native({"model": "m"}, OUT) == {
        "model": "m",
        "output_format": {"type": "json_schema", "schema": SCHEMA},
    }
    assert dict(forms.native_headers) == {"anthropic-beta": ANTHROPIC_OUTPUT_BETA}
    assert ANTHROPIC_OUTPUT_BETA == "structured-outputs-2025-11-13"


def test_responses_native_is_text_format_keeping_other_text_settings() -> None:
    body = {"model": "m", "text": {"verbosity": "low"}}
    assert output_style("responses").native(body, OUT) == {
        "model": "m",
        "text": {
            "verbosity": "low",
            "format": {"type": "json_schema", "name": "Weather", "schema": SCHEMA, "strict": False},
        },
    }
    assert body == {"model": "m", "text": {"verbosity": "low"}}


def test_gemini_native_sets_the_mime_type_and_schema_in_generation_config() -> None:
    body = {"contents": [], "generationConfig": {"temperature": 0}}
    assert output_style("gemini").native(body, OUT) == {
        "contents": [],
        "generationConfig": {
            "temperature": 0,
            "responseMimeType": "application/json",
            "responseJsonSchema": SCHEMA,
        },
    }
    assert body["generationConfig"] == {"temperature": 0}


def test_openai_prompted_ends_the_leading_system_message_without_touching_the_transcript() -> None:
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]
    kept = copy.deepcopy(messages)
    body = output_style("openai").prompted({"model": "m", "messages": messages}, SAY)
    assert body["messages"] == [
        {"role": "system", "content": "Be brief.\n\nAnswer with JSON."},
        {"role": "user", "content": "hi"},
    ]
    assert messages == kept


def test_openai_prompted_adds_a_system_message_when_the_transcript_has_none() -> None:
    messages = [{"role": "user", "content": "hi"}]
    body = output_style("openai").prompted({"messages": messages}, SAY)
    assert body["messages"] == [
        {"role": "system", "content": SAY},
        {"role": "user", "content": "hi"},
    ]
    assert messages == [{"role": "user", "content": "hi"}]


def test_openai_prompted_appends_a_text_part_to_a_system_message_of_parts() -> None:
    parts = [{"type": "text", "text": "Be brief."}]
    body = output_style("openai").prompted(
        {"messages": [{"role": "system", "content": parts}]}, SAY
    )
    assert body["messages"][0]["content"] == [*parts, {"type": "text", "text": SAY}]


@pytest.mark.parametrize(
    ("system", "expected"),
    [(None, SAY), ("Be brief.", "Be brief.\n\n" + SAY)],
)
def test_anthropic_prompted_ends_system(system: str | None, expected: str) -> None:
    body: JSONObject = {"model": "m"}
    if system is not None:
        body["system"] = system
    assert output_style("anthropic").prompted(body, SAY) == {"model": "m", "system": expected}


def test_responses_prompted_ends_instructions() -> None:
    assert output_style("responses").prompted({"instructions": "Be brief."}, SAY) == {
        "instructions": "Be brief.\n\n" + SAY
    }
    assert output_style("responses").prompted({}, SAY) == {"instructions": SAY}


def test_gemini_prompted_ends_the_system_instruction() -> None:
    body = {"systemInstruction": {"parts": [{"text": "Be brief."}]}}
    assert output_style("gemini").prompted(body, SAY) == {
        "systemInstruction": {"parts": [{"text": "Be brief.\n\n" + SAY}]}
    }
    assert body == {"systemInstruction": {"parts": [{"text": "Be brief."}]}}
    assert output_style("gemini").prompted({}, SAY) == {
        "systemInstruction": {"parts": [{"text": SAY}]}
    }


def test_user_messages_take_each_transcript_shape() -> None:
    assert output_style("openai").user_message("again") == {"role": "user", "content": "again"}
    assert output_style("anthropic").user_message("again") == {"role": "user", "content": "again"}
    assert output_style("gemini").user_message("again") == {
        "role": "user",
        "parts": [{"text": "again"}],
    }
