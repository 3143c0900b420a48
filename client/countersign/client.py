"""The asynchronous client: propose, read, wait for, withdraw and escalate, and ``approve``."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final, TypeVar

import aiohttp
from pydantic import BaseModel, JsonValue, ValidationError

from countersign.answers import Answer, Approved, Cancelled, Rejected, TimedOut
from countersign.asking import Cancel, Flow, Interrupted, Step, StillPending, answering, settling
from countersign.errors import (
    CancelUnavailable,
    CountersignError,
    NotAsked,
    ProblemError,
    Unreachable,
    WaitInterrupted,
)
from countersign.light import LightClient, from_environment
from countersign.reading import RETRIED_STATUSES, Ending, ending_of
from countersign.transport import Reply, Transport
from countersign.wire.api import EscalationOut, ProposalOut
from countersign.wire.canonical import canonical_json
from countersign.wire.escalation import Summary, Trigger

__all__ = [
    "GENERIC_DECISION",
    "AsyncClient",
    "answer_from",
    "answer_of",
    "derived_key",
    "from_environment",
]

#: The operation ``approve`` asks on unless told otherwise: a ``kind = "decision"`` operation
#: without a request schema of its own (its request is ``title`` and ``detail``).
GENERIC_DECISION: Final = "decision"
M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")
#: How long past a proposal's expiry to keep waiting for the server to mark it expired.
_EXPIRY_GRACE: Final = 15.0


class AsyncClient:
    """One agent's connection to Countersign.

    ``requested_by`` and ``run_id`` are the defaults of every proposal (the accountable human and
    the agent run); each call may name its own. Long polls ask the server to hold a read for at
    most ``long_poll_seconds`` (keep it within the server's ``long_poll_max_seconds``) and
    reconnect until the caller's timeout; passing failures are retried ``attempts`` times. A
    refusal whose ``Retry-After`` is longer than ``longest_retry_after`` (when given) is raised at
    once rather than waited out (at most 30 s each time otherwise).
    """

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        requested_by: str | None = None,
        run_id: str | None = None,
        long_poll_seconds: float = 25.0,
        request_timeout: float = 10.0,
        attempts: int = 4,
        session: aiohttp.ClientSession | None = None,
        longest_retry_after: float | None = None,
    ) -> None:
        if long_poll_seconds <= 0:
            raise ValueError(f"long_poll_seconds must be positive, got {long_poll_seconds}")
        self._transport = Transport(
            base_url,
            token,
            request_timeout=request_timeout,
            attempts=attempts,
            session=session,
            longest_retry_after=longest_retry_after,
        )
        self._token = token
        self._request_timeout = request_timeout
        self._attempts = attempts
        self.requested_by = requested_by
        self.run_id = run_id
        self.long_poll_seconds = long_poll_seconds

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **options: Any) -> AsyncClient:
        """A client from ``COUNTERSIGN_URL``, ``COUNTERSIGN_TOKEN`` and, when set,
        ``COUNTERSIGN_REQUESTED_BY`` and ``COUNTERSIGN_RUN_ID``."""
        base_url, token, defaults = from_environment(env)
        return cls(base_url, token, **{**defaults, **options})

    @property
    def base_url(self) -> str:
        return self._transport.base_url

    def light(self) -> LightClient:
        """The light client (standard library, synchronous) with this client's address, token
        and defaults: what the tool-call permission path runs on."""
        return LightClient(
            self.base_url,
            self._token,
            requested_by=self.requested_by,
            run_id=self.run_id,
            long_poll_seconds=self.long_poll_seconds,
            request_timeout=self._request_timeout,
            attempts=self._attempts,
        )

    async def close(self) -> None:
        await self._transport.close()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    # --- proposals -----------------------------------------------------------------------------

    async def propose(
        self,
        operation: str,
        request: Mapping[str, JsonValue],
        *,
        requested_by: str | None = None,
        run_id: str | None = None,
        reason: str | None = None,
        callback_url: str | None = None,
        idempotency_key: str | None = None,
        urgent: bool = False,
    ) -> ProposalOut:
        """Submit a proposal. Without ``idempotency_key``, the key is derived from the exact
        call, so the same call made again (a retry, a restarted run) returns the same proposal.
        ``urgent`` asks for it to be shown at once rather than with its rule's batch (the
        answer's ``shown_after`` says when it is shown)."""
        body = self._proposal_body(
            operation, request, requested_by, run_id, reason, callback_url, urgent=urgent
        )
        return await self._submit(body, idempotency_key, latest=None)

    async def _submit(
        self, body: dict[str, JsonValue], idempotency_key: str | None, *, latest: float | None
    ) -> ProposalOut:
        raw = canonical_json(body)
        key = idempotency_key or derived_key(raw)
        reply = await self._transport.send(
            "POST", "/v1/proposals", body=raw, headers={"Idempotency-Key": key}, latest=latest
        )
        return _parsed(ProposalOut, reply)

    def _proposal_body(
        self,
        operation: str,
        request: Mapping[str, JsonValue],
        requested_by: str | None,
        run_id: str | None,
        reason: str | None,
        callback_url: str | None,
        *,
        urgent: bool = False,
    ) -> dict[str, JsonValue]:
        body: dict[str, JsonValue] = {"operation": operation, "request": dict(request)}
        if urgent:
            body["urgent"] = True
        for name, value in (
            ("requested_by", requested_by or self.requested_by),
            ("run_id", run_id or self.run_id),
            ("reason", reason),
            ("callback_url", callback_url),
        ):
            if value is not None:
                body[name] = value
        return body

    async def get(self, proposal_id: str) -> ProposalOut:
        """The proposal as it is now."""
        return await self._read(proposal_id, hold=0.0, deadline=None)

    async def wait(
        self, proposal_id: str, *, timeout: float = 60.0, follow_edits: bool = True
    ) -> ProposalOut:
        """The proposal once decided (or executed), or as it is when ``timeout`` seconds have
        passed. With ``follow_edits``, an approver's edit is followed to the proposal that
        replaced it. Long polls are reconnected until the timeout; never longer. Countersign
        failing once the proposal was read undecided raises WaitInterrupted (it may still be
        decided in Slack); the first read failing raises as ``get`` does."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(0.0, timeout)
        first = await self.get(proposal_id)
        flow = settling(
            first.model_dump(mode="json"),
            deadline,
            clock=loop.time,
            long_poll_seconds=self.long_poll_seconds,
            follow_edits=follow_edits,
        )
        try:
            return _proposal(await self._run(flow))
        except CountersignError as failure:
            raise WaitInterrupted(first, failure, withdrawn=False, withdrawing=False) from failure

    async def cancel(self, proposal_id: str) -> ProposalOut:
        """Withdraw a pending proposal (its status becomes ``cancelled``). A proposal already
        decided cannot be withdrawn: ProblemError with status 409, naming its status."""
        reply = await self._transport.send("POST", f"/v1/proposals/{proposal_id}/cancel")
        return _parsed(ProposalOut, reply)

    # --- asking a question -----------------------------------------------------------------------

    async def approve(
        self,
        title: str,
        detail: str,
        *,
        operation: str = GENERIC_DECISION,
        timeout: float | None = None,
        requested_by: str | None = None,
        run_id: str | None = None,
        reason: str | None = None,
        idempotency_key: str | None = None,
    ) -> Answer:
        """Ask people whether the agent may do something it will do itself: exactly one of
        Approved, Rejected, TimedOut or Cancelled. ``timeout`` is the caller's deadline in
        seconds (default: the proposal's own expiry); when it passes first, the proposal is
        withdrawn on the server and the answer is TimedOut. Countersign failing raises NotAsked
        (nothing was stored) or, once the proposal was made, WaitInterrupted (withdrawn, or
        still pending in Slack); each carries the ``retry_after`` Countersign gave."""
        return await self.ask(
            operation,
            {"title": title, "detail": detail},
            timeout=timeout,
            requested_by=requested_by,
            run_id=run_id,
            reason=reason,
            idempotency_key=idempotency_key,
        )

    async def ask(
        self,
        operation: str,
        request: Mapping[str, JsonValue],
        *,
        timeout: float | None = None,
        requested_by: str | None = None,
        run_id: str | None = None,
        reason: str | None = None,
        idempotency_key: str | None = None,
    ) -> Answer:
        """``approve`` for any decision operation, with that operation's own request."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + max(0.0, timeout)
        body = self._proposal_body(operation, request, requested_by, run_id, reason, None)
        try:
            proposal = await self._submit(body, idempotency_key, latest=deadline)
        except ProblemError as refused:
            if refused.status not in RETRIED_STATUSES:
                raise  # refused for what was asked (the request, the agent's rights)
            raise NotAsked(refused) from refused
        except Unreachable as failure:
            raise NotAsked(failure) from failure
        return await self._answer(proposal, deadline)

    async def answer(self, proposal: ProposalOut, *, timeout: float | None = None) -> Answer:
        """Wait for the decision on a decision operation's proposal and say what it was."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + max(0.0, timeout)
        return await self._answer(proposal, deadline)

    async def _answer(self, proposal: ProposalOut, deadline: float | None) -> Answer:
        """The decision by ``deadline`` (by default the proposal's expiry); past it, the proposal
        is withdrawn (countersign.asking holds the logic both clients share)."""
        loop = asyncio.get_running_loop()
        if deadline is None:
            deadline = loop.time() + _until_expiry(proposal)
        flow = answering(
            proposal.model_dump(mode="json"),
            deadline,
            clock=loop.time,
            long_poll_seconds=self.long_poll_seconds,
        )
        came, document = await self._run(flow)
        latest = _proposal(document)
        if isinstance(came, StillPending):
            raise CancelUnavailable(latest, came.status)
        if isinstance(came, Interrupted):
            raise WaitInterrupted(
                latest,
                came.failure,
                withdrawn=came.withdrawn,
                while_withdrawing=came.while_withdrawing,
            ) from came.failure
        return answer_from(came, latest)

    # --- escalations -----------------------------------------------------------------------------

    async def escalate(
        self,
        conversation_id: str,
        *,
        summary: Summary | Mapping[str, Any],
        trigger: Trigger | Mapping[str, Any],
        requested_by: str | None = None,
        customer_ref: str | None = None,
        team: str | None = None,
        callback_url: str | None = None,
        idempotency_key: str | None = None,
    ) -> EscalationOut:
        """Hand the conversation to people (docs/escalations.md); the key is derived from the
        exact call unless given."""
        body: dict[str, JsonValue] = {
            "conversation_id": conversation_id,
            "summary": _json(summary),
            "trigger": _json(trigger),
        }
        for name, value in (
            ("requested_by", requested_by or (None if customer_ref else self.requested_by)),
            ("customer_ref", customer_ref),
            ("team", team),
            ("callback_url", callback_url),
        ):
            if value is not None:
                body[name] = value
        raw = canonical_json(body)
        key = idempotency_key or derived_key(raw)
        reply = await self._transport.send(
            "POST", "/v1/escalations", body=raw, headers={"Idempotency-Key": key}
        )
        return _parsed(EscalationOut, reply)

    async def get_escalation(self, escalation_id: str) -> EscalationOut:
        reply = await self._transport.send("GET", f"/v1/escalations/{escalation_id}")
        return _parsed(EscalationOut, reply)

    # --- waiting ---------------------------------------------------------------------------------

    async def _run(self, flow: Flow[T]) -> T:
        """Run a wait's logic (countersign.asking) to its end, as asking.drive does."""
        try:
            step = next(flow)
            while True:
                try:
                    document = await self._step(step)
                except CountersignError as failure:
                    step = flow.throw(failure)
                else:
                    step = flow.send(document)
        except StopIteration as stop:
            result: T = stop.value
            return result

    async def _step(self, step: Step) -> dict[str, Any]:
        if isinstance(step, Cancel):
            reply = await self._transport.send(
                "POST", f"/v1/proposals/{step.proposal_id}/cancel", latest=step.latest
            )
            proposal = _parsed(ProposalOut, reply)
        else:
            proposal = await self._read(step.proposal_id, hold=step.hold, deadline=step.deadline)
        document: dict[str, Any] = proposal.model_dump(mode="json")
        return document

    async def _read(self, proposal_id: str, *, hold: float, deadline: float | None) -> ProposalOut:
        params = {"wait": f"{hold:.3f}"} if hold > 0 else None
        reply = await self._transport.send(
            "GET", f"/v1/proposals/{proposal_id}", params=params, hold=hold, deadline=deadline
        )
        return _parsed(ProposalOut, reply)


def answer_of(proposal: ProposalOut) -> Answer | None:
    """What a decision operation's proposal came to; None while nobody has decided."""
    ending = ending_of(proposal.model_dump(mode="json"))
    if ending is None:
        return None
    return answer_from(ending, proposal)


def answer_from(ending: Ending, proposal: ProposalOut) -> Answer:
    """The answer an ending gives, carrying the proposal it was read from."""
    if ending.kind == "approved":
        return Approved(proposal=proposal, arguments=dict(ending.arguments or {}), by=ending.by)
    if ending.kind == "rejected":
        return Rejected(proposal=proposal, reason=ending.reason or "no reason given", by=ending.by)
    if ending.kind == "cancelled":
        return Cancelled(proposal=proposal)
    return TimedOut(proposal=proposal, by="expiry" if ending.kind == "expired" else "deadline")


def derived_key(body: bytes) -> str:
    """The idempotency key of a call: the same body, the same key."""
    return "cs-" + hashlib.sha256(body).hexdigest()


def _until_expiry(proposal: ProposalOut) -> float:
    if proposal.expires_at is None:
        return 0.0
    left = (proposal.expires_at - datetime.now(UTC)).total_seconds()
    return max(0.0, left) + _EXPIRY_GRACE


def _json(value: BaseModel | Mapping[str, Any]) -> JsonValue:
    if isinstance(value, BaseModel):
        dumped: JsonValue = value.model_dump(mode="json")
        return dumped
    return dict(value)


def _proposal(document: Mapping[str, Any]) -> ProposalOut:
    """The proposal a document read by a wait's logic holds (it was a ProposalOut's JSON)."""
    return ProposalOut.model_validate_json(json.dumps(document))


def _parsed(model: type[M], reply: Reply) -> M:
    try:
        return model.model_validate_json(reply.body)
    except ValidationError as error:
        raise CountersignError(
            f"Countersign answered HTTP {reply.status} with a body that is not a "
            f"{model.__name__}: {error}"
        ) from None
