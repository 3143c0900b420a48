"""payments.refund: request checks, resolution, preview, revalidation and one-time execution."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

import pytest
from pydantic import JsonValue

from contracts.base import Context, ContractViolation, HttpResponse, IdempotencyKey
from contracts.operations.refund import (
    IdempotencyKeyReused,
    InMemoryLedger,
    Payment,
    Refund,
    RefundArgs,
    RefundExceedsRefundable,
    format_money,
    from_config,
)
from contracts.outcomes import RevisionRequired, Succeeded, TerminalFailure

NOW = datetime(2025, 3, 14, 9, 26, 53, tzinfo=UTC)
KEY = IdempotencyKey("prop_Refund1-exec")


class NoNetwork:
    """The refund operation talks to its ledger only; any HTTP call is a defect."""

    async def post(
        self,
        url: str,
        *,
        body: bytes,
        headers: Mapping[str, str],
        timeout: float,
    ) -> HttpResponse:
        raise AssertionError(f"unexpected HTTP call to {url}")


CTX = Context(now=NOW, http=NoNetwork(), correlation_id="corr-7")


@pytest.fixture
def ledger() -> InMemoryLedger:
    return InMemoryLedger(
        [
            Payment(payment_id="pay_123", customer="cus_123", amount_cents=12000, currency="USD"),
            Payment(
                payment_id="pay_part",
                customer="cus_456",
                amount_cents=20000,
                currency="EUR",
                refunded_cents=5000,
            ),
            Payment(
                payment_id="pay_disp",
                customer="cus_789",
                amount_cents=990,
                currency="USD",
                status="disputed",
            ),
            Payment(
                payment_id="pay_done",
                customer="cus_000",
                amount_cents=500,
                currency="USD",
                refunded_cents=500,
            ),
        ]
    )


@pytest.fixture
def refund(ledger: InMemoryLedger) -> Refund:
    return Refund(ledger)


async def resolve(refund: Refund, request: JsonValue) -> RefundArgs:
    resolved = await refund.resolve(refund.parse_request(request), CTX)
    return resolved.arguments


def problems(caught: pytest.ExceptionInfo[ContractViolation]) -> list[tuple[str, str]]:
    return [(p.field, p.message) for p in caught.value.problems]


# --- the request ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("request_body", "field"),
    [
        ({"payment_id": "pay_123", "customer": "cus_evil"}, "request.customer"),
        ({"payment_id": "ch_123"}, "request.payment_id"),
        ({"payment_id": "pay_123", "amount_cents": 0}, "request.amount_cents"),
        ({"payment_id": "pay_123", "amount_cents": "500"}, "request.amount_cents"),
        ({"payment_id": "pay_123", "reason": "because"}, "request.reason"),
        ({}, "request.payment_id"),
    ],
)
def test_bad_requests_name_the_field(refund: Refund, request_body: JsonValue, field: str) -> None:
    with pytest.raises(ContractViolation) as caught:
        refund.parse_request(request_body)

    assert [name for name, _ in problems(caught)] == [field]


def test_request_schema_is_small_and_strict(refund: Refund) -> None:
    schema = refund.request_schema()

    assert set(schema["properties"]) == {"payment_id", "amount_cents", "reason"}
    assert schema["required"] == ["payment_id"]
    assert schema["additionalProperties"] is False


def test_policy_can_condition_on_the_computed_amount(refund: Refund) -> None:
    assert refund.argument_types()["amount_cents"] == "integer"
    assert refund.argument_types()["currency"] == "string"


# --- resolve and preview ----------------------------------------------------------------------


async def test_without_amount_everything_refundable_is_refunded(refund: Refund) -> None:
    arguments = await resolve(refund, {"payment_id": "pay_123"})

    assert arguments == RefundArgs(
        payment_id="pay_123",
        amount_cents=12000,
        currency="USD",
        customer="cus_123",
        reason="requested_by_customer",
        refundable_cents_at_preview=12000,
    )


async def test_without_amount_a_partly_refunded_payment_refunds_the_rest(refund: Refund) -> None:
    arguments = await resolve(refund, {"payment_id": "pay_part", "reason": "duplicate"})

    assert arguments.amount_cents == 15000
    assert arguments.refundable_cents_at_preview == 15000
    assert arguments.reason == "duplicate"


async def test_a_partial_refund_keeps_the_requested_amount(refund: Refund) -> None:
    arguments = await resolve(refund, {"payment_id": "pay_123", "amount_cents": 2500})

    assert arguments.amount_cents == 2500
    assert arguments.refundable_cents_at_preview == 12000


async def test_preview_shows_money_formatted_by_code(refund: Refund) -> None:
    resolved = await refund.resolve(refund.parse_request({"payment_id": "pay_123"}), CTX)

    assert resolved.preview.title == "Refund 120.00 USD to cus_123"
    assert [(f.label, f.value) for f in resolved.preview.fields] == [
        ("Payment", "pay_123 (120.00 USD)"),
        ("Customer", "cus_123"),
        ("Amount", "120.00 USD (full refund)"),
        ("Refundable now", "120.00 USD"),
        ("Already refunded", "0.00 USD"),
        ("Refund reason", "Requested by customer"),
    ]


async def test_preview_of_a_partial_refund_on_a_partly_refunded_payment(refund: Refund) -> None:
    request: JsonValue = {"payment_id": "pay_part", "amount_cents": 1234, "reason": "fraudulent"}
    resolved = await refund.resolve(refund.parse_request(request), CTX)

    fields = {f.label: f.value for f in resolved.preview.fields}
    assert resolved.preview.title == "Refund 12.34 EUR to cus_456"
    assert fields["Amount"] == "12.34 EUR (partial refund)"
    assert fields["Refundable now"] == "150.00 EUR"
    assert fields["Already refunded"] == "50.00 EUR"
    assert fields["Refund reason"] == "Fraudulent payment"


async def test_unknown_payment_is_a_violation_on_payment_id(refund: Refund) -> None:
    with pytest.raises(ContractViolation) as caught:
        await resolve(refund, {"payment_id": "pay_nope"})

    assert problems(caught) == [("request.payment_id", "no payment 'pay_nope' exists")]


async def test_a_disputed_payment_cannot_be_refunded(refund: Refund) -> None:
    with pytest.raises(ContractViolation) as caught:
        await resolve(refund, {"payment_id": "pay_disp"})

    assert problems(caught) == [
        (
            "request.payment_id",
            "payment pay_disp is disputed; only settled payments can be refunded",
        )
    ]


async def test_a_fully_refunded_payment_has_nothing_left(refund: Refund) -> None:
    with pytest.raises(ContractViolation) as caught:
        await resolve(refund, {"payment_id": "pay_done"})

    assert problems(caught) == [
        ("request.payment_id", "payment pay_done is fully refunded already (5.00 USD)")
    ]


async def test_over_refund_names_the_maximum(refund: Refund) -> None:
    with pytest.raises(ContractViolation) as caught:
        await resolve(refund, {"payment_id": "pay_part", "amount_cents": 15001})

    assert problems(caught) == [
        (
            "request.amount_cents",
            "150.01 EUR is more than is refundable on pay_part: expected at most 150.00 EUR",
        )
    ]


# --- revalidate -------------------------------------------------------------------------------


async def test_revalidation_passes_when_nothing_changed(refund: Refund) -> None:
    arguments = await resolve(refund, {"payment_id": "pay_123", "amount_cents": 2500})

    assert await refund.revalidate(arguments, CTX) is None


async def test_an_outside_refund_requires_revision_stating_old_and_new(
    refund: Refund, ledger: InMemoryLedger
) -> None:
    arguments = await resolve(refund, {"payment_id": "pay_123", "amount_cents": 2500})
    ledger.record_outside_refund("pay_123", 2000)

    assert await refund.revalidate(arguments, CTX) == RevisionRequired(
        reason="refundable amount on pay_123 changed since the preview: "
        "was 120.00 USD, now 100.00 USD"
    )


async def test_a_dispute_after_the_preview_requires_revision(
    refund: Refund, ledger: InMemoryLedger
) -> None:
    arguments = await resolve(refund, {"payment_id": "pay_123"})
    ledger.dispute("pay_123")

    assert await refund.revalidate(arguments, CTX) == RevisionRequired(
        reason="payment pay_123 was settled when the preview was made and is now disputed"
    )


async def test_a_payment_that_disappeared_requires_revision() -> None:
    arguments = RefundArgs(
        payment_id="pay_gone",
        amount_cents=100,
        currency="USD",
        customer="cus_1",
        reason="duplicate",
        refundable_cents_at_preview=100,
    )

    outcome = await Refund(InMemoryLedger()).revalidate(arguments, CTX)

    assert outcome == RevisionRequired(reason="payment pay_gone no longer exists in the ledger")


# --- execute ----------------------------------------------------------------------------------


async def test_execute_refunds_and_returns_the_typed_result(
    refund: Refund, ledger: InMemoryLedger
) -> None:
    arguments = await resolve(refund, {"payment_id": "pay_123", "amount_cents": 2500})

    outcome = await refund.execute(arguments, CTX, KEY)

    assert outcome == Succeeded(
        result={
            "refund_id": "re_000001",
            "payment_id": "pay_123",
            "amount_cents": 2500,
            "currency": "USD",
        }
    )
    payment = await ledger.payment("pay_123")
    assert payment is not None
    assert payment.refunded_cents == 2500


async def test_executing_twice_with_one_key_refunds_once(
    refund: Refund, ledger: InMemoryLedger
) -> None:
    arguments = await resolve(refund, {"payment_id": "pay_123"})

    first = await refund.execute(arguments, CTX, KEY)
    second = await refund.execute(arguments, CTX, KEY)

    assert first == second
    assert isinstance(first, Succeeded)
    assert len(ledger.refunds) == 1
    payment = await ledger.payment("pay_123")
    assert payment is not None
    assert payment.refunded_cents == 12000


async def test_a_second_proposal_cannot_refund_the_same_money_again(
    refund: Refund, ledger: InMemoryLedger
) -> None:
    arguments = await resolve(refund, {"payment_id": "pay_123"})
    await refund.execute(arguments, CTX, KEY)

    outcome = await refund.execute(arguments, CTX, IdempotencyKey("prop_Other-exec"))

    assert outcome == RevisionRequired(
        reason="cannot refund 120.00 USD on pay_123: only 0.00 USD is refundable"
    )
    assert len(ledger.refunds) == 1


async def test_a_key_reused_for_another_amount_is_a_terminal_failure(refund: Refund) -> None:
    small = await resolve(refund, {"payment_id": "pay_123", "amount_cents": 100})
    large = await resolve(refund, {"payment_id": "pay_123", "amount_cents": 200})
    await refund.execute(small, CTX, KEY)

    outcome = await refund.execute(large, CTX, KEY)

    assert isinstance(outcome, TerminalFailure)
    assert outcome.correlation_id == "corr-7"
    assert "already refunded 1.00 USD on pay_123; asked for 2.00 USD" in outcome.detail


async def test_a_dispute_before_execution_refunds_nothing(
    refund: Refund, ledger: InMemoryLedger
) -> None:
    arguments = await resolve(refund, {"payment_id": "pay_123"})
    ledger.dispute("pay_123")

    outcome = await refund.execute(arguments, CTX, KEY)

    assert outcome == RevisionRequired(reason="payment pay_123 is disputed, not settled")
    assert ledger.refunds == ()


def test_arguments_round_trip_through_json(refund: Refund) -> None:
    arguments = RefundArgs(
        payment_id="pay_123",
        amount_cents=2500,
        currency="USD",
        customer="cus_123",
        reason="duplicate",
        refundable_cents_at_preview=12000,
    )

    assert refund.load_arguments(refund.dump_arguments(arguments)) == arguments


# --- the ledger -------------------------------------------------------------------------------


async def test_ledger_refund_is_idempotent_by_key(ledger: InMemoryLedger) -> None:
    first = await ledger.refund("pay_123", 700, "k1")

    assert await ledger.refund("pay_123", 700, "k1") == first
    with pytest.raises(IdempotencyKeyReused):
        await ledger.refund("pay_123", 701, "k1")
    with pytest.raises(RefundExceedsRefundable):
        await ledger.refund("pay_123", 12000, "k2")


async def test_ledger_from_config_seeds_payments() -> None:
    ledger = InMemoryLedger.from_config(
        [{"payment_id": "pay_9", "customer": "cus_9", "amount_cents": 4500, "currency": "USD"}]
    )

    payment = await ledger.payment("pay_9")
    assert payment is not None
    assert (payment.status, payment.refundable_cents) == ("settled", 4500)


def test_ledger_config_errors_name_the_entry_and_field() -> None:
    entries = [
        {"payment_id": "pay_1", "customer": "c", "amount_cents": 1, "currency": "USD"},
        {"payment_id": "pay_2", "customer": "c", "amount_cents": -5, "currency": "USD"},
    ]

    with pytest.raises(ValueError) as caught:
        InMemoryLedger.from_config(entries)

    assert str(caught.value) == "payments[1].amount_cents: Input should be greater than 0 (got -5)"


def test_ledger_refuses_more_refunded_than_paid() -> None:
    with pytest.raises(ValueError, match="refunded_cents 600 exceeds amount_cents 500"):
        Payment(
            payment_id="pay_1", customer="c", amount_cents=500, currency="USD", refunded_cents=600
        )


async def test_operation_from_config_uses_the_configured_name_and_payments() -> None:
    operation = from_config(
        "payments.refund",
        {
            "payments": [
                {"payment_id": "pay_1", "customer": "c", "amount_cents": 100, "currency": "USD"}
            ]
        },
    )

    resolved = await operation.resolve(operation.parse_request({"payment_id": "pay_1"}), CTX)
    assert operation.name == "payments.refund"
    assert resolved.arguments.amount_cents == 100


def test_operation_config_with_unknown_options_is_refused() -> None:
    with pytest.raises(ValueError, match=r"unknown option currency \(expected: payments\)"):
        from_config("payments.refund", {"payments": [], "currency": "USD"})


@pytest.mark.parametrize(
    ("cents", "currency", "shown"),
    [
        (12000, "USD", "120.00 USD"),
        (5, "EUR", "0.05 EUR"),
        (123456789, "USD", "1,234,567.89 USD"),
        (1500, "JPY", "1,500 JPY"),
        (1234, "KWD", "1.234 KWD"),
        (-250, "USD", "-2.50 USD"),
    ],
)
def test_money_is_shown_in_major_units(cents: int, currency: str, shown: str) -> None:
    assert format_money(cents, currency) == shown
