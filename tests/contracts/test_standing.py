"""Standing rules in the policy table: what a rule may allow (checked at load, naming the rule and
the field), which calls a granted standing rule covers, and which automatic approvals are sampled
for review."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from contracts.policy import AskRule, PolicyError, PolicyTable
from contracts.standing import (
    MAX_STANDING,
    CallToCover,
    Grant,
    StandingPolicy,
    covers,
    duration_choices,
    sampled,
)
from tests.contracts.test_policy import REGISTRY, ROLES

NOW = datetime(2031, 3, 14, 15, 9, 26, tzinfo=UTC)
STANDING = {"max": "7d", "admins": ["finance"], "ceiling": "amount_cents"}


def ask_rule(**changes: Any) -> dict[str, Any]:
    rule: dict[str, Any] = {
        "id": "refunds",
        "operation": "payments.refund",
        "decision": "ask",
        "approvers": ["support"],
        "channel": "C0REFUNDS",
        "standing": dict(STANDING),
    }
    rule.update(changes)
    return rule


def load(*rules: dict[str, Any]) -> PolicyTable:
    return PolicyTable.load(list(rules), registry=REGISTRY, roles=ROLES)


def problems(*rules: dict[str, Any]) -> list[str]:
    with pytest.raises(PolicyError) as caught:
        load(*rules)
    return list(caught.value.problems)


# --- loading --------------------------------------------------------------------------------------


def test_an_ask_rule_may_allow_standing_rules() -> None:
    [rule] = load(ask_rule()).rules

    assert isinstance(rule, AskRule)
    assert rule.standing == StandingPolicy(
        max=timedelta(days=7), admins=("finance",), ceiling="amount_cents"
    )


def test_a_rule_without_standing_allows_none() -> None:
    [rule] = load(_without()).rules

    assert isinstance(rule, AskRule)
    assert rule.standing is None


def _without() -> dict[str, Any]:
    rule = ask_rule()
    del rule["standing"]
    return rule


@pytest.mark.parametrize(
    ("standing", "expected"),
    [
        (
            {"admins": ["finance"], "ceiling": "amount_cents"},
            "policy rule 'refunds': field 'standing.max' is missing",
        ),
        (
            {**STANDING, "max": "31d"},
            "policy rule 'refunds': field 'standing.max' is '31d'; it must be longer than zero "
            "and at most 30d",
        ),
        ({**STANDING, "max": "0s"}, "field 'standing.max' is '0s'"),
        ({**STANDING, "max": "a week"}, "field 'standing.max': invalid duration 'a week'"),
        (
            {**STANDING, "admins": []},
            "policy rule 'refunds': field 'standing.admins': expected a list of at least one role",
        ),
        (
            {**STANDING, "admins": ["finance-admins"]},
            "policy rule 'refunds': field 'standing.admins': unknown role 'finance-admins' "
            "(configured roles: finance, support)",
        ),
        (
            {**STANDING, "ceiling": "amount"},
            "policy rule 'refunds': field 'standing.ceiling': 'amount' is not an argument of "
            "operation 'payments.refund' (it has: amount_cents, currency, payment_id, ratio, "
            "urgent)",
        ),
        (
            {**STANDING, "ceiling": "currency"},
            "policy rule 'refunds': field 'standing.ceiling': 'currency' is a string argument "
            "of operation 'payments.refund'; the ceiling must be an integer or number argument "
            "(numeric ones: amount_cents, ratio)",
        ),
        ({**STANDING, "ceiling": "urgent"}, "'urgent' is a boolean argument"),
        (
            {"max": "7d", "admins": ["finance"]},
            "policy rule 'refunds': field 'standing.ceiling': expected the name of the "
            "operation's numeric argument",
        ),
        (
            {**STANDING, "maximum": "7d"},
            "policy rule 'refunds': field 'standing': unknown key 'maximum' (did you mean 'max'?)",
        ),
        ("7d", "policy rule 'refunds': field 'standing': expected a table such as"),
    ],
    ids=[
        "no-max",
        "max-over-30d",
        "max-zero",
        "max-unreadable",
        "no-admins",
        "unknown-admin-role",
        "ceiling-not-an-argument",
        "ceiling-a-string",
        "ceiling-a-boolean",
        "no-ceiling",
        "unknown-key",
        "not-a-table",
    ],
)
def test_an_invalid_standing_table_is_refused_naming_the_rule_and_field(
    standing: object, expected: str
) -> None:
    found = problems(ask_rule(standing=standing))

    assert any(problem.startswith(expected) or expected in problem for problem in found), found


def test_a_number_argument_may_be_the_ceiling() -> None:
    [rule] = load(ask_rule(standing={**STANDING, "ceiling": "ratio", "max": "30d"})).rules

    assert isinstance(rule, AskRule) and rule.standing is not None
    assert (rule.standing.ceiling, rule.standing.max) == ("ratio", MAX_STANDING)


def test_only_an_ask_rule_may_allow_standing_rules() -> None:
    found = problems(
        {
            "id": "small",
            "operation": "payments.refund",
            "decision": "auto",
            "when": [{"field": "amount_cents", "lte": 100}],
            "standing": dict(STANDING),
        }
    )

    assert found == [
        "policy rule 'small': field 'standing' only applies to decision 'ask', but this "
        "rule's decision is 'auto'"
    ]


def test_a_rule_for_every_operation_cannot_allow_standing_rules() -> None:
    found = problems(ask_rule(operation="*"))

    assert any("a rule for every operation ('*') cannot allow standing rules" in p for p in found)


def test_a_rule_needing_several_approvals_cannot_allow_standing_rules() -> None:
    found = problems(ask_rule(quorum=2))

    assert any(
        p.startswith("policy rule 'refunds': field 'standing': this rule needs 2 approvals")
        for p in found
    ), found


def test_every_problem_is_reported_at_once() -> None:
    found = problems(ask_rule(standing={"max": "60d", "admins": ["nobody"], "ceiling": "x"}))

    assert len(found) == 3, found


# --- covering -------------------------------------------------------------------------------------


def grant(**changes: Any) -> Grant:
    fields: dict[str, Any] = {
        "operation": "payments.refund",
        "agent": "support-bot",
        "rule_id": "refunds",
        "ceiling_field": "amount_cents",
        "ceiling": 5000,
        "arguments": {"payment_id": "pay_1"},
        "varying": ("amount_cents",),
        "created_by": "U0ADMIN",
        "created_from": "cs_first",
        "created_at": NOW,
        "expires_at": NOW + timedelta(hours=1),
        **changes,
    }
    return Grant(**fields)


def covered(standing: Grant, **changes: Any) -> bool:
    call: dict[str, Any] = {
        "operation": "payments.refund",
        "agent": "support-bot",
        "rule_id": "refunds",
        "arguments": {"payment_id": "pay_1", "amount_cents": 5000},
        "requested_by": "U0REQUESTER",
        "now": NOW + timedelta(minutes=59),
        **changes,
    }
    return covers(standing, CallToCover(**call))


def test_a_grant_covers_the_same_call_up_to_its_ceiling_until_it_expires() -> None:
    standing = grant()

    assert covered(standing)
    assert covered(standing, arguments={"payment_id": "pay_1", "amount_cents": 1})
    assert not covered(standing, arguments={"payment_id": "pay_1", "amount_cents": 5001})
    assert not covered(standing, arguments={"payment_id": "pay_1", "amount_cents": 5000.5})
    # not a number
    assert not covered(standing, arguments={"payment_id": "pay_1", "amount_cents": True})
    assert not covered(standing, arguments={"payment_id": "pay_1", "amount_cents": "10"})
    assert not covered(standing, arguments={"payment_id": "pay_1"})
    assert not covered(standing, operation="crm.send_campaign")
    assert not covered(standing, agent="ops-bot")
    assert not covered(standing, rule_id="big-refunds")
    assert not covered(standing, requested_by="U0ADMIN")  # never the granter's own requests
    # nor an edit by the granter, or of a version they edited: they may not decide it
    assert not covered(standing, editors=("U0ADMIN",))
    assert not covered(standing, editors=("U0OTHER", "U0ADMIN"))
    assert covered(standing, editors=("U0OTHER",))
    assert not covered(standing, now=NOW + timedelta(hours=1))


def test_a_float_ceiling_bounds_a_number_argument() -> None:
    standing = grant(ceiling_field="ratio", ceiling=0.25, arguments={}, varying=("ratio",))

    assert covered(standing, arguments={"ratio": 0.25})
    assert not covered(standing, arguments={"ratio": 0.2500001})


@pytest.mark.parametrize(
    "arguments",
    [
        {"payment_id": "pay_2", "amount_cents": 10},  # another payment
        {"amount_cents": 10},  # a bound argument left out
        {"payment_id": "pay_1", "amount_cents": 10, "customer": "cus_x"},  # one added
        {"payment_id": None, "amount_cents": 10},
        {"payment_id": ["pay_1"], "amount_cents": 10},
    ],
    ids=["other-value", "missing", "added", "null", "list"],
)
def test_a_grant_covers_only_the_approved_call_but_for_the_ceiling(
    arguments: dict[str, Any],
) -> None:
    assert not covered(grant(), arguments=arguments)


def test_json_types_must_match_exactly() -> None:
    standing = grant(arguments={"payment_id": "pay_1", "count": 1})

    assert covered(standing, arguments={"payment_id": "pay_1", "count": 1, "amount_cents": 9})
    assert not covered(standing, arguments={"payment_id": "pay_1", "count": 1.0, "amount_cents": 9})
    assert not covered(
        standing, arguments={"payment_id": "pay_1", "count": True, "amount_cents": 9}
    )


def test_nested_values_must_be_the_same_json_text() -> None:
    standing = grant(arguments={"payment_id": "pay_1", "meta": {"a": 1, "b": [1, 2]}})

    same = {"payment_id": "pay_1", "meta": {"a": 1, "b": [1, 2]}, "amount_cents": 9}
    assert covered(standing, arguments=same)
    reordered = {"payment_id": "pay_1", "meta": {"b": [1, 2], "a": 1}, "amount_cents": 9}
    assert not covered(standing, arguments=reordered)  # as SQLite's trigger compares them
    other = {"payment_id": "pay_1", "meta": {"a": 1, "b": [2, 1]}, "amount_cents": 9}
    assert not covered(standing, arguments=other)


def test_arguments_the_rule_lets_vary_may_differ() -> None:
    standing = grant(arguments={"payment_id": "pay_1"}, varying=("amount_cents", "note"))

    assert covered(standing, arguments={"payment_id": "pay_1", "amount_cents": 9, "note": "a"})
    assert covered(standing, arguments={"payment_id": "pay_1", "amount_cents": 9})
    assert not covered(standing, arguments={"payment_id": "pay_2", "amount_cents": 9})


def test_max_uses_and_vary_are_read_and_checked() -> None:
    [rule] = load(ask_rule(standing={**STANDING, "max_uses": 3, "vary": ["currency"]})).rules

    assert isinstance(rule, AskRule) and rule.standing is not None
    assert (rule.standing.max_uses, rule.standing.vary) == (3, ("currency",))
    assert rule.standing.varying == ("amount_cents", "currency")
    found = problems(ask_rule(standing={**STANDING, "max_uses": 0, "vary": ["nope"]}))
    joined = "\n".join(found)
    assert "field 'standing.max_uses': expected a whole number of calls from 1 to 1000" in joined
    assert "field 'standing.vary': ['nope'] are not arguments of operation" in joined


def test_a_rule_without_max_uses_covers_ten_calls() -> None:
    [rule] = load(ask_rule()).rules

    assert isinstance(rule, AskRule) and rule.standing is not None
    assert (rule.standing.max_uses, rule.standing.varying) == (10, ("amount_cents",))


def test_the_durations_offered_stop_at_the_rules_max() -> None:
    hours = [choice / timedelta(hours=1) for choice in duration_choices(timedelta(days=7))]
    odd = duration_choices(timedelta(hours=36))

    assert hours == [1, 4, 8, 24, 72, 168]
    assert odd == tuple(timedelta(hours=h) for h in (1, 4, 8, 24, 36))
    assert duration_choices(timedelta(minutes=30)) == (timedelta(minutes=30),)


# --- sampling -------------------------------------------------------------------------------------


#: Each id's place in [0, 1) lies in [low, high): it is sampled at the rate ``high`` and not at
#: ``low``. Computed once from SHA-256 of the id's UTF-8 bytes (the first 8 bytes, big-endian) and
#: written here, so another hash, encoding or byte order (or Python's per-process ``hash``) moves
#: these ids and fails, as it would re-sample proposals already reviewed on other instances.
PINNED_SAMPLES = [
    ("cs_2v6qk3bn7xw4yq5fz2m3a6lhpe", 0.239, 0.240),
    ("cs_7jq4m2xw5hb6kf3ya2npz4drte", 0.473, 0.474),
    ("cs_00000000", 0.470, 0.471),
    ("cs_00000001", 0.846, 0.847),
    ("cs_aaaaaaaaaaaaaaaaaaaaaaaaaa", 0.744, 0.745),
    ("cs_zzzzzzzzzzzzzzzzzzzzzzzzzz", 0.763, 0.764),
]


@pytest.mark.parametrize(("proposal_id", "low", "high"), PINNED_SAMPLES)
def test_sampling_is_decided_by_the_id_alone_the_same_everywhere(
    proposal_id: str, low: float, high: float
) -> None:
    assert sampled(proposal_id, high) is True
    assert sampled(proposal_id, low) is False
    assert sampled(proposal_id, 1.0) is True
    assert sampled(proposal_id, 0.0) is False


def test_sampling_never_at_rate_zero_always_at_one_and_more_at_a_higher_rate() -> None:
    ids = [f"cs_{secrets.token_hex(16)}" for _ in range(200)]

    assert not any(sampled(i, 0.0) for i in ids)
    assert all(sampled(i, 1.0) for i in ids)
    # a higher rate samples a superset
    assert {i for i in ids if sampled(i, 0.1)} <= {i for i in ids if sampled(i, 0.5)}


def test_sampling_takes_about_the_configured_share() -> None:
    ids = [f"cs_{n:08d}" for n in range(20_000)]

    share = sum(sampled(i, 0.1) for i in ids) / len(ids)

    assert 0.09 < share < 0.11
