"""A function's parameters as a JSON Schema and an argument validator, built with pydantic.

With ``engine/output.py`` (structured output), the only module of the library that imports
pydantic (on first use, when a native tool is defined). One pydantic model per function holds
a field per parameter; it gives the JSON Schema (cleaned for LLM providers: no ``title``, no
``$ref``, ``Optional[T]`` as ``T``; ``clean_schema`` does the same for any schema) and
validates the model's arguments in lax mode before the call (``"7"`` becomes ``7`` for an
``int``).
"""

from __future__ import annotations

import inspect
import typing
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError
from ..types import JSONObject
from .docstrings import argument_descriptions

__all__ = ["ArgumentError", "Signature", "clean_schema", "resolved_hints"]

SKIPPED_PARAMETERS = frozenset({"self", "cls", "ctx"})
_LITERAL_KEYS = frozenset({"default", "enum", "const", "examples", "required"})
_NAME_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions"})
_DROPPED_KEYS = frozenset({"title", "$defs", "definitions", "uniqueItems"})


class ArgumentError(Exception):
    """Arguments that do not fit a signature; ``problems`` lists ``(field, message)`` pairs."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        super().__init__("; ".join(f"{field}: {message}" for field, message in problems))
        self.problems = problems


@dataclass(slots=True)
class _Parameter:
    name: str
    annotation: Any
    default: Any
    description: str | None


class Signature:
    """The schema and validator of one function's parameters (``ctx``, ``self``, ``cls``,
    ``*args`` and ``**kwargs`` excluded)."""

    def __init__(self, fn: Callable[..., Any], *, localns: Mapping[str, Any] | None = None) -> None:
        """``localns``: the names of the scope the function was defined in (its enclosing
        function's locals), for annotations written as strings (``from __future__ import
        annotations``) that name a type imported there; an annotation that still cannot be
        resolved is a ``ConfigError`` naming the parameter."""
        from pydantic import ValidationError

        params = _parameters(fn, localns)
        self._names = {f"f{i}": p.name for i, p in enumerate(params)}
        self._invalid = ValidationError
        self._model = _model(fn, params)
        try:
            schema = _json_schema(self._model)
        except Exception:  # a type pydantic validates but cannot describe: describe it as {}
            params = [p if _describable(p.annotation) else _as_any(p) for p in params]
            self._model = _model(fn, params)
            schema = _json_schema(self._model)
        self.schema: JSONObject = _finish(schema)
        """The JSON Schema of the parameters, ``{"type": "object", ...}``."""

    def validate(self, args: JSONObject) -> dict[str, Any]:
        """The arguments, validated and coerced, as keyword arguments for the function.

        Raises ``ArgumentError`` naming every unknown, missing or invalid field (nested fields
        with dots: ``point.x``, ``items.0``). Parameters the model left out keep their defaults.
        """
        try:
            checked = self._model.model_validate(args)
        except self._invalid as exc:
            raise ArgumentError(
                [(".".join(map(str, e["loc"])) or "(arguments)", e["msg"]) for e in exc.errors()]
            ) from None
        values = checked.__dict__
        return {self._names[field]: values[field] for field in checked.__pydantic_fields_set__}


def resolved_hints(
    fn: Callable[..., Any], localns: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Resolved annotations (``Annotated`` kept); when one cannot be resolved, the others are."""
    return _resolve(fn, localns)[0]


def _resolve(
    fn: Callable[..., Any], localns: Mapping[str, Any] | None
) -> tuple[dict[str, Any], dict[str, str]]:
    """``(hints, problems)``: the annotations resolved in the function's module and then in
    ``localns``, and for each one that could not be, why."""
    local = dict(localns or {})
    try:
        return typing.get_type_hints(fn, localns=local, include_extras=True), {}
    except Exception:
        pass
    hints: dict[str, Any] = {}
    problems: dict[str, str] = {}
    namespace = getattr(fn, "__globals__", {})
    for name, annotation in getattr(fn, "__annotations__", {}).items():
        try:
            for _ in range(2):  # ``x: "T"`` under postponed annotations is a string twice
                if isinstance(annotation, str):
                    annotation = eval(annotation, namespace, local)  # as get_type_hints does
        except Exception as exc:
            problems[name] = f"{type(exc).__name__}: {exc}"
            continue
        hints[name] = annotation
    return hints, problems


def _parameters(fn: Callable[..., Any], localns: Mapping[str, Any] | None) -> list[_Parameter]:
    hints, problems = _resolve(fn, localns)
    documented = argument_descriptions(inspect.getdoc(fn))
    out: list[_Parameter] = []
    for param in inspect.signature(fn).parameters.values():
        if param.name in SKIPPED_PARAMETERS or param.kind in (
            param.VAR_POSITIONAL,
            param.VAR_KEYWORD,
        ):
            continue
        if param.name in problems:
            raise ConfigError(
                f"tool {getattr(fn, '__name__', '?')!r}: the annotation "
                f"{fn.__annotations__[param.name]!r} of parameter {param.name!r} cannot be "
                f"resolved ({problems[param.name]}); import the type where the function is "
                "defined or at module level, or give input_schema"
            )
        annotation, described = _split_annotated(hints.get(param.name, Any))
        out.append(
            _Parameter(
                param.name,
                annotation,
                param.default,
                described or documented.get(param.name),
            )
        )
    return out


