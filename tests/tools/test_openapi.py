"""OpenAPI documents as HTTP tools, called against a real local aiohttp server."""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp import web

from toolnexus import ConfigError, Tool, create_toolkit, http_tools_from_openapi

from .openapi_specs import OPS_PER_RESOURCE, PETSTORE, generated_spec


@dataclass
class Seen:
    """One API request as the server received it."""

    method: str
    raw_path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Api:
    """A local server: serves ``documents`` by path and records every other request."""

    base: str = ""
    documents: dict[str, tuple[str, str, int]] = field(default_factory=dict)
    seen: list[Seen] = field(default_factory=list)

    @property
    def last(self) -> Seen:
        assert self.seen, "the server received no API request"
        return self.seen[-1]

    def serve(
        self, path: str, text: str, content_type: str = "application/yaml", status: int = 200
    ) -> str:
        self.documents[path] = (text, content_type, status)
        return self.base + path


@pytest.fixture
async def api() -> AsyncIterator[Api]:
    state = Api()

    async def handle(request: web.Request) -> web.Response:
        if request.path in state.documents:
            text, content_type, status = state.documents[request.path]
            return web.Response(text=text, content_type=content_type, status=status)
        state.seen.append(
            Seen(
                method=request.method,
                raw_path=request.raw_path,
                query=dict(request.query),
                headers=dict(request.headers),
                body=await request.read(),
            )
        )
        return web.json_response({"ok": True, "path": request.path})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    state.base = f"http://{host}:{port}"
    yield state
    await runner.cleanup()


def by_name(tools: list[Tool]) -> dict[str, Tool]:
    return {t.name: t for t in tools}


def two_operations(server: str) -> dict[str, Any]:
    """A small API: list pets (paged) and add a pet to an owner."""
    return {
        "openapi": "3.0.3",
        "info": {"title": "Pets", "version": "1"},
        "servers": [{"url": server}],
        "paths": {
            "/owners/{owner}/pets": {
                "get": {
                    "operationId": "listPets",
                    "summary": "List an owner's pets.",
                    "description": "Longer text.",
                    "parameters": [
                        {
                            "name": "owner",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "string"},
                        },
                        {"name": "limit", "in": "query", "schema": {"type": "integer"}},
                        {
                            "name": "species",
                            "in": "query",
                            "required": True,
                            "schema": {"type": "string"},
                        },
                    ],
                    "responses": {"200": {"description": "ok"}},
                },
                "post": {
                    "operationId": "addPet",
                    "description": "Add a pet.",
                    "parameters": [
                        {
                            "name": "owner",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "string"},
                        },
                        {"name": "dryRun", "in": "query", "schema": {"type": "boolean"}},
                    ],
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "required": ["name"],
                                    "properties": {
                                        "name": {"type": "string"},
                                        "age": {"type": "integer"},
                                    },
                                }
                            }
                        },
                    },
                    "responses": {"201": {"description": "created"}},
                },
            }
        },
    }


# Tools from operations ---------------------------------------------------------------------------


async def test_each_operation_becomes_a_tool_named_by_its_operation_id(api: Api) -> None:
    tools = await http_tools_from_openapi(two_operations(api.base))

    assert [t.name for t in tools] == ["listPets", "addPet"]
    assert {t.source for t in tools} == {"http"}
    listing, adding = tools
    assert listing.description == "List an owner's pets."
    assert adding.description == "Add a pet."
    assert listing.input_schema == {
        "type": "object",
        "properties": {
            "owner": {"type": "string"},
            "limit": {"type": "integer"},
            "species": {"type": "string"},
        },
        "required": ["owner", "species"],
    }
    assert adding.input_schema == {
        "type": "object",
        "properties": {
            "owner": {"type": "string"},
            "dryRun": {"type": "boolean"},
            "name": {"type": "string"},
            "age": {"type": "integer"},
        },
        "required": ["owner", "name"],
    }


async def test_a_get_tool_sends_path_and_query_arguments(api: Api) -> None:
    listing = by_name(await http_tools_from_openapi(two_operations(api.base)))["listPets"]

    result = await listing.execute({"owner": "ann lee", "limit": 5, "species": "cat"}, None)

    assert not result.is_error, result.output
    assert json.loads(result.output)["ok"] is True
    assert api.last.method == "GET"
    assert api.last.raw_path == "/owners/ann%20lee/pets?limit=5&species=cat"
    assert api.last.body == b""


