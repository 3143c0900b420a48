"""What every backend checks and records alike when an edit supersedes a proposal.

An edit is a new proposal (``NewProposal.supersedes`` names the one it replaces and
``NewProposal.edited_by`` the person who edited it) stored in the same transaction as the
compare-and-set that moves the replaced proposal from pending to superseded.
"""

from __future__ import annotations

from pydantic import JsonValue

from store.proposals.lifecycle import INITIAL, Status
from store.proposals.records import InvalidTransition, NewProposal, Proposal

__all__ = ["check_creatable", "check_edit", "edited_detail", "superseded_detail"]


def check_creatable(new: NewProposal) -> None:
    """Refuse (InvalidTransition, ValueError) a proposal that cannot be created: its status is
    not an initial one, or it has a lease without being created executing (or the reverse)."""
    if new.status not in INITIAL:
        raise InvalidTransition(
            f"proposal {new.id!r}: cannot be created with status {new.status.value!r}; "
            f"expected one of {sorted(s.value for s in INITIAL)}"
        )
    if (new.status is Status.EXECUTING) != (new.lease_until is not None):
        raise ValueError(
            f"proposal {new.id!r}: lease_until is required exactly when it is created "
            f"executing (status {new.status.value!r}, lease_until {new.lease_until!r})"
        )


def check_edit(old_id: str, new: NewProposal, *, actor: str) -> None:
    """Refuse (ValueError, InvalidTransition) an edit that does not say what it replaces and who
    edited it, or that could not be created as a submission could."""
    if new.supersedes != old_id:
        raise ValueError(
            f"proposal {new.id!r}: supersedes is {new.supersedes!r}; an edit of {old_id!r} must "
            f"name it"
        )
    if new.edited_by != actor:
        raise ValueError(
            f"proposal {new.id!r}: edited_by is {new.edited_by!r}; expected the editor {actor!r}"
        )
    if new.id == old_id:
        raise ValueError(f"proposal {new.id!r}: an edit needs an id of its own")
    check_creatable(new)


def superseded_detail(new: NewProposal) -> dict[str, JsonValue]:
    """The replaced proposal's audit entry: which proposal replaced it, and who edited it."""
    return {"superseded_by": new.id, "edited_by": new.edited_by}


def edited_detail(old: Proposal, new: NewProposal) -> dict[str, JsonValue]:
    """The edit's audit entry: the request as proposed and as edited, and the arguments before and
    after, each kept apart so that what the agent asked and what a person changed stay on record."""
    return {
        "supersedes": old.id,
        "proposed_request": old.request,
        "edited_request": new.request,
        "proposed_arguments": old.arguments,
        "arguments": new.arguments,
    }
