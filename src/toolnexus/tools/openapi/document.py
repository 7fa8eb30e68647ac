"""Reading an OpenAPI document: from a file, a URL or a dict; JSON or YAML; version 3.x."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from ..._json import MAX_DEPTH, JSONDepthError, loads
from ...errors import ConfigError
from ...transport.http import BodyTooLarge, NetworkError, tool_transport

if TYPE_CHECKING:
    import yaml

__all__ = ["MAX_DOCUMENT_BYTES", "Document", "load_document"]

MAX_DOCUMENT_BYTES = 64 * 1024 * 1024
"""The most bytes read from a document URL."""


@dataclass(slots=True)
class Document:
    """A parsed OpenAPI 3.x document and where it came from."""

    data: dict[str, Any]
    """Nested objects are dicts (a parsed document always is; others are not walked)."""
    source: str
    """How errors name the document: the file path, the URL (without its query) or ``dict``."""
    url: str | None = None
    """The URL it was fetched from, which relative server URLs are resolved against."""


async def load_document(
    spec: str | os.PathLike[str] | Mapping[str, Any],
    *,
    http_client: object | None,
    time_limit: float,
) -> Document:
    """Read ``spec`` (parsing in a worker thread) and check it is an OpenAPI 3.x document."""
    if isinstance(spec, Mapping):
        doc = Document(dict(spec), "the OpenAPI dict")
    elif isinstance(spec, str) and spec.lower().startswith(("http://", "https://")):
        shown = _shown_url(spec)
        text = await _fetch(spec, shown, http_client=http_client, time_limit=time_limit)
        doc = Document(await asyncio.to_thread(_parse, text, shown), shown, url=spec)
    elif isinstance(spec, str | os.PathLike):
        path = Path(spec)
        shown = str(path)
        text = await asyncio.to_thread(_read_file, path)
        doc = Document(await asyncio.to_thread(_parse, text, shown), shown)
    else:
        raise ConfigError(
            "http_tools_from_openapi: spec must be a URL, a file path or a dict, not "
            f"{type(spec).__name__}"
        )
    _check_version(doc)
    await asyncio.to_thread(_check_shape, doc)
    return doc


def _shown_url(url: str) -> str:
    """The URL without user info, query or fragment, which may carry credentials."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


async def _fetch(url: str, shown: str, *, http_client: object | None, time_limit: float) -> bytes:
    transport = tool_transport(http_client)
    try:
        resp = await transport.request(
            "GET",
            url,
            headers={"Accept": "application/json, application/yaml;q=0.9, */*;q=0.5"},
            time_limit=time_limit,
            max_bytes=MAX_DOCUMENT_BYTES,
        )
    except NetworkError as exc:
        raise ConfigError(f"could not fetch the OpenAPI document {shown}: {exc}") from None
    except BodyTooLarge:
        raise ConfigError(
            f"the OpenAPI document {shown} is larger than {MAX_DOCUMENT_BYTES} bytes"
        ) from None
    if not 200 <= resp.status < 300:
        raise ConfigError(f"could not fetch the OpenAPI document {shown}: HTTP {resp.status}")
    return resp.body


def _read_file(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"OpenAPI document not found: no such file {str(path)!r}") from None
    except IsADirectoryError:
        raise ConfigError(f"OpenAPI document {str(path)!r} is a directory, not a file") from None
    except OSError as exc:
        raise ConfigError(
            f"cannot read the OpenAPI document {str(path)!r}: {exc.strerror or exc}"
        ) from None


def _parse(raw: bytes, shown: str) -> dict[str, Any]:
    """JSON when the text looks like JSON and parses as such, YAML otherwise."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"the OpenAPI document {shown} is not UTF-8 text (byte {exc.start})"
        ) from None
    data: Any
    if text.lstrip().startswith("{"):
        try:
            data = loads(text)
        except JSONDepthError:
            raise ConfigError(
                f"the OpenAPI document {shown} is nested deeper than {MAX_DEPTH} levels"
            ) from None
        except ValueError:
            data = _parse_yaml(text, shown)  # YAML flow style also starts with "{"
    else:
        data = _parse_yaml(text, shown)
    if not isinstance(data, dict):
        kind = "empty" if data is None else f"a {type(data).__name__}, not a mapping"
        raise ConfigError(
            f"the OpenAPI document {shown} is neither a JSON object nor a YAML mapping ({kind})"
        )
    return data


def _parse_yaml(text: str, shown: str) -> Any:
    import yaml

    try:
        return yaml.load(text, Loader=_loader())  # a safe loader (see _loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise ConfigError(
            f"the OpenAPI document {shown} is neither JSON nor YAML: {problem}{where}"
        ) from None
    except RecursionError:
        raise ConfigError(f"the OpenAPI document {shown} is nested too deeply") from None


_LOADER: type[yaml.SafeLoader] | None = None


def _loader() -> type[yaml.SafeLoader]:
    """A safe loader (the C one when PyYAML has it) that keeps dates and times as strings.

    YAML would turn ``example: 2024-01-01`` into a ``date``, which cannot be sent as JSON.
    """
    global _LOADER
    if _LOADER is None:
        import yaml

        base: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

        class Loader(base):  # type: ignore[valid-type,misc]
            pass

        Loader.add_constructor("tag:yaml.org,2002:timestamp", yaml.SafeLoader.construct_yaml_str)
        _LOADER = Loader
    return _LOADER


def _check_version(doc: Document) -> None:
    version = doc.data.get("openapi")
    if version is None:
        hint = " (a Swagger 2.0 document; convert it to OpenAPI 3)" if "swagger" in doc.data else ""
        raise ConfigError(f"{doc.source} is not an OpenAPI 3.x document: no 'openapi' field{hint}")
    if not str(version).startswith("3."):
        raise ConfigError(
            f"{doc.source} is not an OpenAPI 3.x document: 'openapi' is {version!r}; "
            "versions 3.0 and 3.1 are supported"
        )


def _check_shape(doc: Document) -> None:
    """Refuse nesting past ``MAX_DEPTH`` and containers that contain themselves.

    Either could only come from a hostile or broken document (YAML aliases can build a loop);
    refusing them here keeps every later walk finite. Linear: each container is entered once.
    """
    seen: set[int] = set()
    open_: set[int] = set()
    stack: list[tuple[Any, int, bool]] = [(doc.data, 1, False)]
    while stack:
        node, depth, leaving = stack.pop()
        if leaving:
            open_.discard(id(node))
            continue
        if id(node) in open_:
            raise ConfigError(
                f"{doc.source} contains a value that contains itself (a YAML alias loop)"
            )
        if id(node) in seen:
            continue
        if depth > MAX_DEPTH:
            raise ConfigError(f"{doc.source} is nested deeper than {MAX_DEPTH} levels")
        seen.add(id(node))
        open_.add(id(node))
        stack.append((node, depth, True))
        children = node.values() if isinstance(node, dict) else node
        stack.extend((c, depth + 1, False) for c in children if isinstance(c, dict | list))
