"""Hand-overs to backup approvers: when nobody has decided a proposal by its ``backup_at``
(contracts/batching.py ``then``), the sweep marks it handed over (``handed_over_at``), audits it
(``handed_over``, naming the backup roles) and queues a slack.update so its message says so and
a slack.remind whose thread reply mentions who may decide now, in one transaction. The status
does not change: the proposal stays pending, and from then on a person holding a backup role may
decide it too (bot/flow/checks.py checks the clicker's roles).

The sweep takes its rows with ``FOR UPDATE SKIP LOCKED`` on PostgreSQL, so instances sweeping at
once hand each proposal over once; on SQLite the write transaction holds the one write lock.
"""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import JsonValue

from store.backend import Backend
from store.proposals.lifecycle import Effect
from store.proposals.outbox import enqueue
from store.proposals.records import Proposal
from store.proposals.rows import proposal_from_row, with_approvals
from store.rows import check_limit
from store.shield import finish_even_if_cancelled

__all__ = ["HANDOVER_ACTOR", "HandOverVerbs"]

#: Who writes the audit entry of a hand-over.
HANDOVER_ACTOR = "countersign"


class HandOverVerbs(Backend):
    """The Store protocol's hand-over verb, written once over the backend's transactions."""

    @finish_even_if_cancelled
    async def hand_over_due(self, *, now: datetime, limit: int = 100) -> list[Proposal]:
        check_limit(limit, "proposals")
        async with self.tx(write=True) as tx:
            rows = await tx.all("hand_over_due", now=now, limit=limit)
            handed = []
            for row in sorted(rows, key=lambda r: (r["backup_at"], r["id"])):
                proposal = proposal_from_row(row)
                detail: dict[str, JsonValue] = {
                    "backup_roles": list(proposal.backup_roles),
                    "backup_at": None
                    if proposal.backup_at is None
                    else proposal.backup_at.astimezone(UTC).isoformat(),
                }
                await tx.append_audit(now, proposal.id, HANDOVER_ACTOR, "handed_over", detail)
                if proposal.channel is not None:  # its message says so; its thread tells
                    # who may decide now, the backup approvers among them (bot/flow/reminders.py)
                    await enqueue(tx, proposal, [Effect.SLACK_UPDATE, Effect.SLACK_REMIND], now)
                handed.append(proposal)
            return await with_approvals(tx, handed)
