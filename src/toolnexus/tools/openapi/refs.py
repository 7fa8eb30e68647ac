"""Local ``$ref`` resolution: JSON pointers into the document, inlined into plain schemas.

A reference is local when it is ``#`` or starts with ``#/``; any other (``other.yaml#/X``, a
URL, an ``$anchor``) is left as it is. Schemas are rebuilt as new dicts (the document is never
changed, and no two tools share a nested dict), without vendor extensions (``x-...``) or the
``xml`` and ``externalDocs`` annotations, which mean nothing to a model.

Recursive schemas (a tree node whose ``children`` are nodes) cannot be inlined whole: where a
reference would enter a schema that is already being expanded above it, the expansion stops and
that place gets the open schema ``{}`` (any value). Expansion also stops, with the same ``{}``
and a warning, past ``MAX_SCHEMA_DEPTH`` nested schemas or ``MAX_SCHEMA_NODES`` schema objects
for one operation, so a document whose references fan out cannot make an import explode.

YAML aliases make shared values (``example: *big`` where ``big`` is a list of aliases of lists):
a tool schema is sent to the model as JSON, where every share is written out again, so a small
document could give a schema of many megabytes. Values are therefore copied out in full, their
expanded size counted as they are, and an operation whose schema would exceed
``MAX_SCHEMA_SIZE`` characters of JSON is refused with a ``ConfigError``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, TypeGuard
from urllib.parse import unquote

from ...errors import ConfigError

__all__ = ["MAX_SCHEMA_DEPTH", "MAX_SCHEMA_NODES", "MAX_SCHEMA_SIZE", "Resolver", "pointer_token"]

logger = logging.getLogger("toolnexus")

MAX_SCHEMA_DEPTH = 64
"""Nested schemas inlined below one parameter or body before the rest is left open."""
MAX_SCHEMA_NODES = 20_000
"""Schema objects inlined for one operation before further references are left open."""
MAX_SCHEMA_SIZE = 2_000_000
"""Characters of JSON (about) one operation's schema may expand to; past it, a ``ConfigError``."""

_ONE = ("items", "additionalProperties", "not", "if", "then", "else", "contains")
_ONE_MORE = ("propertyNames", "unevaluatedProperties", "unevaluatedItems", "additionalItems")
_SINGLE = frozenset((*_ONE, *_ONE_MORE, "contentSchema"))
_LISTS = frozenset(("allOf", "anyOf", "oneOf", "prefixItems"))
_MAPS = frozenset(("properties", "patternProperties", "$defs", "definitions", "dependentSchemas"))
_DROPPED = frozenset(("xml", "externalDocs"))


def pointer_token(key: str) -> str:
    """``key`` escaped as one JSON pointer token (``~`` → ``~0``, ``/`` → ``~1``)."""
    if "~" not in key and "/" not in key:
        return key
    return key.replace("~", "~0").replace("/", "~1")


def is_local(ref: object) -> TypeGuard[str]:
    """Whether ``ref`` is a JSON pointer into this document (``#`` or ``#/...``)."""
    return isinstance(ref, str) and (ref == "#" or ref.startswith("#/"))


