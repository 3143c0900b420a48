"""The target's late answers reach the reconciliation card, none over another: two attempts of
one proposal were handed to people (each lease ended while the target took its time), and both
attempts' answers arrive together. Each is audited once and both are on the card, on SQLite and
on PostgreSQL. An answer whose card is reconciled meanwhile, or keeps changing, is audited once
all the same."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.bench.stage import (
    AGENT,
    APPROVER,
    OPERATION,
    REQUESTER,
    SECRET_ENV,
    TOKEN_ENV,
    config_text,
)
from bot.flow.service import Service
from bot.settings import load_settings
from contracts.api import SubmitBody
from contracts.base import HttpResponse
from contracts.outcomes import NeedsReconciliation, Outcome, RevisionRequired, Succeeded
from store.postgres import PostgresStore
from store.proposals import Proposal, StaleRead, Status, Transitioned
from store.protocol import Store
from store.sqlite import SqliteStore
from tests.bot.flow.ports import Nobody
from tests.store.conftest import POSTGRES_URL, new_schema

ENV = {TOKEN_ENV: "agent-token-0123456789abcdef", SECRET_ENV: "webhook-secret-0123456789"}
NOW = datetime(2031, 3, 14, 15, 9, 26, tzinfo=UTC)
LEASE = timedelta(minutes=5)


class Target:
    """The webhook's target: answers its calls in turn, a success then a refusal."""

    def __init__(self) -> None:
        self.answers = [200, 400]

    async def post(
        self, url: str, *, body: bytes, headers: Mapping[str, str], timeout: float
    ) -> HttpResponse:
        return HttpResponse(status=self.answers.pop(0), body=b'{"ok": true}', headers={})


class ReadTogether:
    """The store, whose first ``count`` reads of a proposal wait for one another: answers that
    arrive together have each read the card before either writes."""

    def __init__(self, store: Store, count: int) -> None:
        self._store = store
        self._left = count
        self._together = asyncio.Barrier(count)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def get_proposal(self, proposal_id: str) -> Proposal:
        proposal = await self._store.get_proposal(proposal_id)
        if self._left > 0:
            self._left -= 1
            async with asyncio.timeout(10):
                await self._together.wait()
        return proposal


