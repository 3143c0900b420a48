"""The slack-bolt app as Countersign builds it, for the service (bot/slack/listeners.py) and for
the bench's bare bolt floor (bot/bench/bare.py), so that the floor measures the app the service
runs and not one configured apart from it.

Bolt verifies every request's signature with the signing secret before any listener runs, and
answers Slack once a listener acknowledges, not once it is done (``process_before_response``
off): a listener's work after its ``ack()`` never delays Slack's answer.
"""

from __future__ import annotations

import logging

from slack_bolt.app.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

__all__ = ["bolt_app"]


def bolt_app(*, signing_secret: str, client: AsyncWebClient, logger: logging.Logger) -> AsyncApp:
    """A bolt app with no listeners yet; ``client`` carries the bot token and the Web API's URL."""
    return AsyncApp(
        signing_secret=signing_secret,
        client=client,
        process_before_response=False,
        request_verification_enabled=True,
        logger=logger,
    )
