"""Every flow of Countersign tried in the sandbox page, in headless Chromium, as a person would:
edit an amount, choose items of a digest, extend, reconcile, a standing rule, an escalation
taken and handed back, proposals from one's own agent in the agent panel, narrow windows.

Each test asserts on what the page shows (and photographs it in the test's tmp_path).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import expect

from bot.sandbox import Sandbox, running_sandbox
from tests.e2e.harness import Answer
from tests.resend import resent_while_busy
from tests.sandbox.browser import SandboxPage, chromium_missing, opened

_missing = chromium_missing()
if _missing is not None and os.environ.get("CI") != "true":  # CI installs it: there, fail
    pytest.skip(_missing, allow_module_level=True)

REFUND = "Refund 450.00 USD to cus_grace"
EXPORT = "Export the ledger of May 2025 to accounting"
REQUESTER = "U0DANA"
APPROVER = "U0PRIYA"
#: an emoji's name left as text, as Slack never shows one it knows
RAW_EMOJI = re.compile(r":[a-z0-9_+-]+:")


@pytest.fixture
async def sandbox(tmp_path: Path) -> AsyncIterator[Sandbox]:
    async with running_sandbox(data_dir=tmp_path / "data") as running:
        yield running


@pytest.fixture
async def page(sandbox: Sandbox, tmp_path: Path) -> AsyncIterator[SandboxPage]:
    async with opened(sandbox.url, screenshot=tmp_path / "end.png") as page:
        yield page


async def propose(sandbox: Sandbox, body: dict[str, Any]) -> dict[str, Any]:
    """What an agent sends with the banner's curl; sent again while the sandbox answers busy,
    as an agent's client does (tests/resend.py)."""

    async def once() -> Answer:
        async with sandbox.session.post(
            f"{sandbox.api_url}/v1/proposals",
            json=body,
            headers={"Authorization": f"Bearer {sandbox.secrets.agent_token}"},
        ) as response:
            return Answer(response.status, response.headers.copy(), await response.read())

    answer = await resent_while_busy(once)
    assert answer.status == 201, answer.body.decode()
    created: dict[str, Any] = answer.json()
    return created


async def slack_api(sandbox: Sandbox, method: str, body: dict[str, Any]) -> dict[str, Any]:
    """A call to the local Slack's Web API with the bot token, as Countersign makes them."""
    async with sandbox.session.post(
        f"{sandbox.url}/slack/api/{method}",
        json=body,
        headers={"Authorization": f"Bearer {sandbox.secrets.bot_token}"},
    ) as response:
        answer: dict[str, Any] = await response.json()
        assert answer["ok"], answer
        return answer


# --- what the page draws ------------------------------------------------------------------------


def near_day(when: int) -> str:
    """How Slack's {date_short_pretty} names a day within a day from now, in local time."""
    return "today" if time.localtime(when)[:3] == time.localtime()[:3] else "tomorrow"


async def test_emoji_and_slack_dates_show_as_slack_shows_them(
    page: SandboxPage, sandbox: Sandbox
) -> None:
    now = int(time.time())
    text = (
        ":large_orange_circle: *High risk* :alarm_clock: expires "
        f"<!date^{now + 1800}^{{date_short_pretty}} at {{time}} ({{ago}})|in 30 minutes> · "
        f"since <!date^{now - 86400}^{{date_num}}|yesterday> :wave::skin-tone-3: :not_an_emoji:"
    )
    shown_before = near_day(now + 1800)
    await slack_api(
        sandbox,
        "chat.postMessage",
        {
            "channel": "C0FINANCE",
            "text": "gallery",
            "blocks": [
                {"type": "section", "text": {"type": "mrkdwn", "text": text}},
                {
                    "type": "context",
                    "elements": [
                        {
                            "type": "image",
                            "image_url": "data:image/gif;base64,R0lGODlhAQABAAAAACw=",
                            "alt_text": "logo",
                        },
                        {"type": "mrkdwn", "text": ":robot_face: the agent's words"},
                    ],
                },
            ],
        },
    )
    message = page.message("High risk")
    await expect(message).to_contain_text("(in 30 minutes)")
    # Half an hour from now is tomorrow after 23:30, and Slack says so; the page read the
    # clock somewhere between these two readings.
    days = "|".join(sorted({shown_before, near_day(now + 1800)}))
    await expect(message).to_contain_text(
        re.compile(f"\U0001f7e0 High risk \u23f0 expires ({days}) at \\d+:\\d\\d [AP]M")
    )
    yesterday = time.strftime("%Y-%m-%d", time.localtime(now - 86400))
    await expect(message).to_contain_text(f"since {yesterday} \U0001f44b\U0001f3fc :not_an_emoji:")
    await expect(message.locator(".b-context img")).to_have_attribute("alt", "logo")
    await expect(message.locator(".b-context")).to_contain_text("\U0001f916 the agent's words")
    assert "<!date" not in await message.inner_text()


