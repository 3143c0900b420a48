"""The agent API's bodies as the server builds them: the wire models (contracts/api.py, shared
with the Python client) with constructors from stored proposals."""

from __future__ import annotations

from contracts import api
from contracts.api import SLACK_USER_ID, ProblemOut, SubmitBody
from contracts.policy import agent_note
from store.proposals import FINAL, Proposal, Status

__all__ = ["SLACK_USER_ID", "PolicyOut", "ProblemOut", "ProposalOut", "SubmitBody"]

_ENDED_UNDECIDED = frozenset({Status.EXPIRED, Status.CANCELLED})


class PolicyOut(api.PolicyOut):
    @classmethod
    def of(cls, proposal: Proposal) -> PolicyOut:
        note = agent_note(
            proposal.decision,
            proposal.rule_id,
            proposal.policy_note,
            standing=proposal.standing_rule_id is not None,
        )
        return cls(decision=proposal.decision, rule_id=proposal.rule_id, note=note)


class ProposalOut(api.ProposalOut):
    @classmethod
    def of(cls, proposal: Proposal) -> ProposalOut:
        # expired and cancelled: nobody decided, but when it ended is known
        decided = proposal.decided_by is not None or proposal.status in _ENDED_UNDECIDED
        return cls(
            id=proposal.id,
            status=proposal.status.value,
            final=proposal.status in FINAL,
            operation=proposal.operation,
            agent=proposal.agent,
            requested_by=proposal.requested_by,
            run_id=proposal.run_id,
            preview=proposal.preview,
            arguments=proposal.arguments,
            policy=PolicyOut.of(proposal),
            created_at=proposal.created_at,
            expires_at=proposal.expires_at,
            shown_after=proposal.shown_after,
            shown_at=proposal.shown_at,
            backup_after=proposal.backup_at,
            handed_over=proposal.handed_over_at is not None,
            decision=api.DecisionOut(
                by=proposal.decided_by, at=proposal.decided_at, reason=proposal.decision_note
            )
            if decided
            else None,
            outcome=proposal.outcome,
            supersedes=proposal.supersedes,
            edited_by=proposal.edited_by,
            superseded_by=proposal.superseded_by,
        )
