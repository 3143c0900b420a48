"""Where a stored row becomes a Proposal, an Approval or a Delivery, whichever backend read
it; a proposal read with its approvals; and a new proposal as the parameters of its insert.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import JsonValue

from contracts.outcomes import OUTCOMES, Outcome
from store.connector import Array, Row, Tx
from store.proposals.lifecycle import Status
from store.proposals.records import Approval, Delivery, NewProposal, Proposal, ProposalNotFound
from store.rows import dump_json, load_json, model_from_row, read_columns

__all__ = [
    "approval_from_row",
    "created_proposal",
    "delivery_from_row",
    "existing_proposal",
    "insert_proposal_params",
    "may_have_approvals",
    "outcome_json",
    "proposal_from_row",
    "proposal_known_from_row",
    "with_approvals",
]


def outcome_json(outcome: Outcome) -> dict[str, JsonValue]:
    dumped: dict[str, JsonValue] = OUTCOMES.dump_python(outcome, mode="json")
    return dumped


def insert_proposal_params(new: NewProposal) -> dict[str, Any]:
    """The named parameters of the query ``insert_proposal`` (times and the roles as Python
    values: each backend's Tx stores them its way)."""
    return {
        "id": new.id,
        "agent": new.agent,
        "submission_key": new.submission_key,
        "submission_fingerprint": new.submission_fingerprint,
        "requested_by": new.requested_by,
        "run_id": new.run_id,
        "operation": new.operation,
        "request": dump_json(new.request),
        "arguments": dump_json(new.arguments),
        "preview": new.preview.model_dump_json(),
        "binding_hash": new.binding_hash,
        "agent_reason": new.agent_reason,
        "callback_url": new.callback_url,
        "rule_id": new.rule_id,
        "decision": new.decision,
        "policy_note": new.policy_note,
        "approver_roles": Array(new.approver_roles),
        "channel": new.channel,
        "status": new.status.value,
        "created_at": new.created_at,
        "expires_at": new.expires_at,
        "lease_until": new.lease_until,
        "risk": new.risk,
        "quorum": new.quorum,
        "supersedes": new.supersedes,
        "edited_by": new.edited_by,
        "remind_at": new.remind_at,
        "standing_rule_id": new.standing_rule_id,
        "review_sampled": new.review_sampled,
        "delegation_id": new.delegation_id,
        "shown_after": new.shown_after,
        "urgent": new.urgent,
        "backup_roles": Array(new.backup_roles),
        "backup_at": new.backup_at,
        "batch_id": None,  #: the batch it joins, which the store decides (batches.py)
    }


def created_proposal(new: NewProposal, batch_id: str | None) -> Proposal:
    """The proposal ``insert_proposal`` just stored from ``new`` (in ``batch_id``), as reading
    its row back would give it, without reading it: the row holds ``new``'s values (times in
    UTC, as stored), ``updated_at`` is its creation, the batch it joined is ``batch_id``, and
    nothing has happened to it yet (no message, decision, outcome or approval)."""
    # its fields as validated (vars: iterating a model is several times slower)
    fields = {
        name: value.astimezone(UTC) if isinstance(value, datetime) else value
        for name, value in vars(new).items()
    }
    fields |= {"batch": None, "batch_id": batch_id, "updated_at": fields["created_at"]}
    return Proposal.model_validate(fields)


def proposal_from_row(row: Row) -> Proposal:
    """The one place a stored proposal row becomes a Proposal (without its approvals)."""
    outcome = row["outcome"]
    return model_from_row(
        Proposal,
        row,
        request=load_json(row["request"]),
        arguments=load_json(row["arguments"]),
        outcome=None if outcome is None else OUTCOMES.validate_json(outcome),
        approvals=(),  # read apart (store/proposals/approvals.py)
        batch=None,  # creation only: stored as batch_id
    )


#: what a proposal keeps from its creation and costs most to read back (JSON, a model): no
#: statement changes them (an edit is another proposal), and binding_hash covers them
_CONTRACT = ("request", "arguments", "preview")
#: the other fields read from a row by proposal_known_from_row, or given by it
_NOT_READ = (*_CONTRACT, "outcome", "approvals", "batch")


def proposal_known_from_row(row: Row, known: Proposal | None) -> Proposal:
    """The proposal a transition's ``UPDATE ... RETURNING *`` gave back, as proposal_from_row
    reads it, when the caller holds ``known``, the same proposal read before the change: every
    column but the contract's read back by its type, over ``known``'s (no JSON parsed again,
    nothing validated again). Without ``known``, or when it is not that proposal with that
    contract (its id and binding hash), the row is read as any row."""
    if known is None or known.id != row["id"] or known.binding_hash != row["binding_hash"]:
        return proposal_from_row(row)
    values = read_columns(Proposal, row, _NOT_READ)
    outcome = row["outcome"]
    values["outcome"] = None if outcome is None else OUTCOMES.validate_json(outcome)
    values["approvals"] = ()  # read apart (store/proposals/approvals.py)
    values["batch"] = None  # creation only: stored as batch_id
    return known.model_copy(update=values)


def approval_from_row(row: Row) -> Approval:
    return model_from_row(Approval, row)


def delivery_from_row(row: Row) -> Delivery:
    return model_from_row(Delivery, row)


def may_have_approvals(proposal: Proposal) -> bool:
    """Whether reading ``proposal``'s approvals can find any. Only proposals that asked have
    them, and a pending one that needs a single approval has none yet (that approval moves it
    on): the common submission and its first reads skip the query."""
    return proposal.decision == "ask" and (
        proposal.quorum > 1 or proposal.status is not Status.PENDING
    )


async def with_approvals(
    tx: Tx, proposals: Sequence[Proposal], *, every: bool = False
) -> list[Proposal]:
    """``proposals``, each carrying its approvals: one query for all of them that may have any
    (or for ``every`` one), none when no proposal may."""
    proposals = list(proposals)
    asked = [p.id for p in proposals if every or may_have_approvals(p)]
    if not asked:
        return proposals
    found: dict[str, list[Approval]] = {}
    for row in await tx.all("select_approvals", ids=Array(asked)):
        found.setdefault(row["proposal_id"], []).append(approval_from_row(row))
    return [
        p.model_copy(update={"approvals": tuple(found[p.id])}) if p.id in found else p
        for p in proposals
    ]


async def existing_proposal(tx: Tx, proposal_id: str) -> Proposal:
    """The proposal with its approvals, read inside ``tx``; raises ProposalNotFound."""
    row = await tx.one("select_proposal", id=proposal_id)
    if row is None:
        raise ProposalNotFound(f"no proposal has id {proposal_id!r}")
    [proposal] = await with_approvals(tx, [proposal_from_row(row)])
    return proposal
