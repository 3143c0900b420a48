"""Edit, then re-classify, over HTTP: an approver's Edit click, the modal, its signed submission,
and what the agent, the channel, the audit log and the payment target see afterwards."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from tests.e2e.harness import (
    APPROVER,
    APPROVER_2,
    CAMPAIGN_CHANNEL,
    OUTSIDER,
    REFUNDS_CHANNEL,
    REQUESTER,
    SIGNING_SECRET,
    Answer,
    Countersign,
    eventually,
    replace_rule,
    running_countersign,
)
from tests.slack_requests import signed_headers, view_submission_body

AGENT = "support-bot"


@pytest.fixture
async def cs(tmp_path: Path) -> AsyncIterator[Countersign]:
    async with running_countersign(tmp_path) as running:
        yield running


def refund(payment_id: str, amount_cents: int | None = None, **extra: Any) -> dict[str, Any]:
    request: dict[str, Any] = {"payment_id": payment_id}
    if amount_cents is not None:
        request["amount_cents"] = amount_cents
    return {
        "operation": "payments.refund",
        "request": request,
        "requested_by": REQUESTER,
        "run_id": "run-edit",
        "reason": "The customer asked for their money back.",
        **extra,
    }


async def asked(cs: Countersign, body: dict[str, Any]) -> dict[str, Any]:
    """Submit ``body``, which the policy asks about; wait for its Slack message."""
    status, created = await cs.submit(body)
    assert (status, created["status"]) == (201, "pending"), created
    await cs.posted(created["id"])
    return created


async def open_edit(cs: Countersign, user: str, proposal_id: str) -> dict[str, Any]:
    """Click Edit as ``user``; the modal Slack opened for them."""
    before = len(cs.slack.views(user))
    assert await cs.click(user, "edit", proposal_id) == 200
    views = await eventually(lambda: _views_after(cs, user, before))
    view: dict[str, Any] = views[-1].view
    return view


async def submit_edit(
    cs: Countersign, user: str, view: dict[str, Any], **typed: dict[str, Any]
) -> Answer:
    """Submit the modal as Slack would: every input's prefilled value, except the ``typed`` ones
    (field name -> the input's state as Slack reports it), signed and sent over HTTP."""
    states = {}
    for block in view["blocks"]:
        if block["type"] != "input":
            continue
        name = block["block_id"].removeprefix("request.")
        state = typed.get(name) or _prefilled(block["element"])
        states[block["block_id"]] = {block["element"]["action_id"]: state}
    body = view_submission_body(
        user_id=user,
        callback_id=view["callback_id"],
        private_metadata=view["private_metadata"],
        values={},
        states=states,
    )
    return await cs.request(
        "POST",
        "/slack/events",
        data=body.encode(),
        headers=signed_headers(SIGNING_SECRET, body),
    )


def number(text: str) -> dict[str, Any]:
    return {"type": "number_input", "value": text}


async def the_edit_of(cs: Countersign, proposal_id: str) -> Any:
    """The stored edit that superseded ``proposal_id`` (waits for it)."""

    async def check() -> Any:
        old = await cs.store.get_proposal(proposal_id)
        return old.superseded_by and await cs.store.get_proposal(old.superseded_by)

    return await eventually(check)


# --- an edit that asks again --------------------------------------------------------------------


async def test_an_approver_edits_the_amount_and_another_approves_the_edit_exactly(
    cs: Countersign,
) -> None:
    async with receiving(cs) as receiver:
        old = await asked(cs, refund("pay_1002", callback_url=receiver.url))
        old_message = (await cs.store.get_proposal(old["id"])).slack_ts
        assert old_message is not None
        waiting = asyncio.create_task(cs.read(old["id"], wait=10))

        view = await open_edit(cs, APPROVER, old["id"])
        assert view["private_metadata"] == old["id"]
        amount = next(b for b in view["blocks"] if b.get("block_id") == "request.amount_cents")
        assert amount["label"]["text"] == "Amount (USD)"  # typed in dollars, not cents
        answer = await submit_edit(cs, APPROVER, view, amount_cents=number("500.00"))

        assert (answer.status, answer.body) == (200, b"")
        edit = await the_edit_of(cs, old["id"])
        assert edit.status == "pending"
        assert (edit.supersedes, edit.edited_by) == (old["id"], APPROVER)
        assert edit.arguments["amount_cents"] == 50000
        # the unset reason stays unset: the operation's default still applies
        assert edit.request == {"payment_id": "pay_1002", "amount_cents": 50000}
        assert (edit.agent, edit.run_id, edit.callback_url) == (AGENT, "run-edit", receiver.url)
        assert edit.submission_key == f"edit:{old['id']}"

        # the agent waiting on the old proposal learns where its request went
        _, seen = await waiting
        assert (seen["status"], seen["final"], seen["superseded_by"]) == (
            "superseded",
            True,
            edit.id,
        )
        assert seen["decision"]["by"] == APPROVER
        _, edited = await cs.read(edit.id)
        assert (edited["supersedes"], edited["edited_by"]) == (old["id"], APPROVER)
        assert edited["superseded_by"] is None
        await eventually(lambda: _superseded_callback(receiver, old["id"], edit.id))

    # the old message says it was superseded and its thread links to the edit
    await cs.posted(edit.id)
    await cs.settled()
    message = cs.slack.message(REFUNDS_CHANNEL, old_message)
    assert not any(block["type"] == "actions" for block in message.blocks)
    assert "Superseded" in json.dumps(message.blocks)
    [reply] = await eventually(lambda: _replies(cs, old_message))
    shown = json.dumps(reply.blocks)
    assert edit.id not in shown  # named by its title, linked to its message
    assert "/archives/" in shown  # the permalink of the edit's own message
    assert "*Amount*: _(not set)_ → `500.00 USD`" in reply.blocks[-1]["elements"][0]["text"]
    new_ts = (await cs.store.get_proposal(edit.id)).slack_ts
    assert new_ts is not None
    new_message = cs.slack.message(REFUNDS_CHANNEL, new_ts)
    assert "Refund 500.00 USD to cus_grace" in json.dumps(new_message.blocks)

    # the editor cannot approve their own edit; the refusal is audited
    assert await cs.click(APPROVER, "approve", edit.id) == 200
    refusal = await eventually(lambda: _ephemeral(cs, APPROVER))
    assert "edited" in refusal.text
    refused = [e for e in await cs.store.audit_log(edit.id) if e.event == "approve_refused"]
    assert [e.actor for e in refused] == [APPROVER]
    assert (await cs.store.get_proposal(edit.id)).status == "pending"

    # another approver approves: the edited arguments run exactly once, the old ones never
    assert await cs.click(APPROVER_2, "approve", edit.id) == 200
    _, final = await cs.read(edit.id, wait=10)
    assert final["status"] == "succeeded", final
    assert await cs.click(APPROVER_2, "approve", old["id"]) == 200
    await cs.settled()
    ledger = cs.service.settings.registry.get("payments.refund").ledger
    assert [(r.payment_id, r.amount_cents) for r in ledger.refunds] == [("pay_1002", 50000)]
    assert (await cs.store.get_proposal(old["id"])).status == "superseded"
    assert (await cs.store.verify_audit()).ok


async def test_the_audit_keeps_proposed_edited_and_effective_values_apart(
    cs: Countersign,
) -> None:
    old = await asked(cs, refund("pay_1002"))
    view = await open_edit(cs, APPROVER, old["id"])

    await submit_edit(cs, APPROVER, view, amount_cents=number("700"))

    edit = await the_edit_of(cs, old["id"])
    [superseded] = [e for e in await cs.store.audit_log(old["id"]) if e.event == "superseded"]
    assert (superseded.actor, superseded.detail) == (
        APPROVER,
        {"superseded_by": edit.id, "edited_by": APPROVER},
    )
    entries = await cs.store.audit_log(edit.id)
    assert [e.event for e in entries][:2] == ["submitted", "edited"]
    detail: dict[str, Any] = entries[1].detail
    assert entries[1].actor == APPROVER
    assert detail["proposed_request"] == {"payment_id": "pay_1002"}
    assert detail["edited_request"] == edit.request
    assert detail["proposed_arguments"]["amount_cents"] == 120000  # what the agent's request froze
    assert detail["arguments"]["amount_cents"] == 70000  # what would run


async def test_whoever_edited_any_earlier_version_cannot_approve_a_later_edit(
    cs: Countersign,
) -> None:
    old = await asked(cs, refund("pay_1002"))
    await submit_edit(
        cs, APPROVER, await open_edit(cs, APPROVER, old["id"]), amount_cents=number("600")
    )
    first = await the_edit_of(cs, old["id"])
    await cs.posted(first.id)
    await submit_edit(
        cs, APPROVER_2, await open_edit(cs, APPROVER_2, first.id), amount_cents=number("550.00")
    )
    second = await the_edit_of(cs, first.id)
    await cs.posted(second.id)

    for editor in (APPROVER, APPROVER_2):
        assert await cs.click(editor, "approve", second.id) == 200
        refusal = await eventually(partial(_ephemeral, cs, editor))
        assert "edited" in refusal.text

    assert (await cs.store.get_proposal(second.id)).status == "pending"
    refused = [e.actor for e in await cs.store.audit_log(second.id) if e.event.endswith("refused")]
    assert sorted(refused) == sorted([APPROVER, APPROVER_2])


# --- an edit the policy decides at once ---------------------------------------------------------


async def test_an_edit_over_the_limit_is_denied_and_still_supersedes(cs: Countersign) -> None:
    old = await asked(cs, refund("pay_1004", 150000))
    old_message = (await cs.store.get_proposal(old["id"])).slack_ts
    view = await open_edit(cs, APPROVER, old["id"])
    posts_before = len(cs.slack.calls("chat.postMessage"))

    answer = await submit_edit(cs, APPROVER, view, amount_cents=number("2500.00"))

    assert answer.status == 200
    edit = await the_edit_of(cs, old["id"])
    assert (edit.status, edit.rule_id) == ("denied", "huge-refunds")
    _, seen = await cs.read(old["id"])
    assert (seen["status"], seen["superseded_by"]) == ("superseded", edit.id)
    _, denied = await cs.read(edit.id)
    assert denied["policy"]["rule_id"] == "huge-refunds"
    await cs.settled()
    [reply] = await eventually(lambda: _replies(cs, old_message))
    assert "denied" in json.dumps(reply.blocks)
    # a denied edit is not posted for a decision: only the old thread's reply was added
    posts = cs.slack.calls("chat.postMessage")[posts_before:]
    assert [call.args.get("thread_ts") is not None for call in posts] == [True]
    ledger = cs.service.settings.registry.get("payments.refund").ledger
    assert ledger.refunds == ()


#: Tagging asks above 100 customers and runs automatically up to 100 (a reversible write).
TAG_RULES = """
[[policy]]
id = "small-tags"
operation = "crm.tag_customers"
when = [{ field = "customers", lte = 100 }]
decision = "auto"

[[policy]]
id = "tags"
operation = "crm.tag_customers"
decision = "ask"
approvers = ["finance"]
channel = "C0CAMPAIGNS"
expires_after = "1h"
"""


async def test_an_edit_within_the_auto_limit_executes_at_once(tmp_path: Path) -> None:
    async with running_countersign(
        tmp_path, config_edit=replace_rule("small-tags", TAG_RULES)
    ) as cs:
        old = await asked(
            cs,
            {
                "operation": "crm.tag_customers",
                "request": {"segment": "churn-risk", "tag": "winback", "customers": 500},
                "requested_by": REQUESTER,
            },
        )
        view = await open_edit(cs, APPROVER, old["id"])
        inputs = {block["block_id"]: block["element"] for block in view["blocks"][2:]}
        assert inputs["request.customers"]["initial_value"] == "500"
        assert inputs["request.tag"]["initial_value"] == "winback"

        answer = await submit_edit(cs, APPROVER, view, customers=number("50"))

        assert (answer.status, answer.body) == (200, b"")
        edit = await the_edit_of(cs, old["id"])
        _, final = await cs.read(edit.id, wait=10)
        assert final["status"] == "succeeded", final
        assert final["policy"] == {
            "decision": "auto",
            "rule_id": "small-tags",
            "note": final["policy"]["note"],
        }
        events = [e.event for e in await cs.store.audit_log(edit.id)]
        assert events[:3] == ["submitted", "edited", "auto_approved"]
        await cs.settled()
        [tagging] = cs.target.taggings()
        assert json.loads(tagging["body"])["arguments"] == {
            "segment": "churn-risk",
            "tag": "winback",
            "customers": 50,
        }
        assert (await cs.store.get_proposal(old["id"])).status == "superseded"
        [reply] = await eventually(lambda: _replies(cs, old_ts(cs, old["id"]), CAMPAIGN_CHANNEL))
        assert "automatically" in json.dumps(reply.blocks)


# --- edits that change nothing ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        (
            {"amount_cents": number("12.505")},
            "Amount (USD): expected an amount in USD with at most 2 decimals, got '12.505'",
        ),
        (
            {"amount_cents": number("-5")},
            "Amount (USD): expected an amount in USD that is not negative, got '-5'",
        ),
        (
            {"amount_cents": number("twelve")},
            "Amount (USD): expected an amount in USD such as 450.00",
        ),
        (
            {"amount_cents": number("0")},
            "Amount (USD): expected more than 0.00 USD, got 0.00 USD",
        ),
        (
            {"amount_cents": number("9999.99")},
            "Amount (USD): 9,999.99 USD is more than is refundable on pay_1002: "
            "expected at most 1,200.00 USD",
        ),
        (
            {"payment_id": {"type": "plain_text_input", "value": "card-1"}},
            'Payment: expected a value like pay_8f3k2, got "card-1"',
        ),
        (
            {"reason": {"type": "static_select", "selected_option": {"value": "because"}}},
            "Refund reason: expected one of Requested by customer, Duplicate payment, "
            "Fraudulent payment, got 'because'",
        ),
    ],
)
async def test_an_invalid_edit_answers_the_modal_naming_the_field_and_changes_nothing(
    cs: Countersign, typed: dict[str, Any], expected: str
) -> None:
    old = await asked(cs, refund("pay_1002"))
    view = await open_edit(cs, APPROVER, old["id"])
    await cs.settled()
    count, posts = await cs.proposal_count(), len(cs.slack.calls("chat.postMessage"))
    audit = await cs.store.audit_log()

    answer = await submit_edit(cs, APPROVER, view, **typed)

    assert answer.status == 200
    document = answer.json()
    assert document["response_action"] == "errors"
    [(block, message)] = document["errors"].items()
    assert block == f"request.{next(iter(typed))}"
    assert expected in message
    await cs.settled()
    assert await cs.proposal_count() == count
    assert len(cs.slack.calls("chat.postMessage")) == posts
    assert await cs.store.audit_log() == audit
    assert (await cs.store.get_proposal(old["id"])).status == "pending"


