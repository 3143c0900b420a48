"""How the click scenarios count: every click Slack acknowledged is counted, a click told "busy,
try again" would be counted as not served, and a decision counts as applied only once its outcome
is in the message. Approve clicks are recorded at the click and applied after, so even with room
for one click at a time and a slow target none is told busy and every one is applied."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bot.bench import scenarios
from bot.bench.stage import running_stage

#: one click worked on at a time, so that clicks arriving together find no room
ONE_AT_A_TIME = "\n[server]\nmax_in_flight_clicks = 1\n"


@pytest.mark.timeout(180)
async def test_clicks_beyond_the_room_are_recorded_served_and_all_applied(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'countersign.sqlite'}"
    async with running_stage(tmp_path, store, extra_config=ONE_AT_A_TIME) as stage:
        stage.target.delay = 1.0  # the one click at work holds the room while others arrive
        prepared = await scenarios.prepare_clicks(stage, 8, 1, paced=4, timeout=60)
        assert prepared.posted == (13, 13)

        served, applied = await scenarios.clicks(stage, prepared, duration=30)
        paced = await scenarios.paced_decisions(stage, prepared, rate=100)

    clicked = served.details
    assert clicked["acknowledged"] == 8  # Slack's answer came for every click...
    assert clicked["told_busy"] == 0  # ...none was turned away...
    assert served.count == clicked["served"] == 8
    assert clicked["executions"] == 8  # ...and each ran once at the target
    assert applied.count == applied.details["applied"] == 8
    assert applied.details["clicked"] == 8

    assert paced.details["clicked"] == 4
    assert paced.details["told_busy"] == 0
    assert paced.count == paced.details["applied"] == 4


#: one agent submission worked on at a time, so that submissions arriving together are told busy
ONE_SUBMISSION = "\n[server]\nmax_in_flight_submissions = 1\n"


@pytest.mark.timeout(180)
async def test_the_scenarios_that_time_what_is_shown_send_a_busy_proposal_again(
    tmp_path: Path,
) -> None:
    store = f"sqlite:///{tmp_path / 'countersign.sqlite'}"
    async with running_stage(tmp_path, store, extra_config=ONE_SUBMISSION) as stage:
        sent_once = await asyncio.gather(*(stage.submit("ingest") for _ in range(16)))
        taken = await asyncio.gather(*(stage.submit_taken("ingest") for _ in range(16)))

    assert 503 in sent_once  # the room for one is real: sent once, some are told busy...
    assert taken == [201] * 16  # ...and sent again after Retry-After, every one is taken
