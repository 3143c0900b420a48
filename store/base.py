"""What every table family of the store shares: the errors a store raises when it cannot do
what was asked. Driver exceptions never leave a backend: they are translated into these
(each family adds its own, such as the proposals' ``ProposalNotFound``)."""

from __future__ import annotations

__all__ = ["StoreError", "StoreUnavailable"]


class StoreError(Exception):
    """The store could not do what was asked."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or (type(self).__doc__ or "").strip())


class StoreUnavailable(StoreError):
    """The database could not be reached or refused the operation."""