class Meddling:
    """The store, where something else happens after each read of a proposal (``after_read``)
    and before each late answer is shown (``before_late``)."""

    def __init__(
        self,
        store: Store,
        *,
        after_read: Callable[[], Awaitable[None]] | None = None,
        before_late: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._store = store
        self._after_read = after_read
        self._before_late = before_late

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def get_proposal(self, proposal_id: str) -> Proposal:
        proposal = await self._store.get_proposal(proposal_id)
        if self._after_read is not None:
            await self._after_read()
        return proposal

    async def record_late_outcome(
        self, proposal_id: str, answered: Outcome, shown: NeedsReconciliation, **read: Any
    ) -> Proposal | StaleRead:
        if self._before_late is not None:
            await self._before_late()
        return await self._store.record_late_outcome(proposal_id, answered, shown, **read)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    if request.param == "sqlite":
        sqlite = await SqliteStore.open(tmp_path / "cs.db")
        try:
            yield sqlite
        finally:
            await sqlite.close()
        return
    async with new_schema() as schema:
        postgres = await PostgresStore.open(POSTGRES_URL, server_settings={"search_path": schema})
        try:
            yield postgres
        finally:
            await postgres.close()


def _service(store: Any, tmp_path: Path, now: datetime) -> Service:
    config = tmp_path / "countersign.toml"
    config.write_text(config_text(f"sqlite:///{tmp_path / 'cs.db'}", "http://target.test"))
    nobody = Nobody()
    return Service(
        settings=load_settings(config, ENV),
        store=store,
        publisher=nobody,  # type: ignore[arg-type]
        http=Target(),
        clock=lambda: now,
        wake_outbox=lambda: None,
        directory=nobody,  # type: ignore[arg-type]
        waiters=nobody,
    )


async def _two_attempts_handed_over(store: Store, tmp_path: Path) -> tuple[Proposal, Proposal]:
    """A proposal approved, its execution handed to people, retried and handed over again: the
    proposal as each attempt's executor claimed it."""
    agent = _service(store, tmp_path, NOW).settings.agents[AGENT]
    body = SubmitBody.model_validate(
        {"operation": OPERATION, "request": {"lane": "ingest", "n": 1}, "requested_by": REQUESTER}
    )
    pending = (await _service(store, tmp_path, NOW).submit(agent, body, None)).proposal
    claimed = await store.claim_for_execution(
        pending.id,
        actor=APPROVER,
        now=NOW,
        binding_hash=pending.binding_hash,
        lease_until=NOW + LEASE,
    )
    assert isinstance(claimed, Transitioned)
    await store.reclaim_abandoned(now=NOW + LEASE)
    retried = await store.retry_execution(
        pending.id, actor=APPROVER, now=NOW + LEASE, lease_until=NOW + 2 * LEASE
    )
    assert isinstance(retried, Transitioned) and retried.proposal.attempt == 2
    await store.reclaim_abandoned(now=NOW + 2 * LEASE)
    handed_over = await store.get_proposal(pending.id)
    assert (handed_over.status, handed_over.attempt) == (Status.NEEDS_RECONCILIATION, 2)
    return claimed.proposal, retried.proposal


async def test_two_attempts_late_answers_arriving_together_are_both_on_the_card(
    store: Store, tmp_path: Path
) -> None:
    first, second = await _two_attempts_handed_over(store, tmp_path)
    answered = NOW + 2 * LEASE + timedelta(seconds=1)
    service = _service(ReadTogether(store, 2), tmp_path, answered)

    async with asyncio.timeout(30):
        await asyncio.gather(service.execute(first), service.execute(second))

    stored = await store.get_proposal(first.id)
    assert (stored.status, stored.attempt) == (Status.NEEDS_RECONCILIATION, 2)
    assert isinstance(stored.outcome, NeedsReconciliation)
    at = answered.isoformat(timespec="seconds")
    assert f"the target answered success at {at}" in stored.outcome.detail, stored.outcome
    assert f"the target answered failure at {at}" in stored.outcome.detail, stored.outcome
    assert stored.outcome.detail.startswith("no outcome was recorded before its execution lease")
    late = [e for e in await store.audit_log(first.id) if e.event == "late_outcome"]
    assert sorted(e.detail["outcome"]["kind"] for e in late) == ["succeeded", "terminal_failure"]
    assert (await store.verify_audit()).ok


async def test_a_late_answer_whose_card_was_reconciled_meanwhile_is_audited_once(
    store: Store, tmp_path: Path
) -> None:
    _, second = await _two_attempts_handed_over(store, tmp_path)
    answered = NOW + 2 * LEASE + timedelta(seconds=1)

    async def reconciled() -> None:  # a person found out, after the answer's read
        await store.resolve_reconciliation(
            second.id, actor=APPROVER, outcome=Succeeded(result={}), note="seen", now=answered
        )

    service = _service(Meddling(store, after_read=reconciled), tmp_path, answered)
    await service.execute(second)

    stored = await store.get_proposal(second.id)
    assert (stored.status, stored.outcome) == (Status.SUCCEEDED, Succeeded(result={}))
    late = [e for e in await store.audit_log(second.id) if e.event == "late_outcome"]
    assert [(e.detail["outcome"]["kind"], e.detail["attempt"]) for e in late] == [("succeeded", 2)]


async def test_a_late_answer_whose_card_keeps_changing_is_audited_once_and_logged(
    store: Store, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    first, _ = await _two_attempts_handed_over(store, tmp_path)
    answered = NOW + 2 * LEASE + timedelta(seconds=1)
    others = iter(range(100))

    async def another_answer_shown() -> None:  # before each try, another answer gets there first
        # each one news (the same answer again would be audited and shown once)
        other = RevisionRequired(reason=f"state changed ({next(others)})")
        current = await store.get_proposal(first.id)
        assert isinstance(current.outcome, NeedsReconciliation)
        shown = current.outcome.model_copy(update={"detail": current.outcome.detail + "; other"})
        await store.record_late_outcome(
            first.id, other, shown, attempt=2, read=current.outcome, now=answered
        )

    service = _service(Meddling(store, before_late=another_answer_shown), tmp_path, answered)
    with caplog.at_level(logging.WARNING, logger="bot.flow.execution"):
        await service.execute(first)

    stored = await store.get_proposal(first.id)
    assert stored.status is Status.NEEDS_RECONCILIATION
    assert isinstance(stored.outcome, NeedsReconciliation)
    assert "the target answered" not in stored.outcome.detail
    late = [e for e in await store.audit_log(first.id) if e.event == "late_outcome"]
    mine = [e for e in late if e.detail["outcome"]["kind"] == "succeeded"]
    assert [e.detail["attempt"] for e in mine] == [1]
    assert len(late) == 1 + stored.outcome.detail.count("; other")
    assert "audited but not shown on its card" in caplog.text
