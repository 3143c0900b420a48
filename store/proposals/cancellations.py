"""A proposing agent withdraws its pending proposal: the cancel verb, written once for every
backend.

The withdrawal is a compare-and-set (pending and unexpired -> cancelled, only for the agent that
proposed it) in one transaction with its "cancelled" audit entry, the agent as its actor, and the
outbox entries of the status (the message's update, the agent's callback). On PostgreSQL the
UPDATE locks the proposal's row, so a withdrawal and an approval of one proposal queue there and
exactly one of them changes it; on SQLite the write transaction holds the one write lock.
"""

from __future__ import annotations

from datetime import datetime

from store.backend import Backend
from store.proposals.lifecycle import Status
from store.proposals.outbox import enqueue_effects
from store.proposals.records import ProposalNotFound, Transitioned, TransitionResult
from store.proposals.rows import existing_proposal
from store.proposals.verdicts import refusal
from store.rows import aware
from store.shield import finish_even_if_cancelled

__all__ = ["CANCELLED_EVENT", "CancelVerbs"]

#: The audit event of a withdrawal; its actor is the agent.
CANCELLED_EVENT = "cancelled"


class CancelVerbs(Backend):
    """The Store protocol's cancel verb, written once over the backend's transactions."""

    @finish_even_if_cancelled
    async def cancel(self, proposal_id: str, *, agent: str, now: datetime) -> TransitionResult:
        now = aware(now, field="now")
        async with self.tx(write=True) as tx:
            row = await tx.one("cancel", id=proposal_id, agent=agent, now=now)
            if row is not None:
                await tx.append_audit(now, proposal_id, agent, CANCELLED_EVENT, {})
                return Transitioned(await enqueue_effects(tx, row, now))
            current = await existing_proposal(tx, proposal_id)
            if current.agent != agent:  # another agent's proposal: as if there were none
                raise ProposalNotFound(f"no proposal {proposal_id!r} of agent {agent!r}")
            if current.status is Status.CANCELLED:  # withdrawn before: the same answer again
                return Transitioned(current)
            return refusal(current, now, None)
