"""Metric events handed to ``on_metric``: one per LLM call, per tool execution, per run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._callbacks import call_quietly
from ._redact import redact_value
from .types import JSONObject, ToolSource

__all__ = ["MetricSink", "Metrics"]

MetricSink = Callable[[JSONObject], Any]


class Metrics:
    """Builds the event dicts and delivers them; a raising sink is logged and ignored."""

    __slots__ = ("_sink",)

    def __init__(self, sink: MetricSink | None) -> None:
        self._sink = sink

    @property
    def enabled(self) -> bool:
        return self._sink is not None

    async def llm(
        self, *, model: str, ok: bool, ms: float, prompt_tokens: int = 0, completion_tokens: int = 0
    ) -> None:
        if self._sink is None:
            return
        await self._emit(
            {
                "event": "llm",
                "model": model,
                "status": "ok" if ok else "error",
                "ms": ms,
                "prompt_tokens": prompt_tokens if ok else 0,
                "completion_tokens": completion_tokens if ok else 0,
            }
        )

    async def tool(
        self, *, tool: str, source: ToolSource, is_error: bool, ms: float, pending: bool = False
    ) -> None:
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
    ) -> None:
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
        if error is not None:
            event["error"] = error
        else:
            event["status"] = status
        await self._emit(event)

    async def _emit(self, event: JSONObject) -> None:
        await call_quietly(self._sink, redact_value(event), what="on_metric")
