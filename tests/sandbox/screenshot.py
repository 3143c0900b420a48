"""The README's screenshot of the sandbox: ``python -m tests.sandbox.screenshot docs/sandbox.png``.

It plays the browser tests' story once (the requester is refused, an approver approves, the agent
proposes again) and photographs the page as the requester sees it. Debian's
``fonts-noto-color-emoji`` makes Slack's emoji show as pictures rather than boxes.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from bot.sandbox import running_sandbox
from tests.sandbox.browser import SandboxPage, chromium

REFUND = "Refund 450.00 USD to cus_grace"


async def photograph(path: Path) -> None:
    async with running_sandbox() as sandbox, chromium() as browser:
        context = await browser.new_context(
            viewport={"width": 1440, "height": 1240}, device_scale_factor=1
        )
        page = SandboxPage(await context.new_page())
        await page.page.goto(sandbox.url)
        await page.submit_demo()
        await page.message(REFUND).wait_for()

        await page.act_as("U0DANA")
        await page.click(REFUND, "Approve")
        await page.confirm("Approve")
        await page.page.locator("article.ephemeral").wait_for()

        await page.act_as("U0PRIYA")
        await page.click(REFUND, "Approve")
        await page.confirm("Approve")
        await page.message(REFUND).locator(".thread").wait_for()

        answer = await sandbox.session.post(
            f"{sandbox.api_url}/v1/proposals",
            json={
                "operation": "payments.refund",
                "request": {"payment_id": "pay_1005"},
                "requested_by": "U0DANA",
                "run_id": "support-run-7",
                "reason": "The customer returned the headphones unopened.",
            },
            headers={"Authorization": f"Bearer {sandbox.secrets.agent_token}"},
        )
        answer.release()
        await page.act_as("U0DANA")
        await page.message("Refund 89.00 EUR").wait_for()
        await page.page.wait_for_timeout(1500)  # one more poll: every panel up to date
        await page.page.screenshot(path=path)
        await context.close()


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/sandbox.png")
    target.parent.mkdir(parents=True, exist_ok=True)
    asyncio.run(photograph(target))
    print(f"wrote {target}")