async def test_the_amount_is_shown_and_typed_in_its_currency_and_read_exactly(
    cs: Countersign,
) -> None:
    old = await asked(cs, refund("pay_1002", 45000))
    view = await open_edit(cs, APPROVER, old["id"])
    amount = next(b for b in view["blocks"] if b.get("block_id") == "request.amount_cents")

    assert amount["label"]["text"] == "Amount (USD)"
    assert amount["element"]["initial_value"] == "450.00"
    assert "cents" not in amount["hint"]["text"]
    answer = await submit_edit(cs, APPROVER, view, amount_cents=number("199.99"))

    assert (answer.status, answer.body) == (200, b"")
    edit = await the_edit_of(cs, old["id"])
    assert edit.request["amount_cents"] == 19999  # not 19998, as 199.99 * 100 is in floats
    assert edit.preview.title == "Refund 199.99 USD to cus_grace"


def with_a_euro_payment(text: str) -> str:
    """The ledger holds a payment in EUR too; the refund limit names its currency."""
    last = (
        '{ payment_id = "pay_1004", customer = "cus_edsger", amount_cents = 300000, '
        'currency = "USD" },'
    )
    euro = (
        '{ payment_id = "pay_1005", customer = "cus_barbara", amount_cents = 8900, '
        'currency = "EUR" }'
    )
    assert last in text and "lte = 200000 }" in text
    return text.replace(last, f"{last}\n  {euro},").replace(
        "lte = 200000 }", 'lte = "2000.00 USD" }'
    )