async def test_a_modal_draws_every_input_and_submits_what_was_chosen(
    page: SandboxPage, sandbox: Sandbox
) -> None:
    options = [
        {"text": {"type": "plain_text", "text": f"Option {n}"}, "value": f"o{n}"} for n in (1, 2, 3)
    ]

    def block(block_id: str, element: dict[str, Any]) -> dict[str, Any]:
        label = {"type": "plain_text", "text": block_id.replace("_", " ").capitalize()}
        return {
            "type": "input",
            "block_id": block_id,
            "label": label,
            "optional": True,
            "element": {"action_id": "value", **element},
        }

    view = {
        "type": "modal",
        "callback_id": "gallery",
        "title": {"type": "plain_text", "text": "Every input"},
        "submit": {"type": "plain_text", "text": "Send"},
        "blocks": [
            block(
                "amount",
                {"type": "number_input", "is_decimal_allowed": False, "initial_value": "45000"},
            ),
            block(
                "pick_one",
                {"type": "static_select", "options": options, "initial_option": options[1]},
            ),
            block("pick_many", {"type": "multi_static_select", "options": options}),
            block("tick", {"type": "checkboxes", "options": options}),
            block(
                "choose",
                {"type": "radio_buttons", "options": options, "initial_option": options[0]},
            ),
            block("day", {"type": "datepicker", "initial_date": "2025-05-01"}),
            block("hour", {"type": "timepicker", "initial_time": "13:30"}),
            block("note", {"type": "plain_text_input", "multiline": True}),
        ],
    }
    await page.act_as(APPROVER)
    await slack_api(
        sandbox, "views.open", {"trigger_id": sandbox.slack.issue_trigger(APPROVER), "view": view}
    )
    modal = page.modal("Every input")
    await expect(modal.get_by_label("Amount")).to_have_value("45000")
    await expect(modal.get_by_label("Pick one")).to_have_value("o2")
    await expect(modal.get_by_label("Day")).to_have_value("2025-05-01")
    await expect(modal.get_by_label("Hour")).to_have_value("13:30")
    await expect(modal.get_by_role("radio", name="Option 1")).to_be_checked()

    await modal.get_by_label("Amount").fill("30000")
    await modal.get_by_label("Pick one").select_option("o3")
    await modal.get_by_label("Pick many").select_option(["o1", "o3"])
    await modal.get_by_label("Tick").get_by_role("checkbox", name="Option 2").check()
    await modal.get_by_role("radio", name="Option 3").check()
    await modal.get_by_label("Note").fill("as chosen")
    await page.page.wait_for_timeout(1500)  # a poll redraws nothing that was entered
    async with page.page.expect_request("**/sandbox/submit") as sent:
        await modal.get_by_role("button", name="Send").click()
    values = json.loads((await sent.value).post_data or "{}")["values"]
    assert values == {
        "amount": {"value": "30000"},
        "pick_one": {"value": "o3"},
        "pick_many": {"value": ["o1", "o3"]},
        "tick": {"value": ["o2"]},
        "choose": {"value": "o3"},
        "day": {"value": "2025-05-01"},
        "hour": {"value": "13:30"},
        "note": {"value": "as chosen"},
    }


# --- the flows ------------------------------------------------------------------------------------


async def test_risk_and_expiry_show_as_real_emoji_in_a_demo_proposal(page: SandboxPage) -> None:
    await page.submit_demo()
    message = page.message(REFUND)
    await expect(message.get_by_role("button", name="Approve", exact=True)).to_be_visible()
    await expect(message.locator(".emoji").first).to_be_visible()
    shown = await page.page.locator("#messages").inner_text()
    assert RAW_EMOJI.findall(shown) == []
    assert "<!date" not in shown


