"""What the client raises: every error is a :class:`CountersignError`."""

from __future__ import annotations

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
    "ProblemError",
    "Unreachable",
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