async def test_an_amount_typed_in_one_currency_for_a_payment_in_another_changes_nothing(
    tmp_path: Path,
) -> None:
    async with running_countersign(tmp_path, config_edit=with_a_euro_payment) as cs:
        old = await asked(cs, refund("pay_1002", 45000))
        view = await open_edit(cs, APPROVER, old["id"])
        count = await cs.proposal_count()

        answer = await submit_edit(
            cs,
            APPROVER,
            view,
            payment_id={"type": "plain_text_input", "value": "pay_1005"},  # a payment in EUR
            amount_cents=number("50.00"),
        )

        assert answer.json()["errors"] == {
            "request.amount_cents": "Amount (USD): the amount was typed in USD, but the edit is "
            "in EUR; change one at a time (cancel, and edit again)"
        }
        assert await cs.proposal_count() == count
        assert (await cs.store.get_proposal(old["id"])).status == "pending"


async def test_an_edit_that_changes_nothing_is_answered_in_the_modal(cs: Countersign) -> None:
    old = await asked(cs, refund("pay_1002", 4000))
    view = await open_edit(cs, APPROVER, old["id"])

    answer = await submit_edit(cs, APPROVER, view)

    assert "Nothing was changed" in json.dumps(answer.json()["errors"])
    assert (await cs.store.get_proposal(old["id"])).status == "pending"


