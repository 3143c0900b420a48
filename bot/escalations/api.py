"""The agent API for escalations: hand a conversation to people, then read (or long-poll) whether a
person owns it and the agent must stop replying."""

from __future__ import annotations

from aiohttp import web

from bot.api.agent_requests import busy, idempotency_key, parse_body, receive_body
from bot.api.problems import Problem
from bot.api.proposals import QUOTAS, SUBMISSIONS, authenticated_agent, wait_seconds
from bot.escalations.flow import EscalationService
from bot.escalations.schemas import EscalationBody, EscalationOut
from bot.settings import AgentSettings
from contracts.base import FieldProblem
from store.base import StoreUnavailable
from store.escalations import Escalation, EscalationNotFound, EscalationStatus

__all__ = ["ESCALATIONS", "escalation_routes"]

ESCALATIONS: web.AppKey[EscalationService] = web.AppKey("escalations", EscalationService)

#: Without ``while_status``, a long-poll holds while nobody owns the conversation.
_UNOWNED = frozenset({EscalationStatus.OPEN, EscalationStatus.HANDED_BACK})


def escalation_routes() -> list[web.RouteDef]:
    return [
        web.post("/v1/escalations", submit),
        web.get("/v1/escalations/{id}", read),
    ]


async def submit(request: web.Request) -> web.Response:
    """As for proposals (bot/api/proposals.py): the agent's rate, its whole body, then a slot."""
    agent = authenticated_agent(request)
    quotas = request.app[QUOTAS]
    quotas.admit_submission(agent)
    raw = await receive_body(request, timeout=agent.limits.body_timeout_seconds)
    with request.app[SUBMISSIONS].slot() as admitted:
        if not admitted:
            quotas.refund(agent)
            raise busy()
        try:
            return await _submit(request, agent, raw)
        except (Problem, StoreUnavailable) as refused:
            if isinstance(refused, StoreUnavailable) or refused.status in (429, 503):
                quotas.refund(agent)  # refused, not served: the agent's rate is not charged
            raise


async def _submit(request: web.Request, agent: AgentSettings, raw: bytes) -> web.Response:
    body = parse_body(raw, EscalationBody, noun="escalation")
    key = idempotency_key(request)
    service = request.app[ESCALATIONS]
    with request.app[QUOTAS].escalation_claim(service.store, agent) as claim:
        submitted = await service.submit(agent, body, key, admit=claim.take)
    headers = {"Location": f"/v1/escalations/{submitted.escalation.id}"}
    if not submitted.created:
        headers["Idempotent-Replayed"] = "true"
    return _json(submitted.escalation, status=201 if submitted.created else 200, headers=headers)


async def read(request: web.Request) -> web.Response:
    """The escalation; ``?wait=S`` holds the answer while its status is one of ``while_status``
    (comma-separated; default ``open,handed_back``: until a person owns it or it is resolved)."""
    agent = authenticated_agent(request)
    service = request.app[ESCALATIONS]
    wait = wait_seconds(request, service.settings.server.long_poll_max_seconds)
    holding = _while_status(request)
    escalation = await _own(service, agent, request.match_info["id"])
    if wait <= 0 or escalation.status not in holding:
        return _json(escalation)
    with request.app[QUOTAS].long_poll(agent):  # 429 past the agent's long-polls at once
        escalation = await service.waiters.hold(
            escalation,
            unsettled=lambda e: e.status in holding,
            reread=service.store.get_escalation,
            seconds=wait,
        )
    return _json(escalation)


def _while_status(request: web.Request) -> frozenset[EscalationStatus]:
    raw = request.query.get("while_status")
    if raw is None:
        return _UNOWNED
    try:
        return frozenset(EscalationStatus(part.strip()) for part in raw.split(","))
    except ValueError:
        allowed = ", ".join(s.value for s in EscalationStatus)
        raise Problem(
            400,
            "Invalid while_status",
            f"query parameter 'while_status' must list statuses from: {allowed} (got {raw!r})",
            problems=[FieldProblem(field="while_status", message=f"statuses from: {allowed}")],
        ) from None


async def _own(service: EscalationService, agent: AgentSettings, escalation_id: str) -> Escalation:
    try:
        escalation: Escalation | None = await service.store.get_escalation(escalation_id)
    except EscalationNotFound:
        escalation = None
    if escalation is None or escalation.agent != agent.name:  # another agent's: same answer
        raise Problem(404, "Not found", f"no escalation {escalation_id!r} for agent {agent.name!r}")
    return escalation


def _json(
    escalation: Escalation, *, status: int = 200, headers: dict[str, str] | None = None
) -> web.Response:
    return web.Response(
        status=status,
        body=EscalationOut.of(escalation).model_dump_json().encode(),
        content_type="application/json",
        headers=headers,
    )
