"""What a submission goes through before it is stored, written once.

The agent API (``Service.submit``, bot/flow/submit.py) and ``countersign policy simulate`` call
the same verbs in the same order, so the simulator refuses what the server refuses and
classifies what it classifies:

1. :func:`admissible`: who asked is someone the agent may act for (its ``acts_for``, or a
   delegation's person), the operation is configured, and a ``callback_url`` is one the agent
   may name;
2. :func:`resolved`: the request fits the operation's contract, which derives the frozen
   arguments and the preview;
3. :func:`classified`: the policy table decides for this agent and requester, and an active
   standing rule may approve what the rule would ask for.

Each raises what the API answers with: RequesterRefused (403) or ContractViolation (422),
nothing stored. A :class:`SubmissionKey` then tells a new submission from one sent again
(proposals and escalations alike).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, TypeVar

from pydantic import JsonValue

from bot.flow import deciders, standing
from bot.flow.destinations import CallbackGuard
from bot.flow.ports import Directory
from bot.flow.requesters import Membership, verified_requester
from bot.settings import AgentSettings, Settings
from contracts.api import SubmitBody
from contracts.authority import COVERING
from contracts.base import Context, ContractViolation, FieldProblem, Operation, Resolved
from contracts.canonical import canonical_json
from contracts.policy import AskRule, Decision
from contracts.registry import UnknownOperation
from store.delegations import Delegation
from store.standing import StandingRule

__all__ = [
    "Admissible",
    "SubmissionKey",
    "admissible",
    "classified",
    "idempotency_key_problem",
    "resolved",
    "submission_identity",
]

#: The longest Idempotency-Key an agent may send.
IDEMPOTENCY_KEY_MAX = 200


def idempotency_key_problem(key: str | None) -> FieldProblem | None:
    """What is wrong with an Idempotency-Key as sent (None: nothing, or none was sent): 1 to
    200 printable characters, as the API reads the header."""
    if key is None or (1 <= len(key) <= IDEMPOTENCY_KEY_MAX and key.isprintable()):
        return None
    return FieldProblem(field="Idempotency-Key", message="1 to 200 printable characters")


class _Submitted(Protocol):
    @property
    def submission_fingerprint(self) -> str: ...


SubmittedT = TypeVar("SubmittedT", bound=_Submitted)


@dataclass(frozen=True, slots=True)
class Admissible:
    """A submission that passed the checks before its contract: its operation, and the body
    with the verified requester."""

    operation: Operation[Any, Any]
    requested_by: str
    body: SubmitBody


async def admissible(
    settings: Settings,
    agent: AgentSettings,
    body: SubmitBody,
    delegation: Delegation | None,
    *,
    directory: Membership,
    callback_guard: CallbackGuard,
) -> Admissible:
    """The requester (bot/flow/requesters.py), the operation and the callback URL, in that
    order; raises RequesterRefused or ContractViolation."""
    requested_by = await verified_requester(
        agent, body.requested_by, delegation, roles=settings.roles, directory=directory
    )
    body = body.model_copy(update={"requested_by": requested_by})  # its fingerprint too
    try:
        operation = settings.registry.get(body.operation)
    except UnknownOperation as error:
        raise ContractViolation([FieldProblem(field="operation", message=str(error))]) from None
    await callback_guard.check_submitted(agent, body.callback_url)
    return Admissible(operation=operation, requested_by=requested_by, body=body)


async def resolved(
    operation: Operation[Any, Any], request: JsonValue, ctx: Context
) -> Resolved[Any]:
    """The request through the operation's contract: its frozen arguments and preview;
    raises ContractViolation naming each field that does not fit."""
    return await operation.resolve(operation.parse_request(request), ctx)


async def classified(
    settings: Settings,
    rules: standing.CoveringRules,
    operation: Operation[Any, Any],
    arguments: Mapping[str, JsonValue],
    *,
    agent: str,
    requested_by: str,
    directory: Directory,
    now: datetime,
    editors: tuple[str, ...] = (),
) -> tuple[Decision, StandingRule | None]:
    """The policy's decision for these frozen arguments, agent and requester (the roles the
    requester holds now), and the standing rule among ``rules`` that approves it instead of
    asking, if one covers it: none granted by one of an edit's ``editors``, nor by someone who
    could not decide the call by hand now (the click's checks, bot/flow/deciders.py, with the
    granter's Slack profile from ``directory`` and the rule's approver roles as configured
    now; standing.cover checks its admin roles)."""

    async def granter_refusal(granter: str, rule: AskRule) -> str | None:
        return await deciders.refusal(
            settings,
            directory,
            granter,
            # who decides a call just submitted: its rule's approvers (backup approvers only
            # once nobody has decided it by the hand-over, which a new call has not reached)
            roles=rule.approvers,
            agent=agent,
            requested_by=requested_by,
            editors=editors,
            allow_guests=rule.allow_guests,
            words=COVERING,
        )

    members = await directory.role_members(settings.roles)
    decision = settings.policy.classify(
        operation=operation.name,
        agent=agent,
        arguments=arguments,
        requester_roles=frozenset(r for r, m in members.items() if requested_by in m),
    )
    return await standing.cover(
        rules,
        settings.policy,
        decision,
        operation=operation.name,
        agent=agent,
        arguments=arguments,
        requested_by=requested_by,
        members=members,
        granter_refusal=granter_refusal,
        now=now,
        formats=operation.field_formats(),
        editors=editors,
    )


@dataclass(frozen=True, slots=True)
class SubmissionKey:
    """What tells one agent's submissions apart: the key it is stored under (its
    Idempotency-Key, or one derived from what identifies it) and the fingerprint of its body, so
    that sending the same body again replays the first answer and another body is refused."""

    key: str
    fingerprint: str
    derived: bool  #: no Idempotency-Key was sent: the key comes from ``identity``

    @classmethod
    def of(
        cls,
        body: JsonValue,
        idempotency_key: str | None,
        *,
        identity: Mapping[str, JsonValue],
    ) -> SubmissionKey:
        """The key for ``body`` (the submission as JSON); without an Idempotency-Key, derived
        from ``identity`` (the fields that make two submissions the same one)."""
        key = idempotency_key or cls.derived_key(identity)
        return cls(
            key=key,
            fingerprint=hashlib.sha256(canonical_json(body)).hexdigest(),
            derived=idempotency_key is None,
        )

    @classmethod
    def submitted(cls, agent: str, body: SubmitBody, idempotency_key: str | None) -> SubmissionKey:
        """The key of a proposal's submission by ``agent`` (``body`` with its requester
        verified): without an Idempotency-Key, the same agent, run, operation and request are
        the same submission."""
        return cls.of(
            body.model_dump(mode="json"),
            idempotency_key,
            identity=submission_identity(
                agent, run_id=body.run_id, operation=body.operation, request=body.request
            ),
        )

    @staticmethod
    def derived_key(identity: Mapping[str, JsonValue]) -> str:
        """The key a submission sent without an Idempotency-Key is stored under."""
        return "derived:" + hashlib.sha256(canonical_json(identity)).hexdigest()

    def replayed(
        self, earlier: SubmittedT, conflict: Callable[[SubmittedT, bool], Exception]
    ) -> SubmittedT:
        """``earlier`` (stored under this key) when this submission replays it; when its body
        differs, raises ``conflict(earlier, derived)``."""
        if earlier.submission_fingerprint != self.fingerprint:
            raise conflict(earlier, self.derived)
        return earlier


def submission_identity(
    agent: str, *, run_id: str | None, operation: str, request: JsonValue
) -> dict[str, JsonValue]:
    """What makes two of an agent's proposal submissions, sent without an Idempotency-Key, the
    same one."""
    return {"agent": agent, "run_id": run_id, "operation": operation, "request": request}