async def test_an_approver_lowers_a_refund_amount_in_the_edit_modal(page: SandboxPage) -> None:
    await page.submit_demo()
    await page.act_as(APPROVER)

    await page.click(REFUND, "Edit")
    modal = page.modal("Edit proposal")
    amount = modal.get_by_label("Amount (USD)")  # in dollars, as the approver reads it
    await expect(amount).to_have_value("450.00")
    await expect(modal).to_contain_text("An amount in USD, with up to 2 decimals.")
    await expect(modal).not_to_contain_text("cents")
    await amount.fill("300.00")
    await modal.get_by_role("button", name="Check and submit").click()

    await expect(modal).to_have_count(0)
    edited = page.message("Refund 300.00 USD to cus_grace")
    await expect(edited.get_by_role("button", name="Approve", exact=True)).to_be_visible()
    await expect(
        page.message(REFUND).get_by_role("button", name="Approve", exact=True)
    ).to_have_count(0)
    await expect(page.proposal("Refund 300.00 USD")).to_contain_text("an edit")
    await expect(page.proposal(REFUND)).to_contain_text("replaced by an approver's edit")


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("300.001", "Amount (USD): expected an amount in USD with at most 2 decimals"),
        ("-5", "Amount (USD): expected an amount in USD that is not negative"),
        ("5000", "Amount (USD): 5,000.00 USD is more than is refundable on pay_1002"),
    ],
)
async def test_a_bad_amount_is_answered_under_its_input_and_changes_nothing(
    page: SandboxPage, typed: str, expected: str
) -> None:
    await page.submit_demo()
    await page.act_as(APPROVER)

    await page.click(REFUND, "Edit")
    modal = page.modal("Edit proposal")
    await modal.get_by_label("Amount (USD)").fill(typed)
    await modal.get_by_role("button", name="Check and submit").click()

    error = modal.locator(".b-input.has-error .error")
    await expect(error).to_have_count(1)
    await expect(error).to_contain_text(expected)
    await expect(modal.locator(".b-input.has-error")).to_contain_text("Amount (USD)")
    await modal.get_by_role("button", name="Cancel").click()
    await expect(modal).to_have_count(0)
    await expect(
        page.message(REFUND).get_by_role("button", name="Approve", exact=True)
    ).to_be_visible()
    edited = re.compile(r"Refund (?!450\.00 USD)[0-9]")  # no other refund was proposed
    await expect(page.page.locator("article.msg", has_text=edited)).to_have_count(0)


async def test_items_of_a_digest_are_chosen_with_checkboxes(page: SandboxPage) -> None:
    await page.try_scenario("Three similar refunds")
    await page.act_as(APPROVER)
    digest = page.page.locator("article.msg", has=page.page.get_by_role("button", name="Choose…"))
    await expect(digest).to_have_count(1)

    await digest.get_by_role("button", name="Choose…").click()
    modal = page.modal("Choose proposals")
    boxes = modal.get_by_role("checkbox")
    await expect(boxes).to_have_count(3)
    await expect(modal.get_by_role("radio", name="Approve and execute them")).to_be_checked()
    await modal.get_by_role("checkbox", name=re.compile("cus_ada")).check()
    await modal.get_by_role("checkbox", name=re.compile("cus_alan")).check()
    await modal.get_by_role("button", name="Apply").click()

    await expect(modal).to_have_count(0)
    await expect(page.proposal("cus_ada")).to_contain_text("succeeded")
    await expect(page.proposal("cus_alan")).to_contain_text("succeeded")
    await expect(page.proposal("cus_barbara")).to_contain_text("waits for a decision")
    await expect(digest).to_contain_text("1 pending, 2 succeeded")


async def test_extend_gives_a_refund_one_more_hour_once(page: SandboxPage) -> None:
    await page.submit_demo()
    await page.act_as(APPROVER)
    await expect(page.proposal(REFUND)).to_contain_text("expires in 60 minutes")

    await page.message(REFUND).get_by_role("button", name=re.compile("^Extend by")).click()

    await expect(page.proposal(REFUND)).to_contain_text("expires in 2 hours")
    message = page.message(REFUND)
    await expect(message.get_by_role("button", name=re.compile("^Extend"))).to_have_count(0)
    await expect(message.get_by_role("button", name="Approve", exact=True)).to_be_visible()


async def test_an_execution_that_answered_too_late_is_reconciled_by_a_person(
    page: SandboxPage, sandbox: Sandbox
) -> None:
    await page.try_scenario("A ledger export that answers late")
    await page.act_as(APPROVER)
    await page.click(EXPORT, "Approve")
    await page.confirm("Approve")

    await expect(page.proposal(EXPORT)).to_contain_text("uncertain")
    message = page.message(EXPORT)
    await page.click(EXPORT, "It happened")

    await expect(message.get_by_role("button", name="It happened")).to_have_count(0)
    await expect(page.proposal(EXPORT)).to_contain_text("succeeded")
    assert [e.arguments for e in sandbox.target.exports] == [{"month": "2025-05"}]


