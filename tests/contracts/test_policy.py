"""The policy table: first match wins, no match denies, and every mistake is named at load time."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import JsonValue, TypeAdapter

from contracts.base import Context, IdempotencyKey, ModelOperation, Preview, Resolved, Risk
from contracts.batching import (
    DEFAULT_BATCH_MAX,
    BackupRoute,
    BatchPolicy,
    format_after,
    handover_time,
)
from contracts.frozen import Frozen
from contracts.policy import (
    Ask,
    AskRule,
    Auto,
    AutoRule,
    Condition,
    Decision,
    Deny,
    PolicyError,
    PolicyTable,
)
from contracts.registry import Registry

# --- a tiny registry ------------------------------------------------------------------------------


class RefundArgs(Frozen):
    payment_id: str
    amount_cents: int
    currency: str
    ratio: float
    urgent: bool


class Refund(ModelOperation[RefundArgs, RefundArgs, RefundArgs]):
    name = "payments.refund"
    description = "Refund part of a payment."
    #: the table's mechanics are tested on read operations, which any rule may run; what each
    #: risk class allows has its own tests (tests/contracts/test_policy_depth.py)
    risk: Risk = "read"
    request_model = RefundArgs
    arguments_model = RefundArgs
    result_model = RefundArgs

    async def resolve(self, request: RefundArgs, ctx: Context) -> Resolved[RefundArgs]:
        return Resolved(arguments=request, preview=Preview(title="Refund"))

    async def perform(self, arguments: RefundArgs, ctx: Context, key: IdempotencyKey) -> RefundArgs:
        return arguments


class CloseArgs(Frozen):
    ticket_id: str


class CloseTicket(ModelOperation[CloseArgs, CloseArgs, CloseArgs]):
    name = "tickets.close"
    description = "Close a support ticket."
    risk: Risk = "read"
    request_model = CloseArgs
    arguments_model = CloseArgs
    result_model = CloseArgs

    async def resolve(self, request: CloseArgs, ctx: Context) -> Resolved[CloseArgs]:
        return Resolved(arguments=request, preview=Preview(title="Close"))

    async def perform(self, arguments: CloseArgs, ctx: Context, key: IdempotencyKey) -> CloseArgs:
        return arguments


REGISTRY = Registry([Refund(), CloseTicket()])
ROLES: Mapping[str, frozenset[str]] = {
    "finance": frozenset({"U_FIN"}),
    "support": frozenset({"U_SUP", "U_FIN"}),
}
REFUND = "payments.refund"
ARGS: dict[str, JsonValue] = {
    "payment_id": "pay_1",
    "amount_cents": 12000,
    "currency": "USD",
    "ratio": 0.25,
    "urgent": False,
}


def load(rules: list[Any], **kwargs: Any) -> PolicyTable:
    return PolicyTable.load(rules, registry=REGISTRY, roles=ROLES, **kwargs)


def classify(
    table: PolicyTable,
    arguments: Mapping[str, JsonValue] = ARGS,
    *,
    operation: str = REFUND,
    agent: str = "billing-bot",
    requester_roles: frozenset[str] = frozenset(),
) -> Decision:
    return table.classify(
        operation=operation, agent=agent, arguments=arguments, requester_roles=requester_roles
    )


def with_args(**changes: JsonValue) -> dict[str, JsonValue]:
    return {**ARGS, **changes}


def auto(rule_id: str, **fields: Any) -> dict[str, Any]:
    return {"id": rule_id, "operation": REFUND, "decision": "auto", **fields}


def ask(rule_id: str, **fields: Any) -> dict[str, Any]:
    return {
        "id": rule_id,
        "operation": REFUND,
        "decision": "ask",
        "approvers": ["finance"],
        "channel": "C0123ABCD",
        **fields,
    }


def problems_of(rules: list[Any], **kwargs: Any) -> list[str]:
    with pytest.raises(PolicyError) as caught:
        load(rules, **kwargs)
    assert str(caught.value).splitlines() == list(caught.value.problems)
    return list(caught.value.problems)


# --- classification -------------------------------------------------------------------------------


def test_first_matching_rule_decides_even_when_a_later_one_also_matches() -> None:
    table = load([auto("small", when=[{"field": "amount_cents", "lte": 20000}]), ask("all")])

    decision = classify(table)

    assert isinstance(decision, Auto)
    assert decision.rule_id == "small"


def test_later_rule_decides_when_earlier_rules_do_not_match() -> None:
    table = load([auto("small", when=[{"field": "amount_cents", "lte": 5000}]), ask("all")])

    decision = classify(table)

    assert isinstance(decision, Ask)
    assert decision.rule_id == "all"


def test_no_matching_rule_denies_saying_no_rule_matched() -> None:
    table = load([auto("small", when=[{"field": "amount_cents", "lte": 5000}])])

    decision = classify(table, agent="billing-bot")

    assert decision == Deny(
        rule_id=None,
        reason="no policy rule matched operation 'payments.refund' from agent 'billing-bot'; "
        "nothing runs unless a rule allows it",
    )


def test_empty_table_denies_everything() -> None:
    decision = classify(load([]))

    assert isinstance(decision, Deny)
    assert decision.rule_id is None


def test_rule_for_another_operation_does_not_match() -> None:
    table = load([{"id": "close", "operation": "tickets.close", "decision": "auto"}])

    assert isinstance(classify(table), Deny)
    assert isinstance(classify(table, {"ticket_id": "T1"}, operation="tickets.close"), Auto)


@pytest.mark.parametrize(
    ("comparison", "amount", "matches"),
    [
        ("lt", 4999, True),
        ("lt", 5000, False),
        ("lte", 5000, True),
        ("lte", 5001, False),
        ("gt", 5001, True),
        ("gt", 5000, False),
        ("gte", 5000, True),
        ("gte", 4999, False),
        ("eq", 5000, True),
        ("eq", 5001, False),
    ],
)
def test_integer_comparison_at_its_boundary(comparison: str, amount: int, matches: bool) -> None:
    table = load([auto("rule", when=[{"field": "amount_cents", comparison: 5000}])])

    decision = classify(table, with_args(amount_cents=amount))

    assert isinstance(decision, Auto) is matches


@pytest.mark.parametrize(
    ("comparison", "threshold", "ratio", "matches"),
    [
        ("lte", 0.5, 0.5, True),
        ("lte", 0.5, 0.5000001, False),
        ("lt", 0.5, 0.4999999, True),
        ("lt", 0.5, 0.5, False),
        ("gt", 0.5, 0.5000001, True),
        ("gte", 1, 1.0, True),
        ("gte", 1, 0.9999999, False),
        ("eq", 1, 1.0, True),
    ],
)
def test_number_comparison_at_its_boundary(
    comparison: str, threshold: float, ratio: float, matches: bool
) -> None:
    table = load([auto("rule", when=[{"field": "ratio", comparison: threshold}])])

    decision = classify(table, with_args(ratio=ratio))

    assert isinstance(decision, Auto) is matches


@pytest.mark.parametrize(
    ("currency", "matches"), [("USD", True), ("EUR", True), ("GBP", False), ("usd", False)]
)
def test_in_matches_only_the_listed_values(currency: str, matches: bool) -> None:
    table = load([auto("rule", when=[{"field": "currency", "in": ["USD", "EUR"]}])])

    decision = classify(table, with_args(currency=currency))

    assert isinstance(decision, Auto) is matches


def test_boolean_eq_matches_the_boolean_and_never_a_number() -> None:
    table = load([auto("urgent", when=[{"field": "urgent", "eq": True}])])

    assert isinstance(classify(table, with_args(urgent=True)), Auto)
    assert isinstance(classify(table, with_args(urgent=False)), Deny)
    assert isinstance(classify(table, with_args(urgent=1)), Deny)


def test_integer_eq_never_matches_a_boolean() -> None:
    table = load([auto("one", when=[{"field": "amount_cents", "eq": 1}])])

    assert isinstance(classify(table, with_args(amount_cents=1)), Auto)
    assert isinstance(classify(table, with_args(amount_cents=True)), Deny)


@pytest.mark.parametrize("value", [None, "100", True, [100], {"cents": 100}, 1.5e308 * 10])
def test_numeric_condition_on_an_unexpected_value_does_not_match(value: JsonValue) -> None:
    table = load([auto("small", when=[{"field": "amount_cents", "lte": 5000}])])

    assert isinstance(classify(table, with_args(amount_cents=value)), Deny)


def test_missing_argument_does_not_match_any_comparison() -> None:
    rules = [
        auto(f"r-{comparison}", when=[{"field": "amount_cents", comparison: 5000}])
        for comparison in ("lt", "lte", "gt", "gte", "eq")
    ]
    rules.append(auto("r-in", when=[{"field": "amount_cents", "in": [5000]}]))
    table = load(rules)

    decision = classify(table, {"currency": "USD"})

    assert isinstance(decision, Deny)
    assert decision.rule_id is None


def test_every_condition_must_hold() -> None:
    table = load(
        [
            auto(
                "small-usd",
                when=[
                    {"field": "amount_cents", "lte": 20000},
                    {"field": "currency", "eq": "USD"},
                ],
            )
        ]
    )

    assert isinstance(classify(table, with_args(currency="USD")), Auto)
    assert isinstance(classify(table, with_args(currency="EUR")), Deny)
    assert isinstance(classify(table, with_args(amount_cents=20001)), Deny)


def test_agents_filter_matches_only_the_listed_agents() -> None:
    table = load([auto("bots", agents=["billing-bot", "ops-bot"])])

    assert isinstance(classify(table, agent="ops-bot"), Auto)
    assert isinstance(classify(table, agent="chat-bot"), Deny)


def test_requester_roles_filter_needs_one_of_the_roles() -> None:
    table = load([auto("finance-only", requester_roles=["finance"])])

    assert isinstance(classify(table, requester_roles=frozenset({"support", "finance"})), Auto)
    assert isinstance(classify(table, requester_roles=frozenset({"support"})), Deny)
    assert isinstance(classify(table, requester_roles=frozenset()), Deny)


def test_roles_of_lists_every_role_a_user_holds() -> None:
    table = load([])

    assert table.roles_of("U_FIN") == {"finance", "support"}
    assert table.roles_of("U_SUP") == {"support"}
    assert table.roles_of("U_NOBODY") == frozenset()


def test_star_rule_matches_every_operation() -> None:
    table = load([{"id": "all", "operation": "*", "decision": "auto"}])

    assert isinstance(classify(table), Auto)
    assert isinstance(classify(table, {"ticket_id": "T1"}, operation="tickets.close"), Auto)


def test_ask_decision_carries_approvers_channel_and_expiry() -> None:
    table = load([ask("big", approvers=["finance", "support"], expires_after="2h")])

    decision = classify(table)

    assert decision == Ask(
        rule_id="big",
        explanation="rule 'big' matches every payments.refund",
        approvers=("finance", "support"),
        channel="C0123ABCD",
        expires_after=timedelta(hours=2),
    )


def test_ask_expiry_defaults_to_one_hour() -> None:
    decision = classify(load([ask("big")]))

    assert isinstance(decision, Ask)
    assert decision.expires_after == timedelta(hours=1)


def test_deny_rule_gives_its_reason_and_id() -> None:
    table = load(
        [
            {
                "id": "no-huge",
                "operation": REFUND,
                "decision": "deny",
                "reason": "Refunds over $1,000 go through the finance team's own tool.",
                "when": [{"field": "amount_cents", "gt": 100000}],
            },
            auto("rest"),
        ]
    )

    assert classify(table, with_args(amount_cents=100001)) == Deny(
        rule_id="no-huge", reason="Refunds over $1,000 go through the finance team's own tool."
    )
    assert isinstance(classify(table, with_args(amount_cents=100000)), Auto)


def test_explanation_names_the_rule_and_every_condition_with_actual_values() -> None:
    table = load(
        [
            ask(
                "mid-refunds",
                when=[
                    {"field": "amount_cents", "gt": 5000},
                    {"field": "currency", "in": ["USD", "EUR"]},
                ],
            )
        ]
    )

    decision = classify(table)

    assert isinstance(decision, Ask)
    assert decision.explanation == (
        "rule 'mid-refunds': Amount cents 12000 > 5000 and Currency 'USD' is one of 'USD', 'EUR'"
    )


def test_explanation_includes_agent_role_and_boolean_clauses() -> None:
    table = load(
        [
            auto(
                "urgent-ops",
                agents=["ops-bot"],
                requester_roles=["finance"],
                when=[{"field": "urgent", "eq": True}],
            )
        ]
    )

    decision = classify(
        table, with_args(urgent=True), agent="ops-bot", requester_roles=frozenset({"finance"})
    )

    assert decision == Auto(
        rule_id="urgent-ops",
        explanation="rule 'urgent-ops': agent 'ops-bot' in ['ops-bot'] and the requester holds "
        "['finance'] and Urgent is true",
    )


def test_explain_reports_every_rule_and_why_it_did_not_match() -> None:
    table = load(
        [
            {"id": "close", "operation": "tickets.close", "decision": "auto"},
            auto("ops", agents=["ops-bot"]),
            auto("small", when=[{"field": "amount_cents", "lte": 5000}]),
            auto("eur", when=[{"field": "currency", "eq": "EUR"}]),
            auto("no-ratio", when=[{"field": "ratio", "gte": 0}]),
            auto("finance", requester_roles=["finance"]),
            ask("mid", when=[{"field": "amount_cents", "gt": 5000}]),
            ask("everything"),
        ]
    )
    arguments = {key: value for key, value in ARGS.items() if key != "ratio"}

    checks = table.explain(
        operation=REFUND, agent="billing-bot", arguments=arguments, requester_roles=frozenset()
    )

    assert [(c.rule_id, c.matched, c.decides, c.detail) for c in checks] == [
        ("close", False, False, "it is for operation 'tickets.close', not 'payments.refund'"),
        ("ops", False, False, "agent 'billing-bot' not in ['ops-bot']"),
        ("small", False, False, "Amount cents 12000 is not ≤ 5000 limit"),
        ("eur", False, False, "Currency is 'USD', not 'EUR'"),
        ("no-ratio", False, False, "Ratio is missing"),
        ("finance", False, False, "the requester holds none of the roles ['finance']"),
        ("mid", True, True, "rule 'mid': Amount cents 12000 > 5000"),
        ("everything", True, False, "rule 'everything' matches every payments.refund"),
    ]
    assert [c.decision for c in checks][-2:] == ["ask", "ask"]


def test_explain_says_why_a_value_of_the_wrong_type_did_not_match() -> None:
    table = load([auto("small", when=[{"field": "amount_cents", "lte": 5000}])])

    (check,) = table.explain(
        operation=REFUND,
        agent="a",
        arguments=with_args(amount_cents="12"),
        requester_roles=frozenset(),
    )

    assert check.detail == "Amount cents is '12', not a number"


def test_rules_property_lists_the_loaded_rules_in_order() -> None:
    table = load(
        [
            auto("small", when=[{"field": "amount_cents", "lte": 5000}]),
            ask("big", expires_after="30m"),
        ]
    )

    assert table.rules == (
        AutoRule(
            id="small",
            operation=REFUND,
            when=(Condition(field="amount_cents", comparison="lte", value=5000),),
        ),
        AskRule(
            id="big",
            operation=REFUND,
            approvers=("finance",),
            channel="C0123ABCD",
            expires_after=timedelta(minutes=30),
        ),
    )


def test_decisions_round_trip_through_json_by_kind() -> None:
    adapter: TypeAdapter[Decision] = TypeAdapter(Decision)
    decisions: list[Decision] = [
        Auto(rule_id="a", explanation="rule 'a' matches every payments.refund"),
        Ask(
            rule_id="b",
            explanation="x",
            approvers=("finance",),
            channel="C1",
            expires_after=timedelta(minutes=90),
        ),
        Deny(rule_id=None, reason="no"),
    ]

    for decision in decisions:
        assert adapter.validate_json(adapter.dump_json(decision)) == decision


# --- load-time checking ---------------------------------------------------------------------------


def test_policy_error_is_a_value_error() -> None:
    assert issubclass(PolicyError, ValueError)


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        pytest.param(
            {"id": "r", "operation": "payments.refnud", "decision": "auto"},
            "policy rule 'r': field 'operation': unknown operation 'payments.refnud' "
            "(known: payments.refund, tickets.close; or '*' for any)",
            id="unknown-operation",
        ),
        pytest.param(
            auto("big-refunds", when=[{"field": "amount", "lte": 1}]),
            "policy rule 'big-refunds': field 'amount' is not an argument of operation "
            "'payments.refund' (it has: amount_cents, currency, payment_id, ratio, urgent)",
            id="unknown-argument",
        ),
        pytest.param(
            auto("r", when=[{"field": "currency", "lt": 5}]),
            "policy rule 'r': field 'currency': 'lt' compares numbers, but it is a string "
            "argument; use 'eq' or 'in'",
            id="ordering-on-string",
        ),
        pytest.param(
            auto("r", when=[{"field": "urgent", "gte": 1}]),
            "policy rule 'r': field 'urgent': 'gte' compares numbers, but it is a boolean "
            "argument; use 'eq' or 'in'",
            id="ordering-on-boolean",
        ),
        pytest.param(
            auto("r", when=[{"field": "amount_cents", "lte": 50.5}]),
            "policy rule 'r': field 'amount_cents': 'lte' needs a whole number "
            "(it is an integer argument), got 50.5",
            id="float-threshold-on-integer",
        ),
        pytest.param(
            auto("r", when=[{"field": "amount_cents", "gt": "5000"}]),
            "policy rule 'r': field 'amount_cents': 'gt' needs a whole number "
            "(it is an integer argument), got '5000'",
            id="string-threshold-on-integer",
        ),
        pytest.param(
            auto("r", when=[{"field": "amount_cents", "lt": True}]),
            "policy rule 'r': field 'amount_cents': 'lt' needs a whole number "
            "(it is an integer argument), got true",
            id="bool-threshold-on-integer",
        ),
        pytest.param(
            auto("r", when=[{"field": "ratio", "lte": False}]),
            "policy rule 'r': field 'ratio': 'lte' needs a finite number "
            "(it is a number argument), got false",
            id="bool-threshold-on-number",
        ),
        pytest.param(
            auto("r", when=[{"field": "ratio", "lte": float("nan")}]),
            "policy rule 'r': field 'ratio': 'lte' needs a finite number "
            "(it is a number argument), got nan",
            id="nan-threshold",
        ),
        pytest.param(
            auto("r", when=[{"field": "currency", "eq": 840}]),
            "policy rule 'r': field 'currency': 'eq' needs a string "
            "(it is a string argument), got 840",
            id="eq-wrong-type",
        ),
        pytest.param(
            auto("r", when=[{"field": "urgent", "eq": "true"}]),
            "policy rule 'r': field 'urgent': 'eq' needs true or false "
            "(it is a boolean argument), got 'true'",
            id="eq-string-for-boolean",
        ),
        pytest.param(
            auto("r", when=[{"field": "currency", "in": []}]),
            "policy rule 'r': field 'currency': 'in' needs a non-empty list of values, got []",
            id="in-empty",
        ),
        pytest.param(
            auto("r", when=[{"field": "currency", "in": "USD"}]),
            "policy rule 'r': field 'currency': 'in' needs a non-empty list of values, got 'USD'",
            id="in-not-a-list",
        ),
        pytest.param(
            auto("r", when=[{"field": "amount_cents", "in": [1, 2.5]}]),
            "policy rule 'r': field 'amount_cents': 'in' needs a whole number "
            "(it is an integer argument), got 2.5",
            id="in-item-wrong-type",
        ),
        pytest.param(
            auto("r", when=[{"field": "amount_cents"}]),
            "policy rule 'r': field 'amount_cents': a condition needs exactly one comparison "
            "among lt, lte, gt, gte, eq, in; it has none",
            id="zero-comparisons",
        ),
        pytest.param(
            auto("r", when=[{"field": "amount_cents", "gt": 1, "lte": 9}]),
            "policy rule 'r': field 'amount_cents': a condition needs exactly one comparison "
            "among lt, lte, gt, gte, eq, in; it has lte, gt",
            id="two-comparisons",
        ),
        pytest.param(
            auto("r", when=[{"lte": 9}]),
            "policy rule 'r': condition #1 in 'when' needs 'field', the argument to compare, "
            "got None",
            id="condition-without-field",
        ),
        pytest.param(
            auto("r", when=[{"field": "amount_cents", "le": 9, "lte": 9}]),
            "policy rule 'r': condition #1 in 'when' has unknown key 'le' (did you mean "
            "'lte'?) (expected 'field' and one of lt, lte, gt, gte, eq, in)",
            id="condition-unknown-key",
        ),
        pytest.param(
            auto("r", when=["amount_cents <= 9"]),
            "policy rule 'r': condition #1 in 'when': expected a table such as "
            "{ field = \"amount_cents\", lte = 5000 }, got 'amount_cents <= 9'",
            id="condition-not-a-table",
        ),
        pytest.param(
            auto("r", when={"field": "amount_cents", "lte": 9}),
            "policy rule 'r': field 'when': expected a list of conditions such as "
            "[{ field = \"amount_cents\", lte = 5000 }], got { field = 'amount_cents', lte = 9 }",
            id="when-not-a-list",
        ),
        pytest.param(
            {
                "id": "r",
                "operation": "*",
                "decision": "auto",
                "when": [{"field": "amount_cents", "lte": 9}],
            },
            "policy rule 'r': field 'when': a rule for every operation ('*') cannot have "
            "conditions, because argument names belong to one operation; write one rule per "
            "operation",
            id="conditions-on-star",
        ),
        pytest.param(
            ask("r", approvers=["finance", "treasury"]),
            "policy rule 'r': field 'approvers': unknown role 'treasury' "
            "(configured roles: finance, support)",
            id="unknown-approver-role",
        ),
        pytest.param(
            auto("r", requester_roles=["managers"]),
            "policy rule 'r': field 'requester_roles': unknown role 'managers' "
            "(configured roles: finance, support)",
            id="unknown-requester-role",
        ),
        pytest.param(
            {"id": "r", "operation": REFUND, "decision": "ask", "approvers": ["finance"]},
            "policy rule 'r': field 'channel' is missing (the Slack channel id to ask in, "
            "such as 'C0123ABCD')",
            id="ask-without-channel",
        ),
        pytest.param(
            ask("r", channel="#refunds"),
            "policy rule 'r': field 'channel' is '#refunds', which is not a channel id; give "
            "the id (such as 'C0123ABCD', shown in the channel's details in Slack)",
            id="channel-name-not-id",
        ),
        pytest.param(
            {"id": "r", "operation": REFUND, "decision": "ask", "channel": "C1"},
            "policy rule 'r': field 'approvers' is required for decision 'ask' (a list of roles)",
            id="ask-without-approvers",
        ),
        pytest.param(
            ask("r", approvers=[]),
            "policy rule 'r': field 'approvers' must name at least one role",
            id="ask-with-empty-approvers",
        ),
        pytest.param(
            ask("r", expires_after="2x"),
            "policy rule 'r': field 'expires_after': invalid duration '2x': expected whole "
            "numbers with units d, h, m or s, largest first, such as '90s', '30m', '2h', '1d' "
            "or '1h30m'",
            id="bad-duration",
        ),
        pytest.param(
            ask("r", expires_after=3600),
            "policy rule 'r': field 'expires_after': a duration is text in quotes; expected "
            "whole numbers with units d, h, m or s, largest first, such as '90s', '30m', '2h', "
            "'1d' or '1h30m', got 3600",
            id="duration-not-a-string",
        ),
        pytest.param(
            ask("r", expires_after="0m"),
            "policy rule 'r': field 'expires_after' is '0m'; it must be longer than zero",
            id="zero-duration",
        ),
        pytest.param(
            ask("r", expires_after="7d1s"),
            "policy rule 'r': field 'expires_after' is '7d1s'; at most 7d is allowed",
            id="duration-over-seven-days",
        ),
        pytest.param(
            auto("r", approvers=["finance"]),
            "policy rule 'r': field 'approvers' only applies to decision 'ask', but this "
            "rule's decision is 'auto'",
            id="auto-with-approvers",
        ),
        pytest.param(
            auto("r", channel="C1"),
            "policy rule 'r': field 'channel' only applies to decision 'ask', but this "
            "rule's decision is 'auto'",
            id="auto-with-channel",
        ),
        pytest.param(
            {"id": "r", "operation": REFUND, "decision": "deny", "reason": "no", "channel": "C1"},
            "policy rule 'r': field 'channel' only applies to decision 'ask', but this "
            "rule's decision is 'deny'",
            id="deny-with-channel",
        ),
        pytest.param(
            auto("r", reason="fine"),
            "policy rule 'r': field 'reason' only applies to decision 'deny', but this "
            "rule's decision is 'auto'",
            id="auto-with-reason",
        ),
        pytest.param(
            {"id": "r", "operation": REFUND, "decision": "deny"},
            "policy rule 'r': field 'reason' is missing (a sentence telling the agent why it "
            "is refused)",
            id="deny-without-reason",
        ),
        pytest.param(
            {"id": "r", "operation": REFUND},
            "policy rule 'r': field 'decision' is missing (expected 'auto', 'ask' or 'deny')",
            id="missing-decision",
        ),
        pytest.param(
            auto("r", decision="allow"),
            "policy rule 'r': field 'decision': expected 'auto', 'ask' or 'deny', got 'allow'",
            id="bad-decision",
        ),
        pytest.param(
            auto("r", approver=["finance"]),
            "policy rule 'r': field 'approver' is not a rule field (did you mean "
            "'approvers'?) (rule fields: id, operation, agents, requester_roles, when, "
            "decision, approvers, channel, expires_after, allow_guests, remind_at, extend_by, "
            "quorum, standing, batch, then, reason)",
            id="unknown-key",
        ),
        pytest.param(
            {"operation": REFUND, "decision": "auto"},
            "policy rule #1: field 'id' is missing (every rule needs a unique id)",
            id="missing-id",
        ),
        pytest.param(
            auto(""),
            "policy rule #1: field 'id': expected text that is not empty (every rule needs a "
            "unique id), got ''",
            id="empty-id",
        ),
        pytest.param(
            auto("r", agents="billing-bot"),
            "policy rule 'r': field 'agents': expected a list of agent names, got 'billing-bot'",
            id="agents-not-a-list",
        ),
        pytest.param(
            ["id", "r"],
            "policy rule #1: expected a table of fields, got ['id', 'r']",
            id="rule-not-a-table",
        ),
    ],
)
def test_load_names_the_rule_and_field_of_each_mistake(rule: Any, expected: str) -> None:
    assert problems_of([rule]) == [expected]


def test_load_names_a_rule_without_id_by_its_position() -> None:
    rules = [auto("first"), {"operation": REFUND, "decision": "auto", "agent": ["x"]}]

    assert problems_of(rules) == [
        "policy rule #2: field 'agent' is not a rule field (did you mean 'agents'?) (rule "
        "fields: id, operation, agents, requester_roles, when, decision, approvers, channel, "
        "expires_after, allow_guests, remind_at, extend_by, quorum, standing, batch, then, "
        "reason)",
        "policy rule #2: field 'id' is missing (every rule needs a unique id)",
    ]


def test_load_rejects_duplicate_ids_naming_both_positions() -> None:
    rules = [auto("same"), auto("other"), ask("same")]

    assert problems_of(rules) == [
        "policy rule 'same': field 'id' is already used by rule #1 (this is rule #3); "
        "ids must be unique",
        # and, in the same pass, what the first 'same' (every refund, no condition) shadows
        "policy rule 'other': unreachable: rule 'same' before it matches every "
        "payments.refund proposal and decides first; move 'other' above it or remove it",
    ]


def test_load_rejects_agents_not_configured_when_agents_are_given() -> None:
    rules = [auto("r", agents=["billing-bot", "ghost-bot"])]

    assert problems_of(rules, agents={"billing-bot"}) == [
        "policy rule 'r': field 'agents': unknown agent 'ghost-bot' (configured agents: "
        "billing-bot)"
    ]
    assert isinstance(classify(load(rules), agent="ghost-bot"), Auto)


def test_load_rejects_rules_an_earlier_catch_all_makes_unreachable() -> None:
    rules = [
        auto("small", when=[{"field": "amount_cents", "lte": 100}]),
        {"id": "refunds", "operation": REFUND, "decision": "deny", "reason": "no"},
        auto("never", when=[{"field": "amount_cents", "lte": 5}]),
    ]

    assert problems_of(rules) == [
        "policy rule 'never': unreachable: rule 'refunds' before it matches every "
        "payments.refund proposal and decides first; move 'never' above it or remove it"
    ]


def test_an_unreachable_rule_is_listed_with_the_problems_of_other_rules() -> None:
    """One pass lists every problem: a rule an earlier catch-all shadows is not left for the
    next check-config because another rule has a bad threshold."""
    rules = [
        auto("typo", when=[{"field": "amount", "lte": 1}]),
        {"id": "refunds", "operation": REFUND, "decision": "deny", "reason": "no"},
        auto("never", when=[{"field": "amount_cents", "lte": 5}]),
    ]

    problems = problems_of(rules)

    assert problems[0].startswith("policy rule 'typo': field 'amount'")
    assert problems[1:] == [
        "policy rule 'never': unreachable: rule 'refunds' before it matches every "
        "payments.refund proposal and decides first; move 'never' above it or remove it"
    ]


def test_a_catch_all_for_one_operation_does_not_shadow_rules_for_others() -> None:
    rules = [
        {"id": "refunds", "operation": REFUND, "decision": "deny", "reason": "no"},
        auto("tickets", operation="tickets.close"),
    ]

    assert [rule.id for rule in load(rules).rules] == ["refunds", "tickets"]


def test_load_reports_every_problem_together_one_per_line() -> None:
    rules = [
        auto("ok"),
        auto("big-refunds", when=[{"field": "amount", "lte": 1}]),
        {"operation": "nope", "decision": "ask", "approvers": ["treasury"]},
        auto("ok"),
    ]

    with pytest.raises(PolicyError) as caught:
        load(rules)

    assert str(caught.value).splitlines() == [
        "policy rule 'big-refunds': field 'amount' is not an argument of operation "
        "'payments.refund' (it has: amount_cents, currency, payment_id, ratio, urgent)",
        "policy rule #3: field 'id' is missing (every rule needs a unique id)",
        "policy rule #3: field 'operation': unknown operation 'nope' "
        "(known: payments.refund, tickets.close; or '*' for any)",
        "policy rule #3: field 'approvers': unknown role 'treasury' "
        "(configured roles: finance, support)",
        "policy rule #3: field 'channel' is missing (the Slack channel id to ask in, "
        "such as 'C0123ABCD')",
        "policy rule 'ok': field 'id' is already used by rule #1 (this is rule #4); "
        "ids must be unique",
    ]


def test_load_reports_every_bad_condition_of_one_rule() -> None:
    rule = auto(
        "r",
        when=[
            {"field": "amount_cents", "lte": 1.5},
            {"field": "currency", "gt": 1},
            {"field": "ratio", "lte": 0.5},
            {"field": "urgent", "in": [True, "no"]},
        ],
    )

    assert problems_of([rule]) == [
        "policy rule 'r': field 'amount_cents': 'lte' needs a whole number (it is an integer "
        "argument), got 1.5",
        "policy rule 'r': field 'currency': 'gt' compares numbers, but it is a string "
        "argument; use 'eq' or 'in'",
        "policy rule 'r': field 'urgent': 'in' needs true or false (it is a boolean "
        "argument), got 'no'",
    ]


def test_load_rejects_a_policy_that_is_not_a_list() -> None:
    with pytest.raises(PolicyError) as error:
        PolicyTable.load({"id": "r"}, registry=REGISTRY, roles=ROLES)  # type: ignore[arg-type]

    assert error.value.problems == ("policy: expected a list of rules, got { id = 'r' }",)


def test_load_accepts_integer_thresholds_on_number_fields() -> None:
    table = load(
        [auto("r", when=[{"field": "ratio", "lt": 1}, {"field": "ratio", "in": [0, 0.5]}])]
    )

    assert isinstance(classify(table, with_args(ratio=0.5)), Auto)
    assert isinstance(classify(table, with_args(ratio=0)), Auto)
    assert isinstance(classify(table, with_args(ratio=0.25)), Deny)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("90s", timedelta(seconds=90)),
        ("30m", timedelta(minutes=30)),
        ("2h", timedelta(hours=2)),
        ("1d", timedelta(days=1)),
        ("1h30m", timedelta(minutes=90)),
        ("7d", timedelta(days=7)),
        ("1s", timedelta(seconds=1)),
    ],
)
def test_ask_rule_reads_its_expiry(text: str, expected: timedelta) -> None:
    decision = classify(load([ask("r", expires_after=text)]))

    assert isinstance(decision, Ask)
    assert decision.expires_after == expected


def test_constructor_rejects_duplicate_rule_ids() -> None:
    rule = AutoRule(id="same", operation=REFUND)

    with pytest.raises(PolicyError, match="policy rule 'same': field 'id' is used more than once"):
        PolicyTable([rule, rule])


# --- properties -----------------------------------------------------------------------------------

_INTEGERS = st.integers(min_value=-(10**12), max_value=10**12)
_NUMBERS = st.floats(allow_nan=False, allow_infinity=False) | _INTEGERS
_STRINGS = st.sampled_from(["USD", "EUR", "GBP", "", "usd"]) | st.text(max_size=5)
_BOOLEANS = st.booleans()

_VALUES_BY_FIELD: dict[str, st.SearchStrategy[Any]] = {
    "amount_cents": _INTEGERS,
    "ratio": _NUMBERS,
    "currency": _STRINGS,
    "payment_id": _STRINGS,
    "urgent": _BOOLEANS,
}
_ORDERED_FIELDS = ("amount_cents", "ratio")

_json: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | _NUMBERS | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=5,
)


@st.composite
def _conditions(draw: st.DrawFn) -> dict[str, Any]:
    field = draw(st.sampled_from(sorted(_VALUES_BY_FIELD)))
    values = _VALUES_BY_FIELD[field]
    comparisons = ["eq", "in", *(["lt", "lte", "gt", "gte"] if field in _ORDERED_FIELDS else [])]
    comparison = draw(st.sampled_from(comparisons))
    if comparison == "in":
        return {"field": field, "in": draw(st.lists(values, min_size=1, max_size=3))}
    return {"field": field, comparison: draw(values)}


@st.composite
def _rules(draw: st.DrawFn, rule_id: str) -> dict[str, Any]:
    rule: dict[str, Any] = {"id": rule_id, "operation": REFUND}
    if draw(st.booleans()):
        rule["agents"] = draw(st.lists(st.sampled_from(["a1", "a2", "a3"]), min_size=1, max_size=2))
    if draw(st.booleans()):
        rule["requester_roles"] = draw(
            st.lists(st.sampled_from(sorted(ROLES)), min_size=1, max_size=2)
        )
    rule["when"] = draw(st.lists(_conditions(), max_size=2))
    decision = draw(st.sampled_from(["auto", "ask", "deny"]))
    rule["decision"] = decision
    if decision == "ask":
        rule |= {"approvers": ["finance"], "channel": "C1", "expires_after": "15m"}
    elif decision == "deny":
        rule["reason"] = "not allowed"
    return rule


@st.composite
def _tables(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Tables that load: nothing after a catch-all (load refuses unreachable rules)."""
    count = draw(st.integers(min_value=0, max_value=4))
    table = []
    for index in range(count):
        rule = draw(_rules(f"rule-{index}"))
        table.append(rule)
        if not (rule.get("agents") or rule.get("requester_roles") or rule.get("when")):
            break
    return table