async def test_the_requester_cannot_edit_and_the_refusal_is_audited(cs: Countersign) -> None:
    old = await asked(cs, refund("pay_1002"))

    assert await cs.click(REQUESTER, "edit", old["id"]) == 200
    refusal = await eventually(lambda: _ephemeral(cs, REQUESTER))

    assert "accountable" in refusal.text
    assert cs.slack.views(REQUESTER) == []
    [refused] = [e for e in await cs.store.audit_log(old["id"]) if e.event == "edit_refused"]
    assert refused.actor == REQUESTER
    # nor can a forged submission of the modal, without a click, store an edit
    view = {
        "callback_id": "edit_proposal",
        "private_metadata": old["id"],
        "blocks": [
            {
                "type": "input",
                "block_id": "request.amount_cents",
                "element": {"type": "number_input", "action_id": "value"},
            }
        ],
    }
    for person in (REQUESTER, OUTSIDER):
        answer = await submit_edit(cs, person, view, amount_cents=number("100"))
        assert (answer.status, answer.body) == (200, b"")
    await cs.settled()
    assert (await cs.store.get_proposal(old["id"])).status == "pending"
    assert await cs.proposal_count() == 1
    refusals = [e.actor for e in await cs.store.audit_log(old["id"]) if e.event == "edit_refused"]
    assert refusals == [REQUESTER, REQUESTER, OUTSIDER]


