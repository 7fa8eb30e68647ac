"""Structured output: a Python type as a schema the model answers in, and the answer check.

``output_spec`` turns an ``output_type`` into what a run needs (pydantic's ``TypeAdapter``, the
cleaned schema, wrapped in ``{"result": ...}`` when its root is not an object), before any
request. ``AnswerCheck`` is the per-run state behind the loop's one seam, the check at the end
of a turn: it shapes each body for the mode, parses and validates an answer (text in the
``native``/``prompted`` modes, ``final_result`` arguments in the ``tool`` mode), runs the
``output_validator`` and counts the failed answers against ``output_retries``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from copy import deepcopy
from dataclasses import dataclass
from typing import Any

from .._callbacks import maybe_await
from .._json import compact_json, loads
from ..dialects.output import OUTPUT_MODES, OutputMode, OutputSchema, OutputStyle, output_style
from ..errors import ConfigError, ModelRetry
from ..types import JSONObject, Tool, ToolResult

__all__ = [
    "ACCEPTED",
    "FINAL_RESULT",
    "AnswerCheck",
    "OutputOptions",
    "OutputSpec",
    "Verdict",
    "output_options",
    "output_spec",
]

FINAL_RESULT = "final_result"
"""The tool the model calls with its answer in the ``tool`` mode."""
FINAL_RESULT_DESCRIPTION = "Call this with the final answer."
ACCEPTED = "Final answer accepted."
"""The ``final_result`` call's result once its answer is valid."""
CALL_FINAL_RESULT = "Answer by calling final_result."
PROMPT = "Answer with only a JSON value matching this JSON Schema:\n"
RETRY = "Your answer did not match the required output:\n{errors}\nAnswer again."
WRAPPED_KEY = "result"

_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")
_FENCED = re.compile(r"```json[ \t]*\r?\n(.*?)```", re.DOTALL)
_CACHE_SIZE = 256


@dataclass(frozen=True, slots=True)
class OutputSpec:
    """An ``output_type`` made ready: its adapter and the schema sent for it."""

    output_type: object
    adapter: Any
    """The pydantic ``TypeAdapter`` that validates an answer and dumps it as JSON."""
    schema: OutputSchema
    wrapped: bool
    """The root is not an object: sent as ``{"result": <schema>}`` and unwrapped."""
    instruction: str
    """The ``prompted`` mode's addition to the system prompt (made once per type)."""
    final_tool: Tool
    """The ``tool`` mode's ``final_result`` tool (the loop answers it, never runs it)."""

    def dump(self, value: object) -> object:
        """``value`` as JSON data (``to_dict()["output"]``)."""
        return self.adapter.dump_python(value, mode="json")


@dataclass(frozen=True, slots=True)
class OutputOptions:
    """What one run asks for: the type, the mode, the retries and the validator."""

    spec: OutputSpec
    mode: OutputMode
    retries: int = 2
    validator: Callable[[Any], Any] | None = None


_SPECS: dict[object, OutputSpec] = {}


def output_spec(output_type: object) -> OutputSpec:
    """The spec of ``output_type`` (cached by type); ``ConfigError`` for a type pydantic can
    neither validate nor describe as a JSON Schema."""
    try:
        cached = _SPECS.get(output_type)
    except TypeError:  # an unhashable type form: built every time
        return _build(output_type)
    if cached is None:
        cached = _build(output_type)
        if len(_SPECS) >= _CACHE_SIZE:
            _SPECS.pop(next(iter(_SPECS)))
        _SPECS[output_type] = cached
    return cached


def _build(output_type: object) -> OutputSpec:
    from pydantic import TypeAdapter

    from ..tools.signature import clean_schema

    try:
        adapter: Any = TypeAdapter(output_type)  # type: ignore[arg-type]
        raw = adapter.json_schema()
    except Exception as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ConfigError(
            "output_type must be a type pydantic can validate and describe as a JSON Schema, "
            f"not {output_type!r:.80} ({reason})"
        ) from None
    schema = clean_schema(raw)
    wrapped = schema.get("type") != "object"
    if wrapped:
        schema = {
            "type": "object",
            "properties": {WRAPPED_KEY: schema},
            "required": [WRAPPED_KEY],
            "additionalProperties": False,
        }
    name = _NAME_CHARS.sub("", str(getattr(output_type, "__name__", "") or ""))[:64] or "output"
    instruction = PROMPT + compact_json(schema)
    final = Tool(FINAL_RESULT, FINAL_RESULT_DESCRIPTION, schema, "custom", _never_run)
    return OutputSpec(output_type, adapter, OutputSchema(name, schema), wrapped, instruction, final)


async def _never_run(args: JSONObject, ctx: object) -> ToolResult:
    return ToolResult(CALL_FINAL_RESULT, is_error=True)


def output_options(
    output_type: object,
    mode: object,
    retries: object,
    validator: object,
    *,
    default_mode: OutputMode | None,
    style: str,
) -> OutputOptions | None:
    """A run's structured-output options, checked (``ConfigError`` naming a bad one), or
    ``None`` without an ``output_type``. ``mode`` falls back on the client's default, then on
    the style's."""
    if mode is not None and mode not in OUTPUT_MODES:
        raise ConfigError(f"output_mode must be one of {', '.join(OUTPUT_MODES)}, not {mode!r}")
    if not isinstance(retries, int) or isinstance(retries, bool) or retries < 0:
        raise ConfigError(f"output_retries must be an integer, 0 or more, not {retries!r}")
    if validator is not None and not callable(validator):
        raise ConfigError(f"output_validator must be a function, not {validator!r:.60}")
    if output_type is None:
        return None
    spec = output_spec(output_type)
    chosen: OutputMode = mode or default_mode or output_style(style).default_mode
    return OutputOptions(spec, chosen, retries, validator)


