"""The agent API for escalations: hand a conversation to people, then read (or long-poll) whether a
person owns it and the agent must stop replying."""

from __future__ import annotations

from aiohttp import web

from bot.api.agent_requests import (
    QUOTAS,
    Admit,
    idempotency_key,
    json_answer,
    parse_body,
    read_own,
    reading,
    submission,
    submitted_answer,
)
from bot.api.problems import Problem
from bot.api.proposals import authenticated_agent
from bot.escalations.flow import EscalationService
from bot.escalations.schemas import EscalationBody, EscalationOut
from bot.settings import AgentSettings
from contracts.base import FieldProblem
from store.escalations import EscalationNotFound, EscalationStatus

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
    """As for proposals: shed when the loop is behind, then the caller, the rate, the whole body,
    then a slot (bot/api/agent_requests.py)."""
    return await submission(request, _caller, lambda agent, _, raw: _submit(request, agent, raw))


async def _caller(request: web.Request, admit: Admit) -> tuple[AgentSettings, None]:
    """The agent, from its own token only (escalations take no delegation token: 401), charged
    by ``admit`` to its bucket."""
    agent = authenticated_agent(request)
    admit(agent)
    return agent, None


async def _submit(request: web.Request, agent: AgentSettings, raw: bytes) -> web.Response:
    body = parse_body(raw, EscalationBody, noun="escalation")
    key = idempotency_key(request)
    service = request.app[ESCALATIONS]
    with request.app[QUOTAS].escalation_claim(service.store, agent) as claim:
        submitted = await service.submit(agent, body, key, admit=claim.take)
    return submitted_answer(
        EscalationOut.of(submitted.escalation),
        location=f"/v1/escalations/{submitted.escalation.id}",
        created=submitted.created,
    )


async def read(request: web.Request) -> web.Response:
    """The escalation; ``?wait=S`` holds the answer while its status is one of ``while_status``
    (comma-separated; default ``open,handed_back``: until a person owns it or it is resolved).
    Shed when the loop is behind, charged to the agent's reads (bot/api/agent_requests.py)."""
    return await reading(request, _caller, lambda agent: _read(request, agent))


async def _read(request: web.Request, agent: AgentSettings) -> web.Response:
    service = request.app[ESCALATIONS]
    holding = _while_status(request)
    escalation = await read_own(
        request,
        service.store.get_escalation,
        EscalationNotFound,
        "escalation",
        agent=agent,
        unsettled=lambda e: e.status in holding,
        longest=service.settings.server.long_poll_max_seconds,
    )
    return json_answer(EscalationOut.of(escalation))


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
