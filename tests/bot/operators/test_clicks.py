"""What asks cost people (bot/operators/clicks.py): a message per proposal without a window,
digests closed by their window or their max, quorum counted per person, rejections counted,
the added wait."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from bot.operators.clicks import Asked, Verdict, digests, percentile
from contracts.batching import BackupRoute

T0 = datetime(2031, 3, 14, 9, 0, tzinfo=UTC)


def _ask(
    index: int,
    minutes: float,
    *,
    window: float | None = 30,
    max_items: int = 25,
    quorum: int = 1,
    rule: str = "refunds",
    verdict: Verdict | None = None,
) -> Asked:
    return Asked(
        index=index,
        at=T0 + timedelta(minutes=minutes),
        rule=rule,
        channel="C0REFUNDS",
        approvers=("finance",),
        quorum=quorum,
        window=None if window is None else timedelta(minutes=window),
        max=max_items if window is not None else 1,
        verdict=verdict,
    )


def test_without_a_window_each_proposal_is_a_message_and_a_click_per_quorum_person() -> None:
    shown = digests([_ask(0, 0, window=None, quorum=2), _ask(1, 1, window=None, quorum=2)])

    assert [len(d.items) for d in shown] == [1, 1]
    assert [d.clicks for d in shown] == [2, 2]


def test_a_window_groups_what_arrives_within_it_and_shows_it_when_it_closes() -> None:
    shown = digests([_ask(0, 0), _ask(1, 10), _ask(2, 29), _ask(3, 31)])

    assert [[item.index for item in d.items] for d in shown] == [[0, 1, 2], [3]]
    assert shown[0].shown_at == T0 + timedelta(minutes=30)
    assert shown[1].shown_at == T0 + timedelta(minutes=61)  # its own window, opened at 31
    assert [d.clicks for d in shown] == [1, 1]
    assert shown[0].waits() == [timedelta(minutes=30), timedelta(minutes=20), timedelta(minutes=1)]


def test_a_full_digest_is_shown_when_its_max_arrives() -> None:
    shown = digests([_ask(n, n, max_items=3) for n in range(4)])

    assert [len(d.items) for d in shown] == [3, 1]
    assert shown[0].shown_at == T0 + timedelta(minutes=2)


def test_rules_are_batched_apart_and_quorum_counts_each_person() -> None:
    shown = digests(
        [_ask(0, 0, quorum=2, rule="large"), _ask(1, 1), _ask(2, 2, quorum=2, rule="large")]
    )

    by_rule = {d.rule: d for d in shown}
    assert len(by_rule["large"].items) == 2
    assert by_rule["large"].clicks == 2
    assert by_rule["refunds"].clicks == 1


def test_each_rejection_is_a_click_and_an_expired_digest_costs_none() -> None:
    mixed = digests([_ask(0, 0), _ask(1, 1, verdict="rejected"), _ask(2, 2, verdict="rejected")])
    expired = digests([_ask(0, 0, verdict="expired")])

    assert [d.clicks for d in mixed] == [3]  # one approval submit, two rejections
    assert [d.clicks for d in expired] == [0]


def test_percentiles_are_nearest_rank() -> None:
    waits = [timedelta(minutes=m) for m in range(1, 101)]

    assert percentile(waits, 0.5) == timedelta(minutes=50)
    assert percentile(waits, 0.95) == timedelta(minutes=95)
    assert percentile([], 0.5) is None


def test_a_proposal_shown_at_once_is_handed_over_counting_from_its_arrival() -> None:
    route = BackupRoute(after=0.5, approvers=("finance-leads",))
    asked = [
        replace(
            _ask(n, 0, window=None, verdict=verdict),
            decided_at=T0 + timedelta(minutes=minutes),
            then=route,
            expires_after=timedelta(hours=4),
        )
        for n, (verdict, minutes) in enumerate(
            [("approved", 119), ("approved", 120), ("expired", 240)]
        )
    ]

    shown = digests(asked)

    assert [d.handover_at for d in shown] == [T0 + timedelta(hours=2)] * 3
    assert [len(d.handed_over()) for d in shown] == [0, 1, 1]
    assert [dict(d.clicks_by_role()) for d in shown] == [{"finance": 1}, {"finance-leads": 1}, {}]
