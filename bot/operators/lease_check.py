"""``check-config`` and ``serve`` warn when a webhook target may still be answering when its
execution lease ends: the proposal is then handed to a person as uncertain while the target is
still working, and whatever it answers arrives after Countersign stopped waiting (it is audited
and shown on the reconciliation card, but a person must still record it)."""

from __future__ import annotations

from bot.settings import Settings
from contracts.durations import spoken_duration
from contracts.operations.webhook import WebhookOperation

__all__ = ["lease_warnings"]


def lease_warnings(settings: Settings) -> list[str]:
    """One warning per webhook operation whose longest wait for its target is not below
    ``server.execution_lease_seconds``."""
    lease = settings.server.execution_lease_seconds
    warnings = []
    for operation in settings.registry:
        if not isinstance(operation, WebhookOperation):
            continue
        timeout = operation.spec.timeout_seconds
        # with a revalidate_url, an execution asks the target twice: the check, then the call
        calls = 2 if operation.revalidates else 1
        longest = calls * timeout
        if longest < lease:
            continue
        waits = (
            f"timeout_seconds = {timeout:g}"
            if calls == 1
            else f"twice timeout_seconds = {timeout:g} (revalidate_url, then url)"
        )
        warnings.append(
            f"operations.{operation.name}: an execution may wait {spoken_duration(longest)} for "
            f"its target ({waits}), not less than server.execution_lease_seconds = {lease:g} "
            f"({spoken_duration(lease)}): a proposal whose target is still answering when the "
            "lease ends is handed to a person as uncertain, and the target's answer comes too "
            "late to count. Lower timeout_seconds below the lease, or raise the lease."
        )
    return warnings
