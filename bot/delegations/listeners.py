"""The Revoke button of a delegation (``/countersign delegations`` and the App Home tab).

It acknowledges first, decodes the payload and calls bot/delegations/commands.py; the answer goes
to the clicker alone: at the top of their Home tab for a click there, else as an ephemeral message.
"""

from __future__ import annotations

from typing import Any

from slack_bolt.app.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck

from bot.delegations.commands import Delegations
from bot.flow.service import Service
from bot.render.actions import REVOKE_DELEGATION
from bot.slack.home import HomeTab
from bot.slack.listeners import ValueClick, decoded

__all__ = ["register_delegation_listeners"]


def register_delegation_listeners(
    app: AsyncApp,
    *,
    delegations: Delegations,
    home: HomeTab,
    service: Service,
) -> None:
    @app.action(REVOKE_DELEGATION)
    async def on_revoke(ack: AsyncAck, body: dict[str, Any], action: dict[str, Any]) -> None:
        await ack()
        click = decoded(ValueClick.of, body, action, what="delegation click")
        if click is None:
            return
        text = await delegations.revoke(click.user, click.value)
        if click.on_home_tab:
            await home.notice(click.user, text)
        elif click.channel:
            await service.publisher.tell(None, click.channel, click.user, text)
