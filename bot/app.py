"""The app factory: one aiohttp application serving Slack and the agent API."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import UTC, datetime, timedelta

import aiohttp
from aiohttp import web
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler

from bot.api.admission import Admission
from bot.api.agent_requests import LOOP_LAG, QUOTAS, REFUSALS, SUBMISSIONS, WAITERS
from bot.api.callback_http import CallbackHttp
from bot.api.callbacks import CallbackPoster, CallbackSender, DestinationSlots
from bot.api.loop_lag import LoopLag
from bot.api.problems import problem_middleware
from bot.api.proposals import SERVICE, agent_routes
from bot.api.quotas import Quotas
from bot.api.waiters import Waiters
from bot.audit.anchoring import Anchorer, anchor_forever
from bot.delegations.commands import DELEGATIONS, Delegations
from bot.delegations.listeners import register_delegation_listeners
from bot.digests.decisions import DigestService
from bot.digests.listeners import register_digest_listeners
from bot.digests.outbox import DigestOutbox
from bot.digests.recorded import DigestClicks
from bot.escalations.api import ESCALATIONS, escalation_routes
from bot.escalations.delivery import EscalationDeliverer
from bot.escalations.flow import EscalationService, reannounce_forever
from bot.escalations.listeners import register_escalation_listeners
from bot.escalations.recorded import EscalationClicks
from bot.flow.click_paths import Applier
from bot.flow.clicks import RecordedDecisions
from bot.flow.destinations import CallbackGuard, Resolve, system_resolve
from bot.flow.extensions import extension_of
from bot.flow.quorum import unreachable_quorums
from bot.flow.reminders import Reminders
from bot.flow.service import Service
from bot.flow.standing import offers
from bot.flow.subscribers import Subscribers
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
from bot.monitoring.health import Readiness, SlackUnusable, confirm_slack, confirm_slack_forever
from bot.monitoring.metrics import CountedCoalescer, Metrics
from bot.monitoring.store_watch import StoreWatch
from bot.monitoring.timed_store import timed_store
from bot.monitoring.version import countersign_version
from bot.operators.lease_check import lease_warnings
from bot.outbound.http import AiohttpClient
from bot.outbound.outbox import OutboxWorker, RetryPolicy
from bot.render.blocks import Message
from bot.settings import Settings
from bot.slack.directory import SlackDirectory, heard, register_directory_listeners
from bot.slack.home import HomeTab, register_home_listener
from bot.slack.listeners import BOLT, SIGNING_SECRET, build_bolt, slack_events
from bot.slack.port import slack_app
from bot.slack.publish import SlackPublisher, make_web_client
from bot.slack.slash import SlashCommand, register_slash_command
from bot.standing.admin import StandingAdmin
from bot.standing.listeners import register_standing_listeners
from bot.standing.review import Reviews
from bot.standing.rules import StandingGrants
from store.base import StoreUnavailable
from store.proposals import Delivery, Effect, Proposal
from store.proposals.clicks import DIGEST_VERBS, ESCALATION_VERBS, ClickVerb
from store.protocol import Store

__all__ = ["DECISIONS", "OUTBOX", "build_app", "listening", "utc_now"]

OUTBOX: web.AppKey[OutboxWorker] = web.AppKey("outbox", OutboxWorker)
#: records decision clicks and applies them (bot/flow/clicks.py)
DECISIONS: web.AppKey[RecordedDecisions] = web.AppKey("decisions", RecordedDecisions)

log = logging.getLogger(__name__)


def utc_now() -> datetime:
    return datetime.now(UTC)


def build_app(
    settings: Settings,
    store: Store,
    *,
    clock: Callable[[], datetime] = utc_now,
    resolve: Resolve = system_resolve,
    allow_offline: bool = False,
) -> web.Application:
    """Everything wired together. Slack credentials must be present (checked by the caller).
    ``resolve`` looks up callback hosts (a test's own DNS).

    At start the bot token is tried with Slack's ``auth.test``: a refusal, or no answer, stops
    the start with SlackUnusable unless ``allow_offline`` (then ``/readyz`` says so until
    it succeeds)."""
    missing = settings.slack.missing()
    if missing:
        raise ValueError("; ".join(missing))
    assert settings.slack.bot_token is not None and settings.slack.signing_secret is not None

    version = countersign_version()
    metrics = Metrics(version=version, clock=clock)
    metrics.refusals_from_zero(sorted(settings.agents))
    store = timed_store(store, metrics.store_seconds)
    observe = monitoring_middleware(metrics)  # the Slack port's requests are counted alike
    app = web.Application(
        middlewares=[observe, problem_middleware],
        client_max_size=1024 * 1024,
    )
    server = settings.server
    client = make_web_client(
        settings.slack.bot_token, settings.slack.api_url, timeout=server.slack_timeout_seconds
    )
    outbox_client = make_web_client(
        settings.slack.bot_token,
        settings.slack.api_url,
        timeout=server.slack_timeout_seconds,
        retries=False,
    )
    http = AiohttpClient()

    async def reminder(proposal: Proposal) -> Message:
        return await reminders.message(proposal)  # built with the service, below

    publisher = SlackPublisher(
        client,
        store,
        clock,
        outbox_client=outbox_client,
        extension_of=functools.partial(extension_of, settings.policy),
        offers_standing=functools.partial(offers, settings.policy),
        reminder=reminder,
        formats_of=settings.registry.formats,
        agent_acts=settings.registry.agent_acts,
        described=settings.registry.description,
    )
    # Callbacks go to agent-chosen URLs: their own client, which connects only to checked
    # addresses, with per-destination slots that end before the outbox lease does.
    guard = CallbackGuard(resolve)
    callback_http = CallbackHttp(guard)
    lease = timedelta(seconds=60)
    slots = DestinationSlots(
        server.callback_concurrency,
        max_wait=lease.total_seconds() - server.callback_timeout_seconds - 5,
    )
    poster = CallbackPoster(callback_http, slots, timeout=server.callback_timeout_seconds)
    callbacks = CallbackSender(poster, store, settings.agents, clock)

    async def deliver_review(delivery: Delivery) -> None:
        await reviews.deliver(delivery)  # built with the service, below

    outbox = OutboxWorker(
        store,
        {
            Effect.SLACK_POST: metrics.delivering("proposals", publisher.deliver),
            Effect.SLACK_UPDATE: metrics.delivering("proposals", publisher.deliver),
            Effect.SLACK_REPLY: metrics.delivering("proposals", publisher.deliver),
            Effect.SLACK_REMIND: metrics.delivering("proposals", publisher.deliver),
            Effect.SLACK_REVIEW: metrics.delivering("proposals", deliver_review),
            Effect.CALLBACK: metrics.delivering("proposals", callbacks.deliver),
        },
        clock,
        policy=RetryPolicy(callback_attempts=server.callback_attempts),
        lease=lease,
        watch=StoreWatch(),
        deliver_run=metrics.delivering_runs("proposals", publisher.deliver_run),
    )
    subscribers = Subscribers()  # the App Home tab, once built (below)
    subscribers.add(Observer(metrics))  # logs and counts every decision and outcome
    directory = SlackDirectory(client)
    waiters = Waiters()  # the agents' long polls, woken by every change the flow makes
    service = Service(
        settings=settings,
        store=store,
        publisher=publisher,
        http=http,
        clock=clock,
        wake_outbox=outbox.wake,
        directory=directory,
        waiters=waiters,
        callback_guard=guard,
        subscribers=subscribers,
    )
    reminders = Reminders(service, clock)
    reviews = Reviews(service, clock, publisher=publisher)
    grants = StandingGrants(service, clock, publisher=publisher)
    escalations = EscalationService(service, directory=directory)
    digest_decisions = DigestService(service, clock, publisher=publisher)
    appliers: dict[ClickVerb, Applier] = {
        **dict.fromkeys(DIGEST_VERBS, DigestClicks(digest_decisions)),
        **dict.fromkeys(ESCALATION_VERBS, EscalationClicks(escalations)),
    }
    decisions = RecordedDecisions(
        service,
        store.clicks(),
        clock,
        appliers=appliers,
        batch=server.max_in_flight_clicks,
        lease=timedelta(seconds=60),
        watch=outbox.watch,
    )
    bolt = build_bolt(
        decisions=decisions,
        signing_secret=settings.slack.signing_secret,
        client=client,
        service=service,
        publisher=publisher,
    )
    escalation_deliverer = EscalationDeliverer(store, publisher, callbacks, clock)
    outbox.add_queue(
        store.escalations(), metrics.delivering("escalations", escalation_deliverer.deliver)
    )
    digests = DigestOutbox(
        store,
        publisher,
        clock,
        settings=settings.digests,
        policy=outbox.policy,
        lease=outbox.lease,
    )
    outbox.coalesce_with(CountedCoalescer(digests, metrics))
    register_digest_listeners(bolt, digest_decisions, decisions)
    register_escalation_listeners(bolt, escalations, decisions)
    delegations = Delegations(service, clock, refusals=metrics)
    home = HomeTab(service, escalations, clock, delegations, publisher=publisher)
    subscribers.add(home)  # it refreshes tabs on changes and shows answers to clicks there
    register_home_listener(bolt, home)
    register_directory_listeners(bolt, directory, announce=store.announce)
    register_slash_command(
        bolt,
        SlashCommand(service, home, clock, delegations, publisher=publisher),
    )
    register_delegation_listeners(bolt, delegations=delegations, home=home, service=service)
    register_standing_listeners(
        bolt,
        service=service,
        grants=grants,
        admin=StandingAdmin(service, clock, publisher=publisher),
        reviews=reviews,
    )
    app[ESCALATIONS] = escalations
    app[DELEGATIONS] = delegations
    app[SERVICE] = service
    app[WAITERS] = waiters
    app[SUBMISSIONS] = Admission(server.max_in_flight_submissions)
    app[LOOP_LAG] = loop_lag = LoopLag(threshold=server.shed_agents_at_loop_lag_ms / 1000)
    app[QUOTAS] = Quotas(refusals=metrics)
    app[REFUSALS] = metrics
    app[DECISIONS] = decisions
    app[BOLT] = bolt
    app[SIGNING_SECRET] = settings.slack.signing_secret
    app[OUTBOX] = outbox
    readiness = Readiness(store, metrics, settings.monitoring, version=version)
    sampler = MetricsSampler(metrics, store, app[QUOTAS], settings.agents, loop_lag=loop_lag)
    app[METRICS] = metrics
    app[READINESS] = readiness
    install_sampler(app, sampler)
    app.add_routes(monitoring_routes(metrics_here=settings.monitoring.metrics_port is None))
    app.add_routes(agent_routes())
    app.add_routes(escalation_routes())
    if settings.slack.app_token is None:
        app.router.add_post("/slack/events", slack_events)

    async def lifecycle(app: web.Application) -> AsyncIterator[None]:
        # One pooled HTTP session for every Slack call (slack_sdk opens and closes a session,
        # and so a connection, per call without one), each call counted by method.
        slack_http = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=max(1, round(server.slack_timeout_seconds))),
            trace_configs=[metrics.slack_trace()],
        )
        client.session = outbox_client.session = slack_http
        workers: list[asyncio.Task[None]] = []
        if allow_offline:  # start at once; auth.test is tried until it succeeds
            every = settings.monitoring.slack_check_seconds
            confirming = confirm_slack_forever(readiness, client, settings.slack.api_url, every)
            workers.append(asyncio.create_task(confirming))
        else:
            try:
                who = await confirm_slack(client, settings.slack.api_url)
            except SlackUnusable:
                client.session = outbox_client.session = None
                await slack_http.close()
                raise
            readiness.slack_confirmed(who)
            log.info("Countersign %s connected to Slack: %s", version, who)
        listeners = AsyncExitStack()
        if settings.monitoring.metrics_port is not None:
            metrics_url = await listeners.enter_async_context(
                listening(
                    metrics_app(sampler),
                    settings.monitoring.metrics_host,
                    settings.monitoring.metrics_port,
                )
            )
            log.info("metrics at %s/metrics", metrics_url)
        if server.slack_port is not None:
            if settings.slack.app_token is None:
                slack_url = await listeners.enter_async_context(
                    listening(
                        slack_app(
                            bolt, app[SIGNING_SECRET], middlewares=[observe, problem_middleware]
                        ),
                        server.host,
                        server.slack_port,
                    )
                )
                log.info("Slack's requests also at %s/slack/events", slack_url)
            else:
                log.warning("server.slack_port is not served: Slack is reached in Socket Mode")
        socket: AsyncSocketModeHandler | None = None
        if settings.slack.app_token is not None:
            socket = AsyncSocketModeHandler(bolt, settings.slack.app_token)
            await socket.connect_async()  # type: ignore[no-untyped-call]
            log.info("connected to Slack in Socket Mode")
        await store.listen(heard(directory, waiters.notify))
        for problem in await directory.check_user_groups(settings.roles):
            log.warning("%s", problem)
        quorums = await unreachable_quorums(settings.policy, settings.roles, directory)
        for problem in [*quorums, *lease_warnings(settings)]:
            log.warning("%s", problem)
        workers += [
            asyncio.create_task(
                _sweep_forever(service, server.sweep_interval_seconds, outbox.watch)
            ),
            asyncio.create_task(outbox.run()),
            asyncio.create_task(decisions.run()),
            asyncio.create_task(loop_lag.run()),
            asyncio.create_task(
                reannounce_forever(escalations, server.sweep_interval_seconds, outbox.watch)
            ),
        ]
        if settings.audit.every is not None:  # [audit] anchor_every
            anchorer = Anchorer(
                store,
                settings.audit,
                slack=client,
                clock=clock,
                on_anchor=lambda anchor: metrics.audit_last_anchor.set(anchor.at.timestamp()),
            )
            every = settings.audit.every.total_seconds()
            workers.append(asyncio.create_task(anchor_forever(anchorer, every)))
        yield
        try:  # a click being applied is finished; those recorded meanwhile wait in the store
            async with asyncio.timeout(5):
                await decisions.stop()
        except TimeoutError:
            log.warning("stopped applying recorded clicks before the round under way ended")
        for worker in workers:
            worker.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        if loop_lag.shed:
            log.info(
                "answered %d agent submission(s) 503 while the event loop was behind "
                "(worst lag %.0f ms)",
                loop_lag.shed,
                loop_lag.worst * 1000,
            )
        await home.close()
        await listeners.aclose()
        if socket is not None:
            await socket.close_async()  # type: ignore[no-untyped-call]
        await http.close()
        await callback_http.close()
        client.session = outbox_client.session = None
        await slack_http.close()

    app.cleanup_ctx.append(lifecycle)
    return app


async def _sweep_forever(service: Service, interval: float, watch: StoreWatch) -> None:
    """Expire overdue proposals; remind approvers of those whose reminder is due; offer those
    nobody decided in time to their backup approvers; hand executions whose executor vanished
    to a person. A store outage is ``watch``'s to say."""
    while True:
        try:
            expired = await service.expire_due()
            if expired:
                log.info("expired %d proposal(s)", len(expired))
            await service.remind_due()
            await service.hand_over_due()
            await service.reclaim_abandoned()
        except StoreUnavailable as error:
            watch.unanswered(error, where="the sweep")
        except Exception:
            log.exception("sweep failed; trying again in %.0f s", interval)
        await asyncio.sleep(interval)


@asynccontextmanager
async def listening(app: web.Application, host: str, port: int) -> AsyncIterator[str]:
    """Serve ``app`` on a port of its own, ``host:port`` (0: a free port), while open; yields its
    base URL (the metrics port, Slack's port)."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
        bound_host, bound_port = runner.addresses[0][:2]
        yield f"http://{bound_host}:{bound_port}"
    finally:
        await runner.cleanup()
