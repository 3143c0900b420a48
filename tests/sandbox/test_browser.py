"""The sandbox page in a real browser (headless Chromium driven by Playwright).

Each test starts the sandbox in-process on free ports and uses the page as a person would: picks
who they are, clicks the buttons Countersign posted, fills in its modal, and reads what appears.
Screenshots of the end state go to the test's tmp_path.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import expect

from bot.sandbox import Sandbox, running_sandbox
from tests.sandbox.browser import SandboxPage, chromium_missing, opened

_missing = chromium_missing()
if _missing is not None and os.environ.get("CI") != "true":  # CI installs it: there, fail
    pytest.skip(_missing, allow_module_level=True)

REFUND = "Refund 450.00 USD to cus_grace"
REQUESTER = "U0DANA"
APPROVER = "U0PRIYA"
REJECTER = "U0MARCUS"


@pytest.fixture
async def sandbox(tmp_path: Path) -> AsyncIterator[Sandbox]:
    async with running_sandbox(data_dir=tmp_path / "data") as running:
        yield running


@pytest.fixture
async def page(sandbox: Sandbox, tmp_path: Path) -> AsyncIterator[SandboxPage]:
    async with opened(sandbox.url, screenshot=tmp_path / "end.png") as page:
        yield page


async def test_a_demo_proposal_appears_in_its_channel_with_its_preview(page: SandboxPage) -> None:
    await page.submit_demo()

    message = page.message(REFUND)
    await expect(message).to_be_visible()
    await expect(message).to_contain_text("Agent's explanation (unverified)")
    await expect(message).to_contain_text("@Dana Reyes")
    await expect(message.get_by_role("button", name="Approve", exact=True)).to_be_visible()
    await expect(message.get_by_role("button", name="Reject")).to_be_visible()
    # the demo's proposal the policy runs at once (a reversible write: refunds always ask)
    await expect(page.page.locator("#proposals")).to_contain_text(
        "Tag 120 customers in segment lapsed-customers with winback-2025"
    )


async def test_the_requester_cannot_approve_and_is_told_why_only_herself(
    page: SandboxPage,
) -> None:
    await page.submit_demo()
    await page.act_as(REQUESTER)

    await page.click(REFUND, "Approve")
    await expect(page.page.get_by_role("alertdialog")).to_contain_text("Approve and execute?")
    await page.confirm("Approve")

    refusal = page.page.locator("article.ephemeral")
    await expect(refusal).to_contain_text("Only visible to you")
    await expect(refusal).to_contain_text(
        "you are the person accountable for this request; someone else has to decide it"
    )
    await expect(
        page.message(REFUND).get_by_role("button", name="Approve", exact=True)
    ).to_be_visible()
    await page.act_as(APPROVER)
    await expect(page.page.locator("article.ephemeral")).to_have_count(0)


async def test_an_approver_approves_and_the_outcome_appears_in_the_thread(
    page: SandboxPage,
) -> None:
    await page.submit_demo()
    await page.act_as(APPROVER)

    await page.click(REFUND, "Approve")
    await page.confirm("Approve")

    message = page.message(REFUND)
    await expect(message.locator(".thread")).to_contain_text("Succeeded.")
    await expect(message.locator(".thread")).to_contain_text(f"Proposal: {REFUND}")
    await expect(message).to_contain_text("Approved by @Priya Shah")
    await expect(message.get_by_role("button", name="Approve", exact=True)).to_have_count(0)
    await expect(page.page.locator("#proposals li", has_text=REFUND)).to_contain_text("succeeded")


async def test_cancelling_the_confirm_dialog_sends_nothing_and_it_can_be_asked_again(
    page: SandboxPage, sandbox: Sandbox
) -> None:
    await page.submit_demo()
    await page.act_as(APPROVER)

    await page.click(REFUND, "Approve")
    await page.confirm("Cancel")

    await expect(page.page.get_by_role("alertdialog")).to_have_count(0)
    await expect(
        page.message(REFUND).get_by_role("button", name="Approve", exact=True)
    ).to_be_visible()
    assert sandbox.slack.calls("chat.update") == []
    # asked again, the dialog stays up while the page keeps polling, until answered
    await page.click(REFUND, "Approve")
    await page.page.wait_for_timeout(2_500)
    await page.confirm("Approve")
    await expect(page.message(REFUND).locator(".thread")).to_contain_text("Succeeded")


async def test_reject_asks_for_a_reason_in_a_modal_and_the_thread_shows_it(
    page: SandboxPage,
) -> None:
    await page.submit_demo()
    await page.act_as(REJECTER)

    await page.click(REFUND, "Reject")
    modal = page.modal("Reject proposal")
    await expect(modal).to_contain_text("Why do you reject it?")
    await modal.get_by_role("button", name="Reject").click()
    await expect(modal).to_contain_text("Say why you reject it.")
    await modal.get_by_label("Why do you reject it?").fill("Ask the customer for photos first.")
    await modal.get_by_role("button", name="Reject").click()

    await expect(modal).to_have_count(0)
    thread = page.message(REFUND).locator(".thread")
    await expect(thread).to_contain_text("Rejected by @Marcus Lee")
    await expect(thread).to_contain_text("Ask the customer for photos first.")


async def test_the_agent_panel_shows_where_the_token_goes_but_never_the_token(
    page: SandboxPage, sandbox: Sandbox
) -> None:
    await page.submit_demo()
    await expect(page.page.locator("#proposals li").first).to_be_visible()

    panel = page.page.locator("aside.agent")
    await expect(panel.locator("#curl")).to_contain_text("Authorization: Bearer $COUNTERSIGN_TOKEN")
    await expect(panel).to_contain_text("printed in the terminal where the sandbox runs")
    assert sandbox.secrets.agent_token not in await page.page.content()


async def test_a_decision_reads_as_one_from_the_message_to_the_outcome(
    page: SandboxPage, sandbox: Sandbox
) -> None:
    """The agent asks (the client's approve(title, detail)); the approver reads that the agent
    will act itself, confirms letting it go ahead, and the message and thread say it may."""
    question = "The agent asks: Restart the checkout service"
    async with sandbox.session.post(
        f"{sandbox.api_url}/v1/proposals",
        json={
            "operation": "decision",
            "request": {
                "title": "Restart the checkout service",
                "detail": "Errors are up 4% since 09:12.",
            },
            "requested_by": REQUESTER,
        },
        headers={"Authorization": f"Bearer {sandbox.secrets.agent_token}"},
    ) as response:
        assert response.status == 201, await response.text()
    await page.act_as(APPROVER)

    message = page.message(question)
    await expect(message).to_contain_text("The agent will do this itself once approved")
    await expect(message).to_contain_text("trusts the agent to do only what is described here")
    await expect(message).to_contain_text("Detail (the agent's words)")
    await expect(message).not_to_contain_text("Irreversible")
    await page.click(question, "Approve")
    dialog = page.page.get_by_role("alertdialog")
    await expect(dialog).to_contain_text("Let the agent go ahead?")
    await expect(dialog).to_contain_text("The agent does this itself; Countersign runs nothing.")
    await expect(dialog).not_to_contain_text("execute")
    await page.confirm("Approve")

    await expect(message).to_contain_text("Approved: the agent may go ahead.")
    await expect(message.locator(".thread")).to_contain_text("Approved")
    await expect(message.locator(".thread")).to_contain_text("the agent may go ahead")
    for text in ("Succeeded", "Arguments", "executed_by"):
        await expect(message).not_to_contain_text(text)
    await expect(page.proposal("Restart the checkout service")).to_contain_text("approved by")
