"""The app factory: one aiohttp application serving Slack and the agent API."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime

from aiohttp import web
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler

from bot.http import AiohttpClient
from bot.problems import problem_middleware
from bot.publish import SlackPublisher, make_web_client
from bot.service import Service
from bot.settings import Settings
from bot.slack import BOLT, build_bolt, slack_events
from bot.tasks import BackgroundTasks
from bot.webhook import SERVICE, agent_routes
from store.base import Store

__all__ = ["build_app", "utc_now"]

log = logging.getLogger(__name__)


def utc_now() -> datetime:
    return datetime.now(UTC)


def build_app(
    settings: Settings,
    store: Store,
    *,
    clock: Callable[[], datetime] = utc_now,
) -> web.Application:
    """Everything wired together. Slack credentials must be present (checked by the caller)."""
    missing = settings.slack.missing()
    if missing:
        raise ValueError("; ".join(missing))
    assert settings.slack.bot_token is not None and settings.slack.signing_secret is not None

    app = web.Application(middlewares=[problem_middleware], client_max_size=1024 * 1024)
    client = make_web_client(settings.slack.bot_token, settings.slack.api_url)
    http = AiohttpClient()
    tasks = BackgroundTasks()
    service = Service(
        settings=settings,
        store=store,
        publisher=SlackPublisher(client, store, clock),
        http=http,
        clock=clock,
        tasks=tasks,
    )
    bolt = build_bolt(
        signing_secret=settings.slack.signing_secret,
        client=client,
        service=service,
    )
    app[SERVICE] = service
    app[BOLT] = bolt
    app.add_routes(agent_routes())
    if settings.slack.app_token is None:
        app.router.add_post("/slack/events", slack_events)

    async def lifecycle(app: web.Application) -> AsyncIterator[None]:
        socket: AsyncSocketModeHandler | None = None
        if settings.slack.app_token is not None:
            socket = AsyncSocketModeHandler(bolt, settings.slack.app_token)
            await socket.connect_async()  # type: ignore[no-untyped-call]
            log.info("connected to Slack in Socket Mode")
        sweeper = asyncio.create_task(
            _sweep_forever(service, settings.server.sweep_interval_seconds), name="sweeper"
        )
        yield
        sweeper.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sweeper
        if socket is not None:
            await socket.close_async()  # type: ignore[no-untyped-call]
        await tasks.drain()
        await http.close()

    app.cleanup_ctx.append(lifecycle)
    return app


async def _sweep_forever(service: Service, interval: float) -> None:
    while True:
        try:
            expired = await service.expire_due()
            if expired:
                log.info("expired %d proposal(s)", len(expired))
            if await service.repost_unposted():
                log.info("posting again proposals Slack did not take")
        except Exception:
            log.exception("expiry sweep failed; trying again in %.0f s", interval)
        await asyncio.sleep(interval)
