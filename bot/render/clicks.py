"""What a person who clicked a decision is told at once, before it is applied (pure).

The click is recorded first (bot/flow/clicks.py); applying it (the checks, the decision, the
execution) follows, and its outcome reaches the clicker as the message changes, or, when a
check refuses it, as a private answer saying why.
"""

from __future__ import annotations

from typing import Final

__all__ = ["click_recorded_text"]

#: What each verb's click is called, as the clicker reads it.
_DECISIONS: Final = {
    "approve": "approval of {}",
    "reject": "rejection of {}",
    "extend": "extension of {}",
    "retry": "retry of {}",
    "reconcile_succeeded": "answer that {} happened",
    "reconcile_failed": "answer that {} did not happen",
    "digest_approve_all": "approval of this digest's proposals",
    "digest_approve": "decision on this digest's proposals",
    "digest_reject": "rejection of this digest's proposals",
    "digest_review": "approval of the proposals you reviewed",
    "escalation_take": "taking of escalation {}",
    "escalation_resolve": "resolution of escalation {}",
    "escalation_hand_back": "hand-back of escalation {}",
}


def click_recorded_text(subject: str, verb: str, *, again: bool) -> str:
    """The decision is durable and will be applied, in the order clicks arrived."""
    what = _DECISIONS.get(verb, "decision on {}").format(subject)
    recorded = "is already recorded;" if again else "is recorded;"
    checked = "checked and run now" if verb in ("approve", "retry") else "checked and applied now"
    shown = (
        "You will be told what came of it."
        if verb.startswith("digest_")
        else "The message will show the outcome."
    )
    return f":hourglass_flowing_sand: Your {what} {recorded} it is being {checked}. {shown}"
