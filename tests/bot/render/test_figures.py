"""What approvers read shows figures in the operation's own terms: no raw field key and no value
in minor units, for the demo's refunds (USD and EUR) and a configured operation, through the
channel message, an edit, the outcome in the thread, a digest's thread, the Home tab and
``/countersign show``, the edit, reject and Show full modals, refusals, reminders, the superseded
reply, standing rules (modal, confirmation, list, the review of a call one approved) and
escalations; and the message's order.

The edit modal's money inputs take major units under a label naming the currency ("Amount
(USD)", "450.00"), and what it answers when a value cannot be read or the contract refuses it
(too many decimals, a negative amount, a choice it does not offer, more than is refundable)
speaks the same terms, as does a refusal of "Approve + allow similar…".

One place names fields and the proposal as they run, on purpose and apart: Show full's small
print ("amount_cents = 45000" under the labelled, formatted lines; then the proposal's id, its
operation, the agent's run id and the binding hash, for the record).

And no developer words anywhere else (:func:`assert_no_developer_words`): no binding hash,
idempotency key or correlation id, no operation name or raw rule key in a sentence, no
standing-rule or digest id, no count without thousands separators, no money figure in minor
units in a title, no "1 h 0 min" durations; once decided, the preview's facts say they were read
at preview."""

from __future__ import annotations

import json
import re
import tomllib
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.flow.standing import offer
from bot.render import digest_reply as render_digest_reply
from bot.render import edit as render_edit
from bot.render import escalation as render_escalation
from bot.render import full as render_full
from bot.render import home as render_home
from bot.render import proposal as render
from bot.render import reminders as render_reminders
from bot.render import standing as render_standing
from bot.render.blocks import section
from bot.render.clicks import already_decided_text, refusal_text
from bot.render.edit_form import edit_form, problem_errors, read_request
from bot.render.replies import expiry_reply, outcome_reply, rejection_reply
from contracts.base import Context, ContractViolation, FieldProblem, Operation
from contracts.formats import FieldFormat
from contracts.operations.refund import InMemoryLedger, Refund
from contracts.operations.webhook import from_config as webhook_from_config
from contracts.outcomes import NeedsReconciliation, Succeeded, TerminalFailure
from contracts.policy import Ask, PolicyTable
from contracts.registry import Registry
from contracts.standing import Grant, StandingPolicy, duration_choices, uses_choices
from store.escalations import Escalation, EscalationStatus
from store.proposals import Status
from store.standing import StandingRule
from tests.bot.render.test_proposal import NOW, make_proposal, mrkdwn_texts
from tests.store.escalation_conformance import new_escalation

DEMO = Path(__file__).parents[3] / "bot" / "sandbox" / "demo.toml"


