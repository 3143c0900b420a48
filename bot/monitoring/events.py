"""What happened to proposals and escalations, as log lines and metrics.

:class:`Observer` is a subscriber (bot/flow/subscribers.py): the services tell it of every proposal
and escalation that changed, and it logs one line at info for each decision, refusal and
outcome, and counts them. A status is counted when this instance sees a proposal enter it:
a proposal's last seen status is remembered (for the most recent proposals only), so an
approval towards a quorum or a reminder, which change a proposal but not its status, are logged
without being counted again.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from typing import Any

from bot.monitoring.metrics import Metrics
from store.escalations import Escalation
from store.proposals import Proposal, Status

__all__ = ["Observer", "proposal_fields"]

log = logging.getLogger("countersign.events")

#: how many proposals' last status is remembered (an older one counts again if it moves)
_REMEMBERED = 10_000

#: statuses that answer the question put to people, and what the answer was
_DECIDED = {
    Status.EXECUTING: "approved",
    Status.REJECTED: "rejected",
    Status.EXPIRED: "expired",
    Status.SUPERSEDED: "superseded",
}


def proposal_fields(proposal: Proposal, event: str) -> dict[str, Any]:
    """The fields every line about ``proposal`` carries."""
    return {
        "event": event,
        "proposal_id": proposal.id,
        "agent": proposal.agent,
        "operation": proposal.operation,
        "status": proposal.status.value,
        "decision": proposal.decision,
        "rule": proposal.rule_id,
    }


class Observer:
    """Logs and counts what the services report (see the module's docstring)."""

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics
        self._last: OrderedDict[str, Status] = OrderedDict()

    def proposal_changed(self, proposal: Proposal) -> None:
        previous = self._last.pop(proposal.id, None)
        self._last[proposal.id] = proposal.status
        while len(self._last) > _REMEMBERED:
            self._last.popitem(last=False)
        if previous is proposal.status:
            self._same_status(proposal)
            return
        self._metrics.proposals.labels(
            proposal.operation, proposal.decision, proposal.status.value
        ).inc()
        result = _DECIDED.get(proposal.status)
        if result is not None and proposal.decision == "ask" and previous in (None, Status.PENDING):
            decided = proposal.decided_at or proposal.updated_at
            self._metrics.decision_seconds.labels(proposal.operation, result).observe(
                max((decided - proposal.created_at).total_seconds(), 0.0)
            )
        if proposal.outcome is not None and proposal.status is not Status.EXECUTING:
            self._metrics.executions.labels(proposal.operation, proposal.outcome.kind).inc()
        self._log(proposal, previous)

    def escalation_changed(self, escalation: Escalation, previous_owner: str | None) -> None:
        self._metrics.escalations.labels(escalation.status.value).inc()
        log.info(
            "escalation %s is %s",
            escalation.id,
            escalation.status.value.replace("_", " "),
            extra={
                "event": f"escalation.{escalation.status.value}",
                "escalation_id": escalation.id,
                "agent": escalation.agent,
                "owner": escalation.owner,
            },
        )

    async def notice(self, user: str, text: str) -> None:
        """Answers shown on a Home tab are not events."""

    def _same_status(self, proposal: Proposal) -> None:
        if proposal.status is Status.PENDING and proposal.approvals:
            latest = proposal.approvals[-1]
            log.info(
                "approval %d of %d for %s by %s",
                len(proposal.approvals),
                proposal.quorum,
                proposal.id,
                latest.approver,
                extra={
                    **proposal_fields(proposal, "proposal.approval_counted"),
                    "by": latest.approver,
                },
            )

    def _log(self, proposal: Proposal, previous: Status | None) -> None:
        status = proposal.status
        fields = proposal_fields(proposal, f"proposal.{status.value}")
        if status is Status.PENDING:
            log.info(
                "%s asks %s in %s (rule %s)",
                proposal.id,
                ", ".join(proposal.approver_roles) or "nobody",
                proposal.channel,
                proposal.rule_id,
                extra=fields,
            )
        elif status is Status.DENIED:
            log.info(
                "%s denied by the policy (rule %s): %s",
                proposal.id,
                proposal.rule_id,
                proposal.policy_note,
                extra=fields,
            )
        elif status is Status.EXECUTING and proposal.decided_by is not None:
            fields["by"] = proposal.decided_by
            log.info("%s approved by %s; executing", proposal.id, proposal.decided_by, extra=fields)
        elif status is Status.EXECUTING:
            how = "a standing rule" if proposal.standing_rule_id else f"rule {proposal.rule_id}"
            log.info("%s approved automatically (%s); executing", proposal.id, how, extra=fields)
        elif status is Status.REJECTED:
            fields["by"] = proposal.decided_by
            log.info(
                "%s rejected by %s: %s",
                proposal.id,
                proposal.decided_by,
                proposal.decision_note,
                extra=fields,
            )
        elif status is Status.EXPIRED:
            log.info("%s expired: nobody decided in time", proposal.id, extra=fields)
        elif status is Status.SUPERSEDED:
            log.info(
                "%s superseded by the edit %s", proposal.id, proposal.superseded_by, extra=fields
            )
        elif proposal.outcome is not None:
            fields["outcome"] = proposal.outcome.kind
            log.info("%s executed: %s", proposal.id, proposal.outcome.kind, extra=fields)
        else:
            log.info("%s is %s", proposal.id, status.value, extra=fields)
