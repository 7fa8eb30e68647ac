"""Expose a ``MetricsRegistry`` through ``prometheus_client`` (extra ``toolnexus[prometheus]``).

For a service that already serves ``prometheus_client`` metrics: register the collector once
and toolnexus's series appear on the existing ``/metrics`` beside the service's own::

    from toolnexus.prometheus import register

    register(client)                      # or register(registry, prometheus_registry)

This is the only module that imports ``prometheus_client``; nothing else in toolnexus does.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import REGISTRY, CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from .client import Client
from .errors import ConfigError
from .metrics_registry import BUCKETS, Family, MetricsRegistry

__all__ = ["PrometheusCollector", "register"]

_BOUNDS = (*(f"{b:g}" for b in BUCKETS), "+Inf")


class PrometheusCollector(Collector):
    """A ``prometheus_client`` collector reading one ``MetricsRegistry`` at each scrape."""

    def __init__(self, source: MetricsRegistry | Client) -> None:
        self.registry = _registry_of(source)

    def collect(self) -> Iterator[Metric]:
        """The registry's current series as ``prometheus_client`` metric families."""
        for family in self.registry.families():
            yield _convert(family)

    def describe(self) -> Iterator[Metric]:
        """The metric names, without samples (lets ``prometheus_client`` check for clashes)."""
        for family in MetricsRegistry().families():
            yield _convert(family)


def register(
    source: MetricsRegistry | Client, prometheus_registry: CollectorRegistry | None = None
) -> PrometheusCollector:
    """Register a collector for ``source`` (a client, or a registry shared by clients).

    ``prometheus_registry`` defaults to ``prometheus_client``'s global ``REGISTRY``. Returns
    the collector (``prometheus_registry.unregister(collector)`` removes it).
    """
    collector = PrometheusCollector(source)
    (prometheus_registry if prometheus_registry is not None else REGISTRY).register(collector)
    return collector


def _registry_of(source: MetricsRegistry | Client) -> MetricsRegistry:
    if isinstance(source, MetricsRegistry):
        return source
    if isinstance(source, Client):
        return source.metrics_registry
    raise ConfigError(f"expected a MetricsRegistry or a Client, not {type(source).__name__}")


def _convert(family: Family) -> Metric:
    labels = list(family.labels)
    if family.type == "counter":
        counter = CounterMetricFamily(family.name, family.help, labels=labels)
        for values, value in family.samples:
            counter.add_metric(list(values), value)
        return counter
    histogram = HistogramMetricFamily(family.name, family.help, labels=labels)
    for values, buckets, total, _count in family.samples:
        histogram.add_metric(
            list(values), list(zip(_BOUNDS, buckets, strict=True)), sum_value=total
        )
    return histogram