class _NoNetwork:
    async def post(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("no network here")


CTX = Context(now=NOW, http=_NoNetwork(), correlation_id="corr-1")


def demo_refund() -> tuple[Refund, PolicyTable]:
    demo = tomllib.loads(DEMO.read_text(encoding="utf-8"))
    refund = Refund(InMemoryLedger.from_config(demo["operations"]["payments.refund"]["payments"]))
    rules = [rule for rule in demo["policy"] if rule["operation"] == "payments.refund"]
    table = PolicyTable.load(rules, registry=Registry([refund]), roles=demo["roles"])
    return refund, table


def campaign() -> Operation[Any, Any]:
    return webhook_from_config(
        {
            "name": "crm.send_campaign",
            "description": "Email a campaign",
            "url": "https://crm.example.com/send",
            "request_schema": {
                "type": "object",
                "required": ["recipients", "budget_cents"],
                "properties": {
                    "recipients": {"type": "integer"},
                    "budget_cents": {"type": "integer"},
                },
            },
            "preview": {"title": "Email {recipients} customers for {budget_cents}"},
            "fields": {
                "recipients": {"label": "Recipients", "kind": "count", "unit": "customers"},
                "budget_cents": {"label": "Budget", "kind": "money", "currency": "EUR"},
            },
        },
        secret="s" * 32,
    )


async def proposals_of(
    operation: Operation[Any, Any], table: PolicyTable, request: dict[str, Any]
) -> tuple[Any, Any]:
    """A proposal as classified, and the edit of it that changed one money figure."""
    resolved = await operation.resolve(operation.parse_request(request), CTX)
    arguments = operation.dump_arguments(resolved.arguments)
    decision = table.classify(
        operation=operation.name, agent="demo-agent", arguments=arguments, requester_roles=()
    )
    assert isinstance(decision, Ask), decision
    proposal = make_proposal(
        operation=operation.name,
        request=request,
        arguments=arguments,
        preview=resolved.preview,
        rule_id=decision.rule_id,
        policy_note=decision.explanation,
        quorum=2,
    )
    return proposal, decision


def every_text(operation: Operation[Any, Any], proposal: Any, edited: Any, result: Any) -> str:
    formats = operation.field_formats()
    done = make_proposal(
        **{
            **proposal.model_dump(),
            "status": Status.SUCCEEDED,
            "decided_by": "U0PRIYA",
            "decided_at": NOW,
            "outcome": Succeeded(result=result),
        }
    )
    correlation = f"{proposal.id}.35cead36"  # as bot/flow/executor.py makes them
    uncertain = done.model_copy(
        update={
            "status": Status.NEEDS_RECONCILIATION,
            "outcome": NeedsReconciliation(
                detail="the target did not answer in full within 1 second; it may have acted",
                correlation_id=correlation,
            ),
        }
    )
    failed = done.model_copy(
        update={
            "status": Status.FAILED,
            "outcome": TerminalFailure(
                detail="could not reach the target; the request was not sent",
                correlation_id=correlation,
            ),
        }
    )
    messages = [
        render.proposal_message(
            proposal, now=NOW, formats=formats, extend_by=timedelta(hours=1), allow_similar=True
        ),
        render.proposal_message(edited, now=NOW, previous=proposal, formats=formats),
        render.proposal_message(done, now=NOW, formats=formats),
        outcome_reply(done, formats),
        render.proposal_message(uncertain, now=NOW, formats=formats),
        outcome_reply(uncertain, formats),
        render.proposal_message(failed, now=NOW, formats=formats),
        outcome_reply(failed, formats),
        render_digest_reply.digest_reply(
            [(1, done, Status.SUCCEEDED)], formats_of=lambda _: formats
        ),
        render_digest_reply.digest_reply(
            [(1, uncertain, Status.NEEDS_RECONCILIATION), (2, failed, Status.FAILED)],
            formats_of=lambda _: formats,
        ),
        render_home.home_view(
            waiting=[proposal, edited],
            owned=[],
            decisions=[done],
            now=NOW,
            previous={edited.id: proposal},
            formats_of=lambda _: formats,
        ),
        {
            "blocks": render_home.proposal_detail_blocks(
                edited, [], now=NOW, previous=proposal, formats=formats
            )
        },
    ]
    return "\n".join(text for message in messages for text in shown_texts(message))


#: A duration as a developer writes it ("1 h 0 min", "30 min", "2 d"), never as people say it.
TERSE_DURATION = re.compile(r"\b[0-9]+ (?:h|min|d|s)\b")
#: Ids that belong in the audit log, not in a sentence: standing rules', digests'.
INTERNAL_ID = re.compile(r"\b(?:sr|dg)_[0-9a-z]{4,}")


def assert_no_developer_words(
    text: str, operation: Operation[Any, Any], proposal: Any, values: dict[str, Any]
) -> None:
    """What a developer reads in logs, never an approver in Slack (Show full's small print
    aside): hashes, keys and correlation ids, the operation's name or a raw rule key in a
    sentence, internal ids, counts without separators and terse durations."""
    lowered = text.lower()
    assert "binding hash" not in lowered and proposal.binding_hash[:12] not in text
    assert "idempotency key" not in lowered, "an idempotency key named"
    assert "correlation id" not in lowered and ".35cead36" not in text, "a correlation id shown"
    assert "run id" not in lowered and proposal.run_id not in text, "the agent's run id shown"
    assert operation.name not in text, f"operation name {operation.name!r} in a sentence"
    rule = proposal.rule_id
    for raw in (f"`{rule}`", f"rule '{rule}'", f"rule {rule} ", f"rule *{rule}* matches"):
        assert raw not in text, f"raw rule key shown as {raw!r}"
    assert not INTERNAL_ID.search(text), f"an internal id shown: {INTERNAL_ID.search(text)}"
    assert not TERSE_DURATION.search(text), f"a terse duration: {TERSE_DURATION.search(text)}"
    for name, fmt in operation.field_formats().items():
        value = values.get(name)
        if fmt.kind == "count" and isinstance(value, int) and value >= 1000:
            bare = re.search(rf"(?<![0-9,.]){value}(?![0-9,.])", text)
            assert bare is None, f"{fmt.label} {value} shown without thousands separators"


def assert_in_own_terms(text: str, operation: Operation[Any, Any], values: dict[str, Any]) -> None:
    formats = operation.field_formats()
    for name, fmt in formats.items():
        if "_" in name:  # a one-word key ("customer") reads as a word
            assert name not in text, f"raw field key {name!r} shown"
        value = values.get(name)
        if fmt.kind == "money" and isinstance(value, int):
            assert str(value) not in text.replace(",", ""), f"{name} shown in minor units"
        for key in fmt.labels:  # a choice's keys ("requested_by_customer") by their labels
            if "_" in key:
                assert key not in text, f"raw choice {key!r} of {name!r} shown"


@pytest.mark.parametrize(("payment", "amount"), [("pay_1002", 45000), ("pay_1005", 8900)])
async def test_a_demo_refund_reads_in_its_currency_everywhere(payment: str, amount: int) -> None:
    refund, table = demo_refund()
    request = {"payment_id": payment, "amount_cents": amount, "reason": "duplicate"}
    proposal, _ = await proposals_of(refund, table, request)
    edited, _ = await proposals_of(refund, table, {**request, "amount_cents": amount - 1000})
    edited = edited.model_copy(
        update={"id": "cs_edit00000001", "supersedes": proposal.id, "edited_by": "U0MARCUS"}
    )
    result = {
        "refund_id": "re_000001",
        "payment_id": payment,
        "amount_cents": amount,
        "currency": proposal.arguments["currency"],
    }

    text = every_text(refund, proposal, edited, result)

    assert_no_developer_words(text, refund, proposal, proposal.arguments)
    assert_in_own_terms(text, refund, proposal.arguments)
    assert_in_own_terms(text, refund, edited.arguments)
    currency = proposal.arguments["currency"]
    shown = f"{amount / 100:,.2f} {currency}"
    assert f"Amount {shown} ≤ " in text
    assert f"*Amount*\n{shown}" in text  # the outcome in the thread
    assert f"*Amount*: `{shown}` → `{(amount - 1000) / 100:,.2f} {currency}`" in text


async def test_a_configured_operation_reads_in_its_declared_terms() -> None:
    operation = campaign()
    table = PolicyTable.load(
        [
            {
                "id": "campaigns",
                "operation": "crm.send_campaign",
                "when": [{"field": "budget_cents", "lte": "5000.00 EUR"}],
                "decision": "ask",
                "approvers": ["marketing"],
                "channel": "C0MARKETING",
            }
        ],
        registry=Registry([operation]),
        roles={"marketing": ["U0SAM"]},
    )
    request = {"recipients": 1200, "budget_cents": 250000}
    proposal, decision = await proposals_of(operation, table, request)
    edited, _ = await proposals_of(operation, table, {**request, "recipients": 300})
    edited = edited.model_copy(update={"id": "cs_edit00000001", "supersedes": proposal.id})

    text = every_text(operation, proposal, edited, {"recipients": 1200, "budget_cents": 250000})

    assert_no_developer_words(text, operation, proposal, request)
    assert "Email 1,200 customers for 2,500.00 EUR" in text  # the title, in its terms
    assert decision.explanation == "rule 'campaigns': Budget 2,500.00 EUR ≤ 5,000.00 EUR limit"
    assert_in_own_terms(text, operation, request)
    assert "*Recipients*: `1,200 customers` → `300 customers`" in text
    assert "*Budget*\n2,500.00 EUR" in text


def test_the_message_reads_verdict_title_values_then_the_agents_words() -> None:
    proposal = make_proposal(
        quorum=2,
        rule_id="refunds",
        policy_note="rule 'refunds': Amount 450.00 USD ≤ 2,000.00 USD limit",
    )

    blocks = render.proposal_message(proposal, now=NOW)["blocks"]
    texts = [json.dumps(block, ensure_ascii=False) for block in blocks]

    assert blocks[1]["type"] == "header"
    verdict = blocks[0]["text"]["text"].split("\n")
    assert verdict[0] == ":red_circle: Irreversible (money or external effect)"
    assert verdict[1] == (
        "*Why you are asked:* Amount 450.00 USD ≤ 2,000.00 USD limit of rule *refunds*"
    )
    assert verdict[2].startswith(":busts_in_silhouette: *0 of 2 approved*")
    assert verdict[-1].startswith(":hourglass_flowing_sand: Expires <!date^")
    assert verdict[-1].endswith("(in 65 minutes)")
    values = next(n for n, text in enumerate(texts) if "120.00 USD" in text and n > 1)
    words = next(n for n, text in enumerate(texts) if "Agent's explanation" in text)
    assert 1 < values < words


def test_times_read_as_times_of_their_own() -> None:
    rejected = make_proposal(status=Status.REJECTED, decided_by="U0PRIYA", decided_at=NOW)
    expired = make_proposal(status=Status.EXPIRED, expires_at=NOW - timedelta(minutes=1))

    texts = [
        *mrkdwn_texts(render.proposal_message(rejected, now=NOW)),
        *mrkdwn_texts(rejection_reply(rejected)),
        *mrkdwn_texts(expiry_reply(expired)),
    ]

    joined = "\n".join(texts)
    assert "<@U0PRIYA> <!date^1714564800^{date_short_pretty} at {time}|2024-05-01 12:00 UTC>" in (
        joined
    )
    assert " at <!date^" not in joined  # never "at today at"
    assert "*Expired* <!date^" in joined


def test_a_field_called_reason_is_the_refunds_own_not_the_agents() -> None:
    labels = [field.label for field in Refund(InMemoryLedger()).field_formats().values()]
    assert "Refund reason" in labels
    assert "Reason" not in labels


def test_formats_of_no_operation_show_the_field_name_as_words() -> None:
    reply = outcome_reply(
        make_proposal(
            status=Status.SUCCEEDED,
            decided_by="U0PRIYA",
            decided_at=NOW,
            outcome=Succeeded(result={"export_id": "ex_1"}),
        ),
        {"unused": FieldFormat(label="Unused")},
    )
    assert "*Export id*\nex_1" in mrkdwn_texts(reply)


# --- modals, refusals, reminders, standing rules and escalations ----------------------------------

SR = "sr_0123456789abcdef0123456789abcdef"
#: an ISO time as the store writes one, which a person should never read
ISO_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}")
SMALL_PRINT = "As the operation receives them (JSON):"


