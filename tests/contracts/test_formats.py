"""Field formats: figures in the operation's own terms, and policy thresholds written in them."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from contracts.formats import (
    FieldFormat,
    field_label,
    major_units,
    parse_major_units,
    parse_money,
    show_value,
)
from contracts.operations.refund import InMemoryLedger, Payment, Refund
from contracts.operations.webhook import from_config as webhook_from_config
from contracts.policy import Ask, Deny, PolicyError, PolicyTable
from contracts.registry import Registry

USD_FIELD = FieldFormat(label="Amount", kind="money", currency_field="currency")


@pytest.mark.parametrize(
    ("fmt", "value", "arguments", "shown"),
    [
        (USD_FIELD, 45000, {"currency": "USD"}, "450.00 USD"),
        (USD_FIELD, 8900, {"currency": "EUR"}, "89.00 EUR"),
        (USD_FIELD, 450000, {"currency": "JPY"}, "450,000 JPY"),
        (USD_FIELD, 1234, {}, "12.34 (currency unknown)"),
        (FieldFormat(label="Budget", kind="money", currency="EUR"), 250000, {}, "2,500.00 EUR"),
        (
            FieldFormat(label="Budget", kind="money", currency="EUR", minor_units=False),
            1500.5,
            {},
            "1,500.50 EUR",
        ),
        (
            FieldFormat(label="Recipients", kind="count", unit="customers"),
            1200,
            {},
            "1,200 customers",
        ),
        (FieldFormat(label="Delay", kind="duration", unit="seconds"), 5400, {}, "90 minutes"),
        (FieldFormat(label="Delay", kind="duration", unit="minutes"), 60, {}, "1 hour"),
        (FieldFormat(label="Window", kind="duration", unit="days"), 2, {}, "2 days"),
        # what runs, with its sign and to its last digit, whatever number an agent wrote
        (FieldFormat(label="Pause", kind="duration", unit="hours"), -720, {}, "-30 days"),
        (FieldFormat(label="Delay", kind="duration", unit="seconds"), 10**16, {}, "10" + "0" * 15),
        (FieldFormat(label="Delay", kind="duration", unit="days"), 1e308, {}, "1e+308"),
        (FieldFormat(label="Emails", kind="count"), 10**400, {}, f"{10**400:,}"),
        (
            FieldFormat(label="Budget", kind="money", currency="EUR", minor_units=False),
            2**53 + 1,
            {},
            "9,007,199,254,740,993.00 EUR",
        ),
        (
            FieldFormat(label="Budget", kind="money", currency="EUR"),
            -(10**400),
            {},
            f"-{10**398:,}.00 EUR",
        ),
        # a float in minor units (JSON Schema takes 4500.0 for an integer) is never 100x
        (FieldFormat(label="Budget", kind="money", currency="USD"), 4500.0, {}, "45.00 USD"),
        (FieldFormat(label="Budget", kind="money", currency="USD"), 4500.5, {}, "45.005 USD"),
        (FieldFormat(label="Budget", kind="money", currency="JPY"), -4500.0, {}, "-4,500 JPY"),
        (USD_FIELD, 1234.0, {}, "12.34 (currency unknown)"),
        (FieldFormat(label="Month", kind="date"), "2025-05", {}, "May 2025"),
        (FieldFormat(label="Send on", kind="date"), "2031-03-14", {}, "14 Mar 2031"),
        (
            FieldFormat(label="Send at", kind="date"),
            "2031-03-14T16:09:26+00:00",
            {},
            "14 Mar 2031, 16:09 UTC",
        ),
        (FieldFormat(label="Send at", kind="date"), "now", {}, "now"),
        (
            FieldFormat(label="Reason", kind="choice", labels={"duplicate": "Duplicate payment"}),
            "duplicate",
            {},
            "Duplicate payment",
        ),
        (
            FieldFormat(label="Reason", kind="choice", labels={"duplicate": "Duplicate payment"}),
            "Duplicate payment",  # another choice's label, sent as the value: never passes for it
            {},
            "Duplicate payment (not one of its choices)",
        ),
        (None, True, {}, "yes"),
        (None, {"b": 1, "a": [2]}, {}, '{"a": [2], "b": 1}'),
    ],
)
def test_a_value_is_shown_in_its_fields_terms(
    fmt: FieldFormat | None, value: Any, arguments: dict[str, Any], shown: str
) -> None:
    assert show_value(fmt, value, arguments) == shown


def test_a_field_without_a_label_is_shown_under_its_name_as_words() -> None:
    assert field_label({}, "refund_id") == "Refund id"
    assert field_label({"amount_cents": USD_FIELD}, "amount_cents") == "Amount"


@pytest.mark.parametrize(
    "options",
    [
        {"kind": "money"},
        {"kind": "money", "currency": "USD", "currency_field": "currency"},
        {"kind": "count", "currency": "USD"},
        {"kind": "duration", "unit": "weeks"},
        {"kind": "choice"},
        {"kind": "text", "labels": {"a": "A"}},
    ],
)
def test_an_inconsistent_format_is_refused(options: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        FieldFormat(label="X", **options)


def test_money_written_with_its_currency_is_read_in_minor_units() -> None:
    assert parse_money("2000.00 USD", USD_FIELD) == (200000, "USD")
    assert parse_money("2,000 USD", USD_FIELD) == (200000, "USD")
    assert parse_money("5000 JPY", USD_FIELD) == (5000, "JPY")
    with pytest.raises(ValueError, match="more decimals"):
        parse_money("10.005 USD", USD_FIELD)
    with pytest.raises(ValueError, match=r"such as '2000\.00 USD'"):
        parse_money("2000", USD_FIELD)


# --- the policy's conditions in the operation's terms ---------------------------------------------


def refund_registry(*currencies: str) -> Registry:
    payments = [
        Payment(payment_id=f"pay_{n}", customer="cus_ada", amount_cents=500000, currency=code)
        for n, code in enumerate(currencies)
    ]
    return Registry([Refund(InMemoryLedger(payments))])


def table(registry: Registry, *conditions: dict[str, Any]) -> PolicyTable:
    return PolicyTable.load(
        [
            {
                "id": "refunds",
                "operation": "payments.refund",
                "when": list(conditions),
                "decision": "ask",
                "approvers": ["finance"],
                "channel": "C0FINANCE",
            }
        ],
        registry=registry,
        roles={"finance": ["U0PRIYA"]},
    )


def refund_args(amount: int, currency: str) -> dict[str, Any]:
    return {
        "payment_id": "pay_0",
        "amount_cents": amount,
        "currency": currency,
        "customer": "cus_ada",
        "reason": "duplicate",
        "refundable_cents_at_preview": 500000,
    }


def classify(policy: PolicyTable, amount: int, currency: str) -> Ask | Deny:
    decision = policy.classify(
        operation="payments.refund",
        agent="support-bot",
        arguments=refund_args(amount, currency),
        requester_roles=frozenset(),
    )
    assert isinstance(decision, Ask | Deny)
    return decision


def test_the_policy_note_reads_in_the_operations_terms() -> None:
    policy = table(refund_registry("USD"), {"field": "amount_cents", "lte": 200000})

    decision = classify(policy, 45000, "USD")

    assert isinstance(decision, Ask)
    assert decision.explanation == "rule 'refunds': Amount 450.00 USD ≤ 2,000.00 USD limit"


def test_a_bare_money_threshold_is_refused_where_amounts_are_in_several_currencies() -> None:
    with pytest.raises(PolicyError) as caught:
        table(refund_registry("USD", "EUR"), {"field": "amount_cents", "lte": 200000})

    (problem,) = caught.value.problems
    assert problem.startswith("policy rule 'refunds': field 'amount_cents': 200000 names no")
    assert "amounts in EUR, USD" in problem
    assert "'2000.00 EUR'" in problem


def test_a_threshold_with_its_currency_holds_only_for_amounts_in_it() -> None:
    policy = table(refund_registry("USD", "EUR"), {"field": "amount_cents", "lte": "2000.00 USD"})

    asked = classify(policy, 45000, "USD")
    (check,) = policy.explain(
        operation="payments.refund",
        agent="support-bot",
        arguments=refund_args(8900, "EUR"),
        requester_roles=frozenset(),
    )

    assert isinstance(asked, Ask)
    assert asked.explanation == "rule 'refunds': Amount 450.00 USD ≤ 2,000.00 USD limit"
    assert isinstance(classify(policy, 8900, "EUR"), Deny)
    assert check.detail == "Amount 89.00 EUR is not in USD"
    assert isinstance(classify(policy, 300000, "USD"), Deny)


def test_a_threshold_in_a_currency_the_operation_has_no_amounts_in_is_refused() -> None:
    with pytest.raises(PolicyError, match=r"'2000.00 GBP' is in GBP, but operation"):
        table(refund_registry("USD", "EUR"), {"field": "amount_cents", "lte": "2000.00 GBP"})


def test_a_money_threshold_that_is_no_amount_is_refused() -> None:
    with pytest.raises(PolicyError, match=r"field 'amount_cents': expected an amount"):
        table(refund_registry("USD"), {"field": "amount_cents", "lte": "lots"})


# --- configured operations declare their formats ------------------------------------------------


def campaign(**fields: Any) -> dict[str, Any]:
    return {
        "name": "crm.send_campaign",
        "description": "Email a campaign",
        "url": "https://crm.example.com/send",
        "request_schema": {
            "type": "object",
            "required": ["recipients", "budget_cents", "currency"],
            "properties": {
                "recipients": {"type": "integer"},
                "budget_cents": {"type": "integer"},
                "currency": {"type": "string", "enum": ["EUR", "USD"]},
            },
        },
        "preview": {"title": "Email {recipients} customers"},
        "fields": fields,
    }


def test_a_webhook_operation_declares_its_formats_in_configuration() -> None:
    operation = webhook_from_config(
        campaign(
            recipients={"label": "Recipients", "kind": "count", "unit": "customers"},
            budget_cents={"label": "Budget", "kind": "money", "currency_field": "currency"},
        ),
        secret="s" * 32,
    )

    formats = operation.field_formats()

    assert formats["recipients"].label == "Recipients"
    assert formats["budget_cents"].currencies == ("EUR", "USD")  # from the schema's enum
    with pytest.raises(PolicyError, match="names no currency"):
        PolicyTable.load(
            [
                {
                    "id": "cheap",
                    "operation": "crm.send_campaign",
                    "when": [{"field": "budget_cents", "lte": 100}],
                    "decision": "deny",
                    "reason": "no",
                }
            ],
            registry=Registry([operation]),
            roles={},
        )


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"recipient": {"label": "R"}}, "fields.recipient: not a property of request_schema"),
        (
            {"budget_cents": {"label": "B", "kind": "money", "currency_field": "cur"}},
            "fields.budget_cents.currency_field: 'cur' is not a property",
        ),
        ({"recipients": {"label": "R", "kind": "count", "labels": {"a": "b"}}}, "labels are for"),
    ],
)
def test_a_format_for_no_field_is_refused_at_load(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        webhook_from_config(campaign(**fields), secret="s" * 32)


# --- amounts typed in major units (the edit modal's money inputs) -------------------------------


@pytest.mark.parametrize(
    ("cents", "currency", "typed"),
    [
        (45000, "USD", "450.00"),
        (123456789, "USD", "1234567.89"),
        (4500, "JPY", "4500"),
        (1005, "KWD", "1.005"),
        (5, "EUR", "0.05"),
    ],
)
def test_an_amount_round_trips_through_major_units_exactly(
    cents: int, currency: str, typed: str
) -> None:
    assert major_units(cents, currency) == typed
    assert parse_major_units(typed, currency) == cents


@pytest.mark.parametrize(
    ("typed", "currency", "cents"),
    [
        ("19.99", "USD", 1999),
        ("0.1", "USD", 10),
        (" 450 ", "USD", 45000),
        (".5", "EUR", 50),
        ("450.000", "USD", 45000),
        ("+3", "USD", 300),
        ("-0", "USD", 0),
    ],
)
def test_typed_amounts_are_read_with_decimal_arithmetic(
    typed: str, currency: str, cents: int
) -> None:
    assert parse_major_units(typed, currency) == cents


@pytest.mark.parametrize(
    ("typed", "currency", "expected"),
    [
        ("450.001", "USD", "expected an amount in USD with at most 2 decimals, got '450.001'"),
        ("4.5", "JPY", "expected an amount in JPY with no decimals, got '4.5'"),
        ("-5", "USD", "expected an amount in USD that is not negative, got '-5'"),
        ("450,00", "EUR", "expected an amount in EUR such as 450.00 (a point before the decimals"),
        ("1,200.00", "USD", "expected an amount in USD such as 450.00"),
        ("1e3", "USD", "expected an amount in USD such as 450.00"),
        ("NaN", "USD", "expected an amount in USD such as 450.00"),
        ("", "JPY", "expected an amount in JPY such as 450 (a point"),
    ],
)
def test_an_amount_that_is_not_one_says_what_was_expected(
    typed: str, currency: str, expected: str
) -> None:
    with pytest.raises(ValueError) as caught:
        parse_major_units(typed, currency)
    assert str(caught.value).startswith(expected)
