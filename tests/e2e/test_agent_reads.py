"""An agent cannot read (or withdraw) as fast as it likes, and nobody reaches the store with
made-up delegation tokens: each test plays the attacker over real HTTP against the running app
and counts what reached its SQLite store, statement by statement.

- Reads, long-polls' starts and withdrawals are charged to each agent's reads bucket
  (``[limits] reads_per_second``, ``reads_burst``) before the store is read: past it 429 with
  Retry-After, nothing read or changed, while another agent and the flooder's own submissions
  are served.
- A bearer token shaped unlike a minted delegation token is refused without a lookup; lookups
  of well-formed tokens never seen are bounded for all callers together (``[delegation]
  unknown_tokens_per_second``); a known one (even revoked) is charged to its agent first.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

from store.proposals import Status
from tests.e2e.harness import (
    AGENT_TOKEN,
    OTHER_AGENT_TOKEN,
    Answer,
    Countersign,
    running_countersign,
)
from tests.e2e.test_agent_quotas import both, campaign, escalation, limits, post
from tests.e2e.test_monitoring import Samples, scrape, value
from tests.e2e.test_requester_identity import ALEX, DANA, delegate, slash
from tests.e2e.test_requester_identity import campaign as delegated_campaign


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def get(cs: Countersign, path: str, token: str = AGENT_TOKEN, **params: str) -> Answer:
    return await cs.request("GET", path, headers=bearer(token), params=params or None)


def reads_of(seen: list[str], item_id: str) -> list[str]:
    """The statements that read the proposal or escalation ``item_id`` by its id."""
    return [s for s in seen if "WHERE id = " in s and item_id in s]


async def refusals(cs: Countersign) -> Samples:
    """The metrics, scraped over HTTP as Prometheus does."""
    return await scrape(cs.http, cs.url)


def reads_limited(samples: Samples, agent: str) -> float:
    return value(samples, "countersign_agent_reads_limited_total", agent=agent)


def tokens_refused(samples: Samples, reason: str) -> float:
    return value(samples, "countersign_delegation_tokens_refused_total", reason=reason)


def assert_read_refused(answer: Answer, *, retry_after: str) -> None:
    assert answer.status == 429, answer.body
    assert answer.headers["Content-Type"].startswith("application/problem+json")
    assert answer.headers["Retry-After"] == retry_after
    problem = answer.json()
    assert [e["field"] for e in problem["errors"]] == ["limits.reads_per_second"]
    assert "support-bot" in problem["detail"]
    assert "nothing was read or changed" in problem["detail"]


# --- reads per second ---------------------------------------------------------------------------


async def test_an_agent_flooding_plain_reads_gets_429_past_its_read_rate_and_others_are_served(
    tmp_path: Path,
) -> None:
    edit = limits(reads_per_second=0.5, reads_burst=5)
    async with running_countersign(tmp_path, config_edit=edit) as cs:
        mine = (await post(cs, "/v1/proposals", campaign(1), AGENT_TOKEN)).json()["id"]
        theirs = (await post(cs, "/v1/proposals", campaign(2), OTHER_AGENT_TOKEN)).json()["id"]
        await cs.settled()
        seen = await cs.traced()

        flood = [await get(cs, f"/v1/proposals/{mine}") for _ in range(30)]

        assert [a.status for a in flood] == [200] * 5 + [429] * 25
        for answer in flood:
            if answer.status == 429:
                # the bucket is empty and refills a token every 2 s: the wait it names
                assert_read_refused(answer, retry_after="2")
        assert len(reads_of(seen, mine)) == 5  # the refused ones never reached the store

        # a long-poll's start and a withdrawal take from the same bucket: refused, nothing done
        assert_read_refused(await get(cs, f"/v1/proposals/{mine}", wait="5"), retry_after="2")
        withdrawn = await cs.request(
            "POST", f"/v1/proposals/{mine}/cancel", headers=bearer(AGENT_TOKEN)
        )
        assert_read_refused(withdrawn, retry_after="2")
        assert len(reads_of(seen, mine)) == 5
        assert (await cs.store.get_proposal(mine)).status is Status.PENDING

        # the other agent's reads, and the flooder's own submissions, have buckets of their own
        assert (await get(cs, f"/v1/proposals/{theirs}", OTHER_AGENT_TOKEN)).status == 200
        assert (await post(cs, "/v1/proposals", campaign(3), AGENT_TOKEN)).status == 201


async def test_an_agent_flooding_reads_of_its_escalation_gets_429_past_its_read_rate(
    tmp_path: Path,
) -> None:
    edit = limits(reads_per_second=0.5, reads_burst=3)
    async with running_countersign(tmp_path, config_edit=edit) as cs:
        mine = (await post(cs, "/v1/escalations", escalation("c-1"), AGENT_TOKEN)).json()["id"]
        theirs = await post(cs, "/v1/escalations", escalation("c-2"), OTHER_AGENT_TOKEN)
        await cs.settled()
        seen = await cs.traced()

        flood = [await get(cs, f"/v1/escalations/{mine}") for _ in range(10)]

        assert [a.status for a in flood] == [200] * 3 + [429] * 7
        assert_read_refused(flood[-1], retry_after="2")
        assert len(reads_of(seen, mine)) == 3
        path = f"/v1/escalations/{theirs.json()['id']}"
        assert (await get(cs, path, OTHER_AGENT_TOKEN)).status == 200


async def test_the_default_read_rate_leaves_a_polling_client_far_within_it(
    tmp_path: Path,
) -> None:
    """Without [limits] for reads, an agent may read a burst of 100 and 20 a second after:
    the Python client's long-poll reads once per 25 s for each proposal it waits for, so even
    its 20 long-polls at once (max_long_polls) are far within it; 100 reads back to back are."""
    async with running_countersign(tmp_path) as cs:
        mine = (await post(cs, "/v1/proposals", campaign(1), AGENT_TOKEN)).json()["id"]

        reads = [await get(cs, f"/v1/proposals/{mine}") for _ in range(100)]

        assert {a.status for a in reads} == {200}


async def test_reads_refused_past_the_read_rate_are_counted_in_the_metrics_by_agent(
    tmp_path: Path,
) -> None:
    """An operator sees which agent is being turned away, apart from every other 429: each
    read, long-poll start and withdrawal refused counts once, under its agent alone."""
    edit = limits(reads_per_second=0.01, reads_burst=2)
    async with running_countersign(tmp_path, config_edit=edit) as cs:
        mine = (await post(cs, "/v1/proposals", campaign(1), AGENT_TOKEN)).json()["id"]
        theirs = (await post(cs, "/v1/proposals", campaign(2), OTHER_AGENT_TOKEN)).json()["id"]
        before = await refusals(cs)

        reads = [await get(cs, f"/v1/proposals/{mine}") for _ in range(6)]
        long_poll = await get(cs, f"/v1/proposals/{mine}", wait="5")
        withdrawal = await cs.request(
            "POST", f"/v1/proposals/{mine}/cancel", headers=bearer(AGENT_TOKEN)
        )
        other = await get(cs, f"/v1/proposals/{theirs}", OTHER_AGENT_TOKEN)
        after = await refusals(cs)

    assert [a.status for a in reads] == [200] * 2 + [429] * 4
    assert long_poll.status == withdrawal.status == 429
    assert other.status == 200
    assert reads_limited(after, "support-bot") - reads_limited(before, "support-bot") == 6
    assert reads_limited(after, "ops-bot") == reads_limited(before, "ops-bot") == 0
    # no other label: an agent's name is all a refusal is counted by
    assert {
        labels
        for name, labels in after
        if name == "countersign_agent_reads_limited_total" and after[(name, labels)]
    } == {frozenset({("agent", "support-bot")})}


# --- delegation tokens ----------------------------------------------------------------------------

DELEGATING = {"support-bot": {"acts_for": [DANA], "delegation": True}}


def unknown_tokens(per_second: float, burst: int) -> Any:
    return lambda text: (
        f"{text}\n[delegation]\nunknown_tokens_per_second = {per_second}\n"
        f"unknown_tokens_burst = {burst}\n"
    )


def lookups(seen: list[str]) -> list[str]:
    """The statements that looked a delegation token up."""
    return [s for s in seen if "FROM delegations WHERE token_hash" in s]


async def test_made_up_delegation_tokens_reach_the_store_only_within_the_bound_for_unknown_ones(
    tmp_path: Path,
) -> None:
    """The attacker holds no token at all and sends made-up ``csd_`` ones: malformed ones are
    refused without a lookup, well-formed ones are looked up only within the shared bound, and
    past it 429; a person's delegation made on this instance is still served through it."""
    edit = unknown_tokens(0.01, 3)
    async with running_countersign(tmp_path, agent_settings=DELEGATING, config_edit=edit) as cs:
        token, _ = await delegate(cs, ALEX)
        seen = await cs.traced()

        malformed = [
            "csd_",
            "csd_" + "x" * 40,
            "csd_" + "x" * 44,
            "csd_" + "!" * 43,
            "csd_" + "x" * 42 + "\u00e9",
            "csd_" + "x" * 4_000,
        ]
        before = await refusals(cs)
        refused = [await get(cs, "/v1/proposals/cs_x", made_up) for made_up in malformed]
        assert [a.status for a in refused] == [401] * len(malformed)
        assert "malformed delegation token" in refused[0].json()["detail"]
        assert lookups(seen) == []

        made_up = ["csd_" + secrets.token_urlsafe(32) for _ in range(40)]
        flood = [await get(cs, "/v1/proposals/cs_x", t) for t in made_up]

        assert [a.status for a in flood] == [401] * 3 + [429] * 37
        assert len(lookups(seen)) == 3
        limited = next(a for a in flood if a.status == 429)
        assert limited.headers["Content-Type"].startswith("application/problem+json")
        assert int(limited.headers["Retry-After"]) >= 1
        problem = limited.json()
        assert [e["field"] for e in problem["errors"]] == ["delegation.unknown_tokens_per_second"]
        assert "not looked up" in problem["detail"]

        # each refusal made without a lookup is counted by its reason, never by its token
        after = await refusals(cs)
        assert tokens_refused(after, "malformed") - tokens_refused(before, "malformed") == 6
        over_bound = tokens_refused(after, "unknown_tokens_limit")
        assert over_bound - tokens_refused(before, "unknown_tokens_limit") == 37
        assert not any(t in name + str(labels) for name, labels in after for t in made_up)

        # the delegation Alex made here is known: the flood does not stand in its way
        status, created = await cs.submit(delegated_campaign(None), token=token)
        assert status == 201, created
        assert created["requested_by"] == ALEX
        assert await cs.proposal_count() == 1


async def test_a_revoked_delegation_token_flooded_by_its_agent_costs_the_agents_own_reads(
    tmp_path: Path,
) -> None:
    edit = both(limits(reads_per_second=0.01, reads_burst=3), unknown_tokens(1000, 1000))
    async with running_countersign(tmp_path, agent_settings=DELEGATING, config_edit=edit) as cs:
        token, delegation_id = await delegate(cs, ALEX)
        assert "revoked" in (await slash(cs, ALEX, f"revoke-delegation {delegation_id}"))["text"]
        seen = await cs.traced()
        before = await refusals(cs)

        flood = [await get(cs, "/v1/proposals/cs_x", token) for _ in range(12)]

        assert [a.status for a in flood] == [401] * 3 + [429] * 9
        after = await refusals(cs)  # counted as its agent's reads, not as unknown tokens
        assert reads_limited(after, "support-bot") - reads_limited(before, "support-bot") == 9
        assert tokens_refused(after, "unknown_tokens_limit") == 0
        assert "revoked" in flood[0].json()["detail"]
        assert_read_refused(flood[-1], retry_after="100")
        assert len(lookups(seen)) == 3  # one per read the agent's bucket paid for
