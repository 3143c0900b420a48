"""Retention: decided proposals archived, then removed from the hot tables; written once for
every backend.

Two steps, so that the archive file is written outside any transaction:

1. :meth:`Retention.archivable` reads, from one snapshot, a batch of decided proposals whose last
   change is older than a cut-off (with their approvals, review and audit entries), and the
   audit chain's head at that moment.
2. The caller writes them to the archive and makes it durable, then :meth:`Retention.remove`
   removes, in one transaction, each one that is still as it was read (no audit entry about it
   after that head), records it in ``archived_proposals`` (the database refuses to delete a
   proposal, approval or review not recorded there), and appends one ``proposals_archived``
   audit entry naming the archive, the removed proposals and the archive lines' SHA-256.

Audit entries are never removed: the chain is not rewritten, and ``audit verify`` checks every
entry, those of archived proposals included, as before (docs/audit.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from pydantic import JsonValue

from contracts.frozen import Frozen
from store.audit import AuditEntry, audit_entry_from_row
from store.backend import Backend
from store.base import StoreError
from store.proposals.lifecycle import FINAL
from store.proposals.records import Proposal
from store.proposals.rows import proposal_from_row, with_approvals
from store.protocol import Store
from store.rows import aware, read_time
from store.shield import finish_even_if_cancelled

__all__ = [
    "ARCHIVED_EVENT",
    "ArchiveBatch",
    "ArchivedProposal",
    "Retention",
    "Review",
    "retention_of",
]

#: The audit event retention appends for each batch it removes (its subject is none).
ARCHIVED_EVENT = "proposals_archived"


class Review(Frozen):
    """The verdict on a proposal sampled for review."""

    verdict: str
    reviewer: str
    at: datetime


class ArchivedProposal(Frozen):
    """One proposal as the archive keeps it: the row, its approvals (in ``proposal``), its
    review, and copies of its audit entries (which also stay in the log)."""

    proposal: Proposal
    review: Review | None = None
    audit: tuple[AuditEntry, ...] = ()


@dataclass(frozen=True, slots=True)
class ArchiveBatch:
    """Proposals read for archiving, and the audit head when they were read."""

    proposals: tuple[ArchivedProposal, ...]
    through_seq: int  #: a later audit entry about a proposal means it changed: it stays
    before: datetime  #: the cut-off they were read with


def retention_of(store: Store) -> Retention:
    """The retention verbs of ``store`` (either backend)."""
    if not isinstance(store, Backend):
        raise StoreError(f"{type(store).__name__} has no transactions to run retention on")
    return Retention(store)


class Retention:
    """Archiving and removing decided proposals, over a backend's transactions."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend

    async def archivable(self, *, before: datetime, now: datetime, limit: int) -> ArchiveBatch:
        """Up to ``limit`` decided proposals whose last change is before ``before``, oldest
        first. An edited proposal comes only with the edit that replaced it, so that removing a
        batch never leaves an edit naming a proposal that is gone."""
        before, now = aware(before, field="before"), aware(now, field="now")
        # what is archived with a proposal is its whole history as of now: every entry
        # committed so far sealed into the chain (PostgreSQL seals in batches, after commit)
        await self._backend.audit_sealed()
        async with self._backend.snapshot() as tx:
            head = await tx.one("select_audit_head")
            rows = await tx.all("select_archivable", before=before, now=now, limit=limit)
            found = [(proposal_from_row(row), bool(row["has_successor"])) for row in rows]
            ids = {proposal.id for proposal, _ in found}
            kept = [
                proposal
                for proposal, has_successor in found
                if proposal.status in FINAL and (not has_successor or proposal.superseded_by in ids)
            ]
            batch = []
            for proposal in await with_approvals(tx, kept, every=True):
                review = await tx.one("select_review_of", proposal_id=proposal.id)
                audit = await tx.all("select_proposal_audit_log", proposal_id=proposal.id)
                batch.append(
                    ArchivedProposal(
                        proposal=proposal,
                        review=None
                        if review is None
                        else Review(
                            verdict=review["verdict"],
                            reviewer=review["reviewer"],
                            at=read_time(review["at"]),
                        ),
                        audit=tuple(audit_entry_from_row(row) for row in audit),
                    )
                )
        through = 0 if head is None else int(head["seq"])
        return ArchiveBatch(tuple(batch), through_seq=through, before=before)

    @finish_even_if_cancelled
    async def remove(
        self,
        batch: ArchiveBatch,
        *,
        archive: str,
        digest: str,
        actor: str,
        now: datetime,
    ) -> tuple[str, ...]:
        """Remove the proposals of ``batch`` that are still as they were read, in one
        transaction with their ``proposals_archived`` audit entry; returns their ids.

        ``archive`` names the file they were written to, ``digest`` is the SHA-256 of the lines
        written for this batch; both go into the audit entry.
        """
        now = aware(now, field="now")
        removed: list[str] = []
        async with self._backend.tx(write=True) as tx:
            # newest first: an edit goes before the proposal it replaced, which it names
            for item in reversed(batch.proposals):
                proposal_id = item.proposal.id
                recorded = await tx.one(
                    "record_archived_proposal",
                    id=proposal_id,
                    now=now,
                    archive=archive,
                    before=batch.before,
                    through_seq=batch.through_seq,
                )
                if recorded is None:
                    continue
                await tx.execute("delete_archived_approvals", id=proposal_id)
                await tx.execute("delete_archived_review", id=proposal_id)
                await tx.execute("delete_archived_outbox", id=proposal_id)
                await tx.execute("delete_archived_proposal", id=proposal_id)
                removed.append(proposal_id)
            if removed:
                detail: dict[str, JsonValue] = {
                    "archive": archive,
                    "sha256": digest,
                    "before": batch.before.isoformat(),
                    "count": len(removed),
                    "proposals": list[JsonValue](sorted(removed)),
                }
                await tx.append_audit(now, None, actor, ARCHIVED_EVENT, detail)
        return tuple(removed)

    async def archived_count(self) -> int:
        """How many proposals retention has removed, ever."""
        async with self._backend.tx(write=False) as tx:
            row = await tx.one("count_archived_proposals")
        return 0 if row is None else int(row["archived"])
