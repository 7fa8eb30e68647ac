"""One ``http_tool`` per OpenAPI operation: its name, URL, input schema and body encoding."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin, urlsplit

from ..._json import compact_json
from ...errors import ConfigError
from ...types import JSONObject, Tool, ToolContext, ToolResult, sanitize
from ..http import BodyMode, ResultMode, http_tool
from .document import Document
from .refs import Resolver, pointer_token

__all__ = ["Options", "build_tools"]

logger = logging.getLogger("toolnexus")

METHODS = frozenset(("get", "put", "post", "delete", "options", "head", "patch", "trace"))
_NO_BODY = frozenset(("get", "head"))
_VARIABLE = re.compile(r"\{([^{}]*)\}")


@dataclass(slots=True)
class Options:
    """What every tool of one import shares."""

    base_url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    timeout: float = 30.0
    result_mode: ResultMode = "text"
    http_client: object | None = None


@dataclass(slots=True)
class _Body:
    mode: BodyMode
    properties: dict[str, Any]
    required: list[str]
    whole: bool
    """The body is one argument, ``body``, sent as JSON (not an object with properties)."""
    media_type: str = "application/json"


def build_tools(doc: Document, options: Options) -> list[Tool]:
    """Every operation of ``doc`` as a tool, in document order."""
    resolver = Resolver(doc.data, doc.source)
    paths = doc.data.get("paths") or {}
    if not isinstance(paths, Mapping):
        raise ConfigError(f"{doc.source}: 'paths' must be an object, not {type(paths).__name__}")
    tools: list[Tool] = []
    taken: dict[str, str] = {}
    for path, raw_item in paths.items():
        where = f"#/paths/{pointer_token(str(path))}"
        item, item_where = resolver.deref(raw_item, where)
        if not isinstance(item, Mapping):
            raise ConfigError(f"{doc.source}: the path item at {where} is not an object")
        shared = _parameters(resolver, item.get("parameters"), f"{item_where}/parameters", {})
        for method, op in item.items():
            if method not in METHODS or op is None:
                continue
            op_where = f"{item_where}/{method}"
            if not isinstance(op, Mapping):
                raise ConfigError(f"{doc.source}: the operation at {op_where} is not an object")
            label = f"{method.upper()} {path}"
            op_id = op.get("operationId")
            name = sanitize(op_id if isinstance(op_id, str) and op_id else f"{method}_{path}")
            name = _unique(name, label, taken)
            resolver.start_operation()
            site = _Site(str(path), method, op, op_where, item)
            tools.append(_tool(doc, resolver, options, name, site, shared))
            if resolver.cut_at is not None:
                logger.warning(
                    "OpenAPI operation %s: its schema is too large or too deep to inline whole; "
                    "it is left open from %s on",
                    label,
                    resolver.cut_at,
                )
    return tools


@dataclass(slots=True)
class _Site:
    """Where an operation sits: its path, method, object, location and path item."""

    path: str
    method: str
    op: Mapping[str, Any]
    where: str
    item: Mapping[str, Any]


def _tool(
    doc: Document,
    resolver: Resolver,
    options: Options,
    name: str,
    site: _Site,
    shared: dict[tuple[str, str], tuple[Any, str]],
) -> Tool:
    path, method, op, where = site.path, site.method, site.op, site.where
    params = _parameters(resolver, op.get("parameters"), f"{where}/parameters", dict(shared))
    properties: dict[str, Any] = {}
    required: list[str] = []
    query: list[str] = []
    for (arg, location), (param, param_where) in params.items():
        if location not in ("path", "query"):
            continue  # header and cookie parameters are not the model's to set
        properties[arg] = _parameter_schema(resolver, param, param_where)
        if location == "path" or param.get("required") is True:
            required.append(arg)
        if location == "query":
            query.append(arg)
    for arg in _VARIABLE.findall(path):
        if arg not in properties:  # a path template the document forgot to declare
            properties[arg] = {"type": "string"}
            required.append(arg)
    body = None
    if method not in _NO_BODY and op.get("requestBody") is not None:
        body = _body(resolver, op["requestBody"], f"{where}/requestBody", set(properties))
    headers = dict(options.headers)
    if body is not None:
        properties.update(body.properties)
        required.extend(n for n in body.required if n not in required)
        if body.whole and not any(k.lower() == "content-type" for k in headers):
            headers["Content-Type"] = body.media_type
    schema: JSONObject = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    description = next(
        (t for t in (op.get("summary"), op.get("description")) if isinstance(t, str) and t), ""
    )
    base = options.base_url or _server(doc, op, site.item, f"{method.upper()} {path}")
    made = http_tool(
        name=name,
        description=description,
        method=method.upper(),
        url=base.rstrip("/") + "/" + path.lstrip("/"),
        headers=headers,
        query=query,
        body="raw" if body is not None and body.whole else (body.mode if body else "json"),
        input_schema=schema,
        timeout=options.timeout,
        result_mode=options.result_mode,
        http_client=options.http_client,
    )
    return _json_body(made) if body is not None and body.whole else made


def _parameters(
    resolver: Resolver,
    raw: Any,
    where: str,
    merged: dict[tuple[str, str], tuple[Any, str]],
) -> dict[tuple[str, str], tuple[Any, str]]:
    """``raw`` parameters added to ``merged`` by ``(name, in)``; a later one replaces an earlier."""
    if raw is None:
        return merged
    if not isinstance(raw, list):
        raise ConfigError(f"{resolver.source}: 'parameters' at {where} must be a list")
    for index, entry in enumerate(raw):
        param, param_where = resolver.deref(entry, f"{where}/{index}")
        name = param.get("name") if isinstance(param, Mapping) else None
        location = param.get("in") if isinstance(param, Mapping) else None
        if not isinstance(name, str) or not isinstance(location, str):
            raise ConfigError(
                f"{resolver.source}: the parameter at {param_where} needs a string 'name' and 'in'"
            )
        merged[(name, location)] = (param, param_where)
    return merged


def _parameter_schema(resolver: Resolver, param: Mapping[str, Any], where: str) -> Any:
    if "schema" in param:
        schema = resolver.schema(param["schema"], f"{where}/schema")
    else:
        content = param.get("content")
        media = next(iter(content.items()), None) if isinstance(content, Mapping) else None
        if media is not None and isinstance(media[1], Mapping) and "schema" in media[1]:
            token = pointer_token(str(media[0]))
            schema = resolver.schema(media[1]["schema"], f"{where}/content/{token}/schema")
        else:
            schema = {}
    text = param.get("description")
    if isinstance(text, str) and text and isinstance(schema, dict) and "description" not in schema:
        schema = {**schema, "description": text}
    return schema


def _body(resolver: Resolver, raw: Any, where: str, taken: set[str]) -> _Body | None:
    """The request body's arguments: an object's properties, or the whole body as ``body``.

    JSON media types are preferred, then a form; other bodies (XML, binary) are not offered.
    When a property shares its name with a parameter, the body is taken whole instead.
    """
    request, where = resolver.deref(raw, where)
    content = request.get("content") if isinstance(request, Mapping) else None
    if not isinstance(content, Mapping):
        return None
    chosen = _media(content)
    if chosen is None:
        return None
    mode, media_type, media = chosen
    media_where = f"{where}/content/{pointer_token(media_type)}/schema"
    schema = resolver.schema(media.get("schema", {}), media_where)
    parts = _object_parts(schema)
    if parts is not None and not (taken & set(parts[0])):
        return _Body(mode, parts[0], parts[1], whole=False)
    if mode == "form":
        return None
    needed = request.get("required") is True
    return _Body("raw", {"body": schema}, ["body"] if needed else [], True, media_type)


def _media(content: Mapping[str, Any]) -> tuple[BodyMode, str, Mapping[str, Any]] | None:
    form = None
    for media_type, media in content.items():
        kind = str(media_type).split(";")[0].strip().lower()
        if not isinstance(media, Mapping):
            continue
        if kind == "application/json" or kind.endswith("+json"):
            return "json", str(media_type), media
        if kind == "application/x-www-form-urlencoded" and form is None:
            form = str(media_type), media
    return ("form", *form) if form is not None else None


def _object_parts(schema: Any) -> tuple[dict[str, Any], list[str]] | None:
    """An object schema's properties and required names (``allOf`` parts merged), else None."""
    if not isinstance(schema, dict):
        return None
    kind = schema.get("type")
    if kind not in (None, "object") and not (isinstance(kind, list) and "object" in kind):
        return None
    own = schema.get("properties")
    properties = dict(own) if isinstance(own, dict) else {}
    listed = schema.get("required")
    required = [r for r in listed if isinstance(r, str)] if isinstance(listed, list) else []
    parts = schema.get("allOf")
    for part in parts if isinstance(parts, list) else ():
        found = _object_parts(part)
        if found is None:
            return None
        properties.update(found[0])
        required.extend(r for r in found[1] if r not in required)
    if not properties and (kind is None or schema.get("additionalProperties", True) is not False):
        return None  # a free-form map, or no object at all: passed whole
    return properties, required


