"""Reading Countersign's answers with the standard library alone: a refusal, when to try again,
and what a decision operation's proposal came to.

Both clients read through these rules: the light one (countersign.light, for a hook that must
start in milliseconds) on the JSON documents themselves, the full one (countersign.client) on its
models' JSON. So an answer means the same thing whichever client heard it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final, Literal, NamedTuple

from countersign.errors import CountersignError, OutcomeUnknown, ProblemError

__all__ = [
    "RETRIED_STATUSES",
    "RETRY_AFTER_MAX",
    "UNDECIDED",
    "Ending",
    "Fault",
    "Shown",
    "backoff",
    "ending_of",
    "problem_of",
    "retry_delay",
    "shown_of",
]

#: Answers that say "not now": the same request may be sent again.
RETRIED_STATUSES: Final = frozenset({429, 502, 503, 504})
#: The longest ``Retry-After`` honoured before one more try (a longer one is cut to this).
RETRY_AFTER_MAX: Final = 30.0
#: Undecided statuses: the server holds a long poll while the proposal is in one of them.
UNDECIDED: Final = frozenset({"pending", "executing"})
_BACKOFF: Final = (0.2, 0.5, 1.0, 2.0)


def backoff(attempt: int) -> float:
    """Seconds to wait before attempt ``attempt + 1`` when nothing said how long."""
    return _BACKOFF[min(attempt, len(_BACKOFF) - 1)]


def retry_delay(attempt: int, retry_after: float | None) -> float:
    """Seconds to wait before trying again: the server's ``Retry-After`` (at most
    ``RETRY_AFTER_MAX``), else the backoff."""
    if retry_after is None:
        return backoff(attempt)
    return min(retry_after, RETRY_AFTER_MAX)


class Fault(NamedTuple):
    """One field a refusal blames, and what was expected of it."""

    field: str
    message: str


def problem_of(status: int, body: bytes, retry_after: str | None) -> ProblemError:
    """The refusal an HTTP answer of 400 or more carries (``application/problem+json``), or one
    saying what came instead when the body is not a problem."""
    seconds = _seconds(retry_after)
    try:
        document = json.loads(body)
        faults = tuple(
            Fault(field=_text(fault, "field"), message=_text(fault, "message"))
            for fault in document.get("errors", [])
        )
        return ProblemError(
            status=status,
            title=_text(document, "title"),
            detail=_text(document, "detail"),
            type=_text(document, "type"),
            errors=faults,
            retry_after=seconds,
        )
    except (ValueError, AttributeError, TypeError, CountersignError):
        text = body.decode("utf-8", errors="replace").strip()
        return ProblemError(
            status=status,
            title="Unexpected answer",
            detail=text[:500] or f"HTTP {status} with no body",
            retry_after=seconds,
        )


class Ending(NamedTuple):
    """What a decision operation's proposal came to.

    ``approved``: ``arguments`` were approved (an approver's edit included), ``by`` completed the
    quorum (None: the policy allowed it). ``rejected``: ``by`` rejected it for ``reason`` (None:
    the policy denied it). ``expired``: nobody decided before it expired. ``deadline``: nobody
    decided before the caller's deadline, and the caller withdrew it. ``cancelled``: withdrawn.
    ``shown``: whether people had been shown it in Slack by then (its document's last reading).
    """

    kind: Literal["approved", "rejected", "expired", "deadline", "cancelled"]
    proposal_id: str
    arguments: dict[str, Any] | None = None
    by: str | None = None
    reason: str | None = None
    shown: Shown | None = None


class Shown(NamedTuple):
    """Whether people had been shown a proposal in Slack, as its document said (``shown_at``).

    ``at`` None: nobody had been shown it yet; ``due`` is then when it was to be shown at the
    latest (``shown_after``: a batch not yet gone out holds it until then), if the server said.
    """

    at: datetime | None
    due: datetime | None = None


def shown_of(document: Mapping[str, Any]) -> Shown | None:
    """Whether people had been shown the proposal ``document`` is of; None when the document
    does not say (a server older than ``shown_at``, or a time it could not read)."""
    if "shown_at" not in document:
        return None
    at, due = _time(document.get("shown_at")), _time(document.get("shown_after"))
    if at is None and document.get("shown_at") is not None:
        return None
    return Shown(at, due)


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


def ending_of(document: Mapping[str, Any]) -> Ending | None:
    """What a decision operation's proposal document (``GET /v1/proposals/{id}``) came to; None
    while nobody has decided. CountersignError when it is not a decision operation's;
    OutcomeUnknown when it is one Countersign carried out without learning whether it took
    effect."""
    proposal_id = _text(document, "id")
    status = _text(document, "status")
    decision = document.get("decision") or {}
    by = decision.get("by")
    if status in UNDECIDED:
        return None
    if status == "succeeded":
        return Ending("approved", proposal_id, _decided_arguments(document), by)
    if status == "rejected":
        return Ending("rejected", proposal_id, by=by, reason=decision.get("reason") or None)
    if status == "denied":
        note = _text(document.get("policy") or {}, "note")
        return Ending("rejected", proposal_id, reason=note)
    if status == "expired":
        return Ending("expired", proposal_id, shown=shown_of(document))
    if status == "cancelled":
        return Ending("cancelled", proposal_id, shown=shown_of(document))
    if status == "needs_reconciliation":  # carried out, effect unknown: never say "failed"
        raise OutcomeUnknown(proposal_id, (document.get("outcome") or {}).get("detail"))
    raise CountersignError(
        f"proposal {proposal_id} of operation {document.get('operation')!r} ended {status!r}, "
        "which a decision operation never does: use get() or wait() for operations Countersign "
        "executes"
    )


def _decided_arguments(document: Mapping[str, Any]) -> dict[str, Any]:
    """The approved arguments a decision operation's ``succeeded`` outcome carries."""
    outcome = document.get("outcome") or {}
    result = outcome.get("result") if outcome.get("kind") == "succeeded" else None
    if (
        isinstance(result, dict)
        and isinstance(result.get("arguments"), dict)
        and result.get("decision", "approved") == "approved"
        and result.get("executed_by", "agent") == "agent"
        and set(result) <= {"decision", "arguments", "executed_by"}
    ):
        return dict(result["arguments"])
    raise CountersignError(
        f"operation {document.get('operation')!r} is not a decision operation: Countersign "
        f"executed proposal {document.get('id')} itself; read its outcome with get() or wait()"
    )


def _text(document: Mapping[str, Any], name: str) -> str:
    value = document.get(name) if isinstance(document, Mapping) else None
    if not isinstance(value, str):
        raise CountersignError(
            f"Countersign's answer has {type(value).__name__} in field {name!r}; expected text"
        )
    return value


def _seconds(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None
