"""Running Countersign in production: metrics, logs and health.

- ``metrics``: the Prometheus metrics of one app, in its own registry
- ``events``: every decision and outcome, as a log line and in the metrics
- ``logs``: one structured line per event (JSON, or readable at a terminal)
- ``health``: readiness (``/readyz``) and Slack's answer to the bot token at start
- ``endpoints``: ``/readyz``, ``/metrics``, the request-id middleware, the metrics' own port
- ``timed_store``: the store with each verb timed
- ``version``: the running version

The names below are imported from their module when first asked for, so that importing one
module of this package imports neither the others nor the app they need.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot import exported_from

if TYPE_CHECKING:
    from bot.monitoring.endpoints import (
        METRICS,
        READINESS,
        MetricsSampler,
        install_sampler,
        metrics_app,
        monitoring_middleware,
        monitoring_routes,
    )
    from bot.monitoring.events import Observer
    from bot.monitoring.health import Readiness, SlackUnusable, confirm_slack
    from bot.monitoring.logs import configure_logging, log_level
    from bot.monitoring.metrics import CountedCoalescer, Metrics
    from bot.monitoring.timed_store import timed_store
    from bot.monitoring.version import countersign_version

__all__ = [
    "METRICS",
    "READINESS",
    "CountedCoalescer",
    "Metrics",
    "MetricsSampler",
    "Observer",
    "Readiness",
    "SlackUnusable",
    "configure_logging",
    "confirm_slack",
    "countersign_version",
    "install_sampler",
    "log_level",
    "metrics_app",
    "monitoring_middleware",
    "monitoring_routes",
    "timed_store",
]

#: the module of this package that defines each public name
_DEFINED_IN = {
    "METRICS": "endpoints",
    "READINESS": "endpoints",
    "CountedCoalescer": "metrics",
    "Metrics": "metrics",
    "MetricsSampler": "endpoints",
    "Observer": "events",
    "Readiness": "health",
    "SlackUnusable": "health",
    "configure_logging": "logs",
    "confirm_slack": "health",
    "countersign_version": "version",
    "install_sampler": "endpoints",
    "log_level": "logs",
    "metrics_app": "endpoints",
    "monitoring_middleware": "endpoints",
    "monitoring_routes": "endpoints",
    "timed_store": "timed_store",
}

__getattr__ = exported_from(__name__, _DEFINED_IN)
