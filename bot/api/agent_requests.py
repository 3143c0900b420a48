"""An agent's submissions and reads: capacity, size, JSON, the body's model, the idempotency
key, the answer, and the long poll.

Every agent request goes through :func:`submission` (what creates something) or :func:`reading`
(reads, long-polls, withdrawals): each is shed when the event loop is behind and charged to one
of the agent's buckets as soon as the caller is known, before the store is asked anything.

One place for what every agent endpoint that creates or reads something does, in the same order
and with the same answers (``bot/api/proposals.py`` for proposals, ``bot/escalations/api.py`` for
escalations). The body is received whole, within the agent's ``body_timeout_seconds``, before
the request takes a submission slot: a sender that dribbles its body holds a connection, never
a slot, and gets 408 when time is up.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Final, Protocol, TypeVar

from aiohttp import web
from pydantic import BaseModel, ValidationError

from bot.api.admission import Admission
from bot.api.loop_lag import LoopLag
from bot.api.problems import Problem
from bot.api.quotas import Quotas
from bot.api.refusals import Refusals
from bot.api.waiters import Waiters
from bot.flow.intake import idempotency_key_problem
from bot.settings import AgentSettings
from contracts.base import FieldProblem
from contracts.canonical import finite_json
from contracts.problems import problems_from_validation_error
from store.base import StoreUnavailable

__all__ = [
    "BUSY_RETRY_SECONDS",
    "LOOP_LAG",
    "MAX_BODY",
    "QUOTAS",
    "REFUSALS",
    "SUBMISSIONS",
    "WAITERS",
    "Admit",
    "busy",
    "idempotency_key",
    "json_answer",
    "own",
    "parse_body",
    "read_own",
    "reading",
    "receive_body",
    "submission",
    "submitted_answer",
    "wait_seconds",
]

MAX_BODY = 256 * 1024
#: When an agent turned away at capacity is asked to come back (Retry-After, and the detail)
BUSY_RETRY_SECONDS: Final = 1

# What every agent endpoint reads from the app (bot/app.py sets them):
#: bounds the submissions handled at once (bot/api/admission.py)
SUBMISSIONS: web.AppKey[Admission] = web.AppKey("submissions", Admission)
#: how far behind the event loop is: agents' submissions are shed past it (bot/api/loop_lag.py)
LOOP_LAG: web.AppKey[LoopLag] = web.AppKey("loop_lag", LoopLag)
#: each agent's submission rate and long-polls in flight (bot/api/quotas.py)
QUOTAS: web.AppKey[Quotas] = web.AppKey("quotas", Quotas)
#: the agents' long polls, woken by the flow (bot/flow/ports.py Waiters)
WAITERS: web.AppKey[Waiters] = web.AppKey("waiters", Waiters)
#: told of each agent request shed because the loop is behind (the app's metrics)
REFUSALS: web.AppKey[Refusals] = web.AppKey("refusals")

ModelT = TypeVar("ModelT", bound=BaseModel)
#: what a submission's token names besides the agent: the delegation it acts under, if any
CallerT = TypeVar("CallerT")
#: charges a request to one of the agent's buckets (Quotas.admit_submission, .admit_read), or
#: raises its 429; a caller calls it as soon as it knows the agent, before any store lookup
Admit = Callable[[AgentSettings], None]
#: who sent a request: the agent and what else its token names, charged by the given Admit
Caller = Callable[[web.Request, Admit], Awaitable[tuple[AgentSettings, CallerT]]]


class _Owned(Protocol):
    @property
    def agent(self) -> str: ...


OwnedT = TypeVar("OwnedT", bound=_Owned)


class _Readable(_Owned, Protocol):
    """What a long poll holds: the agent's own item, read again by its id."""

    @property
    def id(self) -> str: ...


ReadT = TypeVar("ReadT", bound=_Readable)


async def own(
    read: Callable[[str], Awaitable[OwnedT]],
    missing: type[Exception],
    kind: str,
    item_id: str,
    agent: AgentSettings,
) -> OwnedT:
    """The agent's own ``kind`` (proposal, escalation) ``item_id``, read by ``read``, which
    raises ``missing`` when there is none. Another agent's item gets the very 404 an unknown id
    gets: an agent learns nothing of what others submitted, not even that it exists."""
    try:
        item: OwnedT | None = await read(item_id)
    except missing:
        item = None
    if item is None or item.agent != agent.name:
        raise Problem(404, "Not found", f"no {kind} {item_id!r} for agent {agent.name!r}")
    return item