_declared_arguments = st.fixed_dictionaries(
    {}, optional={field: values for field, values in _VALUES_BY_FIELD.items()}
)
_any_arguments = st.dictionaries(st.sampled_from([*_VALUES_BY_FIELD, "extra"]), _json, max_size=6)
_agents = st.sampled_from(["a1", "a2", "a3", "other"])
_requester_roles = st.frozensets(st.sampled_from([*ROLES, "other"]))


@settings(database=None, max_examples=300)
@given(
    rules=_tables(),
    arguments=_declared_arguments | _any_arguments,
    agent=_agents,
    requester_roles=_requester_roles,
)
def test_classify_never_raises_and_always_decides(
    rules: list[dict[str, Any]],
    arguments: dict[str, JsonValue],
    agent: str,
    requester_roles: frozenset[str],
) -> None:
    table = load(rules)

    decision = classify(table, arguments, agent=agent, requester_roles=requester_roles)
    checks = table.explain(
        operation=REFUND, agent=agent, arguments=arguments, requester_roles=requester_roles
    )

    deciding = [check for check in checks if check.decides]
    assert len(deciding) <= 1
    assert decision.rule_id == (deciding[0].rule_id if deciding else None)
    assert decision.kind == (deciding[0].decision if deciding else "deny")


@settings(database=None, max_examples=200)
@given(
    rules=_tables(),
    operation=st.sampled_from([REFUND, "tickets.close"]),
    arguments=_declared_arguments | _any_arguments,
    agent=_agents,
    requester_roles=_requester_roles,
)
def test_table_ending_in_a_catch_all_never_says_no_rule_matched(
    rules: list[dict[str, Any]],
    operation: str,
    arguments: dict[str, JsonValue],
    agent: str,
    requester_roles: frozenset[str],
) -> None:
    catch_all = {
        "id": "catch-all",
        "operation": "*",
        "decision": "ask",
        "approvers": ["support"],
        "channel": "C1",
    }
    table = load([*rules, catch_all])

    decision = classify(
        table, arguments, operation=operation, agent=agent, requester_roles=requester_roles
    )

    assert decision.rule_id is not None


