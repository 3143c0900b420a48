"""Carry out a claimed proposal: revalidate against current state, then execute, once."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from datetime import datetime

from contracts.base import Context, HttpClient, IdempotencyKey
from contracts.outcomes import NeedsReconciliation, Outcome, RevisionRequired, TerminalFailure
from contracts.registry import Registry, UnknownOperation
from store.base import Proposal

__all__ = ["Executor", "idempotency_key"]

log = logging.getLogger(__name__)


def idempotency_key(proposal_id: str) -> IdempotencyKey:
    """The key the executor receives: derived from the proposal alone, so every retry sends it."""
    return IdempotencyKey(f"countersign-{proposal_id}")


class Executor:
    def __init__(self, registry: Registry, http: HttpClient, clock: Callable[[], datetime]) -> None:
        self._registry = registry
        self._http = http
        self._clock = clock

    async def run(self, proposal: Proposal) -> Outcome:
        """Never raises: every way this can end is one of the four outcomes."""
        correlation_id = f"{proposal.id}.{secrets.token_hex(4)}"
        try:
            operation = self._registry.get(proposal.operation)
        except UnknownOperation:
            return TerminalFailure(
                detail=f"operation {proposal.operation!r} is no longer configured; "
                "nothing was executed",
                correlation_id=correlation_id,
            )
        ctx = Context(now=self._clock(), http=self._http, correlation_id=correlation_id)
        try:
            arguments = operation.load_arguments(proposal.arguments)
        except Exception as error:  # stored arguments no longer fit the contract
            log.exception("stored arguments of %s do not load", correlation_id)
            return RevisionRequired(
                reason=f"the stored arguments no longer fit the operation's contract: {error}"
            )
        try:
            revision = await operation.revalidate(arguments, ctx)
        except Exception as error:
            log.exception("revalidation of %s failed", correlation_id)
            return RevisionRequired(
                reason=f"could not revalidate current state ({type(error).__name__}); "
                "nothing was executed"
            )
        if revision is not None:
            return revision
        try:
            return await operation.execute(arguments, ctx, idempotency_key(proposal.id))
        except Exception as error:  # unknown means the effect may have happened
            log.exception("execution of %s raised", correlation_id)
            return NeedsReconciliation(
                detail=f"the executor raised {type(error).__name__}: {error}",
                correlation_id=correlation_id,
            )
