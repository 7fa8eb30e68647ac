"""OpenAPI operations as HTTP tools: names, arguments and the calls they make."""

from __future__ import annotations

import json
import logging

import pytest

from toolnexus import create_toolkit, http_tools_from_openapi

from ..openapi_specs import OPS_PER_RESOURCE, PETSTORE, generated_spec
from .support import Api, by_name, two_operations

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
