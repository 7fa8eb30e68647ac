"""OpenTelemetry traces of agent runs, after the GenAI semantic conventions (``toolnexus[otel]``).

``instrument(client)`` adds an interceptor to the client, so every run — ``run``, ``stream``,
``ask``, whichever model sits behind the client — produces:

- ``invoke_agent``: one span per run, child of whatever span is current when the run starts;
- ``chat {model}``: one child per model call (its retries inside), with that call's usage;
- ``execute_tool {tool}``: one child per tool execution; the tool runs with it as the current
  span, so spans the tool starts are its children.

Failures set status ERROR and ``error.type``: the exception's class name on the failed
``chat`` span and on ``invoke_agent`` (``LLMError``, ``RunTimeout``, ``RunCancelled``…),
``"tool_error"`` on an ``execute_tool`` span whose result is an error (a suspension is not).
A stream closed early ends its spans with status unset. Message contents are recorded only
with ``capture_content=True``. Only this module imports ``opentelemetry`` (the API alone).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer, TracerProvider

from . import __version__
from .client import Client
from .engine.interceptors import (
    CallModel,
    ExecuteTool,
    Interceptor,
    ModelCall,
    RunInfo,
    ToolExecution,
)
from .suspension import pending_of
from .types import JSONObject, RunResult, ToolResult

__all__ = ["instrument"]

_OPERATION = "gen_ai.operation.name"
_PROVIDER = "gen_ai.provider.name"
_MODEL = "gen_ai.request.model"
_ERROR_TYPE = "error.type"


def instrument(
    client: Client,
    *,
    tracer_provider: TracerProvider | None = None,
    capture_content: bool = False,
) -> Client:
    """Trace ``client``'s runs (in place) and return it.

    ``tracer_provider`` defaults to the global one. With ``capture_content=True`` the spans
    also carry, as compact JSON, the messages sent and received, the system instructions, and
    tool arguments and outputs. Instrumenting a client again replaces the earlier tracing.
    """
    for old in client.interceptors:
        if isinstance(old, _Tracing):
            client.remove_interceptor(old)
    tracer = trace.get_tracer("toolnexus", __version__, tracer_provider=tracer_provider)
    client.add_interceptor(_Tracing(tracer, capture_content))
    return client


_PROVIDERS = {"responses": "openai", "gemini": "gcp.gemini"}
"""The GenAI ``provider.name`` of the wire styles not named after their provider."""


def _provider(style: str) -> str:
    return _PROVIDERS.get(style, style)


class _Tracing(Interceptor):
    def __init__(self, tracer: Tracer, capture_content: bool) -> None:
        self._tracer = tracer
        self._capture = capture_content

    def run_started(self, run: RunInfo) -> None:
        run.state[self] = self._tracer.start_span(
            "invoke_agent",
            kind=SpanKind.INTERNAL,
            attributes={
                _OPERATION: "invoke_agent",
                _PROVIDER: _provider(run.style),
                _MODEL: run.model,
            },
        )

    def run_finished(
        self, run: RunInfo, result: RunResult | None, error: BaseException | None
    ) -> None:
        span: Span | None = run.state.pop(self, None)
        if span is None:
            return
        if error is not None:
            _fail(span, _error_type(error, run))
        span.end()

    async def around_llm(self, call_next: CallModel, call: ModelCall) -> JSONObject:
        run = call.run
        span = self._tracer.start_span(
            f"chat {run.model}",
            context=self._parent(run),
            kind=SpanKind.CLIENT,
            attributes={_OPERATION: "chat", _PROVIDER: _provider(run.style), _MODEL: run.model},
        )
        try:
            if self._capture:
                _record_request(span, call.body)
            try:
                reply = await call_next(call)
            except BaseException as exc:
                if not _abandoned(exc, run):
                    _fail(span, _error_type(exc, run))
                raise
            usage = call.usage_of(reply)
            span.set_attribute("gen_ai.usage.input_tokens", usage.prompt_tokens)
            span.set_attribute("gen_ai.usage.output_tokens", usage.completion_tokens)
            if self._capture:
                span.set_attribute("gen_ai.output.messages", _json([call.message_of(reply)]))
            return reply
        finally:
            span.end()

    async def around_tool(self, call_next: ExecuteTool, call: ToolExecution) -> ToolResult:
        run = call.run
        span = self._tracer.start_span(
            f"execute_tool {call.name}",
            context=self._parent(run),
            kind=SpanKind.INTERNAL,
            attributes={
                _OPERATION: "execute_tool",
                "gen_ai.tool.name": call.name,
                "gen_ai.tool.call.id": call.call_id,
            },
        )
        try:
            if self._capture:
                span.set_attribute("gen_ai.tool.call.arguments", _json(call.args))
            try:
                with trace.use_span(span, record_exception=False, set_status_on_exception=False):
                    result = await call_next(call)
            except BaseException as exc:
                _fail(span, _error_type(exc, run))
                raise
            if result.is_error and pending_of(result) is None:
                _fail(span, "tool_error")
            if self._capture:
                span.set_attribute("gen_ai.tool.call.result", _json(result.output))
            return result
        finally:
            span.end()

    def _parent(self, run: RunInfo) -> Any:
        span = run.state.get(self)
        return trace.set_span_in_context(span) if span is not None else None


def _record_request(span: Span, body: JSONObject) -> None:
    """The request's transcript (``messages``; ``input`` of responses, ``contents`` of gemini)
    and system prompt (``system``, ``instructions``, ``systemInstruction``)."""
    messages = body.get("messages") or body.get("input") or body.get("contents") or []
    span.set_attribute("gen_ai.input.messages", _json(messages))
    system = body.get("system") or body.get("instructions") or body.get("systemInstruction")
    if system:
        span.set_attribute("gen_ai.system_instructions", _json(system))


def _fail(span: Span, error_type: str) -> None:
    span.set_status(Status(StatusCode.ERROR))
    span.set_attribute(_ERROR_TYPE, error_type)


def _error_type(error: BaseException, run: RunInfo) -> str:
    """The class name; for the cancellation that stops a run, the reason's."""
    if isinstance(error, asyncio.CancelledError) and run.stop_reason is not None:
        return type(run.stop_reason).__name__
    return type(error).__name__


def _abandoned(error: BaseException, run: RunInfo) -> bool:
    return isinstance(error, asyncio.CancelledError) and run.abandoned


def _json(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)
