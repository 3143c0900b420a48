"""Time: what happens to proposals because a moment passed, not because someone clicked.

The app's sweeper (bot/app.py) calls these every few seconds: reminders fall due (the outbox
posts them, bot/flow/reminders.py builds them), undecided proposals are offered to their backup
approvers, overdue ones expire, and executions whose executor vanished go to a person to
reconcile. Each verb works in batches until nothing more is due.
"""

from __future__ import annotations

import logging

from bot.flow.core import FlowCore
from store.proposals import Proposal

__all__ = ["Sweeps"]

log = logging.getLogger(__name__)


class Sweeps:
    """The flow's time stage: reminders, hand-overs, expiry and abandoned executions, over the
    core alone."""

    def __init__(self, core: FlowCore) -> None:
        self._core = core

    async def remind_due(self) -> list[Proposal]:
        """Mark every pending proposal whose reminder is due as reminded; the outbox posts the
        reminders in their threads (bot/flow/reminders.py)."""
        reminded: list[Proposal] = []
        while batch := await self._core.store.remind_due(now=self._core.now(), limit=100):
            reminded += batch
        if reminded:
            self._core.wake_outbox()
        return reminded

    async def hand_over_due(self) -> list[Proposal]:
        """Offer every pending proposal nobody decided by its ``backup_at`` to its backup
        approvers too: the store marks and audits it; its message says so (outbox)."""
        handed: list[Proposal] = []
        while batch := await self._core.store.hand_over_due(now=self._core.now(), limit=100):
            for proposal in batch:
                self._core.changed(proposal)
            handed += batch
        return handed

    async def expire_due(self) -> list[Proposal]:
        """Expire every overdue pending proposal and tell Slack and the agents."""
        expired: list[Proposal] = []
        while batch := await self._core.store.expire_due(now=self._core.now(), limit=100):
            for proposal in batch:
                self._core.changed(proposal)
            expired += batch
        return expired

    async def reclaim_abandoned(self) -> list[Proposal]:
        """Executions whose executor vanished (a crash) become needs_reconciliation."""
        reclaimed: list[Proposal] = []
        while batch := await self._core.store.reclaim_abandoned(now=self._core.now(), limit=100):
            for proposal in batch:
                log.warning("execution of %s was abandoned; a person must reconcile", proposal.id)
                self._core.changed(proposal)
            reclaimed += batch
        return reclaimed
