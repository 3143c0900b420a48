"""People first: a click is recorded, acknowledged and applied while agents' work holds every
store connection it may.

On PostgreSQL, agents' submissions that are really stuck in the database (their audit entries
wait for a table lock the test holds, as writes behind a long transaction do) fill the places
of the pool they may use, and more wait for one. A signed Approve click sent over HTTP is still
acknowledged, recorded at once on a connection kept for people (store/lanes.py), never answered
busy, and applied once the agents' writes go through.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import asyncpg
import pytest

from store.postgres import KEPT_FOR_PEOPLE
from store.proposals import Status
from tests.e2e.harness import (
    APPROVER,
    REQUESTER,
    Countersign,
    eventually,
    running_countersign,
)
from tests.e2e.store_outage import PG_ADMIN_URL, postgres_through_proxy
from tests.slack_requests import block_action_body

pytestmark = pytest.mark.postgres

CAMPAIGN: dict[str, Any] = {
    "operation": "crm.send_campaign",
    "request": {"segment": "all", "template": "tmpl_x", "recipients": 9},
    "requested_by": REQUESTER,
}

#: the store's pool in the app (store/postgres.py's default size)
POOL = 10
#: agents' submissions sent at once: more than the places they may hold
AGENTS = 2 * POOL


def _campaign(n: int) -> dict[str, Any]:
    return {**CAMPAIGN, "request": {**CAMPAIGN["request"], "template": f"tmpl_{n}"}}


@pytest.fixture
async def pg(tmp_path: Path) -> AsyncIterator[tuple[Countersign, asyncpg.Connection[Any]]]:
    async with postgres_through_proxy() as (url, _):
        schema = parse_qs(urlsplit(url).query)["search_path"][0]
        async with running_countersign(tmp_path, store_url=url) as cs:
            raw = await asyncpg.connect(PG_ADMIN_URL, server_settings={"search_path": schema})
            try:
                yield cs, raw
            finally:
                await raw.close()


async def _stuck(raw: asyncpg.Connection[Any]) -> int:
    """Countersign's sessions waiting for a lock."""
    return int(
        await raw.fetchval(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE application_name = 'countersign' AND wait_event_type = 'Lock'"
        )
    )


async def test_a_click_is_recorded_and_applied_while_agents_fill_the_store(
    pg: tuple[Countersign, asyncpg.Connection[Any]],
) -> None:
    cs, raw = pg
    _, created = await cs.submit(CAMPAIGN)
    posted = await cs.posted(created["id"])
    click = block_action_body(
        user_id=APPROVER,
        action_id="approve",
        value=created["id"],
        channel_id=posted.slack_channel,
        message_ts=posted.slack_ts,
        trigger_id=cs.slack.issue_trigger(APPROVER),
    )

    schema = await raw.fetchval("SELECT current_schema()")
    blocker = await asyncpg.connect(PG_ADMIN_URL, server_settings={"search_path": schema})
    lock = blocker.transaction()
    await lock.start()
    await blocker.execute("LOCK TABLE audit_log IN EXCLUSIVE MODE")  # every audit append waits
    agents = [asyncio.create_task(cs.submit(_campaign(n))) for n in range(AGENTS)]
    try:

        async def full() -> bool:
            return await _stuck(raw) >= POOL - KEPT_FOR_PEOPLE

        await eventually(full)  # every place agents' work may hold is held, stuck

        assert await cs.post_slack(click) == 200  # Slack got its acknowledgement

        async def recorded() -> int:
            return int(await raw.fetchval("SELECT count(*) FROM recorded_clicks"))

        assert await eventually(recorded) == 1  # recorded while the agents are still stuck
        assert await _stuck(raw) >= POOL - KEPT_FOR_PEOPLE
        assert not any(task.done() for task in agents)
    finally:
        await lock.rollback()
        await blocker.close()

    answers = await asyncio.gather(*agents)
    _, final = await cs.read(created["id"], wait=10)

    assert [status for status, _ in answers] == [201] * AGENTS
    assert final["status"] == Status.SUCCEEDED
    assert len([r for r in cs.target.executions() if b"tmpl_x" in r["body"]]) == 1
    told = [m.text for m in cs.slack.ephemeral(APPROVER)]
    assert not any("busy" in text or "try again" in text for text in told), told