async def test_approve_and_allow_similar_then_a_similar_refund_runs_without_asking(
    page: SandboxPage, sandbox: Sandbox
) -> None:
    await page.submit_demo()
    await page.act_as(APPROVER)

    await page.click(REFUND, "Approve + allow similar…")
    modal = page.modal("Approve + allow similar")
    duration = modal.get_by_label("Allow similar calls for")
    first = await duration.input_value()
    await duration.select_option(index=1)
    chosen = await duration.input_value()
    await modal.get_by_role("button", name="Approve", exact=True).click()

    await expect(modal).to_have_count(0)
    granted = page.ephemeral()
    await expect(granted).to_contain_text("\u2705 Approved. Until ")
    await expect(granted).to_contain_text("may also do similar requests without asking")
    assert RAW_EMOJI.findall(await granted.inner_text()) == []
    await expect(page.proposal(REFUND)).to_contain_text("succeeded")
    assert chosen != first

    await propose(
        sandbox,
        {
            "operation": "payments.refund",
            "request": {"payment_id": "pay_1002", "amount_cents": 20000},
            "requested_by": REQUESTER,
            "reason": "The second headphone case arrived cracked too.",
        },
    )
    similar = page.proposal("Refund 200.00 USD to cus_grace")
    await expect(similar).to_contain_text("your agent")
    await expect(similar).to_contain_text("succeeded")
    await expect(similar).to_contain_text("ran without asking")


async def test_an_escalation_is_taken_and_handed_back(page: SandboxPage) -> None:
    goal = "Replace the damaged headphones of order 1002"
    await page.try_scenario("A customer asks for a person")
    await page.act_as(REQUESTER)  # Dana takes escalated conversations
    await page.open_channel("support-escalations")
    await expect(page.message(goal)).to_contain_text("Can I please talk to a person?")
    await expect(page.proposal(goal)).to_contain_text("waits for a person to take it")

    await page.click(goal, "Take it")
    await expect(page.proposal(goal)).to_contain_text("Dana Reyes has the conversation")
    await expect(page.message(goal)).to_contain_text("Dana Reyes")

    await page.click(goal, "Hand back")
    modal = page.modal("Hand back")
    await modal.get_by_label("What should the agent know?").fill("Replacement sent; close it.")
    await modal.get_by_role("button", name="Hand back").click()

    await expect(modal).to_have_count(0)
    await expect(page.proposal(goal)).to_contain_text("handed back")
    await expect(page.proposal(goal)).to_contain_text("Replacement sent; close it.")


async def test_proposals_sent_with_the_curl_and_the_client_show_with_live_status(
    page: SandboxPage, sandbox: Sandbox
) -> None:
    curl_body = json.loads(sandbox.curl_example(with_token=False).split("-d '", 1)[1][:-1])
    await propose(sandbox, curl_body)
    sent = page.proposal("Refund 89.00 EUR to cus_barbara")
    await expect(sent).to_contain_text("your agent")
    await expect(sent).to_contain_text("waits for a decision")

    namespace: dict[str, Any] = {"print": lambda *_: None}
    asked = asyncio.create_task(asyncio.to_thread(exec, sandbox.client_example(), namespace))
    try:
        question = page.proposal("Restart the checkout service")
        await expect(question).to_contain_text("waits for a decision")
        await page.act_as(APPROVER)
        await page.click("Restart the checkout service", "Approve")
        await page.confirm("Approve")
        await expect(question).to_contain_text("approved by Priya Shah")
        await asked
    finally:
        if "client" in namespace:
            await asyncio.to_thread(namespace["client"].close)

    await page.click("Refund 89.00 EUR", "Approve")
    await page.confirm("Approve")
    await expect(sent).to_contain_text("succeeded")
    await expect(sent).not_to_contain_text("waits")


@pytest.mark.parametrize("width", [800, 900])
async def test_the_channel_keeps_its_width_in_a_narrow_window(
    sandbox: Sandbox, tmp_path: Path, width: int
) -> None:
    async with opened(
        sandbox.url, width=width, height=800, screenshot=tmp_path / f"{width}.png"
    ) as page:
        await page.submit_demo()
        await page.act_as(APPROVER)
        approve = page.message(REFUND).get_by_role("button", name="Approve", exact=True)
        await expect(approve).to_be_visible()

        pane = await page.page.locator("main.pane").bounding_box()
        assert pane is not None and pane["width"] >= width - 200, pane
        button = await approve.bounding_box()
        assert button is not None and button["x"] + button["width"] <= width
        scroll_width = await page.page.evaluate("document.documentElement.scrollWidth")
        assert scroll_width <= width
        # the agent panel is below the channel, a scroll away
        await page.page.get_by_role("button", name="Three similar refunds").click()
        await expect(page.proposal("cus_ada")).to_contain_text("waits for a decision")
