"""Proposals, written once for every backend: reading one with its approvals.

The Store protocol's proposal verbs are written once over the backend's transactions
(store/backend.py), their SQL named in store/sql/common/queries/proposals.sql.
"""

from __future__ import annotations

from store.base import Proposal, ProposalNotFound
from store.connector import Tx
from store.rows import proposal_from_row

__all__ = ["existing_proposal"]


async def existing_proposal(tx: Tx, proposal_id: str) -> Proposal:
    """The proposal with its approvals, read inside ``tx``; raises ProposalNotFound."""
    row = await tx.one("select_proposal", id=proposal_id)
    if row is None:
        raise ProposalNotFound(f"no proposal has id {proposal_id!r}")
    [proposal] = await tx.with_approvals([proposal_from_row(row)])
    return proposal