def _split_annotated(annotation: Any) -> tuple[Any, str | None]:
    """``Annotated[T, "text", ...]`` → ``(Annotated[T, ...], "text")``; plain strings are the
    description, any other metadata (``Field(...)``, constraints) stays for pydantic."""
    if typing.get_origin(annotation) is not typing.Annotated:
        return annotation, None
    base, *metadata = typing.get_args(annotation)
    texts = [m.strip() for m in metadata if isinstance(m, str)]
    others = [m for m in metadata if not isinstance(m, str)]
    texts += [d for m in others if isinstance(d := getattr(m, "description", None), str)]
    kept = typing.Annotated[(base, *others)] if others else base
    return kept, next((t for t in texts if t), None)


def _model(fn: Callable[..., Any], params: list[_Parameter]) -> Any:
    """A pydantic model with one field per parameter, named ``f0, f1, …`` and aliased to the
    parameter's name (so no name can clash with pydantic's own attributes)."""
    from pydantic import ConfigDict, PydanticUserError, create_model

    config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, populate_by_name=False)
    name = f"{getattr(fn, '__name__', 'tool')}_arguments"
    try:
        return create_model(name, __config__=config, **_fields(params))
    except (PydanticUserError, TypeError, NameError):
        # e.g. typing.TypedDict before Python 3.12: accept such parameters as they come
        params = [p if _describable(p.annotation) else _as_any(p) for p in params]
        return create_model(name, __config__=config, **_fields(params))


def _fields(params: list[_Parameter]) -> dict[str, Any]:
    from pydantic import Field

    fields: dict[str, Any] = {}
    for index, p in enumerate(params):
        default: Any = ... if p.default is inspect.Parameter.empty else p.default
        if p.description:
            info = Field(default, alias=p.name, description=p.description)
        else:
            info = Field(default, alias=p.name)
        fields[f"f{index}"] = (p.annotation, info)
    return fields


def _describable(annotation: Any) -> bool:
    from pydantic import TypeAdapter

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            TypeAdapter(annotation).json_schema()
    except Exception:
        return False
    return True


def _as_any(p: _Parameter) -> _Parameter:
    return _Parameter(p.name, Any, p.default, p.description)


def _json_schema(model: Any) -> JSONObject:
    with warnings.catch_warnings():  # a default JSON cannot render is left out, quietly
        warnings.simplefilter("ignore")
        schema: JSONObject = model.model_json_schema(by_alias=True)
    return schema


def clean_schema(raw: JSONObject) -> JSONObject:
    """A pydantic JSON Schema cleaned for LLM providers, whatever its root: ``$ref``s inlined
    (a recursive one cut to ``{"type": "object"}``), no ``title``, ``Optional[T]`` as ``T``."""
    cleaned: JSONObject = _clean(raw, dict(raw.get("$defs") or {}), frozenset())
    return cleaned


def _finish(raw: JSONObject) -> JSONObject:
    cleaned = clean_schema(raw)
    schema: JSONObject = {"type": "object", "properties": cleaned.get("properties", {})}
    if cleaned.get("required"):
        schema["required"] = list(cleaned["required"])
    schema["additionalProperties"] = False
    return schema


def _clean(node: Any, defs: dict[str, Any], expanding: frozenset[str]) -> Any:
    """Inline ``$ref``s, drop ``title``s, turn ``Optional[T]`` into ``T`` (recursively)."""
    if isinstance(node, list):
        return [_clean(item, defs, expanding) for item in node]
    if not isinstance(node, dict):
        return node
    if isinstance(node.get("$ref"), str):
        name = node["$ref"].rsplit("/", 1)[-1]
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        if name in expanding or name not in defs:
            target: JSONObject = {"type": "object"}  # a recursive type: cut the cycle here
        else:
            target = _clean(defs[name], defs, expanding | {name})
        return {**target, **_clean(siblings, defs, expanding)}
    out: JSONObject = {}
    for key, value in node.items():
        if key in _DROPPED_KEYS:
            continue
        if key in _NAME_MAPS and isinstance(value, dict):
            out[key] = {name: _clean(sub, defs, expanding) for name, sub in value.items()}
        elif key in _LITERAL_KEYS:
            out[key] = value
        else:
            out[key] = _clean(value, defs, expanding)
    return _simplify(out)


def _simplify(out: JSONObject) -> JSONObject:
    members = out.get("anyOf")
    if isinstance(members, list) and {"type": "null"} in members:
        rest = [m for m in members if m != {"type": "null"}]
        del out["anyOf"]
        if len(rest) == 1:
            out = {**rest[0], **out}
        elif rest:
            out["anyOf"] = rest
    if "default" in out and out["default"] is None:
        del out["default"]
    if "const" in out and "enum" not in out:
        out["enum"] = [out.pop("const")]
    if "prefixItems" in out:  # a fixed-length tuple: an array of its member types
        items = _unique(out.pop("prefixItems"))
        if items:
            out["items"] = items[0] if len(items) == 1 else {"anyOf": items}
    if out.get("items") == {}:  # a bare list, set or tuple
        del out["items"]
    if out.get("additionalProperties") is True:
        del out["additionalProperties"]
    if out.get("type") == "object" and "properties" in out:
        out.setdefault("additionalProperties", False)
    return out


def _unique(schemas: list[Any]) -> list[Any]:
    out: list[Any] = []
    for schema in schemas:
        if schema not in out:
            out.append(schema)
    return out
