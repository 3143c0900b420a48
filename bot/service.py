"""The proposal flow: submit, ask, decide, execute, expire, and tell everyone who needs to know.

Listeners and HTTP handlers decode their input and call in here; business rules come from
``contracts`` and state transitions from ``store``.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from pydantic import JsonValue

from bot import reminders
from bot.api.schemas import SubmitBody
from bot.api.waiters import Waiters
from bot.flow import extensions, standing
from bot.flow.destinations import CallbackGuard
from bot.flow.executor import Executor
from bot.flow.intake import SubmissionKey, admissible, classified
from bot.flow.intake import resolved as resolve_request
from bot.flow.lineage import editors_of
from bot.flow.subscribers import Subscribers
from bot.flow.timing import ask_timing
from bot.render import proposal as render
from bot.settings import AgentSettings, Settings
from bot.slack.directory import SlackDirectory
from bot.slack.publish import SlackPublisher
from contracts.authority import DecisionChain, refusal_reason
from contracts.base import (
    Context,
    ContractViolation,
    FieldProblem,
    HttpClient,
    Operation,
    Resolved,
)
from contracts.canonical import binding_hash
from contracts.ids import opaque_id
from contracts.outcomes import NeedsReconciliation, Outcome, Succeeded, TerminalFailure
from contracts.policy import Ask, AskRule, Auto, Deny
from contracts.standing import sampled
from store.approvals import already_approved
from store.base import (
    AlreadyDecided,
    ApprovalCounted,
    IdempotencyConflict,
    InvalidTransition,
    NewProposal,
    NotApprovable,
    Proposal,
    ProposalNotFound,
    Store,
    StoreError,
    StoreUnavailable,
    Transitioned,
    TransitionResult,
)
from store.delegations import Delegation
from store.lifecycle import Status

__all__ = ["APP_HOME", "Service", "Submitted", "new_proposal_id"]

log = logging.getLogger(__name__)

#: The "channel" of a click on the App Home tab: answers to the clicker go to their Home tab
#: (bot/flow/subscribers.py), where they are looking, instead of an ephemeral message.
APP_HOME = "app_home"


def new_proposal_id() -> str:
    """``cs_`` and 128 random bits (contracts/ids.py)."""
    return opaque_id("cs_")


@dataclass(frozen=True, slots=True)
class Submitted:
    proposal: Proposal
    created: bool  #: False when this replays an earlier submission


class Service:
    def __init__(
        self,
        *,
        settings: Settings,
        store: Store,
        publisher: SlackPublisher,
        http: HttpClient,
        clock: Callable[[], datetime],
        wake_outbox: Callable[[], None],
        directory: SlackDirectory,
        callback_guard: CallbackGuard | None = None,
        subscribers: Subscribers | None = None,
    ) -> None:
        self.settings = settings
        #: checks an agent's callback_url (bot/flow/destinations.py)
        self.callback_guard = callback_guard or CallbackGuard()
        self.store = store
        self.publisher = publisher
        self.waiters = Waiters()
        self._clock = clock
        self._http = http
        self._wake_outbox = wake_outbox
        self.directory = directory
        self._executor = Executor(settings.registry, http, clock)
        self._lease = timedelta(seconds=settings.server.execution_lease_seconds)
        #: told of every proposal that changed, and shows private answers on a person's App Home
        #: tab (bot/slack/home.py subscribes: it refreshes its approvers' tabs)
        self._subscribers = subscribers or Subscribers()

    # --- submission ---------------------------------------------------------------------------

    async def submit(
        self,
        agent: AgentSettings,
        body: SubmitBody,
        idempotency_key: str | None,
        *,
        admit: Callable[[NewProposal], Awaitable[None]] | None = None,
        delegation: Delegation | None = None,
    ) -> Submitted:
        """Validate, resolve, classify and store one proposal; run it at once if policy says auto.

        Who asked is verified first (bot/flow/requesters.py): ``requested_by`` must be someone the
        agent acts for, or the person of the ``delegation`` the agent's call came with; else
        RequesterRefused, and nothing is stored or posted.

        ``admit`` sees the classified proposal before it is stored (not for a replay) and may
        refuse it by raising (the agent's pending limit, bot/api/quotas.py).

        Raises ContractViolation (nothing stored) or IdempotencyConflict.
        """
        checked = await admissible(
            self.settings,
            agent,
            body,
            delegation,
            directory=self.directory,
            callback_guard=self.callback_guard,
        )
        body, operation, requested_by = checked.body, checked.operation, checked.requested_by
        body_json = body.model_dump(mode="json")
        submission = SubmissionKey.of(
            body_json,
            idempotency_key,
            identity={
                "agent": agent.name,
                "run_id": body.run_id,
                "operation": body.operation,
                "request": body.request,
            },
        )
        earlier = await self.store.find_submission(agent.name, submission.key)
        if earlier is not None:
            return Submitted(submission.replayed(earlier, _conflict), created=False)

        now = self._clock()
        resolved = await resolve_request(
            operation, body.request, self.operation_context("submit", now)
        )
        for attempt in range(1, standing.RACE_ATTEMPTS + 1):
            new = await self.frozen_contract(
                operation,
                resolved,
                agent=agent.name,
                requested_by=requested_by,
                delegation_id=None if delegation is None else delegation.id,
                request=body_json["request"],
                submission_key=submission.key,
                fingerprint=submission.fingerprint,
                run_id=body.run_id,
                reason=body.reason,
                callback_url=body.callback_url,
                now=now,
                urgent=body.urgent,
            )
            if admit is not None:
                await admit(new)
            try:
                proposal, created = await self.store.create_proposal(new)
                break
            except StoreError:
                # its standing rule was used up or revoked by a concurrent call since it was
                # read (the database counts the uses): classify again without it
                if new.standing_rule_id is None or attempt == standing.RACE_ATTEMPTS:
                    raise
        if not created:
            return Submitted(submission.replayed(proposal, _conflict), created=False)
        self.changed(proposal)
        if proposal.status is Status.EXECUTING:
            proposal = await self.execute(proposal)
        return Submitted(proposal, created=True)

    async def frozen_contract(
        self,
        operation: Operation[Any, Any],
        resolved: Resolved[Any],
        *,
        agent: str,
        requested_by: str,
        request: JsonValue,
        submission_key: str,
        fingerprint: str,
        run_id: str | None,
        reason: str | None,
        callback_url: str | None,
        now: datetime,
        supersedes: str | None = None,
        edited_by: str | None = None,
        delegation_id: str | None = None,
        urgent: bool = False,
    ) -> NewProposal:
        """The proposal to store, for a submission and for an edit alike: the frozen arguments
        and preview, classified by the policy table (and any standing rule that covers them)
        for this agent and requester, with the risk class, reminder and review sample."""
        arguments = operation.dump_arguments(resolved.arguments)
        preview = resolved.preview
        decision, standing_rule = await classified(
            self.settings,
            self.store.standing(),
            operation,
            arguments,
            agent=agent,
            requested_by=requested_by,
            directory=self.directory,
            now=now,
        )
        proposal_id = new_proposal_id()
        timing: dict[str, Any] = {}
        if isinstance(decision, Ask):  # shown at once, or when its batch closes at the latest
            asked = ask_timing(
                decision,
                operation=operation.name,
                now=now,
                default_remind_at=self.settings.approvals.remind_at,
                urgent=urgent,
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
            **_policy_fields(decision, now, self._lease),
            "remind_at": reminders.due_time(decision, self.settings.approvals.remind_at, now),
            **timing,
        }
        return NewProposal(
            id=proposal_id,
            agent=agent,
            submission_key=submission_key,
            submission_fingerprint=fingerprint,
            requested_by=requested_by,
            run_id=run_id,
            operation=operation.name,
            request=request,
            arguments=arguments,
            preview=preview,
            binding_hash=binding_hash(operation.name, arguments, preview.model_dump(mode="json")),
            agent_reason=reason,
            callback_url=callback_url,
            **fields,
            urgent=urgent,
            risk=operation.risk,
            standing_rule_id=None if standing_rule is None else standing_rule.id,
            review_sampled=isinstance(decision, Auto)
            and sampled(proposal_id, self.settings.approvals.review_sample),
            created_at=now,
            supersedes=supersedes,
            edited_by=edited_by,
            delegation_id=delegation_id,
        )

    # --- decisions from Slack -----------------------------------------------------------------

    async def approve(self, proposal_id: str, *, user: str, channel: str | None) -> Proposal | None:
        """An Approve click: check the clicker, record the approval; once the rule's quorum of
        distinct approvers is reached, claim atomically, execute once, report."""
        proposal = await self.decidable(proposal_id, user=user, channel=channel, verb="approve")
        if proposal is None:
            return None
        again = already_approved(proposal, user)
        if again is not None:
            await self.refuse(proposal, user=user, channel=channel, verb="approve", why=again)
            return None
        result = await self._approve_in_store(proposal, user)
        if isinstance(result, Transitioned):
            self.changed(result.proposal)
            return await self.execute(result.proposal)
        if isinstance(result, ApprovalCounted):  # the message shows the progress (outbox)
            self.changed(result.proposal)
            text = render.approval_recorded_text(result.proposal)
            await self.tell(result.proposal, channel, user, text)
            return result.proposal
        if isinstance(result, NotApprovable) and already_approved(result.proposal, user):
            # the same person's two clicks raced: the store counted one and refused the other
            await self.audit_refusal(result.proposal, user=user, verb="approve", why=result.reason)
        await self.not_claimed(result, user=user, channel=channel)
        return None

    async def begin_reject(
        self, proposal_id: str, *, user: str, channel: str | None, trigger_id: str
    ) -> None:
        """A Reject click: check the clicker, then ask for a reason in a modal."""
        proposal = await self.decidable(proposal_id, user=user, channel=channel, verb="reject")
        if proposal is not None:
            await self.publisher.open_view(proposal, trigger_id, render.reject_modal(proposal))

    async def reject(self, proposal_id: str, *, user: str, reason: str) -> Proposal | None:
        """The reason modal was submitted: check the clicker again, then reject atomically."""
        proposal = await self.decidable(proposal_id, user=user, channel=None, verb="reject")
        if proposal is None:
            return None
        result = await self.store.reject(proposal.id, actor=user, reason=reason, now=self._clock())
        if isinstance(result, Transitioned):
            self.changed(result.proposal)
            return result.proposal
        await self.not_claimed(result, user=user, channel=None)
        return None

    async def extend(self, proposal_id: str, *, user: str, channel: str | None) -> Proposal | None:
        """An Extend click: the same checks as Approve, then the one extension the rule allows
        (bot/flow/extensions.py). A refusal is told to the clicker alone and audited."""
        proposal = await self.decidable(proposal_id, user=user, channel=channel, verb="extend")
        if proposal is None:
            return None
        now = self._clock()
        until = extensions.extension_until(self.settings.policy, proposal, now)
        if isinstance(until, str):
            await self.refuse(proposal, user=user, channel=channel, verb="extend", why=until)
            return None
        result = await self.store.extend(proposal.id, actor=user, until=until, now=now)
        if isinstance(result, Transitioned):
            self.changed(result.proposal)
            return result.proposal
        if isinstance(result, NotApprovable):
            await self.audit_refusal(proposal, user=user, verb="extend", why=result.reason)
        if isinstance(result, AlreadyDecided | NotApprovable):
            await self.not_claimed(result, user=user, channel=channel)
        return None

    async def remind_due(self) -> list[Proposal]:
        """Mark every pending proposal whose reminder is due as reminded; the outbox posts the
        reminders in their threads (bot/reminders.py)."""
        reminded: list[Proposal] = []
        while batch := await self.store.remind_due(now=self._clock(), limit=100):
            reminded += batch
        if reminded:
            self._wake_outbox()
        return reminded

    async def hand_over_due(self) -> list[Proposal]:
        """Offer every pending proposal nobody decided by its ``backup_at`` to its backup
        approvers too: the store marks and audits it; its message says so (outbox)."""
        handed: list[Proposal] = []
        while batch := await self.store.hand_over_due(now=self._clock(), limit=100):
            for proposal in batch:
                self.changed(proposal)
            handed += batch
        return handed

    async def expire_due(self) -> list[Proposal]:
        """Expire every overdue pending proposal and tell Slack and the agents."""
        expired: list[Proposal] = []
        while batch := await self.store.expire_due(now=self._clock(), limit=100):
            for proposal in batch:
                self.changed(proposal)
            expired += batch
        return expired

    async def reclaim_abandoned(self) -> list[Proposal]:
        """Executions whose executor vanished (a crash) become needs_reconciliation."""
        reclaimed: list[Proposal] = []
        while batch := await self.store.reclaim_abandoned(now=self._clock(), limit=100):
            for proposal in batch:
                log.warning("execution of %s was abandoned; a person must reconcile", proposal.id)
                self.changed(proposal)
            reclaimed += batch
        return reclaimed

    # --- reconciliation by a person -----------------------------------------------------------

    async def reconcile(
        self, proposal_id: str, *, user: str, channel: str | None, resolution: str
    ) -> Proposal | None:
        """Record what really happened to an uncertain execution: 'succeeded' or 'failed'."""
        proposal = await self.decidable(
            proposal_id,
            user=user,
            channel=channel,
            verb="reconcile",
            expect=Status.NEEDS_RECONCILIATION,
        )
        if proposal is None:
            return None
        note = f"recorded by <@{user}> after checking the target"
        outcome: Outcome = (
            Succeeded(result={"recorded_by": user})
            if resolution == "succeeded"
            else TerminalFailure(
                detail=f"recorded as not having happened by {user}",
                correlation_id=proposal.id,
            )
        )
        result = await self.store.resolve_reconciliation(
            proposal.id, actor=user, outcome=outcome, note=note, now=self._clock()
        )
        if isinstance(result, Transitioned):
            self.changed(result.proposal)
            return result.proposal
        await self.not_claimed(result, user=user, channel=channel)
        return None

    async def retry(self, proposal_id: str, *, user: str, channel: str | None) -> Proposal | None:
        """Try an uncertain execution again, with the same idempotency key."""
        proposal = await self.decidable(
            proposal_id,
            user=user,
            channel=channel,
            verb="retry",
            expect=Status.NEEDS_RECONCILIATION,
        )
        if proposal is None:
            return None
        now = self._clock()
        result = await self.store.retry_execution(
            proposal.id, actor=user, now=now, lease_until=now + self._lease
        )
        if isinstance(result, Transitioned):
            self.changed(result.proposal)
            return await self.execute(result.proposal)
        await self.not_claimed(result, user=user, channel=channel)
        return None

    # --- one digest item at a time (bot/digests/decisions.py): one click's checks, telling nobody

    async def approve_item(
        self, proposal: Proposal, *, user: str, via: Mapping[str, JsonValue] | None = None
    ) -> TransitionResult | str:
        """What an Approve click on ``proposal`` alone does, but telling nobody: the same checks
        (a refusal is audited and its reason returned), then the claim, and when it wins the
        execution (Transitioned then carries the outcome). ``via`` says where the approval was
        given, in its audit entry (Store.claim_for_execution)."""
        if proposal.status is not Status.PENDING:
            return AlreadyDecided(proposal)
        why = await self.item_refusal(proposal, user)
        why = why or already_approved(proposal, user)
        if why is not None:
            await self.audit_refusal(proposal, user=user, verb="approve", why=why)
            return why
        result = await self._approve_in_store(proposal, user, via)
        if isinstance(result, Transitioned):
            self.changed(result.proposal)
            return Transitioned(await self.execute(result.proposal))
        if isinstance(result, ApprovalCounted):
            self.changed(result.proposal)
        return result

    async def reject_item(
        self, proposal: Proposal, *, user: str, reason: str
    ) -> TransitionResult | str:
        """What a submitted reject modal for ``proposal`` alone does, but telling nobody."""
        if proposal.status is not Status.PENDING:
            return AlreadyDecided(proposal)
        why = await self.item_refusal(proposal, user)
        if why is not None:
            await self.audit_refusal(proposal, user=user, verb="reject", why=why)
            return why
        result = await self.store.reject(proposal.id, actor=user, reason=reason, now=self._clock())
        if isinstance(result, Transitioned):
            self.changed(result.proposal)
        return result

    async def item_refusal(self, proposal: Proposal, user: str) -> str | None:
        """Why ``user`` may not decide the pending ``proposal``: the checks ``decidable``
        makes (the operation still configured, contracts.authority), nothing audited."""
        if proposal.operation not in self.settings.registry:
            return f"operation {proposal.operation!r} is no longer configured"
        return await self._refusal(proposal, user)

    # --- the decision steps features share ----------------------------------------------------
    # Every click that decides a proposal, here and in the features (edits, standing rules,
    # digests), takes the same steps: decidable? (else refuse: tell and audit); the transition
    # in the store; changed; execute when claimed; tell the clicker. These are those steps.

    def now(self) -> datetime:
        """The service's clock (injected, so expiry and leases are testable)."""
        return self._clock()

    def lease_until(self, now: datetime) -> datetime:
        """Until when an execution claimed at ``now`` is this process's (a crash frees it)."""
        return now + self._lease

    def operation_context(self, purpose: str, now: datetime) -> Context:
        """What an operation's resolve, revalidate and execute steps see: ``now``, the shared
        HTTP client and a fresh correlation id starting with ``purpose`` (``submit``, ``edit``)."""
        return Context(now=now, http=self._http, correlation_id=f"{purpose}.{secrets.token_hex(4)}")

    async def decidable(
        self,
        proposal_id: str,
        *,
        user: str,
        channel: str | None,
        verb: str,
        expect: Status = Status.PENDING,
    ) -> Proposal | None:
        """The proposal if ``user`` may decide it now (its status is ``expect``, its operation
        still configured, and contracts.authority allows ``user``); otherwise None, having told
        ``user`` why and audited the refusal as ``<verb>_refused`` (a click on a proposal
        someone decided is told who did, unaudited; one on a withdrawn proposal is refused)."""
        try:
            proposal = await self.store.get_proposal(proposal_id)
        except ProposalNotFound:
            log.info("click on unknown proposal %r by %s", proposal_id, user)
            await self.tell(
                None, channel, user, render.refusal_text("this proposal does not exist")
            )
            return None
        except StoreUnavailable as error:  # not an answer about the proposal: nothing changed
            await self.store_away(proposal_id, user=user, channel=channel, error=error)
            return None
        if proposal.status is Status.CANCELLED:
            withdrawn = render.withdrawn_reason(proposal)
            await self.refuse(proposal, user=user, channel=channel, verb=verb, why=withdrawn)
            return None
        if proposal.status is not expect:
            await self._tell_decided(proposal, user=user, channel=channel)
            return None
        why = await self._refusal(proposal, user)
        if why is None and proposal.operation not in self.settings.registry:
            why = f"operation {proposal.operation!r} is no longer configured"
        if why is None:
            return proposal
        await self.refuse(proposal, user=user, channel=channel, verb=verb, why=why)
        return None

    async def store_away(
        self,
        proposal_id: str,
        *,
        user: str,
        channel: str | None,
        error: StoreUnavailable,
        recording: bool = False,
    ) -> None:
        """The store did not answer ``user``'s click on ``proposal_id``: tell them so, privately.
        ``recording``: it stopped while the click was being recorded, so whether it was is not
        known (the message will show it); otherwise nothing changed."""
        log.warning(
            "click on %s by %s not %s: the store did not answer (%s)",
            proposal_id,
            user,
            "confirmed" if recording else "applied",
            error,
            extra={"event": "click.store_unavailable", "proposal_id": proposal_id, "user": user},
        )
        text = render.store_lost_text() if recording else render.store_away_text()
        try:
            await self.tell(None, channel, user, text)
        except StoreUnavailable:  # telling may audit a failed Slack call: the store is away
            log.warning("could not tell %s that the store did not answer", user)

    async def refuse(
        self, proposal: Proposal, *, user: str, channel: str | None, verb: str, why: str
    ) -> None:
        """Refuse ``user``'s click: audit it as ``<verb>_refused`` with ``why``, then tell them
        ``why`` (privately, see :meth:`tell`). Nothing else changes."""
        await self.audit_refusal(proposal, user=user, verb=verb, why=why)
        await self.tell(proposal, channel, user, render.refusal_text(why))

    async def audit_refusal(self, proposal: Proposal, *, user: str, verb: str, why: str) -> None:
        """A refused click, audited as ``<verb>_refused`` (as ``decidable`` audits its own
        refusals), telling nobody: for callers that answer in their own way (digests)."""
        log.info(
            "%s of %s by %s refused: %s",
            verb,
            proposal.id,
            user,
            why,
            extra={
                "event": f"proposal.{verb}_refused",
                "proposal_id": proposal.id,
                "agent": proposal.agent,
                "operation": proposal.operation,
                "user": user,
                "reason": why,
            },
        )
        await self.store.record_event(
            proposal.id,
            actor=user,
            event=f"{verb}_refused",
            detail={"user": user, "reason": why},
            now=self._clock(),
        )

    async def refusal_for(self, proposal: Proposal, user: str) -> str | None:
        """Why ``user`` may not decide ``proposal`` now, or None (App Home lists only these)."""
        if proposal.operation not in self.settings.registry:
            return f"operation {proposal.operation!r} is no longer configured"
        return already_approved(proposal, user) or await self._refusal(proposal, user)

    async def tell(
        self, proposal: Proposal | None, channel: str | None, user: str, text: str
    ) -> None:
        """A private answer: on the Home tab for clicks there, else ephemeral in the channel
        (the proposal's own channel when the click came without one, as from a modal)."""
        if channel == APP_HOME and await self._subscribers.notice(user, text):
            return
        where = channel if channel != APP_HOME else None
        where = where or (proposal.slack_channel if proposal is not None else None)
        if where:
            await self.publisher.tell(proposal, where, user, text)

    async def _refusal(self, proposal: Proposal, user: str) -> str | None:
        """Why ``user`` may not decide ``proposal`` now (contracts.authority), or None."""
        rule = self._current_rule(proposal)
        agent = self.settings.agents.get(proposal.agent)
        if agent is None:  # its owners are unknown now: fail closed rather than forget them
            return (
                f"agent {proposal.agent!r} is no longer configured, so its owners cannot be "
                "told apart from other approvers; nobody can decide its proposals"
            )
        teams = self.settings.approvals.allowed_teams
        if not teams:
            home = await self.directory.home_team()
            teams = (home,) if home else ()
        roles = await self.directory.role_members(self.settings.roles)
        refusal = refusal_reason(
            approver=await self.directory.profile(user),
            chain=DecisionChain(
                requested_by=proposal.requested_by,
                agent_owners=agent.owners,
                editors=await editors_of(self.store, proposal),
            ),
            approver_roles=self.deciding_roles(proposal),
            roles=roles,
            allowed_teams=teams,
            allow_guests=rule.allow_guests if rule is not None else False,
        )
        backups = self.backup_roles(proposal)
        held = [role for role in backups if user in roles.get(role, ())]
        waiting = proposal.backup_at is not None and self._clock() < proposal.backup_at
        if refusal is not None and held and waiting and refusal.startswith("deciding this needs"):
            assert proposal.backup_at is not None
            moment = proposal.backup_at.astimezone(UTC).replace(microsecond=0).isoformat()
            return (
                f"you hold {', '.join(held)}, a backup role of this rule: its backup approvers "
                f"may decide it at {moment} if nobody has decided it by then"
            )
        return refusal

    def backup_roles(self, proposal: Proposal) -> tuple[str, ...]:
        """The backup approver roles of the proposal's rule as configured now (``then``)."""
        rule = self._current_rule(proposal)
        if rule is None or rule.then is None:
            return ()
        return rule.then.approvers

    def deciding_roles(self, proposal: Proposal) -> tuple[str, ...]:
        """The roles whose members may decide ``proposal`` now: its rule's approvers as
        configured now, and its backup approvers once nobody has decided by ``backup_at``."""
        rule = self._current_rule(proposal)
        if rule is None:
            return ()
        handed_over = proposal.backup_at is not None and self._clock() >= proposal.backup_at
        return rule.approvers + (self.backup_roles(proposal) if handed_over else ())

    def _current_rule(self, proposal: Proposal) -> AskRule | None:
        """The proposal's rule as the policy is configured *now*, if it still asks."""
        for rule in self.settings.policy.rules:
            if rule.id == proposal.rule_id:
                return rule if isinstance(rule, AskRule) else None
        return None

    async def not_claimed(
        self,
        result: AlreadyDecided | NotApprovable | ApprovalCounted,
        *,
        user: str,
        channel: str | None,
    ) -> None:
        """The store did not make the transition a click asked for: tell the clicker why (already
        decided, or the store's reason; an overdue proposal is expired first)."""
        if isinstance(result, ApprovalCounted):  # only an approval answers so (approve())
            return
        if isinstance(result, AlreadyDecided):
            await self._tell_decided(result.proposal, user=user, channel=channel)
            return
        if result.proposal.expires_at is not None and result.proposal.expires_at <= self._clock():
            await self.expire_due()
        await self.tell(result.proposal, channel, user, render.refusal_text(result.reason))

    async def _tell_decided(self, proposal: Proposal, *, user: str, channel: str | None) -> None:
        await self.tell(proposal, channel, user, render.already_decided_text(proposal))

    async def _approve_in_store(
        self, proposal: Proposal, user: str, via: Mapping[str, JsonValue] | None = None
    ) -> TransitionResult:
        """Record ``user``'s approval, bound to the hash of the stored contract; the store claims
        the proposal for execution when it completes the quorum."""
        operation_hash = binding_hash(
            proposal.operation, proposal.arguments, proposal.preview.model_dump(mode="json")
        )
        now = self._clock()
        return await self.store.claim_for_execution(
            proposal.id,
            actor=user,
            now=now,
            binding_hash=operation_hash,
            lease_until=now + self._lease,
            via=via,
        )

    async def execute(self, proposal: Proposal) -> Proposal:
        """Run a proposal this process has claimed (status executing) and record its outcome;
        the proposal as it is afterwards."""
        outcome = await self._executor.run(proposal)
        proposal = await self._record_outcome(proposal, outcome)
        self.changed(proposal)
        return proposal

    async def _record_outcome(self, proposal: Proposal, outcome: Outcome) -> Proposal:
        """Record ``outcome``; while the store does not answer, keep it and try again (this
        process holds the only copy of what the target said)."""
        wait = 0.1
        while True:
            try:
                return await self.store.record_outcome(proposal.id, outcome, now=self._clock())
            except InvalidTransition:
                current = await self.store.get_proposal(proposal.id)
                if current.outcome == outcome:  # an earlier try committed; its answer was lost
                    return current
                if current.status is Status.NEEDS_RECONCILIATION:
                    return await self._record_late(current, outcome)
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

    async def _record_late(self, proposal: Proposal, outcome: Outcome) -> Proposal:
        """The target answered after the execution was handed to a person (its lease ended):
        audit the answer and show it on the message, for whoever reconciles it."""
        now = self._clock()
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
        shown = proposal.outcome.model_copy(
            update={
                "detail": f"{proposal.outcome.detail}; the target answered {said} at {at}, "
                "after Countersign had given up waiting",
                "answered_late": said,
                "answered_at": at,
            }
        )
        late = await self.store.record_late_outcome(proposal.id, outcome, shown, now=now)
        return late or proposal

    def changed(self, proposal: Proposal) -> None:
        """Call after every transition of ``proposal``: the transition wrote its effects to the
        outbox; wake long-polls and the outbox worker and tell the subscribers."""
        self.waiters.notify(proposal.id)
        self._wake_outbox()
        self._subscribers.proposal_changed(proposal)


#: How a late answer of the target reads on the reconciliation card, by outcome kind.
_LATE_WORDS: dict[str, Literal["success", "failure", "nothing done"]] = {
    "succeeded": "success",
    "terminal_failure": "failure",
    "revision_required": "nothing done",
}


def _conflict(earlier: Proposal, derived: bool) -> Exception:
    """The error for a resubmission that matches ``earlier``'s key but not its body."""
    if not derived:
        return IdempotencyConflict(earlier)
    # No Idempotency-Key was sent, so naming one would not help: say what the key came from.
    return ContractViolation(
        [
            FieldProblem(
                field="run_id",
                message=f"proposal {earlier.id} already has this run_id, operation and request "
                "with other details (reason, requested_by or callback_url); send another run_id "
                "or an Idempotency-Key to make a new proposal",
            )
        ]
    )


def _policy_fields(decision: Auto | Ask | Deny, now: datetime, lease: timedelta) -> dict[str, Any]:
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
            "lease_until": now + lease,
        }
    return {
        "rule_id": decision.rule_id,
        "decision": "deny",
        "policy_note": decision.reason,
        "status": Status.DENIED,
    }