@dataclass(slots=True)
class Verdict:
    """One answer checked: its ``value`` when ``ok``, else the ``retry`` message."""

    ok: bool
    value: object = None
    retry: str = ""
    text: str = ""
    """The answer as text (``final_result``: the compact JSON of its arguments, unwrapped)."""


class _Invalid(Exception):
    """An answer that does not match; the message lists what is wrong."""


class AnswerCheck:
    """The structured-output state of one run."""

    def __init__(self, options: OutputOptions, style: str, *, copy: bool = False) -> None:
        self.options = options
        self.spec = options.spec
        self.mode = options.mode
        self.forms: OutputStyle = output_style(style)
        self.failures = 0
        self._schema = self.spec.schema
        if copy:  # the body is handed out (interceptors): keep the cached schema out of reach
            self._schema = OutputSchema(self._schema.name, deepcopy(self._schema.schema))

    # --- the request -------------------------------------------------------------------------

    def final(self, tool: str) -> bool:
        """Whether a call to ``tool`` is the answer (``final_result`` in tool mode), not a tool."""
        return self.mode == "tool" and tool == FINAL_RESULT

    def headers(self, headers: dict[str, str]) -> dict[str, str]:
        """The run's request headers with those the native form needs."""
        extra = self.forms.native_headers if self.mode == "native" else {}
        if not extra:
            return headers
        merged = dict(headers)
        lowered = {k.lower(): k for k in merged}
        for name, value in extra.items():
            present = lowered.get(name.lower())
            if present is None:
                merged[name] = value
            elif value not in [v.strip() for v in merged[present].split(",")]:
                merged[present] = f"{merged[present]},{value}"
        return merged

    def shape(self, body: JSONObject) -> JSONObject:
        """``body`` as this run's mode sends it."""
        if self.mode == "native":
            return self.forms.native(body, self._schema)
        if self.mode == "prompted":
            return self.forms.prompted(body, self.spec.instruction)
        return body

    # --- the answers -------------------------------------------------------------------------

    async def check_text(self, text: str) -> Verdict:
        """A text answer (the ``tool`` mode wants a ``final_result`` call instead)."""
        if self.mode == "tool":
            return Verdict(False, retry=RETRY.format(errors=CALL_FINAL_RESULT), text=text)
        try:
            value = _parse(text if self.mode == "native" else _fenced(text))
            return Verdict(True, await self._validated(value), text=text)
        except _Invalid as exc:
            return Verdict(False, retry=RETRY.format(errors=exc), text=text)

    async def check_call(self, args: JSONObject, error: str | None) -> Verdict:
        """A ``final_result`` call: its arguments (``error`` when they were not a JSON object)."""
        inner = args.get(WRAPPED_KEY) if self.spec.wrapped and WRAPPED_KEY in args else args
        text = compact_json(inner)
        try:
            if error is not None:
                raise _Invalid(error)
            return Verdict(True, await self._validated(args), text=text)
        except _Invalid as exc:
            return Verdict(False, retry=RETRY.format(errors=exc), text=text)

    def failed(self) -> bool:
        """Count a failed answer; ``True`` when no retry is left."""
        self.failures += 1
        return self.failures > self.options.retries

    def retry_message(self, verdict: Verdict) -> JSONObject:
        """The user message asking again after a failed text answer."""
        return self.forms.user_message(verdict.retry)

    async def _validated(self, value: object) -> object:
        from pydantic import ValidationError

        if self.spec.wrapped:
            if not isinstance(value, dict) or WRAPPED_KEY not in value:
                raise _Invalid(f"{WRAPPED_KEY}: Field required")
            extra = sorted(k for k in value if k != WRAPPED_KEY)
            if extra:
                raise _Invalid(f"{extra[0]}: Extra inputs are not permitted")
            value = value[WRAPPED_KEY]
        try:
            checked = self.spec.adapter.validate_python(value)
        except ValidationError as exc:
            raise _Invalid(_errors(exc, WRAPPED_KEY if self.spec.wrapped else None)) from None
        validator = self.options.validator
        if validator is None:
            return checked
        try:
            return await maybe_await(validator, checked)
        except ModelRetry as exc:
            raise _Invalid(str(exc) or "rejected by the output validator") from None


def _fenced(text: str) -> str:
    """The first fenced json block of a prompted answer, else the whole text."""
    match = _FENCED.search(text)
    return match.group(1) if match else text


def _parse(text: str) -> object:
    stripped = text.strip()
    if not stripped:
        raise _Invalid("the answer is empty: expected a JSON value")
    try:
        return loads(stripped)
    except ValueError as exc:
        raise _Invalid(f"the answer is not valid JSON: {exc}") from None


def _errors(exc: Any, root: str | None) -> str:
    """Every failing field of a ``ValidationError``, one per line, as ``a.b.0: message``."""
    lines = []
    for error in exc.errors(include_url=False):
        path = [str(part) for part in error.get("loc", ())]
        if root is not None:
            path.insert(0, root)
        lines.append(f"{'.'.join(path) or '(root)'}: {error.get('msg', 'invalid')}")
    return "\n".join(lines)