async def test_a_post_tool_sends_query_parameters_in_the_url_and_body_properties_as_json(
    api: Api,
) -> None:
    adding = by_name(await http_tools_from_openapi(two_operations(api.base)))["addPet"]

    result = await adding.execute({"owner": "ann", "dryRun": True, "name": "Rex", "age": 3}, None)

    assert not result.is_error, result.output
    assert (api.last.method, api.last.raw_path) == ("POST", "/owners/ann/pets?dryRun=true")
    assert api.last.json() == {"name": "Rex", "age": 3}
    assert api.last.headers["Content-Type"] == "application/json"


async def test_an_operation_without_id_is_named_from_method_and_path_and_uses_servers(
    api: Api,
) -> None:
    spec = {
        "openapi": "3.0.0",
        "info": {"title": "t", "version": "1"},
        "servers": [{"url": api.base + "/api/v1/"}, {"url": "http://127.0.0.1:9"}],
        "paths": {"/items/{id}": {"delete": {"responses": {"204": {"description": "gone"}}}}},
    }

    [tool] = await http_tools_from_openapi(spec)

    assert tool.name == "delete__items__id_"
    assert tool.description == ""
    await tool.execute({"id": "7"}, None)
    assert (api.last.method, api.last.raw_path) == ("DELETE", "/api/v1/items/7")


async def test_base_url_wins_over_the_servers_of_the_document(api: Api) -> None:
    spec = two_operations("http://127.0.0.1:9/unused")

    listing = (await http_tools_from_openapi(spec, base_url=api.base + "/v2"))[0]
    await listing.execute({"owner": "o", "species": "dog"}, None)

    assert api.last.raw_path == "/v2/owners/o/pets?species=dog"


async def test_server_variables_take_their_defaults(api: Api) -> None:
    host, port = api.base.removeprefix("http://").split(":")
    spec = two_operations("http://{host}:{port}/{version}")
    spec["servers"][0]["variables"] = {
        "host": {"default": host},
        "port": {"default": port, "enum": [port, "443"]},
        "version": {"default": "v3"},
    }

    listing = (await http_tools_from_openapi(spec))[0]
    await listing.execute({"owner": "o", "species": "dog"}, None)

    assert api.last.raw_path == "/v3/owners/o/pets?species=dog"


async def test_operation_servers_win_over_the_document_servers(api: Api) -> None:
    spec = two_operations("http://127.0.0.1:9")
    spec["paths"]["/owners/{owner}/pets"]["get"]["servers"] = [{"url": api.base + "/op"}]

    listing, adding = await http_tools_from_openapi(spec)
    await listing.execute({"owner": "o", "species": "dog"}, None)

    assert api.last.raw_path == "/op/owners/o/pets?species=dog"
    failed = await adding.execute({"owner": "o", "name": "n"}, None)
    assert failed.is_error  # the document's server (port 9) is not listening


async def test_an_undeclared_path_template_is_a_required_string_argument(api: Api) -> None:
    spec = two_operations(api.base)
    spec["paths"] = {"/files/{fileId}": {"get": {"operationId": "getFile", "responses": {}}}}

    [tool] = await http_tools_from_openapi(spec)

    assert tool.input_schema == {
        "type": "object",
        "properties": {"fileId": {"type": "string"}},
        "required": ["fileId"],
    }
    await tool.execute({"fileId": "a/b"}, None)
    assert api.last.raw_path == "/files/a%2Fb"


async def test_header_and_cookie_parameters_are_not_offered_to_the_model(api: Api) -> None:
    spec = two_operations(api.base)
    spec["paths"]["/owners/{owner}/pets"]["get"]["parameters"] += [
        {"name": "X-Request-Id", "in": "header", "required": True, "schema": {"type": "string"}},
        {"name": "session", "in": "cookie", "schema": {"type": "string"}},
    ]

    listing = (await http_tools_from_openapi(spec))[0]

    assert set(listing.input_schema["properties"]) == {"owner", "limit", "species"}
    assert listing.input_schema["required"] == ["owner", "species"]


