"""Metrics in Prometheus' format, one registry per app (several apps may share a process).

Names follow Prometheus' conventions (``countersign_`` prefix, base units, ``_total`` for
counters). Labels take only values from a bounded set: operations and agents from the
configuration, statuses and outcomes from the code, Slack method names, HTTP route templates.
Never an id or a person. docs/operations.md lists every metric with example alerts.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from types import SimpleNamespace
from typing import Any, TypeVar, get_args

import aiohttp
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from bot.api.refusals import AgentLimit, Shed, TokenRefusal
from bot.outbound.outbox import Coalescer, DeliverRun, Job
from store.proposals import Delivery, Effect, Proposal

__all__ = ["CountedCoalescer", "Metrics", "lane_of"]

T = TypeVar("T")

#: what a Slack Web API method name looks like (chat.postMessage, usergroups.users.list)
_SLACK_METHOD = re.compile(r"^[a-z]+(\.[A-Za-z]+){1,3}$")

#: seconds from a question in Slack to its decision: a minute to a week
_DECISION_BUCKETS = (10, 30, 60, 300, 900, 1800, 3600, 7200, 14400, 43200, 86400, 259200, 604800)
#: seconds Slack waits for the answer to an interaction (it gives up at 3)
_ACK_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5)
#: seconds one store call takes, group commit included
_STORE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5)
#: seconds an outbox entry waited, from being written to an attempt at delivering it
_WAIT_BUCKETS = (0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600)


def lane_of(effect: Effect) -> str:
    """The outbox lane an effect is delivered in: agent callbacks apart from Slack."""
    return "callback" if effect is Effect.CALLBACK else "slack"


class Metrics:
    """Every metric of one app, in its own registry. ``clock`` is the app's clock (for the age
    of outbox entries); the delivery times use the wall clock and a monotonic one."""

    def __init__(self, *, version: str, clock: Callable[[], datetime]) -> None:
        self.registry = CollectorRegistry()
        self._clock = clock
        r = self.registry
        Gauge(
            "countersign_build_info", "The running version (always 1)", ["version"], registry=r
        ).labels(version=version).set(1)
        self.proposals = Counter(
            "countersign_proposals",
            "Proposals that entered a status here, by operation, policy decision and status",
            ["operation", "decision", "status"],
            registry=r,
        )
        self.decision_seconds = Histogram(
            "countersign_decision_seconds",
            "From a proposal's question in Slack to its decision (approved, rejected, expired, "
            "superseded), in seconds",
            ["operation", "result"],
            buckets=_DECISION_BUCKETS,
            registry=r,
        )
        self.executions = Counter(
            "countersign_executions",
            "Executions that recorded an outcome, by operation and outcome kind",
            ["operation", "outcome"],
            registry=r,
        )
        self.escalations = Counter(
            "countersign_escalations",
            "Escalations that entered a status here",
            ["status"],
            registry=r,
        )
        self.slack_ack_seconds = Histogram(
            "countersign_slack_ack_seconds",
            "Time to answer a request from Slack (a click's acknowledgement), in seconds",
            buckets=_ACK_BUCKETS,
            registry=r,
        )
        self.http_requests = Counter(
            "countersign_http_requests",
            "HTTP requests answered, by route template, method and status code",
            ["route", "method", "code"],
            registry=r,
        )
        self.slack_requests = Counter(
            "countersign_slack_api_requests",
            "Slack Web API calls by method and HTTP status (429: rate limited; 'error': no answer)",
            ["method", "code"],
            registry=r,
        )
        self.slack_auth_ok = Gauge(
            "countersign_slack_auth_ok",
            "1 once Slack's auth.test has succeeded with the bot token, else 0",
            registry=r,
        )
        self.outbox_pending = Gauge(
            "countersign_outbox_pending",
            "Outbox entries neither delivered nor abandoned, per outbox (read at scrape)",
            ["outbox"],
            registry=r,
        )
        self.clicks_recorded = Gauge(
            "countersign_clicks_recorded",
            "Approve clicks recorded and not yet applied (read at scrape): people's decisions "
            "waiting for the service",
            registry=r,
        )
        self.outbox_wait_seconds = Histogram(
            "countersign_outbox_wait_seconds",
            "From an outbox entry being written to an attempt at delivering it, per lane",
            ["outbox", "lane"],
            buckets=_WAIT_BUCKETS,
            registry=r,
        )
        self.outbox_deliveries = Counter(
            "countersign_outbox_deliveries",
            "Delivery attempts per outbox and lane, by result (delivered, failed)",
            ["outbox", "lane", "result"],
            registry=r,
        )
        self.outbox_last_delivery = Gauge(
            "countersign_outbox_last_delivery_timestamp_seconds",
            "When this instance last delivered an outbox entry (Unix time)",
            registry=r,
        )
        self.loop_lag = Gauge(
            "countersign_event_loop_lag_seconds",
            "How far behind the event loop is (read at scrape): past "
            "server.shed_agents_at_loop_lag_ms, agents' submissions are answered 503",
            registry=r,
        )
        self.reads_limited = Counter(
            "countersign_agent_reads_limited",
            "Agents' reads, long-polls' starts and withdrawals refused (429) past the agent's "
            "limits.reads_per_second, by agent",
            ["agent"],
            registry=r,
        )
        self.requests_limited = Counter(
            "countersign_agent_requests_limited",
            "Agents' submissions and long-polls refused (429) at one of the agent's own limits, "
            "by agent and limit (its setting under [limits]: submissions_per_second, "
            "max_pending_proposals, max_open_escalations, max_long_polls); reads past "
            "reads_per_second are in countersign_agent_reads_limited_total",
            ["agent", "limit"],
            registry=r,
        )
        self.requests_shed = Counter(
            "countersign_agent_requests_shed",
            "Agents' requests answered 503 at once because the event loop was behind "
            "(server.shed_agents_at_loop_lag_ms), by request (submission; read: reads, "
            "long-polls, withdrawals)",
            ["request"],
            registry=r,
        )
        self.tokens_refused = Counter(
            "countersign_delegation_tokens_refused",
            "Delegation tokens refused without a lookup, by reason (malformed: 401, not shaped "
            "as minted; unknown_tokens_limit: 429, past delegation.unknown_tokens_per_second)",
            ["reason"],
            registry=r,
        )
        for request in get_args(Shed):  # every series from the start, for rate() and alerts
            self.requests_shed.labels(request)
        for reason in get_args(TokenRefusal):
            self.tokens_refused.labels(reason)
        self.long_polls = Gauge(
            "countersign_long_polls_open",
            "Long-polls (?wait=) held open now, per agent (read at scrape)",
            ["agent"],
            registry=r,
        )
        self.store_seconds = Histogram(
            "countersign_store_call_seconds",
            "Store calls (each one transaction or read) by verb, in seconds",
            ["verb"],
            buckets=_STORE_BUCKETS,
            registry=r,
        )
        self.store_up = Gauge(
            "countersign_store_up",
            "1 when the store answered the scrape's reads, else 0",
            registry=r,
        )
        self.audit_entries = Gauge(
            "countersign_audit_entries",
            "Entries in the audit chain (its head's sequence number)",
            registry=r,
        )
        self.audit_last_anchor = Gauge(
            "countersign_audit_last_anchor_timestamp_seconds",
            "When this instance last anchored the audit chain's head (Unix time; 0: never)",
            registry=r,
        )
        #: time.monotonic() of the last delivery (bot/monitoring/health.py: a stuck outbox)
        self.last_delivery: float | None = None

    def exposition(self) -> bytes:
        """The registry in Prometheus' text format."""
        return generate_latest(self.registry)

    # --- the agent API's refusals (bot/api/refusals.py Refusals) ---------------------------------

    def refusals_from_zero(self, agents: Sequence[str]) -> None:
        """Every series of the refusal counters that can be known in advance, at 0: each of
        ``agents`` (the configured names) with each limit, each shed request, each token
        refusal. A series first seen at 1 would hide its first refusal from ``rate()`` and
        ``increase()``, and an alert on it would wait for the second."""
        for agent in agents:
            self.reads_limited.labels(agent)
            for limit in get_args(AgentLimit):
                self.requests_limited.labels(agent, limit)
        for request in get_args(Shed):
            self.requests_shed.labels(request)
        for reason in get_args(TokenRefusal):
            self.tokens_refused.labels(reason)

    def read_limited(self, agent: str) -> None:
        self.reads_limited.labels(agent).inc()

    def limited(self, agent: str, limit: AgentLimit) -> None:
        self.requests_limited.labels(agent, limit).inc()

    def shed(self, request: Shed) -> None:
        self.requests_shed.labels(request).inc()

    def token_refused(self, reason: TokenRefusal) -> None:
        self.tokens_refused.labels(reason).inc()

    # --- the outbox ----------------------------------------------------------------------------

    def delivering(
        self, outbox: str, deliver: Callable[[T], Awaitable[None]]
    ) -> Callable[[T], Awaitable[None]]:
        """``deliver`` of ``outbox``'s entries, counted: the wait before each attempt, its
        result per lane, and when the last one went out."""

        async def counted(delivery: T) -> None:
            lane = lane_of(getattr(delivery, "effect", Effect.SLACK_POST))
            created = getattr(delivery, "created_at", None)
            if isinstance(created, datetime):
                waited = max((self._clock() - created).total_seconds(), 0.0)
                self.outbox_wait_seconds.labels(outbox, lane).observe(waited)
            await self.attempt(outbox, lane, functools.partial(deliver, delivery))

        return counted

    def delivering_runs(self, outbox: str, deliver_run: DeliverRun) -> DeliverRun:
        """``deliver_run`` (a proposal's entries leased together, bot/outbound/outbox.py),
        counted as :meth:`delivering` counts each entry: its wait, and each entry delivered; the
        entry that failed, as failed."""

        async def counted(
            run: Sequence[Delivery], proposal: Proposal | None, done: Callable[[Delivery], None]
        ) -> None:
            now = self._clock()
            for delivery in run:
                waited = max((now - delivery.created_at).total_seconds(), 0.0)
                self.outbox_wait_seconds.labels(outbox, lane_of(delivery.effect)).observe(waited)

            def delivered(delivery: Delivery) -> None:
                self.delivered(outbox, lane_of(delivery.effect))
                done(delivery)

            try:
                await deliver_run(run, proposal, delivered)
            except BaseException:
                self.failed(outbox, "slack")
                raise

        return counted

    async def attempt(self, outbox: str, lane: str, deliver: Callable[[], Awaitable[None]]) -> None:
        """One delivery attempt, counted: failed when ``deliver`` raises, else delivered."""
        try:
            await deliver()
        except BaseException:
            self.failed(outbox, lane)
            raise
        self.delivered(outbox, lane)

    def delivered(self, outbox: str, lane: str) -> None:
        self.outbox_deliveries.labels(outbox, lane, "delivered").inc()
        self.outbox_last_delivery.set(time.time())
        self.last_delivery = time.monotonic()

    def failed(self, outbox: str, lane: str) -> None:
        self.outbox_deliveries.labels(outbox, lane, "failed").inc()

    # --- Slack ---------------------------------------------------------------------------------

    def slack_trace(self) -> aiohttp.TraceConfig:
        """Counts every call of the Slack session it is given to, by method and status."""
        trace = aiohttp.TraceConfig()

        async def ended(
            session: aiohttp.ClientSession, context: SimpleNamespace, params: Any
        ) -> None:
            self.slack_requests.labels(_method(params.url), str(params.response.status)).inc()

        async def failed(
            session: aiohttp.ClientSession, context: SimpleNamespace, params: Any
        ) -> None:
            self.slack_requests.labels(_method(params.url), "error").inc()

        trace.on_request_end.append(ended)
        trace.on_request_exception.append(failed)
        return trace


class CountedCoalescer:
    """A coalescer (digests, bot/digests/outbox.py) whose jobs are counted as deliveries of the
    proposals' outbox, one each."""

    def __init__(self, inner: Coalescer, metrics: Metrics) -> None:
        self._inner = inner
        self._metrics = metrics

    async def split(
        self, due: Sequence[Delivery], *, full: bool, proposals: Mapping[str, Proposal]
    ) -> tuple[list[Job], list[Delivery]]:
        jobs, rest = await self._inner.split(due, full=full, proposals=proposals)
        return [Job(job.deliveries, self._counted(job)) for job in jobs], rest

    def _counted(self, job: Job) -> Callable[[], Awaitable[None]]:
        async def run() -> None:
            await self._metrics.attempt("proposals", "slack", job.run)

        return run


def _method(url: Any) -> str:
    name = str(getattr(url, "path", "")).rstrip("/").rsplit("/", 1)[-1]
    return name if _SLACK_METHOD.match(name) else "other"
