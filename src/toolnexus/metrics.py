"""Metric events: one per LLM call, per tool execution, per run.

Each goes to the client's ``MetricsRegistry`` (Prometheus text) and, as a dict, to ``on_metric``.

A stream its consumer leaves early still reports the model call it interrupted (``status``
``"error"``) and the run (``status`` ``"abandoned"``), both with ``"abandoned": True``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._callbacks import call_quietly
from ._redact import redact_value
from .metrics_registry import MetricsRegistry
from .types import JSONObject, ToolSource

__all__ = ["MetricSink", "Metrics"]

MetricSink = Callable[[JSONObject], Any]


class Metrics:
    """Records events in the registry, builds the dicts for the sink and delivers them.

    A raising sink is logged and ignored.
    """

    __slots__ = ("_registry", "_sink")

    def __init__(self, sink: MetricSink | None, registry: MetricsRegistry | None = None) -> None:
        self._sink = sink
        self._registry = registry

    @property
    def enabled(self) -> bool:
        return self._sink is not None or self._registry is not None

    @property
    def registry(self) -> MetricsRegistry | None:
        return self._registry

    async def llm(
        self,
        *,
        model: str,
        ok: bool,
        ms: float,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        abandoned: bool = False,
    ) -> None:
        if self._registry is not None:
            self._registry.llm(
                model,
                "ok" if ok else "error",
                ms,
                prompt_tokens if ok else 0,
                completion_tokens if ok else 0,
            )
        if self._sink is None:
            return
        event: JSONObject = {
            "event": "llm",
            "model": model,
            "status": "ok" if ok else "error",
            "ms": ms,
            "prompt_tokens": prompt_tokens if ok else 0,
            "completion_tokens": completion_tokens if ok else 0,
        }
        if abandoned:
            event["abandoned"] = True
        await self._emit(event)

    async def tool(
        self, *, tool: str, source: ToolSource, is_error: bool, ms: float, pending: bool = False
    ) -> None:
        if self._registry is not None:
            self._registry.tool(tool, source, is_error, pending, ms)
        if self._sink is None:
            return
        event: JSONObject = {
            "event": "tool",
            "tool": tool,
            "source": source,
            "is_error": is_error,
            "ms": ms,
        }
        if pending:
            event["pending"] = True
        await self._emit(event)

    async def run(
        self,
        *,
        model: str,
        turns: int,
        tool_calls: int,
        total_tokens: int,
        ms: float,
        status: str | None = None,
        error: str | None = None,
        abandoned: bool = False,
    ) -> None:
        if self._registry is not None and error is not None:
            self._registry.run_error(model)
        if self._sink is None:
            return
        event: JSONObject = {
            "event": "run",
            "model": model,
            "turns": turns,
            "tool_calls": tool_calls,
            "total_tokens": total_tokens,
            "ms": ms,
        }
        if abandoned:
            event["status"] = "abandoned"
            event["abandoned"] = True
        elif error is not None:
            event["error"] = error
        else:
            event["status"] = status
        await self._emit(event)

    async def _emit(self, event: JSONObject) -> None:
        await call_quietly(self._sink, redact_value(event), what="on_metric")
