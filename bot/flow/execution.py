"""Execute: carry out a claimed proposal (revalidate against current state, then execute,
once) and record its outcome.

:class:`~bot.flow.executor.Executor` (the core's) runs the operation's steps and never raises;
:class:`Execution` is the flow's stage around it, given the core alone: run what this process
claimed, record the outcome (keeping it while the store does not answer), and show a target's
late answer to whoever reconciles it.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Literal

from bot.flow.core import FlowCore
from contracts.outcomes import NeedsReconciliation, Outcome
from store.base import StoreUnavailable
from store.proposals import InvalidTransition, Proposal, StaleRead, Status
from store.proposals.effects import effects_of

__all__ = ["Execution"]

log = logging.getLogger(__name__)


class Execution:
    """The flow's execution stage: run a claimed proposal and record how it ended."""

    def __init__(self, core: FlowCore) -> None:
        self._core = core

    async def execute(self, proposal: Proposal) -> Proposal:
        """Run a proposal this process has claimed (status executing) and record its outcome;
        the proposal as it is afterwards."""
        outcome = await self._core.executor.run(proposal)
        proposal = await self._record_outcome(proposal, outcome)
        # recorded: the effects of the status it entered; a late answer (needs
        # reconciliation): its message's update
        enqueued = bool(effects_of(proposal)) or proposal.status is Status.NEEDS_RECONCILIATION
        self._core.changed(proposal, enqueued=enqueued)
        return proposal

    async def _record_outcome(self, proposal: Proposal, outcome: Outcome) -> Proposal:
        """Record ``outcome``; while the store does not answer, keep it and try again (this
        process holds the only copy of what the target said)."""
        wait = 0.1
        while True:
            try:
                return await self._core.store.record_outcome(
                    proposal.id,
                    outcome,
                    now=self._core.now(),
                    attempt=proposal.attempt,
                    executing=proposal,
                )
            except InvalidTransition:
                current = await self._core.store.get_proposal(proposal.id)
                if current.attempt != proposal.attempt:  # a retry started since
                    return await self._record_superseded(current, outcome, proposal.attempt)
                if current.outcome == outcome:  # an earlier try committed; its answer was lost
                    return current
                if current.status is Status.NEEDS_RECONCILIATION:
                    return await self._record_late(current, outcome, proposal.attempt)
                raise
            except StoreUnavailable as error:
                if wait == 0.1:
                    log.warning(
                        "the outcome of %s (%s) waits for the store to record it: %s",
                        proposal.id,
                        outcome.kind,
                        error,
                    )
                await asyncio.sleep(wait)
                wait = min(wait * 2, 1.0)

    async def _record_superseded(
        self, current: Proposal, outcome: Outcome, attempt: int
    ) -> Proposal:
        """The target answered attempt ``attempt`` after a person retried it: the answer is that
        attempt's, never the retry's outcome. Audited as late; while the retry's execution is
        uncertain too, shown to whoever reconciles it."""
        if current.status is Status.NEEDS_RECONCILIATION:
            return await self._record_late(current, outcome, attempt)
        log.warning(
            "the target answered %s for attempt %d of %s after attempt %d was started; audited, "
            "not recorded as its outcome",
            outcome.kind,
            attempt,
            current.id,
            current.attempt,
            extra={"event": "proposal.late_outcome", "proposal_id": current.id},
        )
        await self._core.store.audit_late_outcome(
            current.id, outcome, attempt=attempt, now=self._core.now()
        )
        return current

    async def _record_late(self, proposal: Proposal, outcome: Outcome, attempt: int) -> Proposal:
        """The target answered attempt ``attempt`` after the execution was handed to a person
        (its lease ended): audit the answer and show it on the message, for whoever reconciles
        it. ``proposal``: as read, needs_reconciliation.

        The card's outcome is built from the one read, and written only if it is still the one
        on the card: when another answer or a retry's hand-over got there first, it is built
        again from the card as it is now. Audited once, whatever happens: with the card it
        changes, or alone when it changes none (the proposal was retried or reconciled since,
        or the card kept changing)."""
        now = self._core.now()
        said = _LATE_WORDS.get(outcome.kind)
        log.warning(
            "the target answered %s for %s after its execution lease had ended; recorded for the "
            "person reconciling it",
            outcome.kind,
            proposal.id,
            extra={"event": "proposal.late_outcome", "proposal_id": proposal.id},
        )
        if said is None or not isinstance(proposal.outcome, NeedsReconciliation):
            return proposal  # no news: it did not know either
        at = now.isoformat(timespec="seconds")
        for _ in range(_LATE_TRIES):
            read = proposal.outcome
            if proposal.status is not Status.NEEDS_RECONCILIATION or not isinstance(
                read, NeedsReconciliation
            ):
                break  # retried or reconciled since: no card to show it on
            shown = read.model_copy(
                update={
                    "detail": f"{read.detail}; the target answered {said} at {at}, "
                    "after Countersign had given up waiting",
                    "answered_late": said,
                    "answered_at": at,
                }
            )
            late = await self._core.store.record_late_outcome(
                proposal.id,
                outcome,
                shown,
                attempt=proposal.attempt,
                read=read,
                now=now,
                answered_attempt=attempt,
            )
            if not isinstance(late, StaleRead):
                return late
            proposal = late.proposal
        else:
            log.warning(
                "the late answer %s for %s is audited but not shown on its card: the card "
                "changed on each of %d tries",
                outcome.kind,
                proposal.id,
                _LATE_TRIES,
                extra={"event": "proposal.late_outcome_not_shown", "proposal_id": proposal.id},
            )
        await self._core.store.audit_late_outcome(proposal.id, outcome, attempt=attempt, now=now)
        return proposal


#: How many times a late answer is built again over a card that changed meanwhile.
_LATE_TRIES = 5

#: How a late answer of the target reads on the reconciliation card, by outcome kind.
_LATE_WORDS: dict[str, Literal["success", "failure", "nothing done"]] = {
    "succeeded": "success",
    "terminal_failure": "failure",
    "revision_required": "nothing done",
}
