"""The agent API: submit proposals, read (and long-poll) their state, withdraw them."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

from aiohttp import web

from bot.api.agent_requests import (
    MAX_BODY,
    QUOTAS,
    Admit,
    idempotency_key,
    json_answer,
    own,
    parse_body,
    read_own,
    reading,
    submission,
    submitted_answer,
)
from bot.api.openapi import openapi_document
from bot.api.problems import Problem
from bot.api.quotas import admit_pending
from bot.api.schemas import ProposalOut, SubmitBody
from bot.delegations.commands import DELEGATIONS, is_delegation_token
from bot.flow.service import Service
from bot.settings import AgentSettings
from contracts.base import FieldProblem
from store.base import StoreError, StoreUnavailable
from store.delegations import Delegation
from store.proposals import (
    AlreadyDecided,
    NewProposal,
    NotApprovable,
    PendingLimit,
    PendingLimitReached,
    ProposalNotFound,
    Status,
    Transitioned,
)

__all__ = [
    "SERVICE",
    "agent_routes",
    "authenticated_agent",
    "cancel",
]

SERVICE: web.AppKey[Service] = web.AppKey("service", Service)

_UNSETTLED = {Status.PENDING, Status.EXECUTING}


def agent_routes() -> list[web.RouteDef]:
    return [
        web.post("/v1/proposals", submit),
        web.get("/v1/proposals/{id}", read),
        web.post("/v1/proposals/{id}/cancel", cancel),
        web.get("/healthz", healthz),
        web.get("/v1/openapi.json", _openapi_handler()),
    ]


def authenticated_agent(request: web.Request) -> AgentSettings:
    """The agent is whoever holds the bearer token: never what the body says."""
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    challenge = {"WWW-Authenticate": 'Bearer realm="countersign"'}
    if scheme.lower() != "bearer" or not token:
        raise Problem(
            401, "Unauthorized", "send 'Authorization: Bearer <agent token>'", headers=challenge
        )
    service = request.app[SERVICE]
    agent = service.settings.agent_for_token(token.strip())
    # compared in constant time on the hit too, so timing does not tell how much of a token
    # matched (each of the agent's tokens, while one is being rotated)
    if agent is None or not agent.holds(token.strip()):
        raise Problem(401, "Unauthorized", "unknown agent token", headers=challenge)
    return agent


async def _caller(request: web.Request, admit: Admit) -> tuple[AgentSettings, Delegation | None]:
    """The agent, from its own token or from a delegation token (bot/delegations/commands.py),
    which also names the person it acts for; an expired or revoked delegation is refused (401).
    The request is charged by ``admit`` to the agent's bucket as soon as the agent is known:
    for a delegation token, before it is looked up in the store when it was seen before, and
    a token never seen is held to the bound on unknown tokens (bot/delegations/lookups.py)."""
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() == "bearer" and is_delegation_token(token.strip()):
        return await request.app[DELEGATIONS].authenticate(token.strip(), admit)
    agent = authenticated_agent(request)
    admit(agent)
    return agent, None


def _charged(agent: AgentSettings) -> None:
    """The admission of a request already charged (a token checked again within it)."""


async def submit(request: web.Request) -> web.Response:
    """Shed when the loop is behind, then the caller (an agent's token or a delegation's), the
    agent's rate, its whole body, then a slot (bot/api/agent_requests.py)."""
    return await submission(
        request, _caller, lambda agent, delegation, raw: _submit(request, agent, raw, delegation)
    )


async def _submit(
    request: web.Request, agent: AgentSettings, raw: bytes, delegation: Delegation | None
) -> web.Response:
    body = parse_body(raw, SubmitBody, noun="proposal")
    key = idempotency_key(request)
    service = request.app[SERVICE]
    with request.app[QUOTAS].pending_claim(service.store, agent) as claim:

        async def admit(new: NewProposal) -> PendingLimit | None:
            return await admit_pending(claim, new)

        try:
            submitted = await service.submit(agent, body, key, admit=admit, delegation=delegation)
        except PendingLimitReached:
            raise claim.refused() from None
        except StoreError as refused:
            if delegation is None or isinstance(refused, StoreUnavailable):
                raise
            # The database refused the proposal: its delegation was revoked (or ran out) after
            # the token was checked. Answer as the check would now: 401, nothing stored.
            await _caller(request, _charged)
            raise
    return submitted_answer(
        ProposalOut.of(submitted.proposal),
        location=f"/v1/proposals/{submitted.proposal.id}",
        created=submitted.created,
    )


async def read(request: web.Request) -> web.Response:
    """The proposal; ``?wait=S`` holds the answer while it is undecided. Shed when the loop is
    behind, charged to the agent's reads (bot/api/agent_requests.py)."""
    return await reading(request, _caller, lambda agent: _read(request, agent))


async def _read(request: web.Request, agent: AgentSettings) -> web.Response:
    service = request.app[SERVICE]
    proposal = await read_own(
        request,
        service.store.get_proposal,
        ProposalNotFound,
        "proposal",
        agent=agent,
        unsettled=lambda p: p.status in _UNSETTLED,
        longest=service.settings.server.long_poll_max_seconds,
    )
    return json_answer(ProposalOut.of(proposal))


async def cancel(request: web.Request) -> web.Response:
    """The proposing agent withdraws its pending proposal: 200 with it ``cancelled`` (again for a
    repeat); 409 naming its status once it was decided; 404 for another agent's, as for reads.
    Shed and charged as a read is."""
    return await reading(request, _caller, lambda agent: _cancel(request, agent))


async def _cancel(request: web.Request, agent: AgentSettings) -> web.Response:
    service = request.app[SERVICE]
    before = await own(
        service.store.get_proposal, ProposalNotFound, "proposal", request.match_info["id"], agent
    )
    result = await service.store.cancel(before.id, agent=agent.name, now=service.now())
    if isinstance(result, NotApprovable):  # pending past its expiry: it expires instead
        await service.expire_due()
        result = AlreadyDecided(await service.store.get_proposal(before.id))
    if isinstance(result, Transitioned):
        if before.status is Status.PENDING:  # withdrawn now, not by an earlier call
            service.changed(result.proposal)
        return json_answer(ProposalOut.of(result.proposal))
    status = result.proposal.status.value
    raise Problem(
        409,
        "Proposal already decided",
        f"proposal {before.id!r} is {status!r}: only a pending proposal can be withdrawn",
        problems=[
            FieldProblem(field="status", message=f"is {status!r}; expected 'pending'"),
        ],
    )


async def healthz(request: web.Request) -> web.Response:
    return web.json_response({"ok": True})


def _openapi_handler() -> Callable[[web.Request], Awaitable[web.Response]]:
    """The handler of the OpenAPI document of this API and its configured operations (no token
    needed). The document is made once, on its first request: anyone who reaches the port may
    ask for it, and making it takes the loop some milliseconds, which a flood of requests would
    take from people's clicks; the configuration it describes does not change while the process
    runs."""
    made: list[bytes] = []

    async def openapi(request: web.Request) -> web.Response:
        if not made:
            settings = request.app[SERVICE].settings
            document = openapi_document(
                settings.registry,
                long_poll_max_seconds=settings.server.long_poll_max_seconds,
                max_body_bytes=MAX_BODY,
            )
            made.append(json.dumps(document).encode())
        return web.Response(body=made[0], content_type="application/json")

    return openapi
