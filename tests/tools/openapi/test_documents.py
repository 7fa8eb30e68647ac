"""Reading OpenAPI documents (files, URLs, dicts) and the errors a bad one gives."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
import yaml

from toolnexus import ConfigError, http_tools_from_openapi

from .support import Api, referring, two_operations

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
