"""The one place domain errors become HTTP answers: ``application/problem+json`` (RFC 9457)."""

from __future__ import annotations

import json
import logging
import math
import secrets
from collections.abc import Awaitable, Callable, Iterable
from typing import Final

from aiohttp import web

from bot.delegations.commands import DelegationTokenRefused, UnknownTokensLimited
from bot.flow.requesters import RequesterRefused
from bot.flow.submit import conflict_problem
from contracts.base import ContractViolation, FieldProblem
from store.base import StoreUnavailable
from store.escalations import EscalationConflict, EscalationNotFound
from store.proposals import IdempotencyConflict, ProposalNotFound

__all__ = ["Problem", "problem_middleware"]

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

#: How long an agent is asked to wait when the store is not available (Retry-After, and said).
STORE_RETRY_SECONDS: Final = 5

#: The most fields at fault an answer lists; the detail says how many there were in all. A body
#: of many small faults (15,000 unknown keys) is answered in a few lines, not many times its size.
PROBLEMS_LISTED: Final = 20


class Problem(Exception):
    """An HTTP error with a title, a detail and, optionally, the fields at fault."""

    def __init__(
        self,
        status: int,
        title: str,
        detail: str,
        *,
        problems: Iterable[FieldProblem] = (),
        headers: dict[str, str] | None = None,
    ) -> None:
        every = tuple(problems)
        if len(every) > PROBLEMS_LISTED:
            detail += f" (the first {PROBLEMS_LISTED} of {len(every):,} fields at fault are listed)"
        super().__init__(detail)
        self.status = status
        self.title = title
        self.detail = detail
        self.problems = every[:PROBLEMS_LISTED]
        self.headers = headers or {}

    def response(self) -> web.Response:
        body: dict[str, object] = {
            "type": "about:blank",
            "title": self.title,
            "status": self.status,
            "detail": self.detail,
            # always present ([] when no field is at fault), so clients need not check for it
            "errors": [p.model_dump() for p in self.problems],
        }
        return web.Response(
            status=self.status,
            body=json.dumps(body).encode(),
            content_type="application/problem+json",
            headers=self.headers,
        )


def _translate(error: Exception) -> Problem | None:
    if isinstance(error, Problem):
        return error
    if isinstance(error, ContractViolation):
        listed = "; ".join(f"{p.field}: {p.message}" for p in error.problems[:PROBLEMS_LISTED])
        return Problem(
            422,
            "Request does not satisfy the contract",
            f"{len(error.problems):,} field(s) are invalid: {listed}",
            problems=error.problems,
        )
    if isinstance(error, IdempotencyConflict):
        return Problem(
            422,
            "Idempotency key reused",
            "this idempotency key was already used for a different submission "
            f"(proposal {error.existing.id}); use a new key for a new proposal",
            problems=[conflict_problem(error.existing.id, derived=False)],
        )
    if isinstance(error, EscalationConflict):
        return Problem(
            422,
            "Idempotency key reused",
            "this idempotency key was already used for a different escalation "
            f"({error.existing.id}); use a new key for a new escalation",
            problems=[
                FieldProblem(field="Idempotency-Key", message="already used with a different body")
            ],
        )
    if isinstance(error, DelegationTokenRefused):
        return Problem(
            401,
            "Unauthorized",
            str(error),
            headers={"WWW-Authenticate": 'Bearer realm="countersign", error="invalid_token"'},
        )
    if isinstance(error, UnknownTokensLimited):
        seconds = max(1, math.ceil(error.retry_after))
        return Problem(
            429,
            "Too many requests",
            "too many delegation tokens this instance has not seen were sent; this one was not "
            f"looked up and nothing was read or stored. Retry after {seconds} s (the operator "
            "can raise delegation.unknown_tokens_per_second).",
            problems=[
                FieldProblem(
                    field="delegation.unknown_tokens_per_second",
                    message="lookups of unknown delegation tokens, from all callers together",
                )
            ],
            headers={"Retry-After": str(seconds)},
        )
    if isinstance(error, RequesterRefused):
        return Problem(
            403,
            "Not allowed to act for this person",
            f"nothing was stored: {error.message}",
            problems=[FieldProblem(field=error.field, message=error.message)],
        )
    if isinstance(error, EscalationNotFound):
        return Problem(404, "Not found", "no escalation with that id")
    if isinstance(error, ProposalNotFound):
        return Problem(404, "Not found", "no proposal with that id")
    if isinstance(error, StoreUnavailable):
        return Problem(
            503,
            "Store unavailable",
            f"the store is not available; retry after {STORE_RETRY_SECONDS} s",
            headers={"Retry-After": str(STORE_RETRY_SECONDS)},
        )
    return None


@web.middleware
async def problem_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except web.HTTPException as error:
        if error.status < 400:
            raise
        return Problem(error.status, error.reason, error.text or error.reason).response()
    except Exception as error:
        problem = _translate(error)
        if problem is not None:
            return problem.response()
        correlation_id = secrets.token_hex(8)
        log.exception("unhandled error %s on %s %s", correlation_id, request.method, request.path)
        return Problem(
            500,
            "Internal error",
            f"something went wrong on our side; correlation id {correlation_id}",
        ).response()
