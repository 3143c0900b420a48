"""How the click scenarios count: a click told "busy, try again" is acknowledged by Slack's HTTP
answer but not served, and its decision is never applied."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.bench import scenarios
from bot.bench.stage import running_stage

#: one click worked on at a time, so that clicks arriving together find no room
ONE_AT_A_TIME = "\n[server]\nmax_in_flight_clicks = 1\n"


@pytest.mark.timeout(180)
async def test_a_click_told_busy_is_neither_served_nor_applied(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'countersign.sqlite'}"
    async with running_stage(tmp_path, store, extra_config=ONE_AT_A_TIME) as stage:
        stage.target.delay = 1.0  # the one admitted click holds the room while others arrive
        prepared = await scenarios.prepare_clicks(stage, 8, 1, paced=4, timeout=60)
        assert prepared.posted == (13, 13)

        served, applied = await scenarios.clicks(stage, prepared, duration=30)
        paced = await scenarios.paced_decisions(stage, prepared, rate=100)

    clicked = served.details
    assert clicked["acknowledged"] == 8  # Slack's answer came for every click...
    assert clicked["told_busy"] >= 1  # ...but some were told busy
    assert served.count == clicked["served"] == 8 - clicked["told_busy"]
    assert clicked["executions"] == served.count
    assert applied.count == applied.details["applied"] == served.count
    assert applied.details["clicked"] == 8

    assert paced.details["clicked"] == 4
    assert paced.details["told_busy"] >= 1
    assert paced.count == paced.details["applied"] == 4 - paced.details["told_busy"]
