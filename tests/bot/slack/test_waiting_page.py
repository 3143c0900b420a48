"""The fair page: every agent gets a share of what a person sees, grouped by agent."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.slack.waiting_page import fair_page
from store.proposals import Proposal
from tests.store.conformance import new_proposal

NOW = datetime(2031, 3, 14, 15, 9, tzinfo=UTC)


def pending(agent: str, minutes: int, risk: str = "irreversible") -> Proposal:
    new = new_proposal(NOW, agent=agent, risk=risk, expires_at=NOW + timedelta(minutes=minutes))
    return Proposal(**new.model_dump(), updated_at=NOW)


def test_a_flooding_agent_gets_a_share_and_the_others_theirs() -> None:
    flood = [pending("flooder", 5 + n) for n in range(200)]
    quiet = [pending("quiet", 50), pending("quiet", 60)]

    page = fair_page({"flooder": flood[:10], "quiet": quiet}, {"flooder": 190}, size=6)

    assert [p.agent for p in page.shown] == ["flooder"] * 4 + ["quiet"] * 2
    assert page.shown[:4] == tuple(flood[:4])  # riskiest, then soonest, within the group
    assert dict(page.beyond) == {"flooder": 196}
    assert page.more == 196


def test_the_group_with_the_riskiest_proposal_comes_first() -> None:
    read = [pending("reader", 1, risk="read")]
    writes = [pending("writer", 50)]

    page = fair_page({"reader": read, "writer": writes}, {}, size=15)

    assert [p.agent for p in page.shown] == ["writer", "reader"]
    assert page.beyond == {}


def test_unchecked_pending_of_an_agent_with_nothing_on_the_page_is_counted() -> None:
    page = fair_page({"a": [pending("a", 5)], "b": []}, {"b": 7}, size=1)

    assert [p.agent for p in page.shown] == ["a"]
    assert dict(page.beyond) == {"b": 7}


def test_a_page_of_no_room_is_refused() -> None:
    with pytest.raises(ValueError, match="size"):
        fair_page({}, {}, size=0)
