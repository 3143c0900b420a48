"""Delegations: a person lets one agent act for them for a short while, kept in the store's
database and on its audit chain.

- ``records``: a delegation, the answers of a revocation, the error, the audit detail, and what
  is stored of its token
- ``verbs``: the DelegationStore every backend gives through ``Store.delegations()``, written once
  over the connector, and the row it reads
- ``sql/``: its named queries (the same on both backends)
"""

from __future__ import annotations

from store.delegations.records import (
    Delegation,
    DelegationNotFound,
    DelegationRevokeResult,
    NewDelegation,
    grant_detail,
    token_hash,
)
from store.delegations.verbs import DelegationStore, delegation_from_row

__all__ = [
    "Delegation",
    "DelegationNotFound",
    "DelegationRevokeResult",
    "DelegationStore",
    "NewDelegation",
    "delegation_from_row",
    "grant_detail",
    "token_hash",
]