@settings(database=None, max_examples=300)
@given(threshold=_INTEGERS, offset=st.integers(min_value=-2, max_value=2) | _INTEGERS)
def test_single_threshold_rule_allows_exactly_the_amounts_at_or_below_it(
    threshold: int, offset: int
) -> None:
    amount = threshold + offset
    table = load([auto("small", when=[{"field": "amount_cents", "lte": threshold}])])

    decision = classify(table, with_args(amount_cents=amount))

    assert isinstance(decision, Auto | Ask) is (amount <= threshold)
    if amount > threshold:
        assert decision == Deny(
            rule_id=None,
            reason="no policy rule matched operation 'payments.refund' from agent "
            "'billing-bot'; nothing runs unless a rule allows it",
        )


# --- batching windows and backup approvers --------------------------------------------------------

BACKUP_ROLES: Mapping[str, frozenset[str]] = {**ROLES, "finance-leads": frozenset({"U_LEAD"})}


def test_batch_and_then_are_read_into_typed_models_on_the_rule_and_its_decision() -> None:
    rules = [
        ask(
            "refunds",
            expires_after="2h",
            batch={"window": "30m", "max": 10},
            then={"after": "50%", "approvers": ["finance-leads"]},
        )
    ]
    table = PolicyTable.load(rules, registry=REGISTRY, roles=BACKUP_ROLES)

    [rule] = table.rules
    assert isinstance(rule, AskRule)
    assert rule.batch == BatchPolicy(window=timedelta(minutes=30), max=10)
    assert rule.then == BackupRoute(after=0.5, approvers=("finance-leads",))
    decision = classify(table)
    assert isinstance(decision, Ask)
    assert (decision.batch, decision.then) == (rule.batch, rule.then)


