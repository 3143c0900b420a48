"""The wire models the server and the client share name the store's statuses, no more, no less."""

from __future__ import annotations

from typing import get_args

from contracts.api import EscalationStatus, ProposalStatus
from store.escalations import EscalationStatus as StoredEscalationStatus
from store.proposals import Status


def test_proposal_statuses_on_the_wire_are_the_lifecycle_statuses() -> None:
    assert set(get_args(ProposalStatus)) == {status.value for status in Status}


def test_escalation_statuses_on_the_wire_are_the_stored_ones() -> None:
    assert set(get_args(EscalationStatus)) == {status.value for status in StoredEscalationStatus}
