"""Headless Chromium for the sandbox's browser tests: Debian's, since Playwright cannot download
its own here."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Final

from playwright.async_api import Browser, Locator, Page, async_playwright, expect

__all__ = ["CHROMIUM", "TIMEOUT_MS", "SandboxPage", "chromium", "chromium_missing", "opened"]

TIMEOUT_MS: Final = 10_000  #: how long an expectation waits for the page (it polls every second)

CHROMIUM: Final = Path("/usr/bin/chromium")
_ARGS: Final = [
    "--no-sandbox",  # CI runs as root, where Chromium's own sandbox cannot start
    "--disable-gpu",
    "--disable-background-networking",  # never any network beyond loopback
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def chromium_missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    if CHROMIUM.exists() and os.access(CHROMIUM, os.X_OK):
        return None
    return f"{CHROMIUM} is missing: install Debian's package with 'apt-get install chromium'"


@asynccontextmanager
async def chromium() -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=_ARGS
        )
        try:
            yield browser
        finally:
            await browser.close()


@asynccontextmanager
async def opened(
    url: str, *, width: int = 1440, height: int = 900, screenshot: Path | None = None
) -> AsyncIterator[SandboxPage]:
    """The sandbox page in a fresh headless Chromium, photographed at the end (``screenshot``);
    fails if the page's script threw."""
    expect.set_options(timeout=TIMEOUT_MS)
    async with chromium() as browser:
        context = await browser.new_context(viewport={"width": width, "height": height})
        page = await context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        await page.goto(url)
        yield SandboxPage(page)
        if screenshot is not None:
            await page.screenshot(path=screenshot, full_page=True)
        await context.close()
        assert errors == [], "the page's script failed"


class SandboxPage:
    """The sandbox page as a person uses it: pick who you are, click, type."""

    def __init__(self, page: Page) -> None:
        self.page = page

    async def act_as(self, user_id: str) -> None:
        await self.page.select_option("#whoami", user_id)

    async def open_channel(self, name: str) -> None:
        await self.page.get_by_role("button", name=f"# {name}").click()

    async def submit_demo(self) -> None:
        await self.page.get_by_role("button", name="Submit demo proposals").click()

    async def try_scenario(self, button: str) -> None:
        """One of the agent panel's "More to try" buttons, by the start of its text."""
        await self.page.locator("[data-scenario]", has_text=button).click()

    def proposal(self, title: str) -> Locator:
        """The agent panel's line for a proposal or escalation."""
        return self.page.locator("#proposals li", has_text=title)

    def message(self, title: str) -> Locator:
        """The top-level message whose text has ``title`` (its thread included)."""
        return self.page.locator("article.msg:not(.reply)", has_text=title)

    async def click(self, title: str, button: str) -> None:
        actions = self.message(title).locator(".b-actions")
        await actions.get_by_role("button", name=button, exact=True).click()

    def ephemeral(self) -> Locator:
        return self.page.locator("article.ephemeral")

    async def confirm(self, button: str) -> None:
        await self.page.get_by_role("alertdialog").get_by_role("button", name=button).click()

    def modal(self, title: str) -> Locator:
        return self.page.get_by_role("dialog", name=title)