async def test_headers_go_with_every_call_with_environment_variables_expanded(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TN_OPENAPI_TOKEN", "s3cret")
    tools = await http_tools_from_openapi(
        two_operations(api.base), headers={"Authorization": "Bearer ${TN_OPENAPI_TOKEN}"}
    )

    for tool, args in zip(
        tools, [{"owner": "o", "species": "x"}, {"owner": "o", "name": "n"}], strict=True
    ):
        await tool.execute(args, None)
        assert api.last.headers["Authorization"] == "Bearer s3cret"


async def test_path_level_parameters_apply_to_each_operation_and_an_operation_overrides_them(
    api: Api,
) -> None:
    spec = {
        "openapi": "3.0.0",
        "info": {"title": "t", "version": "1"},
        "servers": [{"url": api.base}],
        "paths": {
            "/docs/{docId}": {
                "parameters": [
                    {"name": "docId", "in": "path", "required": True, "schema": {"type": "string"}},
                    {"name": "lang", "in": "query", "schema": {"type": "string"}},
                ],
                "get": {"operationId": "readDoc", "responses": {}},
                "patch": {
                    "operationId": "editDoc",
                    "parameters": [
                        {
                            "name": "lang",
                            "in": "query",
                            "required": True,
                            "description": "Language of the edit.",
                            "schema": {"type": "string", "enum": ["en", "fr"]},
                        }
                    ],
                    "responses": {},
                },
            }
        },
    }

    tools = by_name(await http_tools_from_openapi(spec))

    assert tools["readDoc"].input_schema == {
        "type": "object",
        "properties": {"docId": {"type": "string"}, "lang": {"type": "string"}},
        "required": ["docId"],
    }
    assert tools["editDoc"].input_schema["properties"]["lang"] == {
        "type": "string",
        "enum": ["en", "fr"],
        "description": "Language of the edit.",
    }
    assert tools["editDoc"].input_schema["required"] == ["docId", "lang"]
    await tools["editDoc"].execute({"docId": "d1", "lang": "fr"}, None)
    assert (api.last.method, api.last.raw_path) == ("PATCH", "/docs/d1?lang=fr")


# Request bodies -----------------------------------------------------------------------------------


def with_body(server: str, content: dict[str, Any], *, method: str = "post") -> dict[str, Any]:
    return {
        "openapi": "3.1.0",
        "info": {"title": "t", "version": "1"},
        "servers": [{"url": server}],
        "paths": {
            "/things/{thing}": {
                method: {
                    "operationId": "send",
                    "parameters": [
                        {
                            "name": "thing",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "string"},
                        }
                    ],
                    "requestBody": {"required": True, "content": content},
                    "responses": {},
                }
            }
        },
    }


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


def referring(server: str) -> dict[str, Any]:
    """Parameters, a request body and nested schemas, all by reference."""
    return {
        "openapi": "3.0.3",
        "info": {"title": "t", "version": "1"},
        "servers": [{"url": server}],
        "paths": {
            "/a/b": {
                "post": {
                    "operationId": "create",
                    "parameters": [{"$ref": "#/components/parameters/Page"}],
                    "requestBody": {"$ref": "#/components/requestBodies/New"},
                    "responses": {},
                }
            }
        },
        "components": {
            "parameters": {
                "Page": {
                    "name": "page",
                    "in": "query",
                    "schema": {"$ref": "#/components/schemas/Count"},
                }
            },
            "requestBodies": {
                "New": {
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/Order"}}
                    }
                }
            },
            "schemas": {
                "Count": {"type": "integer", "minimum": 1},
                "Order": {
                    "type": "object",
                    "required": ["item"],
                    "x-internal": "dropped",
                    "xml": {"name": "order"},
                    "properties": {
                        "item": {"$ref": "#/components/schemas/a~1b~0c"},
                        "qty": {"$ref": "#/components/schemas/Count", "description": "How many."},
                        "note": {"$ref": "other.yaml#/Note"},
                        "xml": {"type": "string", "description": "A property named xml stays."},
                    },
                },
                "a/b~c": {"type": "string", "examples": ["x"]},
            },
        },
    }


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


# Reading documents --------------------------------------------------------------------------------


