"""The proposal lifecycle: one status column and the table of allowed transitions.

The same states appear in the SQL ``CHECK`` constraints of every backend and in the README's state
diagram (``tests/store/test_lifecycle.py`` keeps all three in step).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

__all__ = ["FINAL", "INITIAL", "OUTCOME_STATUS", "TRANSITIONS", "Status", "mermaid_diagram"]


class Status(StrEnum):
    PENDING = "pending"  #: waiting for a person to decide
    DENIED = "denied"  #: the policy table refused it; nothing was asked or executed
    REJECTED = "rejected"  #: a person rejected it, with a reason
    EXPIRED = "expired"  #: nobody decided in time; a denial
    EXECUTING = "executing"  #: claimed by exactly one executor
    SUCCEEDED = "succeeded"  #: the effect happened
    NEEDS_RECONCILIATION = "needs_reconciliation"  #: the effect may or may not have happened
    REVISION_REQUIRED = "revision_required"  #: state changed since the preview; nothing executed
    FAILED = "failed"  #: terminal failure; the effect did not happen


#: Statuses a proposal may be created in (policy: ask, deny, auto).
INITIAL: Final = frozenset({Status.PENDING, Status.DENIED, Status.EXECUTING})

TRANSITIONS: Final[dict[Status, frozenset[Status]]] = {
    Status.PENDING: frozenset({Status.EXECUTING, Status.REJECTED, Status.EXPIRED}),
    Status.EXECUTING: frozenset(
        {
            Status.SUCCEEDED,
            Status.NEEDS_RECONCILIATION,
            Status.REVISION_REQUIRED,
            Status.FAILED,
        }
    ),
    Status.DENIED: frozenset(),
    Status.REJECTED: frozenset(),
    Status.EXPIRED: frozenset(),
    Status.SUCCEEDED: frozenset(),
    Status.NEEDS_RECONCILIATION: frozenset(),
    Status.REVISION_REQUIRED: frozenset(),
    Status.FAILED: frozenset(),
}

FINAL: Final = frozenset(status for status, nexts in TRANSITIONS.items() if not nexts)

#: The status an outcome ``kind`` moves an executing proposal to.
OUTCOME_STATUS: Final[dict[str, Status]] = {
    "succeeded": Status.SUCCEEDED,
    "needs_reconciliation": Status.NEEDS_RECONCILIATION,
    "revision_required": Status.REVISION_REQUIRED,
    "terminal_failure": Status.FAILED,
}


def mermaid_diagram() -> str:
    """The lifecycle as a Mermaid state diagram, as the README shows it."""
    lines = ["stateDiagram-v2"]
    lines += [f"    [*] --> {status.value}" for status in Status if status in INITIAL]
    for source in Status:
        lines += [
            f"    {source.value} --> {target.value}" for target in sorted(TRANSITIONS[source])
        ]
    lines += [f"    {status.value} --> [*]" for status in Status if status in FINAL]
    return "\n".join(lines)
