"""The four answers to a question asked with ``approve``: exactly one of them comes back."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # annotations only: the answers import nothing but the standard library
    from pydantic import JsonValue

    from countersign.wire.api import ProposalOut

__all__ = ["Answer", "Approved", "Cancelled", "Rejected", "TimedOut"]


@dataclass(frozen=True, slots=True)
class Approved:
    """People approved: the agent may now do what it asked, exactly as ``arguments`` say."""

    proposal: ProposalOut
    #: exactly what was approved (an approver's edit included)
    arguments: dict[str, JsonValue]
    #: who approved (the one whose approval completed the quorum)
    by: str | None

    def describe(self) -> str:
        return f"approved by {self.by or 'the policy'} (proposal {self.proposal.id})"


@dataclass(frozen=True, slots=True)
class Rejected:
    """A person rejected it, or the policy denied it: ``reason`` says why."""

    proposal: ProposalOut
    reason: str
    #: who rejected it; None when the policy denied it
    by: str | None

    def describe(self) -> str:
        who = self.by or "the policy"
        return f"rejected by {who}: {self.reason} (proposal {self.proposal.id})"


@dataclass(frozen=True, slots=True)
class TimedOut:
    """Nobody decided in time: not a rejection, but nothing may be done.

    ``by`` is ``"expiry"`` when the proposal expired on the server, ``"deadline"`` when the
    caller's own deadline passed first and the proposal was withdrawn on the server.
    """

    proposal: ProposalOut
    by: Literal["expiry", "deadline"]

    def describe(self) -> str:
        if self.by == "expiry":
            return f"nobody decided before it expired (proposal {self.proposal.id})"
        return f"nobody decided before the caller's deadline; withdrawn ({self.proposal.id})"


@dataclass(frozen=True, slots=True)
class Cancelled:
    """The proposal was withdrawn by the agent before anyone decided."""

    proposal: ProposalOut

    def describe(self) -> str:
        return f"withdrawn by the agent (proposal {self.proposal.id})"


Answer = Approved | Rejected | TimedOut | Cancelled
