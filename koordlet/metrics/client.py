"""prometheus_client's types as the daemon's modules import them: from its submodules, under
the package koordlet.metrics registers without its HTTP servers (see there)."""

from prometheus_client.gc_collector import GCCollector
from prometheus_client.metrics import Counter, Gauge, Histogram
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.openmetrics.exposition import CONTENT_TYPE_LATEST as OPENMETRICS_CONTENT_TYPE
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector, CollectorRegistry
from prometheus_client.samples import Sample
from prometheus_client.utils import floatToGoString

# the text format's content type as prometheus_client's exposition module (>= 0.22) names it,
# which the daemon does not import
TEXT_CONTENT_TYPE = "text/plain; version=1.0.0; charset=utf-8"

__all__ = [
    "Collector", "CollectorRegistry", "Counter", "CounterMetricFamily", "GCCollector", "Gauge",
    "GaugeMetricFamily", "Histogram", "Metric", "OPENMETRICS_CONTENT_TYPE", "PlatformCollector",
    "ProcessCollector", "Sample", "TEXT_CONTENT_TYPE", "floatToGoString",
]
