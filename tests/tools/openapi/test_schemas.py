"""OpenAPI request bodies and references: the argument schemas a tool offers."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from toolnexus import ConfigError, http_tools_from_openapi

from .support import Api, referring, two_operations, with_body

# Request bodies -----------------------------------------------------------------------------------


async def test_a_non_object_json_body_is_one_body_argument_sent_as_the_json_document(
    api: Api,
) -> None:
    schema = {"type": "array", "items": {"type": "integer"}}
    [tool] = await http_tools_from_openapi(
        with_body(api.base, {"application/json": {"schema": schema}})
    )

    assert tool.input_schema["properties"]["body"] == schema
    assert tool.input_schema["required"] == ["thing", "body"]
    await tool.execute({"thing": "t", "body": [1, 2, 3]}, None)
    assert api.last.raw_path == "/things/t"
    assert api.last.json() == [1, 2, 3]
    assert api.last.headers["Content-Type"] == "application/json"


async def test_a_body_property_named_like_a_parameter_makes_the_body_one_argument(
    api: Api,
) -> None:
    schema = {
        "type": "object",
        "properties": {"thing": {"type": "string"}, "n": {"type": "integer"}},
    }
    [tool] = await http_tools_from_openapi(
        with_body(api.base, {"application/json; charset=utf-8": {"schema": schema}})
    )

    assert tool.input_schema["properties"] == {"thing": {"type": "string"}, "body": schema}
    await tool.execute({"thing": "a", "body": {"thing": "b", "n": 1}}, None)
    assert api.last.raw_path == "/things/a"
    assert api.last.json() == {"thing": "b", "n": 1}
    assert api.last.headers["Content-Type"] == "application/json; charset=utf-8"


async def test_a_vendor_json_media_type_is_a_json_body(api: Api) -> None:
    schema = {"type": "object", "properties": {"title": {"type": "string"}}}
    [tool] = await http_tools_from_openapi(
        with_body(api.base, {"application/merge-patch+json": {"schema": schema}}, method="patch")
    )

    await tool.execute({"thing": "a", "title": "new"}, None)
    assert (api.last.method, api.last.json()) == ("PATCH", {"title": "new"})


async def test_an_all_of_object_body_offers_the_properties_of_every_part(api: Api) -> None:
    schema = {
        "allOf": [
            {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
            {"properties": {"b": {"type": "number"}}, "required": ["b"]},
        ]
    }
    [tool] = await http_tools_from_openapi(
        with_body(api.base, {"application/json": {"schema": schema}})
    )

    assert tool.input_schema["properties"] == {
        "thing": {"type": "string"},
        "a": {"type": "string"},
        "b": {"type": "number"},
    }
    assert tool.input_schema["required"] == ["thing", "a", "b"]


async def test_a_form_body_is_sent_form_encoded(api: Api) -> None:
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    }
    [tool] = await http_tools_from_openapi(
        with_body(
            api.base,
            {
                "application/xml": {"schema": schema},
                "application/x-www-form-urlencoded": {"schema": schema},
            },
        )
    )

    await tool.execute({"thing": "t", "name": "a b", "age": 4}, None)
    assert api.last.body == b"name=a+b&age=4"
    assert api.last.headers["Content-Type"] == "application/x-www-form-urlencoded"


async def test_a_body_of_another_media_type_is_not_offered(api: Api) -> None:
    binary = {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}
    [tool] = await http_tools_from_openapi(with_body(api.base, binary))

    assert tool.input_schema == {
        "type": "object",
        "properties": {"thing": {"type": "string"}},
        "required": ["thing"],
    }


# References ---------------------------------------------------------------------------------------


async def test_local_references_are_inlined_in_parameters_bodies_and_nested_schemas(
    api: Api,
) -> None:
    [tool] = await http_tools_from_openapi(referring(api.base))

    assert tool.input_schema == {
        "type": "object",
        "properties": {
            "page": {"type": "integer", "minimum": 1},
            "item": {"type": "string", "examples": ["x"]},
            "qty": {"type": "integer", "minimum": 1, "description": "How many."},
            "note": {"$ref": "other.yaml#/Note"},
            "xml": {"type": "string", "description": "A property named xml stays."},
        },
        "required": ["item"],
    }
    await tool.execute({"page": 2, "item": "pen", "qty": 3}, None)
    assert api.last.raw_path == "/a/b?page=2"
    assert api.last.json() == {"item": "pen", "qty": 3}


async def test_the_document_is_not_changed_and_tools_share_no_schema_objects(api: Api) -> None:
    spec = referring(api.base)
    spec["paths"]["/a/c"] = spec["paths"]["/a/b"]
    before = json.dumps(spec, sort_keys=True)

    first, second = await http_tools_from_openapi(spec)
    first.input_schema["properties"]["page"]["minimum"] = 99

    assert json.dumps(spec, sort_keys=True) == before
    assert second.input_schema["properties"]["page"]["minimum"] == 1


async def test_a_percent_encoded_pointer_is_followed(api: Api) -> None:
    spec = referring(api.base)
    spec["components"]["schemas"]["Order"]["properties"]["item"] = {
        "$ref": "#/components/schemas/a~1b%7E0c"
    }

    [tool] = await http_tools_from_openapi(spec)

    assert tool.input_schema["properties"]["item"] == {"type": "string", "examples": ["x"]}


async def test_a_recursive_schema_is_cut_with_an_open_schema_where_it_repeats(api: Api) -> None:
    spec = with_body(
        api.base, {"application/json": {"schema": {"$ref": "#/components/schemas/Node"}}}
    )
    spec["components"] = {
        "schemas": {
            "Node": {
                "type": "object",
                "properties": {
                    "label": {"type": "string"},
                    "children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}},
                    "owner": {"$ref": "#/components/schemas/Person"},
                },
            },
            "Person": {
                "type": "object",
                "properties": {"best": {"$ref": "#/components/schemas/Node"}},
            },
        }
    }

    [tool] = await http_tools_from_openapi(spec)

    assert tool.input_schema["properties"]["children"] == {"type": "array", "items": {}}
    assert tool.input_schema["properties"]["owner"] == {
        "type": "object",
        "properties": {"best": {}},
    }
    tree = {"label": "root", "children": [{"label": "leaf", "children": []}]}
    await tool.execute({"thing": "t", **tree}, None)
    assert api.last.json() == tree


async def test_references_that_only_refer_to_each_other_become_an_open_schema(api: Api) -> None:
    spec = with_body(
        api.base,
        {
            "application/json": {
                "schema": {
                    "type": "object",
                    "properties": {"x": {"$ref": "#/components/schemas/A"}},
                }
            }
        },
    )
    spec["components"] = {
        "schemas": {
            "A": {"$ref": "#/components/schemas/B"},
            "B": {"$ref": "#/components/schemas/A"},
        }
    }

    [tool] = await http_tools_from_openapi(spec)

    assert tool.input_schema["properties"]["x"] == {}


def body_of_chain(server: str, links: int, fan_out: int) -> dict[str, Any]:
    """A body schema ``S0`` whose ``fan_out`` properties each refer to ``S1``, and so on."""
    spec = with_body(server, {"application/json": {"schema": {"$ref": "#/components/schemas/S0"}}})
    schemas: dict[str, Any] = {f"S{links}": {"type": "string"}}
    for i in range(links):
        child = {"$ref": f"#/components/schemas/S{i + 1}"}
        schemas[f"S{i}"] = {
            "type": "object",
            "properties": {f"p{k}": child for k in range(fan_out)},
        }
    spec["components"] = {"schemas": schemas}
    return spec


def nodes(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + sum(nodes(v) for v in value.values())
    if isinstance(value, list):
        return 1 + sum(nodes(v) for v in value)
    return 0


async def test_references_that_fan_out_are_inlined_only_up_to_a_budget_with_a_warning(
    api: Api, caplog: pytest.LogCaptureFixture
) -> None:
    spec = body_of_chain(api.base, links=30, fan_out=2)  # 2**30 schemas if inlined whole

    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        [tool] = await http_tools_from_openapi(spec)

    assert nodes(tool.input_schema) < 200_000
    assert any(
        "POST /things/{thing}" in r.getMessage() and "left open" in r.getMessage()
        for r in caplog.records
    )
    await tool.execute({"thing": "t", "p0": {"p1": {}}}, None)
    assert api.last.json() == {"p0": {"p1": {}}}


async def test_a_very_deep_chain_of_references_is_cut_with_a_warning(
    api: Api, caplog: pytest.LogCaptureFixture
) -> None:
    spec = body_of_chain(api.base, links=400, fan_out=1)

    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        [tool] = await http_tools_from_openapi(spec)

    assert "left open" in caplog.text
    assert json.dumps(tool.input_schema)  # finite, and serialisable


async def test_a_self_referring_parameter_is_a_config_error() -> None:
    spec = two_operations("http://127.0.0.1:9")
    spec["paths"]["/owners/{owner}/pets"]["get"]["parameters"] = [
        {"$ref": "#/components/parameters/P"}
    ]
    spec["components"] = {"parameters": {"P": {"$ref": "#/components/parameters/P"}}}

    with pytest.raises(ConfigError, match="loop"):
        await http_tools_from_openapi(spec)


def alias_bomb(levels: int) -> str:
    """A small YAML document whose body property's ``example`` is a list of 10 aliases of a
    list of 10 aliases ... (``levels`` deep): 10**levels words once written out as JSON."""
    lines = [
        "openapi: 3.0.0",
        "info: {title: t, version: '1'}",
        "servers: [{url: 'http://127.0.0.1:9'}]",
        "x-words:",
        "  a0: &a0 [" + ", ".join(["wordwordword"] * 10) + "]",
    ]
    lines += [f"  a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, levels)]
    lines += [
        "paths:",
        "  /things:",
        "    post:",
        "      operationId: bomb",
        "      requestBody:",
        "        content:",
        "          application/json:",
        "            schema:",
        "              type: object",
        f"              properties: {{words: {{type: array, example: *a{levels - 1}}}}}",
    ]
    return "\n".join(lines) + "\n"


async def test_yaml_aliases_that_would_expand_past_the_limit_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(alias_bomb(6))  # under 1 kB, 10**6 words (about 16 MB) written out
    assert path.stat().st_size < 1000

    with pytest.raises(ConfigError, match=r"expands to more than 2000000 characters") as info:
        await http_tools_from_openapi(path)
    assert "#/paths/~1things/post/requestBody" in str(info.value)


async def test_yaml_aliases_that_stay_small_are_written_out_in_full(tmp_path: Path) -> None:
    path = tmp_path / "small.yaml"
    path.write_text(alias_bomb(2))

    [tool] = await http_tools_from_openapi(path)

    example = tool.input_schema["properties"]["words"]["example"]
    assert example == [["wordwordword"] * 10] * 10
    assert example[0] is not example[1]  # no shared node: editing one leaves the rest alone
