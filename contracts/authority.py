"""Who may decide a proposal: separation of duties and roles, checked at click time."""

from __future__ import annotations

from collections.abc import Collection, Mapping

__all__ = ["refusal_reason"]


def refusal_reason(
    *,
    approver: str,
    requested_by: str,
    approver_roles: Collection[str],
    roles: Mapping[str, Collection[str]],
) -> str | None:
    """Why ``approver`` may not decide, or None when they may.

    ``approver_roles`` are the roles the matched rule names *under the current configuration* and
    ``roles`` maps each role to its members now, so a person removed from a role since the
    proposal was posted can no longer decide it. Unknown roles grant nothing (fail closed).
    """
    if not approver:
        return "the person who clicked could not be identified"
    if approver == requested_by:
        return "you are the person accountable for this request; someone else has to decide it"
    if not approver_roles:
        return "the policy rule names no approver role, so nobody can approve it"
    if not any(approver in roles.get(role, ()) for role in approver_roles):
        needed = ", ".join(sorted(approver_roles))
        return f"deciding this needs the role {needed}, which you do not hold"
    return None
