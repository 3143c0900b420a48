"""The executor turns whatever an operation raises or answers into an outcome: words that reach
Slack, the agent and the audit log, so never a credential of a URL they quote."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import pytest

from bot.flow.executor import Executor
from contracts.base import Context, HttpResponse, IdempotencyKey
from contracts.operations.refund import InMemoryLedger, Payment, RefundArgs, RefundRecord
from contracts.operations.refund import Refund as RefundOperation
from contracts.outcomes import OUTCOMES, Outcome
from contracts.registry import Registry
from store.proposals import Status
from tests.bot.render.test_proposal import make_proposal

NOW = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
#: What an operation's backend might say when it fails: its URL, credentials and all.
URL = "https://user:secret@ledger.example/path/tok_secret?key=secret"


class NoNetwork:
    async def post(
        self, url: str, *, body: bytes, headers: Mapping[str, str], timeout: float
    ) -> HttpResponse:
        raise AssertionError("the refund operation uses no HTTP")


class ExecuteRaises(RefundOperation):
    """A Python operation whose execute itself raises, quoting its backend's URL."""

    async def execute(self, arguments: RefundArgs, ctx: Context, key: IdempotencyKey) -> Outcome:
        raise ConnectionError(f"could not reach {URL}: connection reset")


class LedgerDown(InMemoryLedger):
    """A ledger that cannot be reached: its refund raises, quoting its URL."""

    async def refund(
        self, payment_id: str, amount_cents: int, idempotency_key: str
    ) -> RefundRecord:
        raise ConnectionError(f"could not reach {URL}: connection reset")


PAYMENT = Payment(payment_id="pay_1", customer="c@example.com", amount_cents=10_000, currency="USD")


@pytest.mark.parametrize("case", ["execute raises", "its backend raises"])
async def test_what_an_operation_raises_reaches_the_outcome_without_credentials(
    case: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    operation = (
        ExecuteRaises(InMemoryLedger([PAYMENT]))
        if case == "execute raises"
        else RefundOperation(LedgerDown([PAYMENT]))
    )
    ctx = Context(now=NOW, http=NoNetwork(), correlation_id="test")
    resolved = await operation.resolve(
        operation.parse_request({"payment_id": "pay_1", "amount_cents": 5000}), ctx
    )
    proposal = make_proposal(
        arguments=operation.dump_arguments(resolved.arguments), status=Status.EXECUTING
    )
    executor = Executor(Registry([operation]), NoNetwork(), lambda: NOW)

    outcome: Any = await executor.run(proposal)

    assert outcome.kind == "needs_reconciliation"
    assert "ConnectionError: could not reach https://ledger.example/…" in outcome.detail
    assert "secret" not in OUTCOMES.dump_json(outcome).decode()
    assert "secret" not in json.dumps([r.getMessage() for r in caplog.records])
    assert "secret" not in caplog.text