async def test_an_edit_submitted_after_a_decision_stores_nothing(cs: Countersign) -> None:
    old = await asked(cs, refund("pay_1002"))
    view = await open_edit(cs, APPROVER, old["id"])
    assert await cs.submit_reason(APPROVER_2, old["id"], "Not this one") == 200
    await eventually(lambda: _status_is(cs, old["id"], "rejected"))

    answer = await submit_edit(cs, APPROVER, view, amount_cents=number("100"))

    assert (answer.status, answer.body) == (200, b"")
    told = await eventually(lambda: _ephemeral(cs, APPROVER))
    assert "already decided" in told.text
    assert await cs.proposal_count() == 1
    assert (await cs.store.get_proposal(old["id"])).superseded_by is None


async def test_an_edit_submitted_after_the_expiry_stores_nothing(cs: Countersign) -> None:
    old = await asked(cs, refund("pay_1002"))
    view = await open_edit(cs, APPROVER, old["id"])
    cs.clock.advance(timedelta(hours=2))

    answer = await submit_edit(cs, APPROVER, view, amount_cents=number("100"))

    assert (answer.status, answer.body) == (200, b"")
    told = await eventually(lambda: _ephemeral(cs, APPROVER))
    assert "xpired" in told.text
    assert await cs.proposal_count() == 1
    _, seen = await cs.read(old["id"], wait=10)
    assert (seen["status"], seen["superseded_by"]) == ("expired", None)


