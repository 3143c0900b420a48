"""Block Kit for delegations: the new token (shown once, only to its person), a person's active
delegations with Revoke buttons (``/countersign delegations`` and the App Home tab). Pure
functions of stored values and ``now``; no clock, env or I/O."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from bot.render.actions import REVOKE_DELEGATION
from bot.render.blocks import Blocks, code, context, section
from bot.render.inert import inert, own
from bot.render.words import remaining, when
from store.delegations import Delegation

__all__ = ["delegation_list_blocks", "minted_blocks"]


def minted_blocks(delegation: Delegation, token: str, *, now: datetime) -> Blocks:
    """The answer to ``/countersign delegate``: the token, once, and how to use and revoke it."""
    until = f"{when(delegation.expires_at)} ({remaining(delegation.expires_at, now)})"
    return [
        section(
            own(
                f":key: Agent *{inert(delegation.agent)}* may act for you until {until}. Give it "
                "this token; Countersign shows it only now and keeps only its hash:"
            )
        ),
        section(own(f"```{token}```")),
        context(
            own(
                "The agent sends it as `Authorization: Bearer <token>`; what it proposes with it "
                "names you as the person who asked, so you cannot approve it yourself. "
                f"Revoke it any time: `/countersign revoke-delegation {delegation.id}`, or on your "
                "Home tab."
            )
        ),
    ]


def delegation_list_blocks(delegations: Sequence[Delegation], *, now: datetime) -> Blocks:
    """A person's active delegations, each with a Revoke button."""
    if not delegations:
        return [context(own("No agent acts for you. `/countersign delegate <agent>` lets one."))]
    blocks: Blocks = []
    for delegation in delegations[:20]:
        text = (
            f"Agent *{inert(delegation.agent)}* acts for you until "
            f"{when(delegation.expires_at)} ({remaining(delegation.expires_at, now)}) · "
            f"{code(delegation.id, 60)}"
        )
        row: dict[str, Any] = section(own(text))
        row["block_id"] = f"delegation-{delegation.id}"
        row["accessory"] = {
            "type": "button",
            "action_id": REVOKE_DELEGATION,
            "text": {"type": "plain_text", "text": "Revoke", "emoji": True},
            "style": "danger",
            "value": delegation.id,
        }
        blocks.append(row)
    return blocks
