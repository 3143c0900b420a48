"""When an asked proposal is shown, expires, is reminded and is handed over to backup approvers.

A proposal of an ``ask`` rule with ``batch`` waits to be shown with others (contracts/batching.py)
unless it cannot wait: its agent marked it ``urgent`` (which only makes it go out sooner: the
rule, its approvers and its expiry stay the same), or it is an edit (a person made it and is
looking). Everything that counts from showing counts from ``shown_after``: the expiry (the
rule's whole ``expires_after``), the reminder (a share of the time from showing to expiry) and
the hand-over to backup approvers (``then.after``). A proposal shown at once is shown when it is
created. The store moves these times earlier by as much when the proposal joins a batch closing
sooner (store/proposals/batches.py).

The batch key is derived here from what the policy decided, never from what the agent sent: the
channel, the rule, the operation and the approver roles (and the window and max the batch was
opened with, so a changed rule starts a new batch).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta

from contracts.batching import handover_time, shown_by
from contracts.policy import Ask
from contracts.reminders import RemindAt, remind_time
from store.proposals import BatchRequest

__all__ = ["AskTiming", "ask_timing", "batch_key"]


@dataclass(frozen=True, slots=True)
class AskTiming:
    shown_after: datetime
    expires_at: datetime
    remind_at: datetime | None
    backup_at: datetime | None
    backup_roles: tuple[str, ...]
    batch: BatchRequest | None  #: None: shown at once


def batch_key(decision: Ask, operation: str) -> str:
    """The batch a proposal of ``decision`` waits in: Countersign's facts only."""
    assert decision.batch is not None
    return json.dumps(
        [
            decision.channel,
            decision.rule_id,
            operation,
            sorted(decision.approvers),
            decision.batch.window // timedelta(seconds=1),
            decision.batch.max,
        ],
        separators=(",", ":"),
    )


def ask_timing(
    decision: Ask,
    *,
    operation: str,
    now: datetime,
    default_remind_at: RemindAt,
    urgent: bool,
    edit: bool,
) -> AskTiming:
    """The times of a proposal ``decision`` asks for, created at ``now``."""
    waits = decision.batch is not None and not urgent and not edit
    batch = decision.batch if waits else None
    shown_after = shown_by(batch, created_at=now)
    expires_at = shown_after + decision.expires_after
    setting = decision.remind_at if decision.remind_at is not None else default_remind_at
    route = decision.then
    return AskTiming(
        shown_after=shown_after,
        expires_at=expires_at,
        remind_at=remind_time(setting, created_at=shown_after, expires_at=expires_at),
        backup_at=None
        if route is None
        else handover_time(route, shown_at=shown_after, expires_at=expires_at),
        backup_roles=() if route is None else route.approvers,
        batch=None
        if batch is None
        else BatchRequest(key=batch_key(decision, operation), window=batch.window, max=batch.max),
    )
