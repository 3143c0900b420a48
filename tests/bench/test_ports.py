"""The benchmark routes requests as a deployment does: Slack's (the approvers' clicks) to the
server's own Slack port (``serve --slack-port``), the agents' to its main port."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.bench import scenarios
from bot.bench.stage import running_stage


@pytest.mark.timeout(120)
async def test_clicks_go_to_slacks_port_and_agents_to_the_main_port(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'countersign.sqlite'}"
    async with running_stage(tmp_path, store) as stage:
        server = stage.server
        assert server is not None and server.slack_port not in (None, server.port)
        prepared = await scenarios.prepare_clicks(stage, 2, 1, timeout=60)
        bodies = [*prepared.back_to_back, *prepared.steady]
        clicked = [await stage.post_click(*click) for click in bodies]
        # Slack's port answers Slack's requests only: an agent's submission there is not found
        misrouted = await stage.submit("ingest", url=server.slack_url)
        routed = await stage.submit("ingest")

    assert [url for url, _ in bodies] == [f"{server.slack_url}/slack/events"] * 3
    assert clicked == [200] * 3
    assert (misrouted, routed) == (404, 201)
    assert stage.url == server.url != server.slack_url
