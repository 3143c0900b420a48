"""The executor: carry out a claimed proposal, revalidating it against current state, once."""

from __future__ import annotations

import logging
import secrets
import traceback
from collections.abc import Callable
from datetime import datetime

from contracts.base import Context, HttpClient, IdempotencyKey
from contracts.outcomes import NeedsReconciliation, Outcome, RevisionRequired, TerminalFailure
from contracts.redaction import scrub
from contracts.registry import Registry, UnknownOperation
from store.proposals import Proposal

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
        """Never raises: every way this can end is one of the four outcomes. Its words carry no
        credential of a URL they quote (an operation's backend may name its own, secrets and
        all, in an error the operation passes on): they reach Slack, the agent and the audit
        log."""
        return _scrubbed(await self._outcome(proposal))

    async def _outcome(self, proposal: Proposal) -> Outcome:
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
            _log_raised("loading the stored arguments of", correlation_id, error)
            return RevisionRequired(
                reason="the stored arguments no longer fit the operation's contract: "
                + scrub(str(error))
            )
        try:
            revision = await operation.revalidate(arguments, ctx)
        except Exception as error:
            _log_raised("revalidating", correlation_id, error)
            return RevisionRequired(
                reason=f"could not revalidate current state ({type(error).__name__}); "
                "nothing was executed"
            )
        if revision is not None:
            return revision
        try:
            return await operation.execute(arguments, ctx, idempotency_key(proposal.id))
        except Exception as error:  # unknown means the effect may have happened
            _log_raised("executing", correlation_id, error)
            return NeedsReconciliation(
                detail=f"the executor raised {_described(error)}",
                correlation_id=correlation_id,
            )


def _scrubbed(outcome: Outcome) -> Outcome:
    """``outcome`` with every URL its words quote shown as ``scheme://host[:port]/…``."""
    match outcome:
        case NeedsReconciliation(detail=text) | TerminalFailure(detail=text):
            return outcome.model_copy(update={"detail": scrub(text)})
        case RevisionRequired(reason=text):
            return outcome.model_copy(update={"reason": scrub(text)})
        case _:
            return outcome


def _described(error: BaseException) -> str:
    """The exception's type and text, without a credential of any URL the text quotes."""
    return f"{type(error).__name__}: {scrub(str(error))}"


def _log_raised(doing: str, correlation_id: str, error: BaseException) -> None:
    """Log what an operation raised: its text scrubbed as in the outcome, and where it was
    raised (the frames alone, since the traceback's last line would quote the text as it is)."""
    frames = "".join(traceback.format_tb(error.__traceback__))
    log.error("%s %s raised %s\n%s", doing, correlation_id, _described(error), frames)