def busy(done: str = "nothing was stored") -> Problem:
    """At capacity: ``done`` (nothing), come back after the delay. The detail names the delay
    as well as the header: a model reading a tool's error sees the words, never the headers."""
    return Problem(
        503,
        "Busy",
        f"Countersign is at capacity; {done}. Retry after {BUSY_RETRY_SECONDS} s.",
        headers={"Retry-After": str(BUSY_RETRY_SECONDS)},
    )


async def submission(
    request: web.Request,
    caller: Caller[CallerT],
    handle: Callable[[AgentSettings, CallerT, bytes], Awaitable[web.Response]],
) -> web.Response:
    """An agent's submission: ``caller`` says who sent it (the agent, and the delegation it acts
    under, if any), ``handle`` serves it with its body; the app's LOOP_LAG, QUOTAS and SUBMISSIONS
    (slots) guard it. In this order:

    1. When the event loop is behind (bot/api/loop_lag.py), 503 with Retry-After at once, before
       anything else is done, so that people's clicks keep the loop: nothing is read, looked up
       or stored, and the agent's rate is not charged.
    2. The caller, from the request's token (401 when it names none), charged to the agent's
       submission rate as soon as it is known (429); from here on the submission counts as
       agent work in progress on the loop.
    3. Its whole body (within its deadline), and only then a slot, so that neither a flood nor
       a slow sender holds the capacity other agents need.

    A submission refused for Countersign's own reasons (503: at capacity or busy; the store
    unavailable, even while looking up a delegation token) does not count against the
    agent's rate. One refused by the agent's own limits
    (429: its pending proposals, its open escalations) does: it was served up to that refusal
    (read, its requester checked, resolved through the operation, classified, counted by the
    store), and an agent that filled its places would otherwise flood at any rate it liked."""
    lag, quotas, slots = request.app[LOOP_LAG], request.app[QUOTAS], request.app[SUBMISSIONS]
    if lag.behind():
        request.app[REFUSALS].shed("submission")
        raise busy()
    charged: list[AgentSettings] = []

    def admit(agent: AgentSettings) -> None:
        quotas.admit_submission(agent)
        charged.append(agent)

    with lag.agent_work():
        try:
            agent, acting_under = await caller(request, admit)
        except StoreUnavailable:  # a delegation token's lookup: refused, not served
            for each in charged:
                quotas.refund(each)
            raise
        raw = await receive_body(request, timeout=agent.limits.body_timeout_seconds)
        with slots.slot() as free:
            if not free:
                quotas.refund(agent)
                raise busy()
            try:
                return await handle(agent, acting_under, raw)
            except (Problem, StoreUnavailable) as refused:
                if isinstance(refused, StoreUnavailable) or refused.status == 503:
                    quotas.refund(agent)  # refused, not served: the agent's rate is not charged
                raise


async def reading(
    request: web.Request,
    caller: Caller[CallerT],
    handle: Callable[[AgentSettings], Awaitable[web.Response]],
) -> web.Response:
    """An agent's read (with or without ``?wait=``) or withdrawal, guarded as a submission is
    (:func:`submission`): 503 with Retry-After at once when the event loop is behind, before the
    token is looked at; then ``caller``, charged to the agent's reads bucket as soon as the
    agent is known (429 with Retry-After, before any store read); then ``handle`` serves it.
    While served it counts as agent work on the loop (a long-poll held waiting does not:
    :func:`read_own`). Refused because the store is unavailable (503: reading, or looking up
    a delegation token), it gives the agent's token back, as a submission does: not served,
    so not charged."""
    lag, quotas = request.app[LOOP_LAG], request.app[QUOTAS]
    if lag.behind():
        request.app[REFUSALS].shed("read")
        raise busy("nothing was read or changed")
    charged: list[AgentSettings] = []

    def admit(agent: AgentSettings) -> None:
        quotas.admit_read(agent)
        charged.append(agent)

    with lag.agent_work():
        try:
            agent, _ = await caller(request, admit)
            return await handle(agent)
        except StoreUnavailable:
            for each in charged:
                quotas.refund_read(each)  # refused, not served: the agent's reads not charged
            raise


async def receive_body(request: web.Request, *, timeout: float) -> bytes:
    """The whole body, received within ``timeout`` seconds: 408 when it takes longer, 413 past
    MAX_BODY (said at once when Content-Length announces it)."""
    if request.content_length is not None and request.content_length > MAX_BODY:
        raise _too_large()
    if request.content_length is not None and request.content.is_eof():
        # all of it (at most MAX_BODY, as announced) came with the headers: nothing to wait for
        return request.content.read_nowait()
    received = bytearray()
    try:
        async with asyncio.timeout(timeout):
            while chunk := await request.content.read(MAX_BODY + 1 - len(received)):
                received += chunk
                if len(received) > MAX_BODY:
                    raise _too_large()
    except TimeoutError:
        raise Problem(
            408,
            "Request timeout",
            f"the body did not arrive within {timeout:g} s (got {len(received)} bytes); "
            "nothing was stored. Send the whole body at once.",
            headers={"Connection": "close"},
        ) from None
    return bytes(received)