async def test_yaml_and_json_files_give_the_same_tools(api: Api, tmp_path: Path) -> None:
    spec = referring(api.base)
    (tmp_path / "api.json").write_text(json.dumps(spec))
    (tmp_path / "api.yaml").write_text(yaml.safe_dump(spec))
    (tmp_path / "api.txt").write_text(yaml.safe_dump(spec, default_flow_style=True))

    from_json = await http_tools_from_openapi(tmp_path / "api.json")
    from_yaml = await http_tools_from_openapi(str(tmp_path / "api.yaml"))
    from_flow = await http_tools_from_openapi(str(tmp_path / "api.txt"))
    from_dict = await http_tools_from_openapi(spec)

    assert from_json == from_yaml == from_flow == from_dict
    await from_yaml[0].execute({"item": "x"}, None)
    assert api.last.json() == {"item": "x"}


async def test_yaml_dates_stay_strings(tmp_path: Path) -> None:
    (tmp_path / "api.yaml").write_text(
        "openapi: 3.1.0\n"
        "info: {title: t, version: 2024-05-01}\n"
        "servers: [{url: 'http://127.0.0.1:9'}]\n"
        "paths:\n"
        "  /events:\n"
        "    get:\n"
        "      parameters:\n"
        "        - name: since\n"
        "          in: query\n"
        "          schema: {type: string, format: date, example: 2024-01-02}\n"
    )

    [tool] = await http_tools_from_openapi(tmp_path / "api.yaml")

    assert tool.name == "get__events"
    assert tool.input_schema["properties"]["since"]["example"] == "2024-01-02"


async def test_a_document_fetched_from_a_url_resolves_a_relative_server_against_it(
    api: Api,
) -> None:
    spec = two_operations("/v2")
    url = api.serve("/specs/pets.yaml", yaml.safe_dump(spec))

    listing = (await http_tools_from_openapi(url + "?token=abc"))[0]
    await listing.execute({"owner": "o", "species": "cat"}, None)

    assert api.last.raw_path == "/v2/owners/o/pets?species=cat"


async def test_a_url_document_without_servers_is_served_from_the_origin_of_the_url(
    api: Api,
) -> None:
    spec = two_operations("unused")
    del spec["servers"]
    url = api.serve("/deep/doc.json", json.dumps(spec), "application/json")

    listing = (await http_tools_from_openapi(url))[0]
    await listing.execute({"owner": "o", "species": "cat"}, None)

    assert api.last.raw_path == "/owners/o/pets?species=cat"


async def test_a_relative_server_without_a_leading_slash_is_resolved_like_a_link(api: Api) -> None:
    url = api.serve("/specs/v1/doc.yaml", yaml.safe_dump(two_operations("api/")))

    listing = (await http_tools_from_openapi(url))[0]
    await listing.execute({"owner": "o", "species": "cat"}, None)

    assert api.last.raw_path == "/specs/v1/api/owners/o/pets?species=cat"


# Errors -------------------------------------------------------------------------------------------


async def test_a_file_that_is_neither_json_nor_yaml_is_a_config_error(tmp_path: Path) -> None:
    bad = tmp_path / "broken.yaml"
    bad.write_text("openapi: 3.0.0\npaths: {\n  /x: [unclosed\n")

    with pytest.raises(ConfigError, match=r"broken\.yaml is neither JSON nor YAML.*line"):
        await http_tools_from_openapi(bad)


async def test_a_document_that_is_not_a_mapping_is_a_config_error(tmp_path: Path) -> None:
    listed = tmp_path / "list.json"
    listed.write_text("[1, 2]")
    empty = tmp_path / "empty.yaml"
    empty.write_text("")

    with pytest.raises(ConfigError, match=r"list\.json.*\(a list, not a mapping\)"):
        await http_tools_from_openapi(listed)
    with pytest.raises(ConfigError, match=r"empty\.yaml.*empty"):
        await http_tools_from_openapi(empty)


