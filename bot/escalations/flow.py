"""The escalation flow: an agent hands a conversation to people; one person takes it, hands it
back with a note, or resolves it; unclaimed ones are announced again.

HTTP handlers and Slack listeners decode their input and call in here; whether a trigger holds
comes from ``contracts.escalation``, the transitions from the EscalationStore. Every transition
writes its audit entry and its outbox entries (Slack, callback) in its own transaction.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Protocol

from bot.escalations.schemas import EscalationBody
from bot.flow import deciders
from bot.flow.core import APP_HOME, FlowCore
from bot.flow.intake import SubmissionKey
from bot.flow.requesters import check_requester
from bot.monitoring.store_watch import StoreWatch
from bot.render import escalation as render
from bot.settings import AgentSettings
from bot.slack.directory import SlackDirectory
from contracts.base import ContractViolation, FieldProblem
from contracts.escalation import RESPONDING, choose_route, judge_trigger
from contracts.ids import opaque_id
from store.base import StoreUnavailable
from store.escalations import (
    Escalation,
    EscalationConflict,
    EscalationNotFound,
    EscalationResult,
    EscalationStore,
    Moved,
    NewEscalation,
    handed_back_since,
    resolved_since,
    taken_since,
)

__all__ = [
    "EscalationService",
    "SubmittedEscalation",
    "new_escalation_id",
    "reannounce_forever",
]

log = logging.getLogger(__name__)


def new_escalation_id() -> str:
    """``esc_`` and 128 random bits (contracts/ids.py)."""
    return opaque_id("esc_")


@dataclass(frozen=True, slots=True)
class SubmittedEscalation:
    escalation: Escalation
    created: bool  #: False when this replays an earlier submission


#: Whether an escalation shows a recorded click's own move, made by another application of it.
Made = Callable[[Escalation], bool]


class LetGo(Protocol):
    """A transition by which the person on an escalation lets go of it (EscalationStore's
    hand_back and resolve)."""

    async def __call__(
        self, escalation_id: str, *, actor: str, now: datetime
    ) -> EscalationResult: ...


class EscalationService:
    """Escalations, over the proposal flow's collaborators (``flow``: its settings, store, clock,
    Slack publisher, callback guard, long polls and subscribers); ``directory`` reads the
    responders' Slack profiles."""

    def __init__(self, flow: FlowCore, *, directory: SlackDirectory) -> None:
        self._flow = flow
        self.settings = flow.settings
        self.store: EscalationStore = flow.store.escalations()
        self._audit = flow.store
        self.publisher = flow.publisher
        self.directory = directory

    # --- submission ---------------------------------------------------------------------------

    async def submit(
        self,
        agent: AgentSettings,
        body: EscalationBody,
        idempotency_key: str | None,
        *,
        admit: Callable[[], Awaitable[None]] | None = None,
    ) -> SubmittedEscalation:
        """Check the trigger against the thresholds, route it, store it open and post it.

        ``admit`` runs before a new escalation is stored (not for a replay) and may refuse it by
        raising (the agent's open-escalations limit, bot/api/quotas.py).

        Raises ContractViolation (nothing stored) or EscalationConflict.
        """
        if body.requested_by is None and body.customer_ref is None:
            raise ContractViolation(
                [
                    FieldProblem(
                        field="requested_by",
                        message="name the accountable human (requested_by, a Slack user id) or "
                        "the customer (customer_ref); got neither",
                    )
                ]
            )
        if body.requested_by is not None:  # only someone the agent acts for (403 otherwise)
            await check_requester(
                agent, body.requested_by, roles=self.settings.roles, directory=self.directory
            )
        await self._flow.callback_guard.check_submitted(agent, body.callback_url)
        # one escalation per agent, conversation and trigger kind, unless an Idempotency-Key
        # says otherwise
        submission = SubmissionKey.of(
            body.model_dump(mode="json"),
            idempotency_key,
            identity={
                "agent": agent.name,
                "conversation_id": body.conversation_id,
                "trigger": body.trigger.kind.value,
            },
        )
        earlier = await self.store.find_escalation(agent.name, submission.key)
        if earlier is not None:
            return SubmittedEscalation(submission.replayed(earlier, _conflict), created=False)
        if admit is not None:
            await admit()

        policy = self.settings.escalation
        verdict = judge_trigger(body.trigger, policy)
        route = choose_route(
            policy.routes,
            topic=verdict.topic,
            labels=body.trigger.signals.topic_labels,
            team=body.team,
        )
        if route is None:
            raise ContractViolation(
                [
                    FieldProblem(
                        field="team",
                        message=f"no escalation route for team {body.team!r} or topics "
                        f"{list(body.trigger.signals.topic_labels)!r}; the configuration's "
                        "[escalation] routes need a default route (one with only a channel)",
                    )
                ]
            )
        new = NewEscalation(
            id=new_escalation_id(),
            agent=agent.name,
            submission_key=submission.key,
            submission_fingerprint=submission.fingerprint,
            conversation_id=body.conversation_id,
            requested_by=body.requested_by,
            customer_ref=body.customer_ref,
            team=body.team,
            summary=body.summary,
            trigger=body.trigger,
            verdict=verdict,
            channel=route.channel,
            callback_url=body.callback_url,
            created_at=self._flow.now(),
        )
        escalation, created = await self.store.create_escalation(new)
        if not created:
            submission.replayed(escalation, _conflict)
        else:
            self._changed(escalation, None)
        return SubmittedEscalation(escalation, created=created)

    # --- people in Slack ----------------------------------------------------------------------

    async def take(
        self,
        escalation_id: str,
        *,
        user: str,
        channel: str | None,
        since: datetime | None = None,
    ) -> None:
        """Take it: the clicker owns the conversation; the agent must stop replying.

        ``since``: when the recorded click applied here was recorded (bot/flow/clicks.py). The
        clicker's take made since is that click's own, made by another application of it
        (leased again when its lease ended while this one still ran): found when the
        escalation is read or when the store refuses the take, nothing is told."""
        made = None if since is None else partial(taken_since, actor=user, since=since)
        escalation = await self._respondable(
            escalation_id, user=user, channel=channel, verb="take", made=made
        )
        if escalation is not None:
            result = await self.store.take(escalation.id, actor=user, now=self._flow.now())
            await self._after(result, user=user, channel=channel, previous_owner=None, made=made)

    async def begin_hand_back(
        self, escalation_id: str, *, user: str, channel: str | None, trigger_id: str
    ) -> None:
        """Hand back: only the owner; a modal asks for the note the agent gets."""
        escalation = await self._respondable(
            escalation_id, user=user, channel=channel, verb="hand back"
        )
        if escalation is None:
            return
        if escalation.owner != user:
            reason = (
                f"{escalation.owner} has taken it; only they can hand it back now"
                if escalation.owner
                else "only the person who took it can hand it back, and nobody has it now"
            )
            await self._refuse(escalation, user=user, channel=channel, verb="hand back", why=reason)
            return
        await self.publisher.open_view(None, trigger_id, render.hand_back_modal(escalation))

    async def hand_back(
        self, escalation_id: str, *, user: str, note: str, since: datetime | None = None
    ) -> None:
        """The hand-back modal, submitted: the agent gets the conversation back with ``note``.
        ``since``: as for :meth:`take`; the clicker's hand-back made since is the recorded
        click's own, and it is not told that nobody has it now."""
        move = partial(self.store.hand_back, note=note)
        made = None if since is None else partial(handed_back_since, actor=user, since=since)
        await self._let_go(
            escalation_id, move, verb="hand back", user=user, channel=None, made=made
        )

    async def resolve(
        self,
        escalation_id: str,
        *,
        user: str,
        channel: str | None,
        since: datetime | None = None,
    ) -> None:
        """Resolve: nobody needs to act on it any more. ``since``: as for :meth:`take`; the
        clicker's resolution made since is the recorded click's own, and it is not told "it
        was already resolved"."""
        move = partial(self.store.resolve, note=None)
        made = None if since is None else partial(resolved_since, actor=user, since=since)
        await self._let_go(
            escalation_id, move, verb="resolve", user=user, channel=channel, made=made
        )

    async def reannounce_due(self) -> list[Escalation]:
        """Announce again the escalations nobody took in ``reannounce_after``, each at most
        ``reannounce_max`` times (a flood of escalations cannot page the channel forever)."""
        after = self.settings.escalation.reannounce_after
        most = self.settings.escalation.reannounce_max
        announced: list[Escalation] = []
        while batch := await self.store.reannounce_due(
            now=self._flow.now(), after=after, most=most, limit=100
        ):
            for escalation in batch:
                self._changed(escalation, None)
            announced += batch
        return announced

    # --- helpers ----------------------------------------------------------------------------

    async def _let_go(
        self,
        escalation_id: str,
        move: LetGo,
        *,
        verb: str,
        user: str,
        channel: str | None,
        made: Made | None = None,
    ) -> None:
        """Hand back or resolve (``move``, the store's transition with its note): if ``user``
        may, move it; its owner until now is told it changed."""
        escalation = await self._respondable(
            escalation_id, user=user, channel=channel, verb=verb, made=made
        )
        if escalation is not None:
            result = await move(escalation.id, actor=user, now=self._flow.now())
            await self._after(
                result, user=user, channel=channel, previous_owner=escalation.owner, made=made
            )

    async def _respondable(
        self,
        escalation_id: str,
        *,
        user: str,
        channel: str | None,
        verb: str,
        made: Made | None = None,
    ) -> Escalation | None:
        """The escalation if ``user`` may act on it; otherwise tell them why and audit it.
        ``made``: whether it shows this very click's move made already (by another application
        of the same recorded click); then None, nothing told or audited."""
        try:
            escalation = await self.store.get_escalation(escalation_id)
        except EscalationNotFound:
            log.info("click on unknown escalation %r by %s", escalation_id, user)
            if channel:
                text = render.escalation_refusal_text(None, "this escalation does not exist")
                await self.publisher.tell(None, channel, user, text)
            return None
        if made is not None and made(escalation):  # the application that made it answered
            return None
        why = await self._refusal(escalation, user)
        if why is None:
            return escalation
        await self._refuse(escalation, user=user, channel=channel, verb=verb, why=why)
        return None

    async def _refusal(self, escalation: Escalation, user: str) -> str | None:
        """Why ``user`` may not act on ``escalation`` now, or None: the checks of any decision
        (bot/flow/deciders.py) with the responder roles, in escalation words. Nobody behind
        the escalation (its accountable human, the agent's owners) may; no guests."""
        return await deciders.refusal(
            self.settings,
            self.directory,
            user,
            roles=self.settings.escalation.responders,
            agent=escalation.agent,
            requested_by=escalation.requested_by,
            words=RESPONDING,
        )

    async def _refuse(
        self, escalation: Escalation, *, user: str, channel: str | None, verb: str, why: str
    ) -> None:
        await self._audit.record_event(
            escalation.id,
            actor=user,
            event=f"{verb.replace(' ', '_')}_refused",
            detail={"user": user, "reason": why},
            now=self._flow.now(),
        )
        await self._tell(escalation, user=user, channel=channel, reason=why)

    async def _after(
        self,
        result: EscalationResult,
        *,
        user: str,
        channel: str | None,
        previous_owner: str | None,
        made: Made | None = None,
    ) -> None:
        if isinstance(result, Moved):
            self._changed(result.escalation, previous_owner)
            return
        if made is not None and made(result.escalation):  # applied meanwhile by the other
            return
        await self._tell(result.escalation, user=user, channel=channel, reason=result.reason)

    async def tell(self, escalation_id: str, *, user: str, channel: str | None, text: str) -> None:
        """A private answer to a clicker: where they clicked, else in the escalation's channel."""
        if await self._flow.shown_at_home(channel, user, text):
            return
        where = channel if channel != APP_HOME else None
        if where is None:
            try:
                where = (await self.store.get_escalation(escalation_id)).slack_channel
            except EscalationNotFound:
                return
        if where:
            await self.publisher.tell(None, where, user, text)

    async def _tell(
        self, escalation: Escalation, *, user: str, channel: str | None, reason: str
    ) -> None:
        text = render.escalation_refusal_text(escalation, reason)
        if await self._flow.shown_at_home(channel, user, text):
            return
        where = (channel if channel != APP_HOME else None) or escalation.slack_channel
        if where:
            await self.publisher.tell(None, where, user, text)

    def _changed(self, escalation: Escalation, previous_owner: str | None) -> None:
        """Its transition wrote its effects to the outbox: wake long-polls and the worker."""
        self._flow.escalation_changed(escalation, previous_owner)


def _conflict(earlier: Escalation, derived: bool) -> Exception:
    if not derived:
        return EscalationConflict(earlier)
    return ContractViolation(
        [
            FieldProblem(
                field="conversation_id",
                message=f"escalation {earlier.id} already has this conversation_id and trigger "
                "kind with another summary or details; send an Idempotency-Key to escalate the "
                "same conversation again",
            )
        ]
    )


async def reannounce_forever(
    service: EscalationService, interval: float, watch: StoreWatch | None = None
) -> None:
    """The escalations' sweep: announce again what nobody took in time. A store outage is
    ``watch``'s to say (bot/monitoring/store_watch.py)."""
    watch = watch or StoreWatch()
    while True:
        try:
            announced = await service.reannounce_due()
            if announced:
                log.info("announced %d unclaimed escalation(s) again", len(announced))
        except StoreUnavailable as error:
            watch.unanswered(error, where="the escalations' sweep")
        except Exception:
            log.exception("escalation sweep failed; trying again in %.0f s", interval)
        await asyncio.sleep(interval)
