"""Slack's own listening port (``[server] slack_port``): ``/slack/events`` alone, on a socket of
its own, so that a person's click is accepted from that socket's readiness and never waits in
the kernel's listen queue behind the agents' connections to the main port.

The same bolt app, signing secret and so the same Service and store as the main port's
``/slack/events``: one process, one store; the main port keeps serving Slack too.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from aiohttp import web
from aiohttp.typedefs import Middleware
from slack_bolt.app.async_app import AsyncApp

from bot.slack.listeners import BOLT, SIGNING_SECRET, slack_events

__all__ = ["slack_listener"]


@asynccontextmanager
async def slack_listener(
    bolt: AsyncApp,
    signing_secret: str,
    host: str,
    port: int,
    *,
    middlewares: Sequence[Middleware] = (),
) -> AsyncIterator[str]:
    """Serve ``POST /slack/events`` alone on ``host:port`` (0: a free port) while open; yields
    its base URL. Every other path answers 404 there."""
    app = web.Application(middlewares=list(middlewares))
    app[BOLT] = bolt
    app[SIGNING_SECRET] = signing_secret
    app.router.add_post("/slack/events", slack_events)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port)
        await site.start()
        bound_host, bound_port = runner.addresses[0][:2]
        yield f"http://{bound_host}:{bound_port}"
    finally:
        await runner.cleanup()
