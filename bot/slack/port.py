"""Slack's own listening port (``[server] slack_port``): ``/slack/events`` alone, on a socket of
its own, so that a person's click is accepted from that socket's readiness and never waits in
the kernel's listen queue behind the agents' connections to the main port.

The same bolt app, signing secret and so the same Service and store as the main port's
``/slack/events``: one process, one store; the main port keeps serving Slack too.
"""

from __future__ import annotations

from collections.abc import Sequence

from aiohttp import web
from aiohttp.typedefs import Middleware
from slack_bolt.app.async_app import AsyncApp

from bot.slack.listeners import BOLT, SIGNING_SECRET, slack_events

__all__ = ["slack_app"]


def slack_app(
    bolt: AsyncApp, signing_secret: str, *, middlewares: Sequence[Middleware] = ()
) -> web.Application:
    """``POST /slack/events`` alone, for a port of its own; every other path answers 404."""
    app = web.Application(middlewares=list(middlewares))
    app[BOLT] = bolt
    app[SIGNING_SECRET] = signing_secret
    app.router.add_post("/slack/events", slack_events)
    return app