async def test_an_edit_the_operation_cannot_check_now_keeps_the_modal_open(
    cs: Countersign,
) -> None:
    old = await asked(cs, refund("pay_1002"))
    view = await open_edit(cs, APPROVER, old["id"])
    ledger = cs.service.settings.registry.get("payments.refund").ledger

    async def unreachable(payment_id: str) -> None:
        raise ConnectionError(f"the ledger did not answer for {payment_id}")

    ledger.payment = unreachable  # the payments backend is down while the edit is checked
    answer = await submit_edit(cs, APPROVER, view, amount_cents=number("100"))

    errors = answer.json()["errors"]
    assert "could not be checked right now (ConnectionError)" in json.dumps(errors)
    assert await cs.proposal_count() == 1
    assert (await cs.store.get_proposal(old["id"])).status == "pending"


# --- helpers ------------------------------------------------------------------------------------


def _prefilled(element: dict[str, Any]) -> dict[str, Any]:
    """An input's state as Slack reports it when the person left the prefilled value."""
    if element["type"] == "static_select":
        return {"type": "static_select", "selected_option": element.get("initial_option")}
    return {"type": element["type"], "value": element.get("initial_value")}


async def _views_after(cs: Countersign, user: str, before: int) -> list[Any]:
    views = cs.slack.views(user)
    return views if len(views) > before else []


async def _ephemeral(cs: Countersign, user: str) -> Any:
    found = cs.slack.ephemeral(user)
    return found[-1] if found else None


async def _replies(cs: Countersign, ts: str | None, channel: str = REFUNDS_CHANNEL) -> list[Any]:
    return cs.slack.replies(channel, ts) if ts else []


def old_ts(cs: Countersign, proposal_id: str) -> str | None:
    """The ts of the message the local Slack shows ``proposal_id`` in."""
    for message in cs.slack.messages(CAMPAIGN_CHANNEL) + cs.slack.messages(REFUNDS_CHANNEL):
        metadata = message.metadata or {}
        if (metadata.get("event_payload") or {}).get("proposal_id") == proposal_id:
            return message.ts
    return None


async def _status_is(cs: Countersign, proposal_id: str, status: str) -> bool:
    return (await cs.store.get_proposal(proposal_id)).status == status


async def _superseded_callback(receiver: Receiver, old_id: str, edit_id: str) -> bool:
    return any(
        body["id"] == old_id and body["status"] == "superseded" and body["superseded_by"] == edit_id
        for body in receiver.bodies()
    )


class Receiver:
    """The agent's callback endpoint: records every signed POST."""

    def __init__(self) -> None:
        self.received: list[bytes] = []
        self.url = ""

    async def handle(self, request: web.Request) -> web.Response:
        self.received.append(await request.read())
        return web.json_response({"ok": True})

    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(body) for body in self.received]


@asynccontextmanager
async def receiving(cs: Countersign) -> AsyncIterator[Receiver]:
    """The agent's callback endpoint (under its configured callback prefix) for the block."""
    receiver = Receiver()
    receiver.url = cs.agent_hook("edit", receiver.handle)
    yield receiver
