"""The edit modal and the edit form: built from an operation's request schema, prefilled from the
stored request, valid for Slack, and read back into a request with errors naming the field."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from slack_sdk.models.blocks import Block
from slack_sdk.models.views import View

from bot.render import proposal as render
from bot.render.actions import EDIT_VIEW
from bot.render.edit import EDIT_NOTE, edit_modal, superseded_reply
from bot.render.edit_form import (
    MAX_INPUTS,
    EditForm,
    currency_errors,
    edit_form,
    problem_errors,
    read_request,
)
from contracts.base import FieldProblem, Preview
from contracts.operations.refund import InMemoryLedger, Refund, RefundRequest
from store.proposals import Proposal, Status

NOW = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
PROPOSAL_ID = "cs_2v6qk3bn7xw4yq5fz2m3a6lhpe"
EDIT_ID = "cs_7jq4m2xw5hb6kf3ya2npz4drte"

#: A schema with one field of every kind the form knows.
SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["segment", "count"],
    "properties": {
        "segment": {"type": "string", "description": "Which customers."},
        "count": {"type": "integer", "minimum": 1},
        "ratio": {"type": ["number", "null"]},
        "urgent": {"type": "boolean"},
        "channel": {"enum": ["email", "sms"]},
        "filters": {"type": "object"},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
}
STORED: dict[str, Any] = {
    "segment": "churn-risk",
    "count": 1200,
    "ratio": 0.0000001,
    "urgent": False,
    "channel": "sms",
    "filters": {"country": "NL"},
}


def proposal(request: Any = None, **changes: Any) -> Proposal:
    values: dict[str, Any] = {
        "id": PROPOSAL_ID,
        "agent": "billing-bot",
        "submission_key": "key-1",
        "submission_fingerprint": "f" * 64,
        "requested_by": "U0REQUESTER",
        "operation": "crm.send",
        "request": STORED if request is None else request,
        "arguments": {},
        "preview": Preview(title="Email <!channel> 1200 customers"),
        "binding_hash": "b" * 64,
        "rule_id": "campaigns",
        "decision": "ask",
        "policy_note": "always asked",
        "approver_roles": ("finance",),
        "channel": "C0CAMPAIGNS",
        "status": Status.PENDING,
        "created_at": NOW,
        "updated_at": NOW,
    }
    values.update(changes)
    return Proposal(**values)


def inputs(view: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {block["block_id"]: block for block in view["blocks"] if block["type"] == "input"}


def state(**by_name: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f"request.{name}": {"value": value} for name, value in by_name.items()}


def text(value: str | None) -> dict[str, Any]:
    return {"type": "plain_text_input", "value": value}


def option(value: str | None) -> dict[str, Any]:
    chosen = {"text": {"type": "plain_text", "text": value}, "value": value}
    return {"type": "static_select", "selected_option": None if value is None else chosen}


# --- the modal ----------------------------------------------------------------------------------


def test_each_kind_of_field_gets_its_input_prefilled_from_the_stored_request() -> None:
    view = edit_modal(proposal(), edit_form(SCHEMA, STORED))
    found = inputs(view)

    assert list(found) == [f"request.{name}" for name in SCHEMA["properties"]]
    segment = found["request.segment"]
    assert segment["element"] == {
        "type": "plain_text_input",
        "action_id": "value",
        "initial_value": "churn-risk",
        "multiline": False,
    }
    assert segment["hint"]["text"] == "Which customers."
    assert segment["label"]["text"] == "Segment"
    assert found["request.count"]["element"] == {
        "type": "number_input",
        "action_id": "value",
        "is_decimal_allowed": False,
        "initial_value": "1200",
    }
    ratio = found["request.ratio"]["element"]
    assert (ratio["is_decimal_allowed"], ratio["initial_value"]) == (True, "0.0000001")
    urgent = found["request.urgent"]["element"]
    assert urgent["type"] == "static_select"
    assert [o["value"] for o in urgent["options"]] == ["true", "false"]
    assert urgent["initial_option"]["value"] == "false"
    assert found["request.channel"]["element"]["initial_option"]["value"] == "sms"
    filters = found["request.filters"]["element"]
    assert filters["multiline"] is True
    assert json.loads(filters["initial_value"]) == {"country": "NL"}
    assert "initial_value" not in found["request.tags"]["element"]  # not set: left empty


def test_required_and_optional_follow_the_schema() -> None:
    found = inputs(edit_modal(proposal(), edit_form(SCHEMA, STORED)))

    assert {name for name, block in found.items() if not block["optional"]} == {
        "request.segment",
        "request.count",
    }


def test_the_modal_says_the_edit_is_checked_and_classified_again_and_carries_only_the_id() -> None:
    view = edit_modal(proposal(), edit_form(SCHEMA, STORED))

    assert view["callback_id"] == EDIT_VIEW
    assert view["private_metadata"] == PROPOSAL_ID
    shown = json.dumps(view["blocks"])
    assert EDIT_NOTE in shown
    assert "classified by the policy again" in EDIT_NOTE
    assert "&lt;!channel&gt;" in shown and "<!channel>" not in shown


def test_the_modal_is_valid_block_kit() -> None:
    view = edit_modal(proposal(), edit_form(SCHEMA, STORED))

    View(**view).validate_json()
    for block in view["blocks"]:
        parsed = Block.parse(block)
        assert parsed is not None
        parsed.validate_json()


def test_the_refund_requests_schema_becomes_text_number_and_choice() -> None:
    schema = RefundRequest.model_json_schema()
    form = edit_form(schema, {"payment_id": "pay_1002", "amount_cents": 5000})

    kinds = {field.name: (field.kind, field.required) for field in form.fields}

    assert kinds == {
        "payment_id": ("string", True),
        "amount_cents": ("integer", False),  # int | None: the null is an empty input
        "reason": ("choice", False),
    }
    reason = next(f for f in form.fields if f.name == "reason")
    assert reason.choices == ("requested_by_customer", "duplicate", "fraudulent")


def test_a_stored_value_the_schema_does_not_describe_is_shown_and_kept_as_json() -> None:
    form = edit_form(SCHEMA, {**STORED, "count": "many", "extra": [1, 2]})
    kinds = {field.name: field.kind for field in form.fields}

    assert (kinds["count"], kinds["extra"]) == ("json", "json")
    request, errors = read_request(form, {**STORED, "count": "many", "extra": [1, 2]}, {})
    assert errors == {}
    assert (request["count"], request["extra"]) == ("many", [1, 2])


def test_a_request_without_fields_gets_a_modal_without_submit() -> None:
    view = edit_modal(proposal(request={}), edit_form({"type": "object"}, {}))

    assert "submit" not in view
    assert "no fields to edit" in json.dumps(view["blocks"])
    View(**view).validate_json()


def test_fields_beyond_the_limit_are_named_and_kept_as_they_are() -> None:
    names = [f"f{i:03d}" for i in range(MAX_INPUTS + 5)]
    schema = {"type": "object", "properties": {name: {"type": "string"} for name in names}}
    stored: dict[str, Any] = {name: name.upper() for name in names}
    form = edit_form(schema, stored)

    view = edit_modal(proposal(request=stored), form)

    assert len(inputs(view)) == MAX_INPUTS
    assert form.kept == tuple(names[MAX_INPUTS:])
    assert names[-1] in json.dumps(view["blocks"])
    request, _ = read_request(form, stored, {})
    assert request == stored
    View(**view).validate_json()


# --- reading the submitted form back ------------------------------------------------------------


def test_submitted_values_become_a_typed_request() -> None:
    form = edit_form(SCHEMA, STORED)

    request, errors = read_request(
        form,
        STORED,
        state(
            segment=text("dormant-90"),
            count={"type": "number_input", "value": "300"},
            ratio={"type": "number_input", "value": "0.25"},
            urgent=option("true"),
            channel=option("email"),
            filters=text('{"country": "BE", "vip": true}'),
            tags=text('["a", "b"]'),
        ),
    )

    assert errors == {}
    assert request == {
        "segment": "dormant-90",
        "count": 300,
        "ratio": 0.25,
        "urgent": True,
        "channel": "email",
        "filters": {"country": "BE", "vip": True},
        "tags": ["a", "b"],
    }


def test_an_emptied_optional_input_removes_the_field_and_an_absent_one_keeps_it() -> None:
    form = edit_form(SCHEMA, STORED)

    request, errors = read_request(form, STORED, state(channel=option(None), filters=text("")))

    assert errors == {}
    assert "channel" not in request and "filters" not in request
    assert request["segment"] == "churn-risk"  # its input was not submitted: kept


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("count", {"type": "number_input", "value": "12.5"}, "Count: expected a whole number"),
        ("ratio", {"type": "number_input", "value": "abc"}, "Ratio: expected a number"),
        ("urgent", option("maybe"), "Urgent: expected true or false, got 'maybe'"),
        ("channel", option("fax"), "Channel: expected one of email, sms, got 'fax'"),
        ("filters", text("{country: NL}"), "Filters: expected JSON (Expecting property name"),
        ("tags", text("[NaN]"), "Tags: expected JSON (NaN is not a JSON value"),
        # valid JSON, but read as infinity, which no proposal can hold (hashed, stored)
        ("tags", text("[1e999]"), "Tags: expected JSON (1e999 is past the range of a finite"),
    ],
)
def test_a_value_that_cannot_be_read_is_an_error_naming_the_field_and_what_was_expected(
    name: str, value: dict[str, Any], expected: str
) -> None:
    form = edit_form(SCHEMA, STORED)

    _, errors = read_request(form, STORED, state(**{name: value}))

    assert list(errors) == [f"request.{name}"]
    assert errors[f"request.{name}"].startswith(expected)


def test_contract_problems_land_under_the_input_they_name() -> None:
    form = edit_form(SCHEMA, STORED)
    problems = [
        FieldProblem(field="request.count", message="Input should be greater than 0 (got -1)"),
        FieldProblem(field="request.filters.country", message="unknown country"),
        FieldProblem(field="request", message="something about the whole request"),
    ]

    errors = problem_errors(form, problems)

    assert errors == {
        "request.count": "Count: Input should be greater than 0 (got -1)",
        "request.filters": "Filters.country: unknown country",
        "request.segment": "request: something about the whole request",
    }
    assert problem_errors(EditForm(fields=()), problems) == {}


# --- money, typed in major units ------------------------------------------------------------

REFUND_FORMATS = Refund(InMemoryLedger()).field_formats()
#: A refund's frozen arguments: the currency comes from the payment, not the request.
REFUND_ARGUMENTS: dict[str, Any] = {
    "payment_id": "pay_1002",
    "amount_cents": 45000,
    "currency": "USD",
    "customer": "cus_grace",
    "reason": "requested_by_customer",
    "refundable_cents_at_preview": 120000,
}


def refund_form(currency: str = "USD", amount: int = 45000) -> EditForm:
    request = {"payment_id": "pay_1002", "amount_cents": amount}
    arguments = {**REFUND_ARGUMENTS, "amount_cents": amount, "currency": currency}
    return edit_form(RefundRequest.model_json_schema(), request, REFUND_FORMATS, arguments)


def money(value: str) -> dict[str, Any]:
    return {"request.amount_cents": {"value": {"type": "number_input", "value": value}}}


def test_a_refund_amount_is_edited_in_its_currency_not_in_cents() -> None:
    form = refund_form()
    view = edit_modal(proposal(request={"payment_id": "pay_1002", "amount_cents": 45000}), form)
    amount = inputs(view)["request.amount_cents"]

    assert amount["label"]["text"] == "Amount (USD)"
    assert amount["element"] == {
        "type": "number_input",
        "action_id": "value",
        "is_decimal_allowed": True,
        "min_value": "0",
        "initial_value": "450.00",
    }
    hint = amount["hint"]["text"]
    assert hint.startswith("An amount in USD, with up to 2 decimals.")
    assert "cents" not in hint and "amount_cents" not in hint
    View(**view).validate_json()


@pytest.mark.parametrize(
    ("currency", "amount", "shown", "decimals"),
    [("USD", 45000, "450.00", True), ("JPY", 45000, "45000", False), ("KWD", 1234, "1.234", True)],
)
def test_a_money_input_shows_as_many_decimals_as_its_currency_has(
    currency: str, amount: int, shown: str, decimals: bool
) -> None:
    view = edit_modal(proposal(), refund_form(currency, amount))
    element = inputs(view)["request.amount_cents"]["element"]

    assert (element["initial_value"], element["is_decimal_allowed"]) == (shown, decimals)


@pytest.mark.parametrize(
    ("currency", "typed", "cents"),
    [
        ("USD", "300", 30000),
        ("USD", "19.99", 1999),  # exactly: 19.99 * 100 is 1998.9999999999998 in floating point
        ("USD", "0.1", 10),
        ("USD", "450.00", 45000),
        ("JPY", "4500", 4500),
        ("KWD", "1.005", 1005),
    ],
)
def test_an_amount_typed_in_major_units_is_read_back_exactly_in_minor_units(
    currency: str, typed: str, cents: int
) -> None:
    request, errors = read_request(refund_form(currency), {"payment_id": "pay_1002"}, money(typed))

    assert errors == {}
    assert request == {"payment_id": "pay_1002", "amount_cents": cents}


@pytest.mark.parametrize(
    ("currency", "typed", "expected"),
    [
        # what parse_major_units refuses is tested in tests/contracts/test_formats.py; here,
        # that its words reach the input, after the input's label
        ("USD", "450.001", "Amount (USD): expected an amount in USD with at most 2 decimals"),
        ("JPY", "abc", "Amount (JPY): expected an amount in JPY such as 450"),
    ],
)
def test_a_bad_amount_is_an_error_under_its_input_naming_the_label_and_what_was_expected(
    currency: str, typed: str, expected: str
) -> None:
    _, errors = read_request(refund_form(currency), {"payment_id": "pay_1002"}, money(typed))

    assert list(errors) == ["request.amount_cents"]
    assert errors["request.amount_cents"].startswith(expected)


def test_money_of_an_unknown_currency_stays_a_whole_number_of_minor_units() -> None:
    form = edit_form(
        RefundRequest.model_json_schema(),
        {"payment_id": "p", "amount_cents": 45000},
        REFUND_FORMATS,
    )
    amount = next(field for field in form.fields if field.name == "amount_cents")
    view = edit_modal(proposal(request={"amount_cents": 45000}), form, REFUND_FORMATS)

    assert (amount.kind, amount.currency) == ("integer", None)
    assert inputs(view)["request.amount_cents"]["element"]["initial_value"] == "45000"
    assert "In minor units (cents)" in inputs(view)["request.amount_cents"]["hint"]["text"]


def test_an_amount_typed_in_one_currency_is_refused_when_the_edit_is_in_another() -> None:
    form = refund_form("USD")
    typed = {"payment_id": "pay_1005", "amount_cents": 8900}

    errors = currency_errors(form, typed, {**REFUND_ARGUMENTS, "currency": "EUR"}, REFUND_FORMATS)

    assert errors == {
        "request.amount_cents": "Amount (USD): the amount was typed in USD, but the edit is in "
        "EUR; change one at a time (cancel, and edit again)"
    }
    assert currency_errors(form, typed, REFUND_ARGUMENTS, REFUND_FORMATS) == {}
    assert currency_errors(form, {"payment_id": "pay_1005"}, {}, REFUND_FORMATS) == {}


def test_a_choice_error_names_the_choices_by_their_labels() -> None:
    form = refund_form()
    state = {
        "request.reason": {
            "value": {"type": "static_select", "selected_option": {"value": "because"}}
        }
    }

    _, errors = read_request(form, {}, state)

    assert errors == {
        "request.reason": "Refund reason: expected one of Requested by customer, Duplicate "
        "payment, Fraudulent payment, got 'because'"
    }


def test_a_contract_problem_quoting_an_amount_shows_it_as_money() -> None:
    problem = FieldProblem(
        field="request.amount_cents", message="over the payment's limit (got 45000)"
    )
    count = FieldProblem(field="request.count", message="expected at least 1, got 0")

    assert problem_errors(refund_form(), [problem]) == {
        "request.amount_cents": "Amount (USD): over the payment's limit (got 450.00 USD)"
    }
    assert problem_errors(edit_form(SCHEMA, STORED), [count]) == {
        "request.count": "Count: expected at least 1, got 0"
    }


def test_a_bound_on_an_amount_shows_the_bound_and_the_value_as_money() -> None:
    """contracts/problems.py words a bound "expected at most 100000, got 450000": on a money
    input both numbers are minor units, and the approver reads both as money."""
    for words in ("more than", "at least", "less than", "at most"):
        problem = FieldProblem(
            field="request.amount_cents", message=f"expected {words} 100000, got 450000"
        )
        assert problem_errors(refund_form(), [problem]) == {
            "request.amount_cents": f"Amount (USD): expected {words} 1,000.00 USD, got 4,500.00 USD"
        }


# --- the proposal message -----------------------------------------------------------------------


def test_a_pending_message_offers_edit_with_the_proposal_id_only() -> None:
    message = render.proposal_message(proposal(), now=NOW)

    [actions] = [block for block in message["blocks"] if block["type"] == "actions"]
    edit = actions["elements"][-1]
    assert (edit["action_id"], edit["value"], edit["text"]["text"]) == ("edit", PROPOSAL_ID, "Edit")


def test_a_superseded_message_says_who_edited_it_and_offers_nothing() -> None:
    old = proposal(
        status=Status.SUPERSEDED, decided_by="U0APPROVER", decided_at=NOW, superseded_by=EDIT_ID
    )

    message = render.proposal_message(old, now=NOW)

    shown = json.dumps(message["blocks"])
    assert not any(block["type"] == "actions" for block in message["blocks"])
    assert "*Superseded* by an edit of <@U0APPROVER>" in shown
    assert EDIT_ID in shown and "will not be executed" in shown
    assert message["text"].startswith("Superseded by an edit")


# --- the superseded proposal's thread reply -----------------------------------------------------


def test_the_reply_names_the_editor_links_the_edit_and_lists_what_changed() -> None:
    old = proposal(
        status=Status.SUPERSEDED,
        decided_by="U0APPROVER",
        decided_at=NOW,
        superseded_by=EDIT_ID,
    )
    edit = proposal(
        id=EDIT_ID,
        request={**STORED, "count": 300},
        supersedes=PROPOSAL_ID,
        edited_by="U0APPROVER",
        preview=Preview(title="Email 300 customers"),
    )

    reply = superseded_reply(old, edit, link="https://example.slack.com/archives/C1/p1")

    shown = json.dumps(reply["blocks"], ensure_ascii=False)
    assert "<@U0APPROVER>" in shown
    assert "<https://example.slack.com/archives/C1/p1|Email 300 customers>" in shown
    assert "*Count*: `1200` → `300`" in shown
    assert "waits for a decision" in shown
    for block in reply["blocks"]:
        Block.parse(block).validate_json()  # type: ignore[union-attr]


def test_the_reply_of_a_denied_edit_gives_the_policys_reason() -> None:
    old = proposal(status=Status.SUPERSEDED, decided_by="U0APPROVER", superseded_by=EDIT_ID)
    edit = proposal(
        id=EDIT_ID,
        status=Status.DENIED,
        decision="deny",
        policy_note="Refunds over 2,000.00 go through the manual process.",
    )

    shown = json.dumps(superseded_reply(old, edit, link=None)["blocks"])

    assert "The policy denied it: Refunds over 2,000.00" in shown
    assert EDIT_ID not in shown  # the edit is named by its title and linked
