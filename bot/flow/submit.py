"""Submit: verify who asked, parse and freeze the contract, classify it, store it.

What a submission goes through before it is stored is written once in bot/flow/intake.py (the
simulator runs the same steps); here it is frozen into the proposal to store (arguments, preview,
binding hash, the policy's decision and its timing), stored under its submission key, and run
at once when the policy approves it automatically. Edits are frozen and classified the same way
(bot/flow/edits.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bot.flow import reminders, standing
from bot.flow.core import FlowCore
from bot.flow.execution import Execution
from bot.flow.intake import SubmissionKey, admissible, classified
from bot.flow.intake import resolved as resolve_request
from bot.flow.timing import ask_timing
from bot.settings import AgentSettings
from contracts.api import SubmitBody
from contracts.base import ContractViolation, FieldProblem, Operation, Resolved
from contracts.canonical import binding_hash
from contracts.ids import opaque_id
from contracts.policy import Ask, Auto, Deny
from contracts.standing import sampled
from store.base import StoreError
from store.delegations import Delegation
from store.proposals import IdempotencyConflict, NewProposal, PendingLimit, Proposal, Status
from store.proposals.effects import effects_of

__all__ = ["Submission", "Submitted", "conflict_problem", "new_proposal_id"]


def new_proposal_id() -> str:
    """``cs_`` and 128 random bits (contracts/ids.py)."""
    return opaque_id("cs_")


@dataclass(frozen=True, slots=True)
class Submitted:
    proposal: Proposal
    created: bool  #: False when this replays an earlier submission


class Submission:
    """The flow's submission stage: one proposal in, stored and classified; over the core, and
    the execution (an automatic approval runs at once)."""

    def __init__(self, core: FlowCore, execution: Execution) -> None:
        self._core = core
        self._execution = execution

    async def submit(
        self,
        agent: AgentSettings,
        body: SubmitBody,
        idempotency_key: str | None,
        *,
        admit: Callable[[NewProposal], Awaitable[PendingLimit | None]] | None = None,
        delegation: Delegation | None = None,
    ) -> Submitted:
        """Validate, resolve, classify and store one proposal; run it at once if policy says auto.

        Who asked is verified first (bot/flow/requesters.py): ``requested_by`` must be someone the
        agent acts for, or the person of the ``delegation`` the agent's call came with; else
        RequesterRefused, and nothing is stored or posted.

        ``admit`` sees the classified proposal before it is stored (a replay too: the store
        finds it as it stores) and returns the bound on its agent's pending proposals it is
        held to (None: no bound), or refuses it by raising (the agent's pending limit,
        bot/api/quotas.py). The store refuses a new proposal past that bound with
        PendingLimitReached, nothing stored; a replay gets its proposal whatever the bound.

        Raises ContractViolation (nothing stored), IdempotencyConflict or PendingLimitReached.
        """
        checked = await admissible(
            self._core.settings,
            agent,
            body,
            delegation,
            directory=self._core.directory,
            callback_guard=self._core.callback_guard,
        )
        body, operation, requested_by = checked.body, checked.operation, checked.requested_by
        submission = SubmissionKey.submitted(agent.name, body, idempotency_key)
        # A replay is found by the store as it stores (one statement on PostgreSQL): looked
        # up before only when this submission cannot be resolved now, so that a stored one
        # still gets its proposal.
        now = self._core.now()
        try:
            resolved = await resolve_request(
                operation, body.request, self._core.operation_context("submit", now)
            )
        except Exception:
            earlier = await self._core.store.find_submission(agent.name, submission.key)
            if earlier is None:
                raise
            return Submitted(submission.replayed(earlier, _conflict), created=False)
        for attempt in range(1, standing.RACE_ATTEMPTS + 1):
            new = await self.frozen_contract(
                operation,
                resolved,
                body,
                submission,
                agent=agent.name,
                requested_by=requested_by,
                now=now,
                delegation_id=None if delegation is None else delegation.id,
            )
            bound = None if admit is None else await admit(new)
            try:
                proposal, created = await self._core.store.create_proposal(new, pending_limit=bound)
                break
            except IdempotencyConflict as conflict:  # stored under this key for another body
                return Submitted(submission.replayed(conflict.existing, _conflict), created=False)
            except StoreError:
                # its standing rule was used up or revoked by a concurrent call since it was
                # read (the database counts the uses): classify again without it
                if new.standing_rule_id is None or attempt == standing.RACE_ATTEMPTS:
                    raise
        if not created:
            return Submitted(submission.replayed(proposal, _conflict), created=False)
        # the store wrote the effects of the status it entered (store/proposals/effects.py)
        self._core.changed(proposal, enqueued=bool(effects_of(proposal)))
        if proposal.status is Status.EXECUTING:
            proposal = await self._execution.execute(proposal)
        return Submitted(proposal, created=True)

    async def frozen_contract(
        self,
        operation: Operation[Any, Any],
        resolved: Resolved[Any],
        body: SubmitBody,
        submission: SubmissionKey,
        *,
        agent: str,
        requested_by: str,
        now: datetime,
        supersedes: str | None = None,
        edited_by: str | None = None,
        editors: tuple[str, ...] = (),
        delegation_id: str | None = None,
    ) -> NewProposal:
        """The proposal to store, for a submission and for an edit alike: ``body`` as sent (an
        edit's as if its agent had sent it) under ``submission``'s key, its arguments and preview
        frozen, classified by the policy table (and any standing rule that covers them) for this
        agent and ``requested_by`` (the requester verified), with the risk class, reminder and
        review sample. An edit's ``editors`` (``edited_by`` and those of the versions it
        replaces) may not decide it: no standing rule one of them granted covers it."""
        arguments = operation.dump_arguments(resolved.arguments)
        preview = resolved.preview
        decision, standing_rule = await classified(
            self._core.settings,
            self._core.store.standing(),
            operation,
            arguments,
            agent=agent,
            requested_by=requested_by,
            directory=self._core.directory,
            now=now,
            editors=editors,
        )
        proposal_id = new_proposal_id()
        timing: dict[str, Any] = {}
        if isinstance(decision, Ask):  # shown at once, or when its batch closes at the latest
            asked = ask_timing(
                decision,
                operation=operation.name,
                now=now,
                default_remind_at=self._core.settings.approvals.remind_at,
                urgent=body.urgent,
                edit=supersedes is not None,
            )
            timing = {
                "shown_after": asked.shown_after,
                "expires_at": asked.expires_at,
                "remind_at": asked.remind_at,
                "backup_at": asked.backup_at,
                "backup_roles": asked.backup_roles,
                "batch": asked.batch,
            }
        fields = {
            **_policy_fields(decision, now, self._core.lease_until(now)),
            "remind_at": reminders.due_time(decision, self._core.settings.approvals.remind_at, now),
            **timing,
        }
        return NewProposal(
            id=proposal_id,
            agent=agent,
            submission_key=submission.key,
            submission_fingerprint=submission.fingerprint,
            requested_by=requested_by,
            run_id=body.run_id,
            operation=operation.name,
            request=body.request,
            arguments=arguments,
            preview=preview,
            binding_hash=binding_hash(operation.name, arguments, preview.model_dump(mode="json")),
            agent_reason=body.reason,
            callback_url=body.callback_url,
            **fields,
            urgent=body.urgent,
            risk=operation.risk,
            standing_rule_id=None if standing_rule is None else standing_rule.id,
            review_sampled=isinstance(decision, Auto)
            and sampled(proposal_id, self._core.settings.approvals.review_sample),
            created_at=now,
            supersedes=supersedes,
            edited_by=edited_by,
            delegation_id=delegation_id,
        )


def _conflict(earlier: Proposal, derived: bool) -> Exception:
    """The error for a resubmission that matches ``earlier``'s key but not its body."""
    if not derived:
        return IdempotencyConflict(earlier)
    return ContractViolation([conflict_problem(earlier.id, derived=True)])


