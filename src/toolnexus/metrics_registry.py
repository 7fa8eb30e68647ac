"""``MetricsRegistry``: counters and histograms fed by metric events, as Prometheus text.

The metrics, in their fixed order (HELP text in brackets):

- ``toolnexus_llm_requests_total{model,status}`` counter [Total LLM requests.]: every ``llm``
  event;
- ``toolnexus_llm_tokens_total{type}`` counter [Total tokens, by type.]: ``prompt`` and
  ``completion`` tokens of ``llm`` events with status ``ok``;
- ``toolnexus_llm_request_duration_seconds{model}`` histogram: every ``llm`` event;
- ``toolnexus_tool_calls_total{tool,source,is_error,pending}`` counter: every ``tool`` event;
- ``toolnexus_tool_duration_seconds{tool}`` histogram: every ``tool`` event;
- ``toolnexus_run_errors_total{model}`` counter: ``run`` events carrying ``error``.

Recording takes a lock held for a few dictionary operations, so a scrape may render from any
thread while runs record on others.
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["BUCKETS", "Family", "MetricsRegistry"]

BUCKETS: tuple[float, ...] = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
"""Histogram bucket upper bounds in seconds (``+Inf`` follows)."""
_BOUND_TEXT = (*(f"{b:g}" for b in BUCKETS), "+Inf")

_LLM_REQUESTS = ("toolnexus_llm_requests_total", "Total LLM requests.", ("model", "status"))
_TOKENS = ("toolnexus_llm_tokens_total", "Total tokens, by type.", ("type",))
_LLM_SECONDS = (
    "toolnexus_llm_request_duration_seconds",
    "LLM request duration in seconds.",
    ("model",),
)
_TOOL_CALLS = (
    "toolnexus_tool_calls_total",
    "Total tool calls.",
    ("tool", "source", "is_error", "pending"),
)
_TOOL_SECONDS = (
    "toolnexus_tool_duration_seconds",
    "Tool execution duration in seconds.",
    ("tool",),
)
_RUN_ERRORS = ("toolnexus_run_errors_total", "Total run errors.", ("model",))


_Key = tuple[str, ...]
_Spec = tuple[str, str, tuple[str, ...]]
_HistogramData = tuple[tuple[int, ...], float, int]


@dataclass(frozen=True, slots=True)
class Family:
    """One metric's current series, for exporters (``render`` and the collectors).

    ``samples`` are sorted by rendered label string. A counter's sample is
    ``(label_values, value)``; a histogram's is ``(label_values, cumulative_bucket_counts,
    sum, count)`` with one count per bound of ``BUCKETS`` and a last one for ``+Inf``.
    """

    name: str
    help: str
    type: Literal["counter", "histogram"]
    labels: tuple[str, ...]
    samples: tuple[tuple[Any, ...], ...]


class _Histogram:
    __slots__ = ("count", "counts", "sum")

    def __init__(self) -> None:
        self.counts = [0] * (len(BUCKETS) + 1)
        self.sum = 0.0
        self.count = 0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(BUCKETS, value)] += 1
        self.sum += value
        self.count += 1

    def cumulative(self) -> tuple[int, ...]:
        out, total = [], 0
        for n in self.counts:
            total += n
            out.append(total)
        return tuple(out)


class MetricsRegistry:
    """Aggregates metric events (``record``) and renders them as Prometheus text (``render``).

    Every client records into one (``client.metrics()`` renders it); pass the same registry to
    several clients with ``create_client(..., metrics_registry=registry)`` to aggregate them.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._llm_requests: dict[_Key, int] = {}
        self._tokens: dict[_Key, int] = {}
        self._llm_seconds: dict[_Key, _Histogram] = {}
        self._tool_calls: dict[_Key, int] = {}
        self._tool_seconds: dict[_Key, _Histogram] = {}
        self._run_errors: dict[_Key, int] = {}

    def record(self, event: Mapping[str, Any]) -> None:
        """Count one metric event (the dicts ``on_metric`` receives); other kinds are ignored.

        Raises ``ValueError`` naming the field when an ``llm``, ``tool`` or ``run`` event lacks
        one the metrics need.
        """
        try:
            kind = event.get("event")
            if kind == "llm":
                ok = event["status"] == "ok"
                self.llm(
                    str(event["model"]),
                    str(event["status"]),
                    float(event["ms"]),
                    int(event.get("prompt_tokens") or 0) if ok else 0,
                    int(event.get("completion_tokens") or 0) if ok else 0,
                )
            elif kind == "tool":
                self.tool(
                    str(event["tool"]),
                    str(event["source"]),
                    bool(event["is_error"]),
                    bool(event.get("pending", False)),
                    float(event["ms"]),
                )
            elif kind == "run" and "error" in event:
                self.run_error(str(event["model"]))
        except KeyError as exc:
            raise ValueError(f"{event.get('event')} metric event has no {exc.args[0]!r}") from None

    def llm(self, model: str, status: str, ms: float, prompt: int, completion: int) -> None:
        """Count one model call (``llm`` event)."""
        key = (model, status)
        with self._lock:
            self._llm_requests[key] = self._llm_requests.get(key, 0) + 1
            if status == "ok":
                self._tokens[("prompt",)] = self._tokens.get(("prompt",), 0) + prompt
                self._tokens[("completion",)] = self._tokens.get(("completion",), 0) + completion
            histogram = self._llm_seconds.get((model,))
            if histogram is None:
                histogram = self._llm_seconds[(model,)] = _Histogram()
            histogram.observe(ms / 1000.0)

    def tool(self, tool: str, source: str, is_error: bool, pending: bool, ms: float) -> None:
        """Count one tool execution (``tool`` event)."""
        key = (tool, source, "true" if is_error else "false", "true" if pending else "false")
        with self._lock:
            self._tool_calls[key] = self._tool_calls.get(key, 0) + 1
            histogram = self._tool_seconds.get((tool,))
            if histogram is None:
                histogram = self._tool_seconds[(tool,)] = _Histogram()
            histogram.observe(ms / 1000.0)

    def run_error(self, model: str) -> None:
        """Count one run that raised (``run`` event with ``error``)."""
        with self._lock:
            self._run_errors[(model,)] = self._run_errors.get((model,), 0) + 1

    def families(self) -> list[Family]:
        """A consistent snapshot of every metric, in the fixed order."""
        with self._lock:
            counters: list[tuple[_Spec, dict[_Key, int]]] = [
                (_LLM_REQUESTS, dict(self._llm_requests)),
                (_TOKENS, dict(self._tokens)),
                (_TOOL_CALLS, dict(self._tool_calls)),
                (_RUN_ERRORS, dict(self._run_errors)),
            ]
            histograms: list[tuple[_Spec, dict[_Key, _HistogramData]]] = [
                (
                    _LLM_SECONDS,
                    {k: (h.cumulative(), h.sum, h.count) for k, h in self._llm_seconds.items()},
                ),
                (
                    _TOOL_SECONDS,
                    {k: (h.cumulative(), h.sum, h.count) for k, h in self._tool_seconds.items()},
                ),
            ]
        out = {spec[0]: _counter(spec, values) for spec, values in counters}
        out.update({spec[0]: _histogram(spec, values) for spec, values in histograms})
        order = (_LLM_REQUESTS, _TOKENS, _LLM_SECONDS, _TOOL_CALLS, _TOOL_SECONDS, _RUN_ERRORS)
        return [out[spec[0]] for spec in order]

    def render(self) -> str:
        """The Prometheus text exposition of every metric (ends with one newline)."""
        lines: list[str] = []
        for family in self.families():
            lines.append(f"# HELP {family.name} {family.help}")
            lines.append(f"# TYPE {family.name} {family.type}")
            if family.type == "counter":
                for values, value in family.samples:
                    lines.append(f"{family.name}{{{_labels(family.labels, values)}}} {_num(value)}")
                continue
            for values, buckets, total, count in family.samples:
                labels = _labels(family.labels, values)
                for bound, n in zip(_BOUND_TEXT, buckets, strict=True):
                    lines.append(f'{family.name}_bucket{{{labels},le="{bound}"}} {n}')
                lines.append(f"{family.name}_sum{{{labels}}} {_num(total)}")
                lines.append(f"{family.name}_count{{{labels}}} {count}")
        return "\n".join(lines) + "\n"


def _counter(spec: _Spec, values: Mapping[_Key, int]) -> Family:
    name, help_text, labels = spec
    samples = sorted(values.items(), key=lambda item: _labels(labels, item[0]))
    return Family(name, help_text, "counter", labels, tuple(samples))


def _histogram(spec: _Spec, values: Mapping[_Key, _HistogramData]) -> Family:
    name, help_text, labels = spec
    ordered = sorted(values.items(), key=lambda item: _labels(labels, item[0]))
    samples = tuple((key, *data) for key, data in ordered)
    return Family(name, help_text, "histogram", labels, samples)


def _labels(names: tuple[str, ...], values: tuple[str, ...]) -> str:
    return ",".join(f'{n}="{_escape(v)}"' for n, v in zip(names, values, strict=True))


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _num(value: float) -> str:
    """Integral values without a decimal point; other floats as ``repr``."""
    if isinstance(value, int):
        return str(value)
    if value.is_integer():
        return str(int(value))
    return repr(value)
