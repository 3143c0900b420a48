"""What a person who clicked Approve is told at once, before the decision is applied (pure).

The click is recorded first (bot/decisions.py); applying it (the checks, the approval, the
execution) follows, and its outcome reaches the clicker as the proposal's message changes, or,
when a check refuses it, as a private answer saying why.
"""

from __future__ import annotations

__all__ = ["click_recorded_text"]


def click_recorded_text(proposal_id: str, *, again: bool) -> str:
    """The approval is durable and will be applied, in the order clicks arrived."""
    if again:
        return (
            f":hourglass_flowing_sand: Your approval of {proposal_id} is already recorded; "
            "it is being checked and run now. The message will show the outcome."
        )
    return (
        f":hourglass_flowing_sand: Your approval of {proposal_id} is recorded; it is being "
        "checked and run now. The message will show the outcome."
    )