async def test_a_missing_file_is_a_config_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"no such file.*nope\.yaml"):
        await http_tools_from_openapi(tmp_path / "nope.yaml")


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"swagger": "2.0", "paths": {}}, "no 'openapi' field.*Swagger 2.0"),
        ({"info": {}}, "not an OpenAPI 3.x document: no 'openapi' field"),
        ({"openapi": "2.1", "paths": {}}, "'openapi' is '2.1'"),
        ({"openapi": 4, "paths": {}}, "'openapi' is 4"),
    ],
)
async def test_a_document_that_is_not_openapi_3_is_a_config_error(
    document: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        await http_tools_from_openapi(document)


async def test_no_base_url_is_a_config_error_naming_the_operation(tmp_path: Path) -> None:
    no_servers = two_operations("unused")
    del no_servers["servers"]
    relative = tmp_path / "relative.json"
    relative.write_text(json.dumps(two_operations("/v1")))

    with pytest.raises(ConfigError, match=r"no base URL for GET /owners/\{owner\}/pets.*base_url"):
        await http_tools_from_openapi(no_servers)
    with pytest.raises(ConfigError, match=r"relative\.json.*'/v1' is relative"):
        await http_tools_from_openapi(relative)


async def test_a_server_variable_without_default_is_a_config_error() -> None:
    spec = two_operations("https://{region}.example.com")

    with pytest.raises(ConfigError, match=r"\{region\}.*no default"):
        await http_tools_from_openapi(spec)


async def test_a_reference_that_points_nowhere_is_a_config_error_with_the_pointer() -> None:
    spec = referring("http://127.0.0.1:9")
    spec["components"]["schemas"]["Order"]["properties"]["item"] = {
        "$ref": "#/components/schemas/Missing"
    }

    with pytest.raises(ConfigError) as caught:
        await http_tools_from_openapi(spec)

    message = str(caught.value)
    assert "'#/components/schemas/Missing'" in message
    assert "points nowhere" in message
    assert "#/components/schemas/Order/properties/item" in message
    assert not isinstance(caught.value.__cause__, KeyError)


async def test_a_parameter_reference_that_points_nowhere_names_the_parameter() -> None:
    spec = referring("http://127.0.0.1:9")
    spec["paths"]["/a/b"]["post"]["parameters"] = [{"$ref": "#/components/parameters/Nope"}]

    with pytest.raises(ConfigError, match=r"#/paths/~1a~1b/post/parameters/0 points nowhere"):
        await http_tools_from_openapi(spec)


async def test_a_url_that_answers_with_an_error_status_is_a_config_error_without_its_query(
    api: Api,
) -> None:
    url = api.serve("/missing.yaml", "not here", "text/plain", status=404)

    with pytest.raises(
        ConfigError, match=r"could not fetch the OpenAPI document .*/missing\.yaml: HTTP 404"
    ) as caught:
        await http_tools_from_openapi(url + "?key=k3y")
    assert "k3y" not in str(caught.value)


async def test_an_unreachable_url_is_a_config_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, never listening: connections are refused

        with pytest.raises(ConfigError, match=rf"could not fetch .*127\.0\.0\.1:{port}/doc"):
            await http_tools_from_openapi(f"http://127.0.0.1:{port}/doc.yaml", timeout=5)


async def test_a_yaml_alias_loop_is_a_config_error(tmp_path: Path) -> None:
    looped = tmp_path / "loop.yaml"
    looped.write_text("openapi: 3.0.0\nx: &a [1, *a]\npaths: {}\n")

    with pytest.raises(ConfigError, match="contains itself"):
        await http_tools_from_openapi(looped)


async def test_a_spec_of_the_wrong_type_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="URL, a file path or a dict, not int"):
        await http_tools_from_openapi(42)  # type: ignore[arg-type]


# Names --------------------------------------------------------------------------------------------


async def test_duplicate_names_are_made_distinct_with_a_warning_naming_both_operations(
    caplog: pytest.LogCaptureFixture,
) -> None:
    spec = {
        "openapi": "3.0.0",
        "info": {"title": "t", "version": "1"},
        "servers": [{"url": "http://127.0.0.1:9"}],
        "paths": {
            "/a.b": {"get": {"responses": {}}},
            "/a_b": {
                "get": {"responses": {}},
                "post": {"operationId": "get__a_b", "responses": {}},
            },
        },
    }

    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        tools = await http_tools_from_openapi(spec)

    assert [t.name for t in tools] == ["get__a_b", "get__a_b_2", "get__a_b_3"]
    messages = [r.getMessage() for r in caplog.records]
    assert any("GET /a.b and GET /a_b" in m and "'get__a_b_2'" in m for m in messages)
    assert any("GET /a.b and POST /a_b" in m and "'get__a_b_3'" in m for m in messages)


# Real documents -----------------------------------------------------------------------------------

