"""An operator sees, in the metrics, which agent is refused at which of its limits: each
submission or long-poll answered ``429`` at the agent's submission rate, pending proposals, open
escalations or long-polls counts once in ``countersign_agent_requests_limited_total``, under the
agent's configured name and the limit's setting; an accepted request counts nowhere.

Each test floods over real HTTP as the support bot, then scrapes ``/metrics`` as Prometheus
does, and compares every series of the family before and after.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from bot.api.agent_requests import QUOTAS
from tests.e2e.harness import (
    AGENT_TOKEN,
    OTHER_AGENT_TOKEN,
    REQUESTER,
    Countersign,
    eventually,
    running_countersign,
)
from tests.e2e.test_agent_quotas import assert_refused, campaign, escalation, limits, post
from tests.e2e.test_monitoring import Samples, scrape

LIMITED = "countersign_agent_requests_limited_total"

TAGGING = {  # the policy runs it at once: it waits for nobody, so no pending place
    "operation": "crm.tag_customers",
    "request": {"segment": "vip", "tag": "thanks", "customers": 5},
    "requested_by": REQUESTER,
}


async def metrics(cs: Countersign) -> Samples:
    return await scrape(cs.http, cs.url)


def counted(before: Samples, after: Samples) -> dict[tuple[str, str], float]:
    """What the family counted between the two scrapes, by (agent, limit); only what moved."""
    moved: dict[tuple[str, str], float] = {}
    for (name, labels), value in after.items():
        if name == LIMITED and value != before.get((name, labels), 0.0):
            named = dict(labels)
            assert set(named) == {"agent", "limit"}, named
            moved[named["agent"], named["limit"]] = value - before.get((name, labels), 0.0)
    return moved


async def test_proposals_refused_at_the_pending_limit_and_at_the_rate_are_counted_apart(
    tmp_path: Path,
) -> None:
    edit = limits(submissions_per_second=0.01, submissions_burst=6, max_pending_proposals=2)
    async with running_countersign(tmp_path, config_edit=edit) as cs:
        start = await metrics(cs)
        accepted = [
            await post(cs, "/v1/proposals", campaign(1), AGENT_TOKEN),
            await post(cs, "/v1/proposals", campaign(2), AGENT_TOKEN),
            await post(cs, "/v1/proposals", TAGGING, AGENT_TOKEN),
            await post(cs, "/v1/proposals", campaign(1), AGENT_TOKEN),  # a replay: served
        ]
        before = await metrics(cs)
        flood = [await post(cs, "/v1/proposals", campaign(n), AGENT_TOKEN) for n in range(3, 11)]
        other = await post(cs, "/v1/proposals", campaign(3), OTHER_AGENT_TOKEN)
        after = await metrics(cs)

    assert [a.status for a in accepted] == [201, 201, 201, 200]
    assert counted(start, before) == {}  # accepted submissions count nowhere
    # the burst's last two tokens reach the pending limit; the six after are over the rate
    for answer in flood[:2]:
        assert_refused(answer, "max_pending_proposals")
    for answer in flood[2:]:
        assert_refused(answer, "submissions_per_second")
    assert other.status == 201
    assert counted(before, after) == {
        ("support-bot", "max_pending_proposals"): 2,
        ("support-bot", "submissions_per_second"): 6,
    }


async def test_escalations_refused_at_the_open_escalations_limit_and_at_the_rate_are_counted(
    tmp_path: Path,
) -> None:
    edit = limits(submissions_per_second=0.01, submissions_burst=4, max_open_escalations=1)
    async with running_countersign(tmp_path, config_edit=edit) as cs:
        start = await metrics(cs)
        first = await post(cs, "/v1/escalations", escalation("c-0"), AGENT_TOKEN)
        before = await metrics(cs)
        flood = [
            await post(cs, "/v1/escalations", escalation(f"c-{n}"), AGENT_TOKEN)
            for n in range(1, 6)
        ]
        other = await post(cs, "/v1/escalations", escalation("c-1"), OTHER_AGENT_TOKEN)
        after = await metrics(cs)

    assert first.status == 201
    assert counted(start, before) == {}
    for answer in flood[:3]:
        assert_refused(answer, "max_open_escalations")
    for answer in flood[3:]:
        assert_refused(answer, "submissions_per_second")
    assert other.status == 201
    assert counted(before, after) == {
        ("support-bot", "max_open_escalations"): 3,
        ("support-bot", "submissions_per_second"): 2,
    }


async def test_long_polls_refused_past_the_agents_long_poll_limit_are_counted(
    tmp_path: Path,
) -> None:
    async with running_countersign(tmp_path, config_edit=limits(max_long_polls=2)) as cs:
        mine = (await post(cs, "/v1/proposals", campaign(1), AGENT_TOKEN)).json()["id"]
        theirs = (await post(cs, "/v1/proposals", campaign(2), OTHER_AGENT_TOKEN)).json()["id"]
        quotas = cs.app[QUOTAS]
        before = await metrics(cs)
        held = [asyncio.create_task(cs.read(mine, wait=2)) for _ in range(2)]

        async def both_held() -> bool:
            return quotas.long_polls("support-bot") == 2

        await eventually(both_held)
        refused = [
            await cs.request(
                "GET",
                f"/v1/proposals/{mine}",
                params={"wait": "2"},
                headers={"Authorization": f"Bearer {AGENT_TOKEN}"},
            )
            for _ in range(3)
        ]
        plain = await cs.read(mine)  # no long-poll: not limited by them
        other = await cs.read(theirs, wait=0.2, token=OTHER_AGENT_TOKEN)
        answered = await asyncio.gather(*held)
        after = await metrics(cs)

    for answer in refused:
        assert_refused(answer, "max_long_polls")
    assert [plain[0], other[0]] == [200, 200]
    assert [status for status, _ in answered] == [200, 200]
    assert counted(before, after) == {("support-bot", "max_long_polls"): 3}


async def test_every_refusal_series_is_there_at_zero_before_the_first_refusal(
    tmp_path: Path,
) -> None:
    """Prometheus' rate() and increase() see a series' first refusal only if the series was
    scraped at 0 before it: each configured agent's limits, and each kind of shed request and
    token refusal, are exported from the start."""
    async with running_countersign(tmp_path) as cs:
        start = await metrics(cs)
        agents = sorted(cs.service.settings.agents)

    def series(name: str) -> dict[frozenset[tuple[str, str]], float]:
        return {labels: value for (n, labels), value in start.items() if n == name}

    every_limit = (
        "submissions_per_second",
        "max_pending_proposals",
        "max_open_escalations",
        "max_long_polls",
    )
    assert len(agents) >= 2, agents  # the support bot and another
    assert series(LIMITED) == {
        frozenset({("agent", agent), ("limit", limit)}): 0.0
        for agent in agents
        for limit in every_limit
    }
    assert series("countersign_agent_reads_limited_total") == {
        frozenset({("agent", agent)}): 0.0 for agent in agents
    }
    assert series("countersign_agent_requests_shed_total") == {
        frozenset({("request", "read")}): 0.0,
        frozenset({("request", "submission")}): 0.0,
    }
    assert series("countersign_delegation_tokens_refused_total") == {
        frozenset({("reason", "malformed")}): 0.0,
        frozenset({("reason", "unknown_tokens_limit")}): 0.0,
    }
