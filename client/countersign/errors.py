"""What the client raises: every error is a :class:`CountersignError`."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from countersign.answers import Answer
    from countersign.wire.api import ProblemOut, ProposalOut

__all__ = [
    "CancelUnavailable",
    "CountersignError",
    "FieldAtFault",
    "InvalidCallback",
    "NotApproved",
    "NotAsked",
    "OutcomeUnknown",
    "ProblemError",
    "Unreachable",
    "WaitInterrupted",
    "when_to_retry",
]


class FieldAtFault(Protocol):
    """One field a refusal blames: ``field`` is a dotted path such as ``request.amount``."""

    @property
    def field(self) -> str: ...

    @property
    def message(self) -> str: ...


class CountersignError(Exception):
    """Something went wrong talking to Countersign."""


class ProblemError(CountersignError):
    """Countersign refused the request; the fields are its ``application/problem+json`` answer
    (``errors`` names each field at fault and what was expected)."""

    def __init__(
        self,
        *,
        status: int,
        title: str,
        detail: str,
        type: str = "about:blank",
        errors: Sequence[FieldAtFault] = (),
        retry_after: float | None = None,
    ) -> None:
        self.status = status
        self.title = title
        self.detail = detail
        self.type = type
        self.errors = tuple(errors)
        #: seconds, when the answer said when to try again (429, 503)
        self.retry_after = retry_after
        # the fields the detail does not already say (the server's detail often lists them)
        fields = "".join(
            f"; {p.field}: {p.message}" for p in self.errors if p.message not in detail
        )
        super().__init__(f"HTTP {status} {title}: {detail}{fields}")

    @classmethod
    def of(cls, problem: ProblemOut, *, retry_after: float | None = None) -> ProblemError:
        return cls(
            status=problem.status,
            title=problem.title,
            detail=problem.detail,
            type=problem.type,
            errors=problem.errors,
            retry_after=retry_after,
        )


class Unreachable(CountersignError):
    """Countersign could not be reached, or kept failing, until the call's time ran out."""


def when_to_retry(failure: CountersignError) -> str:
    """'. Countersign asked to try again in 5 s' when it said when, unless its own words say so
    already; else ''."""
    seconds = failure.retry_after if isinstance(failure, ProblemError) else None
    if seconds is None or re.search(r"retry after \d", str(failure), re.IGNORECASE):
        return ""
    return f". Countersign asked to try again in {seconds:g} s"


def _how(failure: CountersignError) -> str:
    return "was not reached" if isinstance(failure, Unreachable) else "answered with an error"


class NotAsked(CountersignError):
    """Countersign could not take the question just now (unreachable, at the agent's own limits,
    at capacity, its store unavailable): nothing was stored, so nobody was asked. ``failure`` is
    what happened; ``retry_after`` the seconds Countersign asked to wait, when it said."""

    def __init__(self, failure: CountersignError) -> None:
        self.failure = failure
        self.retry_after = failure.retry_after if isinstance(failure, ProblemError) else None
        super().__init__(
            f"Countersign {_how(failure)}, so nothing was proposed and nobody was asked: "
            f"{failure}{when_to_retry(failure)}"
        )


class WaitInterrupted(CountersignError):
    """Countersign failed after the proposal was made and before anyone had decided it: while
    waiting for the decision, or (``while_withdrawing``) while withdrawing the proposal once the
    caller's deadline passed. ``withdrawn``: the proposal was withdrawn after all, so nothing
    will come of it; otherwise it may still be pending there and be decided in Slack later.
    Either way nothing was approved: do not act. ``proposal`` is the proposal as last read."""

    def __init__(
        self,
        proposal: ProposalOut,
        failure: CountersignError,
        *,
        withdrawn: bool,
        while_withdrawing: bool = False,
        withdrawing: bool = True,
    ) -> None:
        self.proposal = proposal
        self.failure = failure
        self.withdrawn = withdrawn
        self.while_withdrawing = while_withdrawing
        self.retry_after = failure.retry_after if isinstance(failure, ProblemError) else None
        if while_withdrawing:
            text = (
                f"nobody decided proposal {proposal.id} before the deadline, and Countersign "
                f"{_how(failure)} when it was to be withdrawn ({failure})"
            )
        else:
            text = (
                f"Countersign {_how(failure)} while waiting for the decision on proposal "
                f"{proposal.id} ({failure}); nobody had decided it"
            )
        if withdrawn:
            text += ". It was withdrawn, so nothing will come of it"
        elif withdrawing:
            text += (
                ". It could not be withdrawn: it is still pending there and may still be decided "
                "in Slack; treat it as not approved and do not act, whatever is decided there"
            )
        else:
            text += ". It is still pending there and may still be decided in Slack"
        super().__init__(text + when_to_retry(failure))


class OutcomeUnknown(CountersignError):
    """Countersign carried the proposal out and does not know whether it took effect (its
    status is ``needs_reconciliation``: the target timed out after it was called, or answered
    an error). The effect may have happened: never retry it; a person must find out."""

    def __init__(self, proposal_id: str, detail: str | None) -> None:
        self.proposal_id = proposal_id
        self.detail = detail
        super().__init__(outcome_unknown_words(proposal_id, detail))


def outcome_unknown_words(proposal_id: str, detail: str | None) -> str:
    """What an unknown outcome means for the agent, in plain words."""
    why = f" ({detail})" if detail else ""
    return (
        f"Countersign does not know whether proposal {proposal_id} took effect{why}. The effect "
        "may have happened. Do NOT retry it or propose it again: a person must find out whether "
        "it happened and record it in Countersign's Slack message"
    )


class CancelUnavailable(CountersignError):
    """The caller's deadline passed but the proposal could not be withdrawn: this Countersign is
    older than the cancel endpoint. The proposal is still pending there and may yet be approved;
    do not act."""

    def __init__(self, proposal: ProposalOut, status: int) -> None:
        self.proposal = proposal
        self.status = status
        super().__init__(
            f"the deadline passed before proposal {proposal.id} was decided, and it could not be "
            f"withdrawn: POST /v1/proposals/{proposal.id}/cancel answered HTTP {status} (this "
            "Countersign has no cancel endpoint). The proposal is still pending on the server "
            "and a person may still approve it there; treat it as not approved and do not act"
        )


class NotApproved(CountersignError):
    """A function guarded by ``requires_approval`` was not approved, so it did not run."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        super().__init__(f"not approved, so it did not run: {answer.describe()}")


class InvalidCallback(CountersignError):
    """A callback whose signature or timestamp does not verify: it did not come from Countersign
    (or was replayed late); ignore it."""
