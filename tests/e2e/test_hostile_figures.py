"""A hostile agent's figures, over HTTP: the preview shows the value that runs, whatever number
the agent writes in a field the operation declares as a duration, a count or money. A negative
duration keeps its sign (the approver read "Pause emails for 30 days" while -720 hours ran), and a
whole number past a float's range is shown, never answered with a 500."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import (
    CAMPAIGN_CHANNEL,
    REQUESTER,
    Countersign,
    running_countersign,
)
from tests.e2e.test_inert_rendering import posted_message

#: An operation whose request holds figures the agent writes with no bound of the schema's.
PAUSE = """
[operations."crm.pause_emails"]
kind = "webhook"
description = "Pause the emails to a customer for a while, with a budget to refund"
url = "{target}/emails/pause"
secret_env = "E2E_WEBHOOK_SECRET"
request_schema.type = "object"
request_schema.required = ["customer", "hours", "emails", "credit_cents"]
request_schema.properties.customer = {{ type = "string" }}
request_schema.properties.hours = {{ type = "number" }}
request_schema.properties.emails = {{ type = "integer" }}
request_schema.properties.credit_cents = {{ type = "integer" }}
request_schema.properties.credit = {{ type = "number" }}
request_schema.properties.scope = {{ type = "string" }}
defaults = {{ credit = 0, scope = "marketing" }}
preview.title = "Pause emails to {{customer}} for {{hours}}"
preview.fields = [
  {{ label = "Emails", value = "{{emails}}" }},
  {{ label = "Credit", value = "{{credit_cents}}" }},
  {{ label = "Credit in dollars", value = "{{credit}}" }},
  {{ label = "Scope", value = "{{scope}}" }},
]

[operations."crm.pause_emails".fields]
hours = {{ label = "Pause", kind = "duration", unit = "hours" }}
emails = {{ label = "Emails", kind = "count", unit = "emails" }}
credit_cents = {{ label = "Credit", kind = "money", currency = "USD" }}
credit = {{ label = "Credit in dollars", kind = "money", currency = "USD", minor_units = false }}
scope.label = "Scope"
scope.kind = "choice"
scope.labels = {{ marketing = "Marketing emails only", all = "Every email" }}

[[policy]]
id = "pauses"
operation = "crm.pause_emails"
decision = "ask"
approvers = ["finance"]
channel = "{channel}"
expires_after = "30m"
"""


def with_pause(text: str) -> str:
    [target] = re.findall(r'url = "(http://[^"/]+)/campaigns/send"', text)
    return text + PAUSE.format(target=target, channel=CAMPAIGN_CHANNEL)


@pytest.fixture
async def cs(tmp_path: Path) -> AsyncIterator[Countersign]:
    async with running_countersign(tmp_path, config_edit=with_pause) as running:
        yield running


def pause(run: str, **request: Any) -> dict[str, Any]:
    figures = {"hours": 24, "emails": 3, "credit_cents": 500, **request}
    return {
        "operation": "crm.pause_emails",
        "request": {"customer": "cus_ada", **figures},
        "requested_by": REQUESTER,
        "run_id": run,
    }


async def shown(cs: Countersign, body: dict[str, Any]) -> tuple[str, str]:
    """The preview's title as the agent reads it back, and the Slack message's blocks."""
    status, created = await cs.submit(body)
    assert status == 201, created
    message = await posted_message(cs, created["id"])
    return created["preview"]["title"], json.dumps(message.blocks, ensure_ascii=False)


@pytest.mark.parametrize(
    ("hours", "read"),
    [(-720, "-30 days"), (-0.5, "-30 minutes"), (-2, "-2 hours")],
)
async def test_a_negative_duration_is_shown_with_its_sign(
    cs: Countersign, hours: float, read: str
) -> None:
    title, message = await shown(cs, pause(f"run-{hours}", hours=hours))

    assert title == f"Pause emails to cus_ada for {read}"
    assert f"for {read}" in message


@pytest.mark.parametrize(
    "figures",
    [
        {"emails": 10**400},
        {"credit_cents": -(10**400)},
        {"credit": 10**400},
        {"hours": 10**400},
        {"hours": 1.7e308},
    ],
    ids=["count", "money", "major-units", "duration", "duration-float"],
)
async def test_a_figure_past_a_floats_range_is_shown_never_a_500(
    cs: Countersign, figures: dict[str, Any]
) -> None:
    title, message = await shown(cs, pause(f"run-{next(iter(figures))}", **figures))

    assert "cus_ada" in title and "cus_ada" in message


async def test_an_amount_in_major_units_is_shown_to_the_last_digit(cs: Countersign) -> None:
    exact = 2**53 + 1  # a float would show ...992
    _, message = await shown(cs, pause("run-major", credit=exact))

    assert "9,007,199,254,740,993.00 USD" in message


@pytest.mark.parametrize(
    ("credit_cents", "read"),
    [(4500.0, "45.00 USD"), (-4500.0, "-45.00 USD")],
)
async def test_money_in_cents_written_as_a_float_is_shown_in_dollars(
    cs: Countersign, credit_cents: float, read: str
) -> None:
    # JSON Schema takes 4500.0 for an integer: the target gets 4500.0 cents, never 4,500 USD
    _, message = await shown(cs, pause(f"run-{credit_cents}", credit_cents=credit_cents))

    assert f"*Credit*\\n{read}" in message  # the field, as JSON writes its line break
    assert "4,500" not in message


async def test_a_choice_it_does_not_offer_cannot_pass_for_one_of_its_labels(
    cs: Countersign,
) -> None:
    # the schema leaves the field open: the agent writes another choice's label as the value
    _, offered = await shown(cs, pause("run-offered", scope="marketing"))
    _, forged = await shown(cs, pause("run-forged", scope="Marketing emails only"))

    label = '*Scope*\\nMarketing emails only"'  # the whole field, to its closing quote
    assert label in offered
    assert label not in forged
    assert "not one of its choices" in forged
