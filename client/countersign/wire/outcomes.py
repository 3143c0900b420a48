"""The outcome vocabulary every operation shares.

An outcome is what Countersign stores after it tried to carry out a proposal. It is a tagged union
(``kind``), rendered by code and given to the agent as it is: never paraphrased by a model.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, JsonValue, TypeAdapter

from countersign.wire.base import Frozen

__all__ = [
    "OUTCOMES",
    "Decided",
    "NeedsReconciliation",
    "Outcome",
    "RevisionRequired",
    "Succeeded",
    "TerminalFailure",
]


class Succeeded(Frozen):
    """The effect happened; ``result`` is the operation's typed result, as JSON."""

    kind: Literal["succeeded"] = "succeeded"
    result: JsonValue = None


class NeedsReconciliation(Frozen):
    """The effect may or may not have happened. A person must find out; never retried blindly."""

    kind: Literal["needs_reconciliation"] = "needs_reconciliation"
    detail: str
    correlation_id: str
    #: what the target answered after Countersign had given up waiting (its lease ended), if it
    #: did; a person still records what happened
    answered_late: Literal["success", "failure", "nothing done"] | None = None
    #: when it answered (ISO 8601, UTC), with ``answered_late``
    answered_at: str | None = None


class RevisionRequired(Frozen):
    """State changed since the preview was frozen: nothing was executed."""

    kind: Literal["revision_required"] = "revision_required"
    reason: str


class TerminalFailure(Frozen):
    """The effect did not happen and retrying the same arguments will not help."""

    kind: Literal["terminal_failure"] = "terminal_failure"
    detail: str
    correlation_id: str


class Decided(Frozen):
    """The result of a decision operation (the server's contracts/operations/decision.py),
    carried in a ``succeeded`` outcome: people approved ``arguments``; Countersign executed
    nothing and the agent carries them out itself."""

    decision: Literal["approved"] = "approved"
    #: exactly what was approved: the frozen arguments
    arguments: dict[str, JsonValue]
    executed_by: Literal["agent"] = "agent"


Outcome = Annotated[
    Succeeded | NeedsReconciliation | RevisionRequired | TerminalFailure,
    Field(discriminator="kind"),
]

#: Parses and dumps any outcome (``OUTCOMES.validate_json(...)``, ``OUTCOMES.dump_json(...)``).
OUTCOMES: TypeAdapter[Outcome] = TypeAdapter(Outcome)
