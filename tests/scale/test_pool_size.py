"""``store.pool_size`` reaches the store a real `countersign serve` opens from its configuration
file: under a burst of agents' submissions the database sees no more of its connections than
the pool and the one that listens for changes."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import aiohttp
import asyncpg
import pytest

from bot.slack.local import LocalSlack, running_local_slack
from tests.e2e.harness import BOT_TOKEN, ENV, FINANCE_GROUP
from tests.scale.cluster import (
    ADMIN_URL,
    CountingTarget,
    Instance,
    campaign,
    fresh_database,
    running_target,
    scale_config,
    submit,
)

pytestmark = pytest.mark.postgres

#: The pool the configuration asks for: the smallest allowed, far below the default 10.
POOL_SIZE = 3
#: Submissions sent at once, more than the instance works on at a time (the rest are resent).
SUBMISSIONS = 150


async def test_serve_holds_no_more_connections_than_its_configured_pool(tmp_path: Path) -> None:
    slack = LocalSlack(token=BOT_TOKEN, wall_clock=time.time)
    slack.set_usergroup(FINANCE_GROUP, [])  # the configuration's finance role names it
    async with (
        fresh_database() as db_url,
        running_target(CountingTarget()) as target_url,
        running_local_slack(BOT_TOKEN, slack=slack) as (_, slack_url),
    ):
        text = scale_config(db_url, target_url)
        assert "\n[store]\n" in text
        text = text.replace("\n[store]\n", f"\n[store]\npool_size = {POOL_SIZE}\n", 1)
        config = tmp_path / "countersign.toml"
        config.write_text(text, encoding="utf-8")
        env = {**os.environ, **ENV, "SLACK_API_URL": slack_url}
        instance = Instance("instance-0", config, env, tmp_path)
        admin = await asyncpg.connect(ADMIN_URL)  # on another database: not counted
        name = db_url.rsplit("/", 1)[1]
        seen: list[int] = []
        done = asyncio.Event()

        async def sample() -> None:
            query = "SELECT count(*) FROM pg_stat_activity WHERE datname = $1"
            while not done.is_set():
                seen.append(await admin.fetchval(query, name))
                await asyncio.sleep(0.005)

        try:
            await instance.start()
            sampler = asyncio.create_task(sample())
            async with aiohttp.ClientSession() as http:
                answers = await asyncio.gather(
                    *(
                        submit(http, instance.url, campaign(i), key=f"pool-{i}")
                        for i in range(SUBMISSIONS)
                    )
                )
            done.set()
            await sampler
        finally:
            await instance.stop()
            await admin.close()

    assert [status for status, _ in answers] == [201] * SUBMISSIONS, instance.output()
    # the pool, and the connection that hears other instances' changes
    assert 2 <= max(seen) <= POOL_SIZE + 1, sorted(set(seen))