class Resolver:
    """Follows local references in one document; ``schema`` inlines them with a cycle guard."""

    def __init__(self, document: dict[str, Any], source: str) -> None:
        self._doc = document
        self._source = source
        self._nodes = 0
        self._size = 0
        self._where = ""
        self._cut_at: str | None = None

    @property
    def source(self) -> str:
        """How errors name the document."""
        return self._source

    def lookup(self, ref: str, where: str) -> Any:
        """The value a local ``ref`` points at; ``ConfigError`` naming both when there is none."""
        node: Any = self._doc
        for raw in unquote(ref[1:]).split("/")[1:]:
            token = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and token in node:
                node = node[token]
            elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
                node = node[int(token)]
            else:
                raise ConfigError(
                    f"{self._source}: $ref {ref!r} at {where} points nowhere "
                    f"(no {token!r} in the document at that pointer)"
                )
        return node

    def deref(self, node: Any, where: str) -> tuple[Any, str]:
        """Follow ``node``'s local references (a chain of them) to the object they name.

        Returns the object and its location. A loop of references is a ``ConfigError``.
        """
        seen: list[str] = []
        while isinstance(node, dict) and is_local(node.get("$ref")):
            ref = node["$ref"]
            if ref in seen:
                chain = " -> ".join([*seen, ref])
                raise ConfigError(f"{self._source}: the references at {where} loop: {chain}")
            seen.append(ref)
            node = self.lookup(ref, where)
            where = ref
        return node, where

    def start_operation(self) -> None:
        """Reset the per-operation budgets of inlined schema objects and expanded size."""
        self._nodes = 0
        self._size = 0
        self._cut_at = None

    def _spend(self, size: int) -> None:
        """Count ``size`` characters of the operation's expanded schema; refuse past the limit."""
        self._size += size
        if self._size > MAX_SCHEMA_SIZE:
            raise ConfigError(
                f"{self._source}: the schema at {self._where} expands to more than "
                f"{MAX_SCHEMA_SIZE} characters of JSON (values shared through YAML aliases are "
                "written out in full for the model); refused"
            )

    @property
    def cut_at(self) -> str | None:
        """Where the current operation's schemas were cut for size or depth, if anywhere."""
        return self._cut_at

    def schema(self, node: Any, where: str) -> Any:
        """``node`` as a schema with its local references inlined (see the module doc)."""
        self._where = where
        return self._schema(node, where, (), 0)

    def _schema(self, node: Any, where: str, active: tuple[str, ...], depth: int) -> Any:
        if not isinstance(node, dict):
            return node  # a boolean schema, or something malformed kept as written
        if depth > MAX_SCHEMA_DEPTH or self._nodes >= MAX_SCHEMA_NODES:
            self._cut_at = self._cut_at or where
            return {}
        self._nodes += 1
        self._spend(2)
        ref = node.get("$ref")
        if is_local(ref):
            if ref in active:
                return {}  # a recursive schema: the cycle is cut here
            target = self._schema(self.lookup(ref, where), ref, (*active, ref), depth + 1)
            siblings = {k: v for k, v in node.items() if k != "$ref"}
            if not siblings or not isinstance(target, dict):
                return target
            merged = dict(target)
            merged.update(self._keywords(siblings, where, active, depth))
            return merged
        return self._keywords(node, where, active, depth)

    def _keywords(
        self, node: Mapping[str, Any], where: str, active: tuple[str, ...], depth: int
    ) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in node.items():
            if not isinstance(key, str) or key in _DROPPED or key.startswith("x-"):
                continue
            self._spend(len(key) + 4)
            at = f"{where}/{pointer_token(key)}"
            if key in _SINGLE and isinstance(value, dict):
                out[key] = self._schema(value, at, active, depth + 1)
            elif key in _LISTS or (key == "items" and isinstance(value, list)):
                out[key] = (
                    [self._schema(v, f"{at}/{i}", active, depth + 1) for i, v in enumerate(value)]
                    if isinstance(value, list)
                    else clone(value, self._spend)
                )
            elif key in _MAPS and isinstance(value, dict):
                out[key] = {
                    str(name): self._schema(
                        v, f"{at}/{pointer_token(str(name))}", active, depth + 1
                    )
                    for name, v in value.items()
                }
            else:
                out[key] = clone(value, self._spend)
        return out


def clone(value: Any, spend: Callable[[int], None] | None = None) -> Any:
    """A copy of a plain value: new dicts and lists, leaves shared (they are immutable).

    Iterative, so depth costs no stack. A container met twice (a YAML alias) is copied each
    time, as JSON will write it; ``spend(n)`` is told the expanded size as the copy grows (and
    may raise to stop it), so shared values cannot expand without bound unnoticed.
    """
    if not isinstance(value, dict | list):
        if spend is not None:
            spend(_leaf_size(value))
        return value
    stack: list[tuple[Any, Any]] = []

    def shell(src: Any) -> Any:
        new: Any = {} if isinstance(src, dict) else []
        if spend is not None:
            spend(2)
        stack.append((src, new))
        return new

    root = shell(value)
    while stack:
        src, dst = stack.pop()
        for key, item in src.items() if isinstance(src, dict) else enumerate(src):
            if spend is not None and isinstance(dst, dict):
                spend(len(str(key)) + 4)
            if isinstance(item, dict | list):
                item = shell(item)
            elif spend is not None:
                spend(_leaf_size(item))
            if isinstance(dst, dict):
                dst[key] = item
            else:
                dst.append(item)
    return root


def _leaf_size(value: Any) -> int:
    return len(value) + 3 if isinstance(value, str) else 6