def conflict_problem(earlier_id: str, *, derived: bool) -> FieldProblem:
    """What is wrong with a resubmission stored under proposal ``earlier_id``'s key with
    another body (answered 422): its Idempotency-Key, or, when the key was ``derived`` (none
    was sent, so naming one would not help), what the key came from."""
    if not derived:
        return FieldProblem(field="Idempotency-Key", message="already used with a different body")
    return FieldProblem(
        field="run_id",
        message=f"proposal {earlier_id} already has this run_id, operation and request "
        "with other details (reason, requested_by or callback_url); send another run_id "
        "or an Idempotency-Key to make a new proposal",
    )


def _policy_fields(
    decision: Auto | Ask | Deny, now: datetime, lease_until: datetime
) -> dict[str, Any]:
    if isinstance(decision, Ask):
        return {
            "rule_id": decision.rule_id,
            "decision": "ask",
            "policy_note": decision.explanation,
            "approver_roles": tuple(decision.approvers),
            "channel": decision.channel,
            "status": Status.PENDING,
            "expires_at": now + decision.expires_after,
            "quorum": decision.quorum,
        }
    if isinstance(decision, Auto):
        return {
            "rule_id": decision.rule_id,
            "decision": "auto",
            "policy_note": decision.explanation,
            "status": Status.EXECUTING,
            "lease_until": lease_until,
        }
    return {
        "rule_id": decision.rule_id,
        "decision": "deny",
        "policy_note": decision.reason,
        "status": Status.DENIED,
    }
