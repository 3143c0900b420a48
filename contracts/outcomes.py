"""The outcome vocabulary every operation shares.

An outcome is what Countersign stores after it tried to carry out a proposal. It is a tagged union
(``kind``), rendered by code and given to the agent as it is: never paraphrased by a model. The
agent reads the same definition, so it lives with the wire documents (countersign.wire.outcomes).
"""

from __future__ import annotations

from countersign.wire.outcomes import (
    OUTCOMES,
    Decided,
    NeedsReconciliation,
    Outcome,
    RevisionRequired,
    Succeeded,
    TerminalFailure,
)

__all__ = [
    "OUTCOMES",
    "Decided",
    "NeedsReconciliation",
    "Outcome",
    "RevisionRequired",
    "Succeeded",
    "TerminalFailure",
]
