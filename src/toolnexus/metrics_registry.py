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


class _Series:
    """One model's or one tool's counts (by the remaining labels) and duration histogram."""

    __slots__ = ("buckets", "count", "counts", "sum")

    def __init__(self) -> None:
        self.counts: dict[Any, int] = {}
        self.buckets = [0] * (len(BUCKETS) + 1)
        self.sum = 0.0
        self.count = 0

    def histogram(self) -> _HistogramData:
        out, total = [], 0
        for n in self.buckets:
            total += n
            out.append(total)
        return tuple(out), self.sum, self.count


class MetricsRegistry:
    """Aggregates metric events (``record``) and renders them as Prometheus text (``render``).

    Every client records into one (``client.metrics()`` renders it); pass the same registry to
    several clients with ``create_client(..., metrics_registry=registry)`` to aggregate them.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._llm: dict[str, _Series] = {}
        self._tokens = [0, 0]  # prompt, completion
        self._tokens_seen = False
        self._tools: dict[str, _Series] = {}
        self._run_errors: dict[str, int] = {}

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
        seconds = ms / 1000.0
        with self._lock:
            series = self._llm.get(model)
            if series is None:
                series = self._llm[model] = _Series()
            series.counts[status] = series.counts.get(status, 0) + 1
            series.buckets[bisect_left(BUCKETS, seconds)] += 1
            series.sum += seconds
            series.count += 1
            if status == "ok":
                tokens = self._tokens
                tokens[0] += prompt
                tokens[1] += completion
                self._tokens_seen = True

    def tool(self, tool: str, source: str, is_error: bool, pending: bool, ms: float) -> None:
        """Count one tool execution (``tool`` event)."""
        seconds = ms / 1000.0
        key = (source, is_error, pending)
        with self._lock:
            series = self._tools.get(tool)
            if series is None:
                series = self._tools[tool] = _Series()
            series.counts[key] = series.counts.get(key, 0) + 1
            series.buckets[bisect_left(BUCKETS, seconds)] += 1
            series.sum += seconds
            series.count += 1

    def run_error(self, model: str) -> None:
        """Count one run that raised (``run`` event with ``error``)."""
        with self._lock:
            self._run_errors[model] = self._run_errors.get(model, 0) + 1

    def families(self) -> list[Family]:
        """A consistent snapshot of every metric, in the fixed order."""
        with self._lock:
            requests: dict[_Key, int] = {
                (model, status): n
                for model, series in self._llm.items()
                for status, n in series.counts.items()
            }
            tokens: dict[_Key, int] = {}
            if self._tokens_seen:
                tokens = {("prompt",): self._tokens[0], ("completion",): self._tokens[1]}
            llm_seconds: dict[_Key, _HistogramData] = {
                (model,): s.histogram() for model, s in self._llm.items()
            }
            calls: dict[_Key, int] = {
                (tool, source, _bool(is_error), _bool(pending)): n
                for tool, series in self._tools.items()
                for (source, is_error, pending), n in series.counts.items()
            }
            tool_seconds: dict[_Key, _HistogramData] = {
                (tool,): s.histogram() for tool, s in self._tools.items()
            }
            errors: dict[_Key, int] = {(model,): n for model, n in self._run_errors.items()}
        return [
            _counter(_LLM_REQUESTS, requests),
            _counter(_TOKENS, tokens),
            _histogram(_LLM_SECONDS, llm_seconds),
            _counter(_TOOL_CALLS, calls),
            _histogram(_TOOL_SECONDS, tool_seconds),
            _counter(_RUN_ERRORS, errors),
        ]

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


def _bool(value: bool) -> str:
    return "true" if value else "false"


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
