"""The agents' calls as the store recorded them, for replaying through a policy
(``countersign policy export-calls``); written once for every backend."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from datetime import datetime, timedelta

from store.backend import Backend
from store.base import StoreError
from store.proposals.records import Proposal
from store.proposals.rows import proposal_from_row
from store.protocol import Store
from store.rows import aware

__all__ = ["recorded_call_pages", "recorded_calls"]

#: Proposals read per query.
PAGE = 500


async def recorded_calls(store: Store, *, since: datetime) -> list[Proposal]:
    """Every proposal an agent made at or after ``since`` (approvers' edits left out), oldest
    first."""
    return [call async for page in recorded_call_pages(store, since=since) for call in page]


async def recorded_call_pages(
    store: Store, *, since: datetime
) -> AsyncGenerator[list[Proposal], None]:
    """The proposals of :func:`recorded_calls`, a page of at most ``PAGE`` at a time, each read
    when the one before has been used: what reads them all holds one page, not all."""
    if not isinstance(store, Backend):
        raise StoreError(f"{type(store).__name__} has no transactions to read calls with")
    since = aware(since, field="since")
    after_at, after_id = since - timedelta(microseconds=1), ""
    while True:
        async with store.tx(write=False) as tx:
            rows = await tx.all(
                "select_calls_since", since=since, after_at=after_at, after_id=after_id, limit=PAGE
            )
        page = [proposal_from_row(row) for row in rows]
        if page:
            yield page
        if len(page) < PAGE:
            return
        after_at, after_id = page[-1].created_at, page[-1].id
