"""The proposal lifecycle: one status column and the table of allowed transitions.

The same states appear in the SQL ``CHECK`` constraints of every backend and in the README's state
diagram (``tests/store/test_lifecycle.py`` keeps all three in step).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

__all__ = [
    "EFFECTS",
    "FINAL",
    "INITIAL",
    "OUTCOME_STATUS",
    "SETTLED",
    "TRANSITIONS",
    "Effect",
    "Status",
    "mermaid_diagram",
]


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
    SUPERSEDED = "superseded"  #: an approver edited it; the edit is a new proposal
    CANCELLED = "cancelled"  #: the proposing agent withdrew it while pending; nothing executed


#: Statuses a proposal may be created in (policy: ask, deny, auto).
INITIAL: Final = frozenset({Status.PENDING, Status.DENIED, Status.EXECUTING})

TRANSITIONS: Final[dict[Status, frozenset[Status]]] = {
    Status.PENDING: frozenset(
        {Status.EXECUTING, Status.REJECTED, Status.EXPIRED, Status.SUPERSEDED, Status.CANCELLED}
    ),
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
    # a person finds out what happened and records it, or retries with the same idempotency key
    Status.NEEDS_RECONCILIATION: frozenset({Status.SUCCEEDED, Status.FAILED, Status.EXECUTING}),
    Status.REVISION_REQUIRED: frozenset(),
    Status.FAILED: frozenset(),
    Status.SUPERSEDED: frozenset(),
    Status.CANCELLED: frozenset(),
}

FINAL: Final = frozenset(status for status, nexts in TRANSITIONS.items() if not nexts)

#: Decided, with nothing running: what an agent waiting for an answer waits for. Needs
#: reconciliation is settled for the agent (a person takes over) though not final.
SETTLED: Final = FINAL | {Status.NEEDS_RECONCILIATION}


class Effect(StrEnum):
    """What a transition must cause outside the database, delivered through the outbox."""

    SLACK_POST = "slack.post"  #: post the interactive message in the rule's channel
    SLACK_UPDATE = "slack.update"  #: re-render the message from the current state
    SLACK_REPLY = "slack.reply"  #: a reply in the message's thread for the new status
    SLACK_REMIND = "slack.remind"  #: a reminder in the thread, naming who can still approve
    SLACK_REVIEW = "slack.review"  #: an automatic approval posted for review after the fact
    CALLBACK = "callback"  #: a signed POST of the state to the agent's callback_url


_ANNOUNCED = (Effect.SLACK_UPDATE, Effect.SLACK_REPLY, Effect.CALLBACK)

#: The effects of entering each status. Slack effects apply to proposals that ask in a channel,
#: callbacks to proposals that gave a callback_url; the store writes them in the transaction of
#: the transition itself, so a change of state is never lost on its way out.
EFFECTS: Final[dict[Status, tuple[Effect, ...]]] = {
    Status.PENDING: (Effect.SLACK_POST,),
    Status.DENIED: (Effect.CALLBACK,),
    Status.EXECUTING: (Effect.SLACK_UPDATE,),
    Status.REJECTED: _ANNOUNCED,
    Status.EXPIRED: _ANNOUNCED,
    Status.SUCCEEDED: _ANNOUNCED,
    Status.NEEDS_RECONCILIATION: _ANNOUNCED,
    Status.REVISION_REQUIRED: _ANNOUNCED,
    Status.FAILED: _ANNOUNCED,
    Status.SUPERSEDED: _ANNOUNCED,
    # the message shows the withdrawal in place of its buttons; no reply in the thread
    Status.CANCELLED: (Effect.SLACK_UPDATE, Effect.CALLBACK),
}

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