def shown_texts(view: dict[str, Any]) -> list[str]:
    """Every text a person reads in a message or view: mrkdwn and plain text alike."""
    texts: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") in ("mrkdwn", "plain_text"):
                texts.append(node["text"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(view.get("blocks", []))
    return texts


def small_print_apart(view: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """Show full without its small print, and the small print."""
    blocks, small = [], []
    for block in view["blocks"]:
        texts = shown_texts({"blocks": [block]})
        if block["type"] == "context" and (small or texts[0].startswith(SMALL_PRINT)):
            small += texts
        else:
            if block["type"] == "divider":
                small.append("")  # the next proposal's small print starts afresh
            blocks.append(block)
    return {**view, "blocks": blocks}, "\n".join(small)


def every_other_text(
    operation: Operation[Any, Any], proposal: Any, edited: Any, standing: StandingPolicy
) -> tuple[str, str]:
    """Every text but the channel message's family, and Show full's small print."""
    formats = operation.field_formats()
    arguments = proposal.arguments
    ceiling = arguments[standing.ceiling]
    grant = Grant(
        operation=operation.name,
        agent=proposal.agent,
        rule_id=proposal.rule_id,
        ceiling_field=standing.ceiling,
        ceiling=ceiling,
        arguments={k: v for k, v in arguments.items() if k != standing.ceiling},
        varying=standing.varying,
        max_uses=5,
        created_by="U0ADA",
        created_from=proposal.id,
        created_at=NOW,
        expires_at=NOW + timedelta(days=1),
    )
    rule = StandingRule(**grant.model_dump(), id=SR, uses=1)
    note = (
        f"standing rule {SR}, granted by U0ADA until 2024-05-02T12:00:00+00:00 under rule "
        f"'{proposal.rule_id}': {formats[standing.ceiling].label} (see the operation), the other "
        "arguments as approved; use 2 of 5"
    )
    auto = proposal.model_copy(
        update={
            "decision": "auto",
            "standing_rule_id": SR,
            "policy_note": note,
            "status": Status.SUCCEEDED,
            "outcome": Succeeded(result={}),
        }
    )
    superseded = proposal.model_copy(
        update={
            "status": Status.SUPERSEDED,
            "superseded_by": edited.id,
            "decided_by": "U0MARCUS",
            "decided_at": NOW,
        }
    )
    full, small = small_print_apart(render_full.full_view(proposal, formats))
    escalation = Escalation.model_validate(
        {
            **new_escalation(NOW).model_dump(),
            "status": EscalationStatus.OPEN,
            "announced_at": NOW,
            "updated_at": NOW,
        }
    )
    form = edit_form(operation.request_schema(), proposal.request, formats, arguments)
    no_ceiling = proposal.model_copy(
        update={
            "quorum": 1,
            "arguments": {k: v for k, v in arguments.items() if k != ceiling_of(standing)},
        }
    )
    refused = offer(policy_of(operation, standing, proposal), no_ceiling, formats)
    assert isinstance(refused, str)
    views = [
        render_edit.edit_modal(proposal, form, formats),
        {"blocks": [section(text) for text in modal_errors(form, arguments).values()]},
        {"blocks": [section(refusal_text(refused))]},
        render.reject_modal(proposal),
        full,
        render_edit.superseded_reply(superseded, edited, link=None, formats=formats),
        {"blocks": [section(refusal_text(f"it expired at {NOW.isoformat()}"))]},
        {"blocks": [section(already_decided_text(auto))]},
        render_reminders.reminder_reply(
            proposal, now=NOW, approvers=["U0SAM"], extend_by=timedelta(minutes=30)
        ),
        render_standing.standing_modal(
            proposal, standing, duration_choices(standing.max), uses_choices(5), formats
        ),
        {"blocks": [section(render_standing.granted_text(SR, grant, formats))]},
        {
            "blocks": render_standing.standing_list_blocks(
                [rule], now=NOW, formats_of=lambda _: formats
            )
        },
        render_standing.review_message(auto),
        render_escalation.escalation_message(escalation),
        render_escalation.hand_back_modal(escalation),
    ]
    text = "\n".join(t for view in views for t in shown_texts(view))
    assert_no_developer_words(text, operation, proposal, proposal.arguments)
    for field in form.fields:  # no input's hint names its field as the API does
        assert f"Field {field.name}." not in text
    return text, small


def ceiling_of(standing: StandingPolicy) -> str:
    return standing.ceiling


def policy_of(
    operation: Operation[Any, Any], standing: StandingPolicy, proposal: Any
) -> PolicyTable:
    """A table whose rule asks for ``proposal``'s operation and allows standing rules."""
    rule = {
        "id": proposal.rule_id,
        "operation": operation.name,
        "decision": "ask",
        "approvers": ["finance"],
        "channel": "C0FINANCE",
        "standing": {
            "max": "7d",
            "admins": list(standing.admins),
            "ceiling": standing.ceiling,
            "vary": list(standing.vary),
        },
    }
    roles = {"finance": ["U0ADA"], **{role: ["U0ADA"] for role in standing.admins}}
    return PolicyTable.load([rule], registry=Registry([operation]), roles=roles)


def modal_errors(form: Any, arguments: dict[str, Any]) -> dict[str, str]:
    """What the edit modal answers under its inputs: a money amount with one decimal too many,
    a negative one, a choice it does not offer, and a contract's problem quoting a money value
    as the request holds it (contracts/base.py: "(got 45000)")."""
    errors: dict[str, str] = {}
    for field in form.fields:
        if field.kind == "money":
            for typed in ("1.001", "-5"):
                state = {field.block_id: {"value": {"type": "number_input", "value": typed}}}
                _, found = read_request(form, {}, state)
                errors[f"{field.block_id}{typed}"] = found[field.block_id]
            problem = FieldProblem(
                field=f"request.{field.name}",
                message=f"Input should be less than 100 (got {arguments[field.name]})",
            )
            errors[f"{field.block_id}:contract"] = problem_errors(form, [problem])[field.block_id]
        if field.kind == "choice":
            state = {
                field.block_id: {
                    "value": {"type": "static_select", "selected_option": {"value": "because"}}
                }
            }
            _, found = read_request(form, {}, state)
            errors[field.block_id] = found[field.block_id]
    return errors


@pytest.mark.parametrize(("payment", "amount"), [("pay_1002", 45000), ("pay_1005", 8900)])
async def test_modals_refusals_reminders_standing_rules_and_escalations_in_own_terms(
    payment: str, amount: int
) -> None:
    refund, table = demo_refund()
    request = {"payment_id": payment, "amount_cents": amount, "reason": "duplicate"}
    proposal, _ = await proposals_of(refund, table, request)
    edited, _ = await proposals_of(refund, table, {**request, "amount_cents": amount - 1000})
    edited = edited.model_copy(update={"id": "cs_edit00000001", "supersedes": proposal.id})
    standing = StandingPolicy(
        max=timedelta(days=7), admins=("finance-admins",), ceiling="amount_cents"
    )

    text, small = every_other_text(refund, proposal, edited, standing)
    form = edit_form(refund.request_schema(), request, refund.field_formats(), proposal.arguments)
    refundable = proposal.arguments["refundable_cents_at_preview"]
    with pytest.raises(ContractViolation) as too_much:  # the refund's own validation error
        await refund.resolve(refund.parse_request({**request, "amount_cents": refundable + 1}), CTX)
    text += "\n".join(problem_errors(form, too_much.value.problems).values())

    assert_in_own_terms(text, refund, proposal.arguments)
    assert_in_own_terms(text, refund, {"amount_cents": refundable + 1})
    assert not ISO_TIME.search(text), "an ISO time shown"
    currency = proposal.arguments["currency"]
    shown = f"{amount / 100:,.2f} {currency}"
    assert f"Amount: {shown}" in text  # Show full, labelled
    assert f"amount_cents = {amount}" in small  # and as it runs, in small print
    assert f"payment_id = {json.dumps(payment)}" not in small  # shown as is above: not twice
    assert "payment_id = (as above)" in small
    assert f"Amount ({currency})" in text  # the edit modal's money input
    assert f"An amount in {currency}, with up to 2 decimals." in text
    assert f"Amount ({currency}): expected an amount in {currency} with at most 2 decimals" in text
    assert f"Amount ({currency}): expected an amount in {currency} that is not negative" in text
    assert f"(got {shown})" in text  # a contract's problem quoting the amount
    most = f"{refundable / 100:,.2f} {currency}"
    assert f"Amount ({currency}): {(refundable + 1) / 100:,.2f} {currency} is more than" in text
    assert f"expected at most {most}" in text
    assert "Refund reason: expected one of Requested by customer, Duplicate payment, " in text
    assert "its Amount is not a number to bound similar calls by" in text
    assert f"*Amount* up to `{shown}`" in text  # the standing rule's ceiling
    assert "granted by <@U0ADA> until <!date^" in text  # the review of a covered call
    assert "Countersign did not do that: it expired <!date^" in text
    assert f"*Amount*: `{shown}` → `{(amount - 1000) / 100:,.2f} {currency}`" in text
    assert "Failed turns `4` · Error codes `E500, E500`" in text  # an escalation's signals


async def test_a_configured_operations_modals_and_standing_rules_read_in_its_terms() -> None:
    operation = campaign()
    table = PolicyTable.load(
        [
            {
                "id": "campaigns",
                "operation": "crm.send_campaign",
                "when": [{"field": "budget_cents", "lte": "5000.00 EUR"}],
                "decision": "ask",
                "approvers": ["marketing"],
                "channel": "C0MARKETING",
            }
        ],
        registry=Registry([operation]),
        roles={"marketing": ["U0SAM"]},
    )
    request = {"recipients": 1200, "budget_cents": 250000}
    proposal, _ = await proposals_of(operation, table, request)
    edited, _ = await proposals_of(operation, table, {**request, "budget_cents": 200000})
    edited = edited.model_copy(update={"id": "cs_edit00000001", "supersedes": proposal.id})
    standing = StandingPolicy(
        max=timedelta(days=7), admins=("marketing",), ceiling="budget_cents", vary=("recipients",)
    )

    text, small = every_other_text(operation, proposal, edited, standing)

    assert_in_own_terms(text, operation, request)
    assert not ISO_TIME.search(text), "an ISO time shown"
    assert "Budget: 2,500.00 EUR" in text and "Recipients: 1,200 customers" in text
    assert "budget_cents = 250000" in small and "recipients = 1200" in small
    assert "*Budget* up to `2,500.00 EUR`" in text
    assert "everything else as approved here (only *Recipients* may differ)" in text
    assert "*Budget*: `2,500.00 EUR` → `2,000.00 EUR`" in text


async def test_once_decided_the_previews_facts_say_they_were_read_at_preview() -> None:
    refund, table = demo_refund()
    request = {"payment_id": "pay_1002", "amount_cents": 45000, "reason": "duplicate"}
    pending, _ = await proposals_of(refund, table, request)
    done = pending.model_copy(
        update={
            "status": Status.SUCCEEDED,
            "decided_by": "U0PRIYA",
            "decided_at": NOW,
            "outcome": Succeeded(result={}),
        }
    )

    asking = "\n".join(mrkdwn_texts(render.proposal_message(pending, now=NOW)))
    decided = "\n".join(
        [
            *mrkdwn_texts(render.proposal_message(done, now=NOW)),
            *mrkdwn_texts({"blocks": render_home.proposal_detail_blocks(done, [], now=NOW)}),
        ]
    )

    assert "*Refundable now*\n1,200.00 USD" in asking
    assert "Refundable now" not in decided
    assert decided.count("*Refundable at preview*\n1,200.00 USD") == 2
    assert decided.count("The values above were read at preview, <!date^") == 2
    assert "*Customer*\ncus_grace" in decided  # a value the proposal holds reads as it is
    assert "read at preview" not in asking


@pytest.mark.parametrize(
    "sentence",
    [
        "Operation `crm.send_campaign` · id `cs_2v6qk3bn7` · binding hash `af240e6c16d8`",
        "Correlation id `cs_2v6qk3bn7xw4yq5fz2m3a6lhpe.35cead36`",
        "Retry (same idempotency key)",
        "Requested for <@U0DANA> (the agent's run id `run-42`)",
        "*Why you are asked:* rule *campaigns* matches every crm.send_campaign",
        "policy rule `campaigns` would ask for",
        "Approved, and standing rule `sr_997a01` allows similar calls",
        "Operation · digest `dg_4f2a9c01`",
        "Extend by 1 h 0 min",
        "This expires in 30 min",
        "Email 1200 customers",
    ],
)
def test_the_check_for_developer_words_catches_each_one_the_approvers_read(sentence: str) -> None:
    """Each sentence approvers were shown before, alone, fails the check."""
    operation = campaign()
    proposal = make_proposal(operation="crm.send_campaign", rule_id="campaigns")
    with pytest.raises(AssertionError):
        assert_no_developer_words(sentence, operation, proposal, {"recipients": 1200})
    assert_no_developer_words(  # and the same facts in the approver's terms pass
        "Email 1,200 customers for 2,500.00 EUR · every request of this kind is asked for"
        " (rule *campaigns*) · Extend by 1 hour · Reference `cs_2v6qk3bn7xw4yq5fz2m3a6lhpe`",
        operation,
        proposal,
        {"recipients": 1200},
    )
