"""The Store protocol (store/protocol.py) written once: the proposals' verbs, and the store of
each table family, every one over the backend's connector, so all share its transactions and
its audit chain. SqliteStore and PostgresStore build on :class:`StoreVerbs` and say only how they
reach their database (store/backend.py)."""

from __future__ import annotations

from store.delegations import DelegationStore
from store.digests import DigestStore
from store.escalations import EscalationStore
from store.proposals.clicks import ClickStore
from store.proposals.verbs import ProposalVerbs
from store.standing import StandingStore

__all__ = ["StoreVerbs"]


class StoreVerbs(ProposalVerbs):
    """The proposals' verbs, and each table family's store on the same backend."""

    def escalations(self) -> EscalationStore:
        """The escalations kept in this database, in its transactions and audit chain."""
        return EscalationStore(self)

    def standing(self) -> StandingStore:
        """Standing rules and reviews in this database, in its transactions and audit chain."""
        return StandingStore(self)

    def delegations(self) -> DelegationStore:
        """Delegations from Slack in this database, in its transactions and audit chain."""
        return DelegationStore(self)

    def clicks(self) -> ClickStore:
        """Decision clicks recorded in this database, in its transactions."""
        return ClickStore(self)

    def digests(self) -> DigestStore:
        """Digests of similar proposals in this database, in its transactions and audit chain."""
        return DigestStore(self)