def _too_large() -> Problem:
    return Problem(413, "Body too large", f"the body must be at most {MAX_BODY} bytes")


def parse_body(raw: bytes, model: type[ModelT], *, noun: str) -> ModelT:
    """The body as ``model``: 400 for what is not a JSON object, 422 naming each field that
    does not fit."""
    try:
        data = finite_json(raw)
    except (ValueError, UnicodeDecodeError) as error:
        raise Problem(400, "Malformed JSON", f"the body is not valid JSON: {error}") from None
    except RecursionError:
        raise Problem(400, "Malformed JSON", "the body is nested too deeply") from None
    if not isinstance(data, dict):
        raise Problem(400, "Malformed request", "the body must be a JSON object")
    try:
        return model.model_validate_json(raw)
    except ValidationError as error:
        unparsed = [
            e["msg"] for e in error.errors(include_url=False) if e["type"] == "json_invalid"
        ]
        if unparsed:  # JSON Python reads but the validator refuses (lone surrogates, depth)
            raise Problem(
                400, "Malformed JSON", f"the body could not be parsed: {unparsed[0]}"
            ) from None
        raise Problem(
            422,
            f"Invalid {noun}",
            f"the {noun} body does not match what the API expects",
            problems=problems_from_validation_error("", error, model),
        ) from None


def idempotency_key(request: web.Request) -> str | None:
    """The Idempotency-Key header, if sent: 1 to 200 printable characters, else 422."""
    key = request.headers.get("Idempotency-Key")
    problem = idempotency_key_problem(key)
    if problem is not None:
        raise Problem(
            422,
            "Invalid Idempotency-Key",
            "expected 1 to 200 printable characters",
            problems=[problem],
        )
    return key


def json_answer(
    body: BaseModel, *, status: int = 200, headers: dict[str, str] | None = None
) -> web.Response:
    """``body`` (the wire model of what was asked for) as the JSON answer."""
    return web.Response(
        status=status,
        body=body.model_dump_json().encode(),
        content_type="application/json",
        headers=headers,
    )


def submitted_answer(body: BaseModel, *, location: str, created: bool) -> web.Response:
    """The answer to a submission: 201 at ``location``, or 200 marked as a replay when the same
    submission was stored before."""
    headers = {"Location": location}
    if not created:
        headers["Idempotent-Replayed"] = "true"
    return json_answer(body, status=201 if created else 200, headers=headers)


async def read_own(
    request: web.Request,
    read: Callable[[str], Awaitable[ReadT]],
    missing: type[Exception],
    kind: str,
    *,
    agent: AgentSettings,
    unsettled: Callable[[ReadT], bool],
    longest: float,
) -> ReadT:
    """The agent's own ``kind`` named by the path's ``{id}`` (``own``), for a read with
    ``?wait=S`` (bot/api/waiters.py; 0 to ``longest`` seconds): at once when the wait is 0 or the
    item is settled, else once it settles or the wait runs out, read again by ``read``, holding
    one of the agent's long-poll places meanwhile (429 when all are taken; the app's QUOTAS and
    WAITERS). Held waiting, it is no agent work on the loop (the app's LOOP_LAG)."""
    wait = wait_seconds(request, longest)
    item = await own(read, missing, kind, request.match_info["id"], agent)
    if wait <= 0 or not unsettled(item):
        return item
    with request.app[QUOTAS].long_poll(agent), request.app[LOOP_LAG].waiting():
        return await request.app[WAITERS].hold(item, unsettled=unsettled, reread=read, seconds=wait)


def wait_seconds(request: web.Request, ceiling: float) -> float:
    """The long-poll the agent asked for with ``?wait=S`` (0 without it); 400 unless 0..ceiling."""
    raw = request.query.get("wait")
    if raw is None:
        return 0.0
    try:
        wait = float(raw)
    except ValueError:
        wait = -1.0
    if not 0 <= wait <= ceiling:
        raise Problem(
            400,
            "Invalid wait",
            f"query parameter 'wait' must be a number of seconds from 0 to {ceiling:g} "
            f"(got {raw!r})",
            problems=[FieldProblem(field="wait", message=f"a number from 0 to {ceiling:g}")],
        )
    return wait