def test_batch_max_has_a_default_and_then_after_may_be_a_duration() -> None:
    rules = [ask("r", batch={"window": "90s"}, then={"after": "20m", "approvers": ["support"]})]

    [rule] = load(rules).rules

    assert isinstance(rule, AskRule)
    assert rule.batch == BatchPolicy(window=timedelta(seconds=90), max=DEFAULT_BATCH_MAX)
    assert rule.then is not None and rule.then.after == timedelta(minutes=20)


def test_an_ask_rule_without_batch_or_then_has_neither() -> None:
    [rule] = load([ask("r")]).rules

    assert isinstance(rule, AskRule)
    assert (rule.batch, rule.then) == (None, None)


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        pytest.param(
            {"batch": "30m"},
            "field 'batch': expected a table such as { window = \"30m\", max = 25 }, got '30m'",
            id="batch-not-a-table",
        ),
        pytest.param(
            {"batch": {"max": 5}},
            "field 'batch.window' is missing (how long proposals may wait to be shown "
            "together, such as '30m'; at most 1d)",
            id="window-missing",
        ),
        pytest.param(
            {"batch": {"window": "half an hour"}},
            "field 'batch.window': invalid duration 'half an hour': expected whole numbers "
            "with units d, h, m or s, largest first, such as '90s', '30m', '2h', '1d' or '1h30m'",
            id="window-not-a-duration",
        ),
        pytest.param(
            {"batch": {"window": "0s"}},
            "field 'batch.window' is '0s'; it must be longer than zero and at most 1d",
            id="window-zero",
        ),
        pytest.param(
            {"batch": {"window": "2d"}, "expires_after": "3d"},
            "field 'batch.window' is '2d'; it must be longer than zero and at most 1d",
            id="window-too-long",
        ),
        pytest.param(
            {"batch": {"window": "1h"}},
            "field 'batch.window' is '1h', but the rule's proposals expire after 1h (field "
            "'expires_after'); a window must be shorter than the expiry",
            id="window-not-shorter-than-expiry",
        ),
        pytest.param(
            {"batch": {"window": "30m", "max": 0}},
            "field 'batch.max': expected a whole number from 1 to 50 (the most proposals shown "
            "in one digest), got 0",
            id="max-zero",
        ),
        pytest.param(
            {"batch": {"window": "30m", "max": 51}},
            "field 'batch.max': expected a whole number from 1 to 50 (the most proposals shown "
            "in one digest), got 51",
            id="max-above-a-digest",
        ),
        pytest.param(
            {"batch": {"window": "30m", "max": True}},
            "field 'batch.max': expected a whole number from 1 to 50 (the most proposals shown "
            "in one digest), got true",
            id="max-boolean",
        ),
        pytest.param(
            {"batch": {"window": "30m", "size": 5}},
            "field 'batch': unknown key 'size' (expected window, max)",
            id="batch-unknown-key",
        ),
        pytest.param(
            {"batch": {"window": "23h"}, "expires_after": "6d12h"},
            "field 'batch.window' is '23h'; a proposal may wait that long before its 6d12h to "
            "decide (field 'expires_after') starts, so it would live 7d11h, but at most 7d is "
            "allowed",
            id="window-plus-expiry-beyond-max",
        ),
        pytest.param(
            {"then": ["finance-leads"]},
            "field 'then': expected a table such as { after = \"50%\", approvers = "
            "[\"finance-leads\"] }, got ['finance-leads']",
            id="then-not-a-table",
        ),
        pytest.param(
            {"then": {"approvers": ["support"]}},
            "field 'then.after' is missing; expected a share of the time between showing and "
            "expiry from 1% to 99%, such as '50%', or a duration after showing, such as '20m'",
            id="after-missing",
        ),
        pytest.param(
            {"then": {"after": "100%", "approvers": ["support"]}},
            "field 'then.after': expected a share of the time between showing and expiry from "
            "1% to 99%, such as '50%', or a duration after showing, such as '20m', got '100%'",
            id="after-hundred-percent",
        ),
        pytest.param(
            {"then": {"after": 0.5, "approvers": ["support"]}},
            "field 'then.after': expected a share of the time between showing and expiry from "
            "1% to 99%, such as '50%', or a duration after showing, such as '20m', got 0.5",
            id="after-a-number",
        ),
        pytest.param(
            {"then": {"after": "2h", "approvers": ["support"]}},
            "field 'then.after' is '2h', but the rule's proposals expire 1h after they are "
            "shown (field 'expires_after'); the backup approvers must be offered the proposal "
            "before it expires",
            id="after-beyond-expiry",
        ),
        pytest.param(
            {"then": {"after": "50%", "approvers": ["ghosts"]}},
            "field 'then.approvers': unknown role 'ghosts' (configured roles: finance, support)",
            id="backup-role-unknown",
        ),
        pytest.param(
            {"then": {"after": "50%", "approvers": []}},
            "field 'then.approvers': expected a list of at least one role (who may also decide "
            "once nobody has), got []",
            id="backup-roles-empty",
        ),
        pytest.param(
            {"then": {"after": "50%", "approvers": ["finance"]}},
            "field 'then.approvers': role 'finance' already approves this rule (field "
            "'approvers'); name a backup role that does not",
            id="backup-role-already-approves",
        ),
        pytest.param(
            {"then": {"after": "50%", "approvers": ["support"], "quorum": 2}},
            "field 'then': unknown key 'quorum' (expected after, approvers)",
            id="then-unknown-key",
        ),
    ],
)
def test_batch_and_then_mistakes_name_the_key_and_what_was_expected(
    fields: dict[str, Any], expected: str
) -> None:
    assert problems_of([ask("r", **fields)]) == [f"policy rule 'r': {expected}"]


