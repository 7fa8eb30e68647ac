"""What the OpenAPI tests share: the recording API server and small documents to import."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from toolnexus import Tool

from ...http_server import Seen


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


def with_body(server: str, content: dict[str, Any], *, method: str = "post") -> dict[str, Any]:
    """One operation sending a required body of ``content`` to ``/things/{thing}``."""
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
