"""The asynchronous client: propose, read, wait for, withdraw and escalate, and ``approve``."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final, TypeVar

import aiohttp
from pydantic import BaseModel, JsonValue, ValidationError

from countersign.answers import Answer, Approved, Cancelled, Rejected, TimedOut
from countersign.errors import CancelUnavailable, CountersignError, ProblemError
from countersign.light import LightClient, from_environment
from countersign.reading import UNDECIDED, Ending, ending_of
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
#: The status of a withdrawn proposal (compared as text: a Countersign older than the cancel
#: endpoint never answers it, and answers 404 or 405 to a withdrawal: CancelUnavailable)
_CANCELLED: Final[str] = "cancelled"
M = TypeVar("M", bound=BaseModel)
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
        raw = canonical_json(body)
        key = idempotency_key or derived_key(raw)
        reply = await self._transport.send(
            "POST", "/v1/proposals", body=raw, headers={"Idempotency-Key": key}
        )
        return _parsed(ProposalOut, reply)

    async def get(self, proposal_id: str) -> ProposalOut:
        """The proposal as it is now."""
        return await self._read(proposal_id, hold=0.0, deadline=None)

    async def wait(
        self, proposal_id: str, *, timeout: float = 60.0, follow_edits: bool = True
    ) -> ProposalOut:
        """The proposal once decided (or executed), or as it is when ``timeout`` seconds have
        passed. With ``follow_edits``, an approver's edit is followed to the proposal that
        replaced it. Long polls are reconnected until the timeout; never longer."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(0.0, timeout)
        return await self._settle(await self.get(proposal_id), deadline, follow_edits)

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
        withdrawn on the server and the answer is TimedOut."""
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
        proposal = await self.propose(
            operation,
            request,
            requested_by=requested_by,
            run_id=run_id,
            reason=reason,
            idempotency_key=idempotency_key,
        )
        return await self.answer(proposal, timeout=timeout)

    async def answer(self, proposal: ProposalOut, *, timeout: float | None = None) -> Answer:
        """Wait for the decision on a decision operation's proposal and say what it was."""
        if timeout is None:
            timeout = _until_expiry(proposal)
        deadline = asyncio.get_running_loop().time() + max(0.0, timeout)
        current = await self._settle(proposal, deadline, follow_edits=True)
        decided = answer_of(current)
        if decided is not None:
            return decided
        return await self._withdraw(current)

    async def _withdraw(self, proposal: ProposalOut) -> Answer:
        """The caller's deadline passed: withdraw the proposal, unless a decision won the race."""
        try:
            withdrawn = await self.cancel(proposal.id)
        except ProblemError as refused:
            if refused.status in (404, 405):
                raise CancelUnavailable(proposal, refused.status) from refused
            if refused.status != 409:
                raise
            # decided (or edited) meanwhile: a decision stands; an edit is withdrawn in turn
            now = asyncio.get_running_loop().time()
            withdrawn = await self._settle(await self.get(proposal.id), now, follow_edits=True)
            if withdrawn.id != proposal.id and withdrawn.status in UNDECIDED:
                return await self._withdraw(withdrawn)
        if str(withdrawn.status) == _CANCELLED:
            return TimedOut(proposal=withdrawn, by="deadline")
        decided = answer_of(withdrawn)
        if decided is None:
            raise CountersignError(
                f"proposal {proposal.id} is still {withdrawn.status!r} after it was withdrawn"
            )
        return decided

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

    async def _settle(
        self, current: ProposalOut, deadline: float, follow_edits: bool
    ) -> ProposalOut:
        loop = asyncio.get_running_loop()
        while True:
            if follow_edits and current.superseded_by is not None:
                current = await self._read(current.superseded_by, hold=0.0, deadline=deadline)
                continue
            remaining = deadline - loop.time()
            if current.status not in UNDECIDED or remaining <= 0:
                return current
            hold = min(remaining, self.long_poll_seconds)
            current = await self._read(current.id, hold=hold, deadline=deadline)

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


def _parsed(model: type[M], reply: Reply) -> M:
    try:
        return model.model_validate_json(reply.body)
    except ValidationError as error:
        raise CountersignError(
            f"Countersign answered HTTP {reply.status} with a body that is not a "
            f"{model.__name__}: {error}"
        ) from None