def _server(doc: Document, op: Mapping[str, Any], item: Mapping[str, Any], label: str) -> str:
    """The operation's base URL: its own servers, its path's, the document's, else ``/``."""
    for owner in (op, item, doc.data):
        servers = owner.get("servers")
        if isinstance(servers, list) and servers and isinstance(servers[0], Mapping):
            url = _expand_variables(servers[0], doc, label)
            break
    else:
        url = "/"
        if doc.url is None:
            raise ConfigError(
                f"no base URL for {label} in {doc.source}: the document has no 'servers'; "
                "pass base_url="
            )
    if urlsplit(url).scheme:
        return url
    if doc.url is None:
        raise ConfigError(
            f"no base URL for {label} in {doc.source}: servers[0].url {url!r} is relative and "
            "the document was not loaded from a URL; pass base_url="
        )
    return urljoin(doc.url, url)


def _expand_variables(server: Mapping[str, Any], doc: Document, label: str) -> str:
    url = server.get("url")
    if not isinstance(url, str):
        raise ConfigError(f"{doc.source}: the server of {label} has no string 'url'")
    variables = server.get("variables")
    variables = variables if isinstance(variables, Mapping) else {}

    def default(match: re.Match[str]) -> str:
        spec = variables.get(match.group(1))
        if isinstance(spec, Mapping) and "default" in spec:
            return str(spec["default"])
        raise ConfigError(
            f"{doc.source}: server URL {url!r} of {label} uses {{{match.group(1)}}}, "
            "which has no default in its 'variables'"
        )

    return _VARIABLE.sub(default, url)


def _unique(name: str, label: str, taken: dict[str, str]) -> str:
    """``name``, or ``name_2``, ``name_3``... when an earlier operation has it (with a warning)."""
    if name not in taken:
        taken[name] = label
        return name
    n = 2
    while f"{name}_{n}" in taken:
        n += 1
    unique = f"{name}_{n}"
    logger.warning(
        "OpenAPI operations %s and %s both give the tool name %r; the second is named %r",
        taken[name],
        label,
        name,
        unique,
    )
    taken[unique] = label
    return unique


def _json_body(tool: Tool) -> Tool:
    """``tool`` (raw body mode) with its ``body`` argument sent as JSON text."""
    inner = tool.execute

    async def execute(args: JSONObject, ctx: ToolContext | None = None) -> ToolResult:
        if isinstance(args, Mapping) and "body" in args:
            args = {**args, "body": compact_json(args["body"])}
        return await inner(args, ctx)

    return Tool(
        name=tool.name,
        description=tool.description,
        input_schema=tool.input_schema,
        source="http",
        execute=execute,
    )
