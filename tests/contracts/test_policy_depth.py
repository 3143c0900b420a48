"""Risk classes and quorums in the policy table: what each class lets a rule decide, and how
many distinct approvers an ask rule may require. Every refusal names the rule and the field."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from pydantic import BaseModel

from contracts.base import Context, IdempotencyKey, ModelOperation, Preview, Resolved, Risk
from contracts.frozen import Frozen
from contracts.operations import webhook
from contracts.operations.refund import InMemoryLedger, Refund
from contracts.policy import Ask, AskRule, PolicyError, PolicyTable
from contracts.quorum import shortfall
from contracts.registry import Registry


class Args(Frozen):
    count: int


def operation(name: str, risk: Risk) -> ModelOperation[Any, Any, Any]:
    class Op(ModelOperation[Args, Args, Args]):
        description = f"A {risk} operation."
        request_model = Args
        arguments_model = Args
        result_model = Args

        async def resolve(self, request: BaseModel, ctx: Context) -> Resolved[Args]:
            return Resolved(arguments=Args(count=1), preview=Preview(title=name))

        async def perform(self, arguments: Args, ctx: Context, key: IdempotencyKey) -> Args:
            return arguments

    op = Op()
    op.name = name
    op.risk = risk
    return op


READ, REVERSIBLE, IRREVERSIBLE = "crm.lookup", "crm.tag", "payments.send"
EVERY_CLASS = Registry(
    [
        operation(READ, "read"),
        operation(REVERSIBLE, "reversible"),
        operation(IRREVERSIBLE, "irreversible"),
    ]
)
ROLES: Mapping[str, frozenset[str]] = {
    "finance": frozenset({"U0ADA", "U0GRACE"}),
    "support": frozenset({"U0GRACE", "U0ALAN"}),
    "leads": frozenset({"U0EDSGER", "S0LEADS"}),  # a user group: counted only at startup
}
LIMIT = [{"field": "count", "lte": 10}]


def load(rules: list[dict[str, Any]], registry: Registry = EVERY_CLASS) -> PolicyTable:
    return PolicyTable.load(rules, registry=registry, roles=ROLES)


def problems_of(rules: list[dict[str, Any]], registry: Registry = EVERY_CLASS) -> list[str]:
    with pytest.raises(PolicyError) as caught:
        load(rules, registry)
    return list(caught.value.problems)


def auto(rule_id: str, op: str, **fields: Any) -> dict[str, Any]:
    return {"id": rule_id, "operation": op, "decision": "auto", **fields}


def ask(rule_id: str, **fields: Any) -> dict[str, Any]:
    return {
        "id": rule_id,
        "operation": IRREVERSIBLE,
        "decision": "ask",
        "approvers": ["finance"],
        "channel": "C0APPROVALS",
        **fields,
    }


# --- risk classes ---------------------------------------------------------------------------------


def test_refunds_and_unconfigured_webhooks_are_irreversible() -> None:
    assert Refund(InMemoryLedger([])).risk == "irreversible"
    assert _webhook().risk == "irreversible"


@pytest.mark.parametrize("risk", ["read", "reversible", "irreversible"])
def test_a_webhook_operation_takes_its_configured_risk(risk: str) -> None:
    assert _webhook(risk=risk).risk == risk


@pytest.mark.parametrize("given", ["safe", 1, None, ["read"]])
def test_a_webhook_risk_outside_the_classes_is_refused_naming_the_field(given: object) -> None:
    with pytest.raises(ValueError) as caught:
        _webhook(risk=given)

    message = str(caught.value)
    assert message.startswith("webhook operation 'crm.tag': risk: expected 'read', 'reversible'")
    assert "or 'irreversible'" in message


def test_an_auto_rule_for_an_irreversible_operation_is_refused_even_within_limits() -> None:
    assert problems_of([auto("pay-small", IRREVERSIBLE, when=LIMIT)]) == [
        "policy rule 'pay-small': field 'decision': 'auto' is not allowed for operation "
        "'payments.send', which is irreversible (risk 'irreversible': money or an effect "
        "outside that cannot be undone); irreversible effects are asked for or denied: use "
        "'ask' or 'deny'"
    ]


def test_a_refund_is_never_run_by_a_rule_alone() -> None:
    registry = Registry([Refund(InMemoryLedger([]))])
    when = [{"field": "amount_cents", "lte": 100}]

    [problem] = problems_of([auto("small-refunds", "payments.refund", when=when)], registry)

    assert problem.startswith("policy rule 'small-refunds': field 'decision': 'auto' is not")


def test_an_auto_rule_for_every_operation_is_refused_while_one_is_irreversible() -> None:
    assert problems_of([auto("everything", "*")]) == [
        "policy rule 'everything': field 'operation': an 'auto' rule for every operation ('*') "
        "would run irreversible operation(s) 'payments.send' without asking anyone; "
        "irreversible effects are asked for or denied: write an 'auto' rule for each read or "
        "reversible operation instead"
    ]


def test_an_auto_rule_for_every_operation_is_refused_while_one_is_reversible() -> None:
    registry = Registry([operation(READ, "read"), operation(REVERSIBLE, "reversible")])

    [problem] = problems_of([auto("everything", "*")], registry)

    assert problem.startswith("policy rule 'everything': field 'operation': an 'auto' rule")
    assert "reversible operation(s) 'crm.tag' without limits" in problem


def test_an_auto_rule_for_every_operation_loads_when_all_are_reads() -> None:
    table = load([auto("reads", "*")], Registry([operation(READ, "read")]))

    assert [rule.id for rule in table.rules] == ["reads"]


def test_an_auto_rule_for_a_reversible_operation_needs_a_condition() -> None:
    assert problems_of([auto("tags", REVERSIBLE)]) == [
        "policy rule 'tags': field 'when': operation 'crm.tag' is a reversible write (risk "
        "'reversible'), so an 'auto' rule for it needs at least one condition, to run "
        'automatically only within limits (such as when = [{ field = "amount_cents", lte = '
        "5000 }]); or use 'ask'"
    ]


def test_a_reversible_operation_runs_automatically_within_limits() -> None:
    table = load([auto("small-tags", REVERSIBLE, when=LIMIT)])

    decision = table.classify(
        operation=REVERSIBLE, agent="bot", arguments={"count": 3}, requester_roles=()
    )

    assert decision.kind == "auto"


def test_a_bad_condition_is_reported_without_also_calling_the_rule_unlimited() -> None:
    problems = problems_of([auto("tags", REVERSIBLE, when=[{"field": "count", "lte": "ten"}])])

    assert len(problems) == 1
    assert "field 'count'" in problems[0]


def test_a_read_operation_may_run_automatically_unconditionally() -> None:
    table = load([auto("lookups", READ)])

    decision = table.classify(operation=READ, agent="bot", arguments={}, requester_roles=())

    assert decision.kind == "auto"


@pytest.mark.parametrize("decision", ["ask", "deny"])
def test_irreversible_operations_may_be_asked_or_denied(decision: str) -> None:
    rule = (
        ask("pay")
        if decision == "ask"
        else {
            "id": "pay",
            "operation": IRREVERSIBLE,
            "decision": "deny",
            "reason": "not here",
        }
    )

    assert [r.id for r in load([rule]).rules] == ["pay"]


# --- quorum ---------------------------------------------------------------------------------------


def test_an_ask_rule_needs_one_approver_unless_it_says_more() -> None:
    table = load([ask("one", when=LIMIT), ask("two", quorum=2)])

    one, two = table.rules
    assert isinstance(one, AskRule) and isinstance(two, AskRule)
    assert (one.quorum, two.quorum) == (1, 2)
    decision = table.classify(
        operation=IRREVERSIBLE, agent="bot", arguments={"count": 99}, requester_roles=()
    )
    assert isinstance(decision, Ask)
    assert (decision.rule_id, decision.quorum) == ("two", 2)


@pytest.mark.parametrize(
    ("given", "problem"),
    [
        ("2", "field 'quorum': expected a whole number from 1 to 20 (how many distinct approvers "
         "must approve), got '2'"),
        (1.5, "field 'quorum': expected a whole number from 1 to 20 (how many distinct approvers "
         "must approve), got 1.5"),
        (True, "field 'quorum': expected a whole number from 1 to 20 (how many distinct approvers "
         "must approve), got true"),
        (0, "field 'quorum' is 0; it must be from 1 to 20 (how many distinct approvers must "
         "approve)"),
        (21, "field 'quorum' is 21; it must be from 1 to 20 (how many distinct approvers must "
         "approve)"),
    ],
)  # fmt: skip
def test_a_quorum_that_is_not_a_whole_number_from_1_to_20_is_refused(
    given: object, problem: str
) -> None:
    assert problems_of([ask("dual", quorum=given)]) == [f"policy rule 'dual': {problem}"]


@pytest.mark.parametrize("decision", ["auto", "deny"])
def test_a_quorum_only_applies_to_ask_rules(decision: str) -> None:
    rule = {"id": "r", "operation": READ, "decision": decision, "quorum": 2}
    if decision == "deny":
        rule["reason"] = "no"

    assert problems_of([rule]) == [
        f"policy rule 'r': field 'quorum' only applies to decision 'ask', but this rule's "
        f"decision is {decision!r}"
    ]


def test_a_quorum_larger_than_the_approver_roles_is_refused() -> None:
    assert problems_of([ask("triple", quorum=3)]) == [
        "policy rule 'triple': field 'quorum' is 3, but its approver roles (finance) hold only "
        "2 distinct people, so it could never be reached; lower the quorum or add people to "
        "the roles"
    ]


def test_people_holding_several_approver_roles_count_once() -> None:
    table = load([ask("triple", approvers=["finance", "support"], quorum=3)])
    assert isinstance(table.rules[0], AskRule)

    [problem] = problems_of([ask("quad", approvers=["finance", "support"], quorum=4)])
    assert "approver roles (finance, support) hold only 3 distinct people" in problem


def test_a_role_with_a_user_group_is_counted_at_startup_not_at_load() -> None:
    table = load([ask("leads", approvers=["leads"], quorum=5)])

    assert isinstance(table.rules[0], AskRule)
    assert table.rules[0].quorum == 5


def test_shortfall_names_the_rule_when_the_groups_hold_too_few_people() -> None:
    members = {"leads": frozenset({"U0EDSGER", "U0BARBARA"})}

    assert shortfall("leads", 3, ("leads",), members) == (
        "policy rule 'leads': quorum 3 cannot be reached: its approver roles (leads) hold 2 "
        "distinct people now, user groups included; its proposals will expire unless more "
        "people join the roles or groups"
    )
    assert shortfall("leads", 2, ("leads",), members) is None


def _webhook(**options: object) -> webhook.WebhookOperation:
    return webhook.from_config(
        {
            "name": "crm.tag",
            "description": "Tag customers",
            "request_schema": {"type": "object", "properties": {}},
            "preview": {"title": "Tag"},
            "url": "http://127.0.0.1:9/tag",
            **options,
        },
        secret="s",
    )