PETSTORE_TOOLS = {
    "addPet": ["name", "photoUrls"],
    "updatePet": ["name", "photoUrls"],
    "findPetsByStatus": [],
    "findPetsByTags": [],
    "getPetById": ["petId"],
    "updatePetWithForm": ["petId"],
    "deletePet": ["petId"],
    "uploadFile": ["petId"],
    "getInventory": [],
    "placeOrder": [],
    "getOrderById": ["orderId"],
    "deleteOrder": ["orderId"],
    "createUser": [],
    "createUsersWithListInput": [],
    "loginUser": [],
    "logoutUser": [],
    "getUserByName": ["username"],
    "updateUser": ["username"],
    "deleteUser": ["username"],
}


async def test_the_petstore_document_imports_as_one_tool_per_operation(api: Api) -> None:
    tools = await http_tools_from_openapi(PETSTORE, base_url=api.base + "/v3")

    assert sorted(t.name for t in tools) == sorted(PETSTORE_TOOLS)
    for tool in tools:
        assert tool.input_schema.get("required", []) == PETSTORE_TOOLS[tool.name], tool.name
    named = by_name(tools)
    assert named["getPetById"].description == "Find pet by ID"
    assert set(named["addPet"].input_schema["properties"]) == {
        "id",
        "name",
        "category",
        "photoUrls",
        "tags",
        "status",
    }
    assert named["addPet"].input_schema["properties"]["category"]["properties"]["name"] == {
        "type": "string",
        "example": "Dogs",
    }
    assert set(named["deletePet"].input_schema["properties"]) == {"petId"}  # api_key is a header
    users = named["createUsersWithListInput"].input_schema["properties"]["body"]
    assert users["type"] == "array"
    assert "username" in users["items"]["properties"]
    assert set(named["updateUser"].input_schema["properties"]) == {"username", "body"}
    assert "xml" not in json.dumps([t.input_schema for t in tools])


async def test_the_petstore_tools_call_the_right_endpoints(api: Api) -> None:
    url = api.serve("/api/v3/openapi.yaml", PETSTORE.read_text())
    named = by_name(await http_tools_from_openapi(url))

    await named["getPetById"].execute({"petId": 7}, None)
    assert (api.last.method, api.last.raw_path) == ("GET", "/v3/pet/7")

    pet = {"name": "doggie", "photoUrls": ["u"], "status": "sold"}
    await named["addPet"].execute(pet, None)
    assert (api.last.method, api.last.raw_path, api.last.json()) == ("POST", "/v3/pet", pet)

    await named["updatePetWithForm"].execute({"petId": 3, "name": "n", "status": "s"}, None)
    assert (api.last.method, api.last.raw_path) == ("POST", "/v3/pet/3?name=n&status=s")

    await named["loginUser"].execute({"username": "u", "password": "p"}, None)
    assert api.last.query == {"username": "u", "password": "p"}

    await named["updateUser"].execute({"username": "bob", "body": {"username": "bobby"}}, None)
    assert (api.last.method, api.last.raw_path) == ("PUT", "/v3/user/bob")
    assert api.last.json() == {"username": "bobby"}


async def test_a_spec_with_hundreds_of_operations_imports_completely(api: Api) -> None:
    resources = 120
    tools = await http_tools_from_openapi(generated_spec(resources, server=api.base))

    assert len(tools) == resources * OPS_PER_RESOURCE
    assert len({t.name for t in tools}) == len(tools)
    named = by_name(tools)
    create = named["create_r119"].input_schema
    assert create["required"] == ["name"]
    assert create["properties"]["address"]["required"] == ["city"]
    assert create["properties"]["category"]["properties"]["children"]["items"] == {}
    assert named["update_r5"].input_schema["required"] == ["id", "name"]
    assert named["list_r0"].input_schema["properties"] == {
        "page": {"type": "integer"},
        "limit": {"type": "integer", "maximum": 100},
    }

    await named["update_r42"].execute({"id": "x1", "name": "n", "size": 2}, None)
    assert (api.last.method, api.last.raw_path) == ("PUT", "/r42/x1")
    assert api.last.json() == {"name": "n", "size": 2}


async def test_imported_tools_join_a_toolkit(api: Api) -> None:
    tools = await http_tools_from_openapi(two_operations(api.base))

    async with await create_toolkit(extra_tools=tools, builtins=False) as tk:
        declared = [d["function"]["name"] for d in tk.to_openai()]
        result = await tk.execute("listPets", {"owner": "o", "species": "s"})

    assert declared == ["listPets", "addPet"]
    assert not result.is_error
    assert api.last.raw_path == "/owners/o/pets?species=s"
