"""Batches: proposals that may wait to be shown together, and the store's verbs for them.

An ``ask`` rule with ``batch = { window, max }`` (contracts/batching.py) lets its proposals wait.
A new proposal of such a rule joins the open batch of its key (channel, rule, operation and
approver roles, derived by Countersign: nothing the agent sends is in it), or opens one whose
window ends ``window`` from now, in the transaction that stores it (:func:`join_batch`). Its
post is written to the outbox due when the batch closes, so a restart neither loses nor doubles
it: the outbox delivers it then, and the worker that leases the batch (the verbs of
:class:`store.digests.Digests`) posts every post of it as one digest. The proposal that fills a
batch closes it at once, and the posts of the others fall due with it.

A proposal's expiry, reminder and hand-over to backup approvers count from when it is shown at
the latest (``shown_after``): joining a batch that closes sooner than a window opened now moves
them earlier by as much, so people always have the rule's whole ``expires_after`` once it is
shown. A batch that fills up is shown sooner still, which only leaves people more time.
"""

from __future__ import annotations

import base64
import secrets
from datetime import datetime
from typing import Literal

from contracts.frozen import Frozen
from store.base import StoreError
from store.connector import Row, Tx
from store.proposals.records import NewProposal
from store.rows import model_from_row

__all__ = [
    "JOIN_ATTEMPTS",
    "Batch",
    "BatchStatus",
    "after_joining",
    "batch_from_row",
    "join_batch",
]

#: How often a new proposal tries to join when concurrent proposals keep filling the batch.
JOIN_ATTEMPTS = 5

BatchStatus = Literal["open", "closed", "posted"]


class Batch(Frozen):
    """A stored batch: which proposals it holds (by key), until when, and whether it went out."""

    id: str
    key: str
    channel: str
    rule_id: str
    opened_at: datetime
    closes_at: datetime  #: the end of its window, or when it filled up
    max_size: int
    size: int  #: proposals that joined
    status: BatchStatus  #: open: joinable; closed: its digest is due; posted: it went out
    leased_until: datetime | None  #: while a worker posts it


def new_batch_id() -> str:
    """``bt_`` and 128 random bits."""
    return "bt_" + base64.b32encode(secrets.token_bytes(16)).decode().rstrip("=").lower()


def batch_from_row(row: Row) -> Batch:
    """The one place a stored batch row becomes a Batch."""
    return model_from_row(Batch, row)


async def join_batch(tx: Tx, new: NewProposal) -> tuple[NewProposal, str | None]:
    """Put the proposal about to be inserted in the open batch of its key, opening one when none
    is open: the proposal as it is to be stored (its times moved to when the batch closes) and
    the batch's id (None: it waits in no batch). Inside the transaction that inserts it."""
    request = new.batch
    if request is None or new.shown_after is None or new.channel is None or new.rule_id is None:
        return new, None
    now = new.created_at
    joined = None
    for _ in range(JOIN_ATTEMPTS):
        await tx.execute("close_lapsed_batches", key=request.key, now=now)
        await tx.execute(
            "open_batch",
            id=new_batch_id(),
            key=request.key,
            channel=new.channel,
            rule_id=new.rule_id,
            now=now,
            closes_at=now + request.window,
            max_size=request.max,
        )
        joined = await tx.one("grow_batch", key=request.key, now=now)
        if joined is not None:
            break
    if joined is None:
        raise StoreError(
            f"proposal {new.id!r}: could not join a batch of {request.key!r} in "
            f"{JOIN_ATTEMPTS} attempts (concurrent proposals kept filling it)"
        )
    batch = batch_from_row(joined)
    # shown when the batch closes: everything that counts from showing moves by as much. (A
    # proposal whose clock read a moment before the batch's opener's, on another instance,
    # joins a batch closing that moment after its own window: it is shown then, not before.)
    moved = batch.closes_at - new.shown_after
    waiting = new.model_copy(
        update={
            "shown_after": new.shown_after + moved,
            "expires_at": None if new.expires_at is None else new.expires_at + moved,
            "remind_at": None if new.remind_at is None else new.remind_at + moved,
            "backup_at": None if new.backup_at is None else new.backup_at + moved,
        }
    )
    return waiting, batch.id


async def after_joining(tx: Tx, batch_id: str | None, now: datetime) -> None:
    """After the proposal that joined ``batch_id`` is stored: when it filled the batch, the
    posts of the others are due now too."""
    if batch_id is None:
        return
    row = await tx.one("select_batch", id=batch_id)
    if row is not None and row["status"] == "closed":
        await tx.execute("bring_batch_forward", batch_id=batch_id, now=now)
