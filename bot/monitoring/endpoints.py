"""``/readyz`` and ``/metrics``, the middleware that measures and names every request, and the
metrics' own port.

Every request gets a request id: the caller's ``X-Request-Id`` when it is a short token, else a
fresh one; it is in every log line written while the request is handled and in the answer's
``X-Request-Id``.
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Mapping

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware
from prometheus_client import CONTENT_TYPE_LATEST

from bot.api.loop_lag import LoopLag
from bot.api.quotas import Quotas
from bot.monitoring.health import Readiness
from bot.monitoring.logs import REQUEST_ID
from bot.monitoring.metrics import Metrics
from store.protocol import Store

__all__ = [
    "METRICS",
    "READINESS",
    "MetricsSampler",
    "install_sampler",
    "metrics_app",
    "monitoring_middleware",
    "monitoring_routes",
]

METRICS: web.AppKey[Metrics] = web.AppKey("metrics", Metrics)
READINESS: web.AppKey[Readiness] = web.AppKey("readiness", Readiness)

#: Slack's route: the time to answer it is a click's acknowledgement
SLACK_EVENTS = "/slack/events"
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class MetricsSampler:
    """Reads, at each scrape, what the metrics show of the store and of the open long-polls."""

    def __init__(
        self,
        metrics: Metrics,
        store: Store,
        quotas: Quotas,
        agents: Mapping[str, object],
        *,
        loop_lag: LoopLag | None = None,
    ) -> None:
        self.metrics = metrics
        self._store = store
        self._quotas = quotas
        self._agents = tuple(agents)
        self._loop_lag = loop_lag

    async def sample(self) -> None:
        metrics = self.metrics
        if self._loop_lag is not None:
            metrics.loop_lag.set(self._loop_lag.lag)
        for agent in self._agents:
            metrics.long_polls.labels(agent).set(self._quotas.long_polls(agent))
        try:
            head = await self._store.audit_head()
            proposals = await self._store.pending_deliveries()
            escalations = await self._store.escalations().pending_deliveries()
            recorded = await self._store.clicks().waiting_clicks()
        except Exception:  # the store is down: say so, and keep the last figures
            metrics.store_up.set(0)
            return
        metrics.store_up.set(1)
        metrics.audit_entries.set(head.seq)
        metrics.outbox_pending.labels("proposals").set(proposals)
        metrics.outbox_pending.labels("escalations").set(escalations)
        metrics.clicks_recorded.set(recorded)


def monitoring_middleware(metrics: Metrics) -> Middleware:
    """Names each request (request id) and counts it; times Slack's (the click's ack)."""

    @web.middleware
    async def observe(request: web.Request, handler: Handler) -> web.StreamResponse:
        given = request.headers.get("X-Request-Id", "")
        request_id = given if _REQUEST_ID.match(given) else secrets.token_hex(8)
        token = REQUEST_ID.set(request_id)
        started = time.perf_counter()
        status = 500
        try:
            response = await handler(request)
            status = response.status
            if not response.prepared:
                response.headers["X-Request-Id"] = request_id
            return response
        except web.HTTPException as answer:
            status = answer.status
            raise
        finally:
            resource = request.match_info.route.resource
            route = resource.canonical if resource is not None else "unmatched"
            method = request.method if request.method in _METHODS else "other"
            metrics.http_requests.labels(route, method, str(status)).inc()
            if route == SLACK_EVENTS:
                metrics.slack_ack_seconds.observe(time.perf_counter() - started)
            REQUEST_ID.reset(token)

    return observe


def monitoring_routes(*, metrics_here: bool) -> list[web.RouteDef]:
    """``/readyz``, and ``/metrics`` unless it has its own port."""
    routes = [web.get("/readyz", readyz)]
    if metrics_here:
        routes.append(web.get("/metrics", metrics_page))
    return routes


async def readyz(request: web.Request) -> web.Response:
    ready, answer = await request.app[READINESS].report()
    return web.json_response(answer, status=200 if ready else 503)


_SAMPLER: web.AppKey[MetricsSampler] = web.AppKey("metrics_sampler", MetricsSampler)


async def metrics_page(request: web.Request) -> web.Response:
    sampler = request.app[_SAMPLER]
    await sampler.sample()
    return web.Response(
        body=sampler.metrics.exposition(), headers={"Content-Type": CONTENT_TYPE_LATEST}
    )


def install_sampler(app: web.Application, sampler: MetricsSampler) -> None:
    """Give ``app`` (the main one, or the metrics port's) the sampler its /metrics reads."""
    app[_SAMPLER] = sampler


def metrics_app(sampler: MetricsSampler) -> web.Application:
    """``/metrics`` alone, for a port of its own (``[monitoring] metrics_port``)."""
    app = web.Application()
    install_sampler(app, sampler)
    app.router.add_get("/metrics", metrics_page)
    return app
