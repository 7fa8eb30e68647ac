"""OpenAPI documents for the tests and the import benchmark."""

from __future__ import annotations

from pathlib import Path
from typing import Any

PETSTORE = Path(__file__).parent.parent / "fixtures" / "openapi" / "petstore3.yaml"
"""The published Swagger Petstore 3 document (see the README beside it)."""

OPS_PER_RESOURCE = 5


def generated_spec(resources: int, *, server: str = "http://127.0.0.1:9") -> dict[str, Any]:
    """A CRUD API with ``resources`` collections, five operations each.

    Every collection has list (paged, through shared parameter references), create, read,
    update (the body by reference to a shared request body) and delete; the item schemas refer
    to shared ``Address`` and ``Tag`` schemas and a recursive ``Category``.
    """
    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = {
        "Address": {
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
            "required": ["city"],
        },
        "Tag": {"type": "object", "properties": {"id": {"type": "integer"}}},
        "Category": {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#/components/schemas/Category"}},
            },
        },
    }
    bodies: dict[str, Any] = {}
    for n in range(resources):
        item = f"Item{n}"
        schemas[item] = {
            "type": "object",
            "required": ["name"],
            "properties": {
                "name": {"type": "string", "description": f"Name of the {item}."},
                "size": {"type": "integer", "minimum": 0},
                "address": {"$ref": "#/components/schemas/Address"},
                "tags": {"type": "array", "items": {"$ref": "#/components/schemas/Tag"}},
                "category": {"$ref": "#/components/schemas/Category"},
            },
        }
        bodies[item] = {
            "required": True,
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{item}"}}},
        }
        ref_body = {"$ref": f"#/components/requestBodies/{item}"}
        paths[f"/r{n}"] = {
            "get": {
                "operationId": f"list_r{n}",
                "summary": f"List r{n}.",
                "parameters": [
                    {"$ref": "#/components/parameters/page"},
                    {"$ref": "#/components/parameters/limit"},
                ],
                "responses": {"200": {"description": "ok"}},
            },
            "post": {
                "operationId": f"create_r{n}",
                "summary": f"Create an r{n}.",
                "requestBody": ref_body,
                "responses": {"201": {"description": "created"}},
            },
        }
        paths[f"/r{n}/{{id}}"] = {
            "parameters": [{"$ref": "#/components/parameters/id"}],
            "get": {"operationId": f"get_r{n}", "responses": {"200": {"description": "ok"}}},
            "put": {
                "operationId": f"update_r{n}",
                "requestBody": ref_body,
                "responses": {"200": {"description": "ok"}},
            },
            "delete": {"operationId": f"delete_r{n}", "responses": {"204": {"description": "-"}}},
        }
    return {
        "openapi": "3.0.3",
        "info": {"title": "Generated", "version": "1"},
        "servers": [{"url": server}],
        "paths": paths,
        "components": {
            "schemas": schemas,
            "requestBodies": bodies,
            "parameters": {
                "page": {"name": "page", "in": "query", "schema": {"type": "integer"}},
                "limit": {
                    "name": "limit",
                    "in": "query",
                    "schema": {"type": "integer", "maximum": 100},
                },
                "id": {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}},
            },
        },
    }