@pytest.mark.parametrize("key", ["batch", "then"])
def test_batch_and_then_belong_to_ask_rules_only(key: str) -> None:
    value = {"window": "5m"} if key == "batch" else {"after": "50%", "approvers": ["support"]}

    assert problems_of([auto("r", **{key: value})]) == [
        f"policy rule 'r': field {key!r} only applies to decision 'ask', but this rule's "
        "decision is 'auto'"
    ]


def test_a_rule_built_directly_cannot_batch_longer_than_it_expires() -> None:
    with pytest.raises(ValueError, match=r"batch\.window must be shorter than expires_after"):
        AskRule(
            id="r",
            operation=REFUND,
            approvers=("finance",),
            channel="C0123ABCD",
            expires_after=timedelta(minutes=10),
            batch=BatchPolicy(window=timedelta(minutes=10)),
        )


def test_handover_time_is_a_share_of_the_time_shown_or_a_duration_after_it() -> None:
    shown = datetime(2031, 3, 14, 12, 0, tzinfo=UTC)
    expires = shown + timedelta(hours=2)

    half = BackupRoute(after=0.5, approvers=("support",))
    twenty = BackupRoute(after=timedelta(minutes=20), approvers=("support",))

    assert handover_time(half, shown_at=shown, expires_at=expires) == shown + timedelta(hours=1)
    assert handover_time(twenty, shown_at=shown, expires_at=expires) == shown + timedelta(
        minutes=20
    )
    assert (format_after(half.after), format_after(twenty.after)) == ("50%", "20m")
