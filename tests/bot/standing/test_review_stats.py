"""Review sampling settings, and ``countersign policy review-stats`` run in-process on a store."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.cli import main
from bot.settings import ConfigError, load_settings
from store.sqlite import SqliteStore
from tests.bot.test_cli import environment, write_config  # noqa: F401 (a fixture)
from tests.e2e.harness import ENV, config_text
from tests.store.standing_conformance import covered

NOW = datetime(2031, 3, 14, 15, 9, 26, tzinfo=UTC)


def _load(tmp_path: Path, approvals: str) -> None:
    config, _ = write_config(tmp_path, f"{config_text('http://127.0.0.1:9')}\n{approvals}")
    load_settings(config, ENV)


# --- settings -------------------------------------------------------------------------------------


def test_review_sampling_reads_its_rate_and_channel(tmp_path: Path) -> None:
    config, _ = write_config(
        tmp_path,
        f"{config_text('http://127.0.0.1:9')}\n"
        '[approvals]\nreview_sample = 0.25\nreview_channel = "C0REVIEWS"\n',
    )

    approvals = load_settings(config, ENV).approvals

    assert (approvals.review_sample, approvals.review_channel) == (0.25, "C0REVIEWS")


def test_review_sampling_is_off_by_default(tmp_path: Path) -> None:
    config, _ = write_config(tmp_path)

    approvals = load_settings(config, ENV).approvals

    assert (approvals.review_sample, approvals.review_channel) == (0.0, None)


@pytest.mark.parametrize(
    ("approvals", "expected"),
    [
        (
            "review_sample = 0.1",
            "approvals.review_channel: required when approvals.review_sample is above 0 (it is "
            "0.1): the Slack channel id, such as 'C0REVIEWS', where sampled automatic approvals "
            "are posted for review",
        ),
        ("review_sample = 1.5", "approvals.review_sample: expected a number of at most 1, got 1.5"),
        (
            "review_sample = -0.1",
            "approvals.review_sample: expected a number of at least 0, got -0.1",
        ),
        (
            'review_sample = 0.1\nreview_channel = "#reviews"',
            "approvals.review_channel: expected a Slack channel id such as 'C0REVIEWS'",
        ),
    ],
    ids=["no-channel", "above-one", "negative", "channel-name"],
)
def test_bad_review_settings_are_refused_naming_the_key(
    tmp_path: Path, approvals: str, expected: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        _load(tmp_path, f"[approvals]\n{approvals}\n")

    assert any(expected in problem for problem in caught.value.problems), caught.value.problems


# --- countersign policy review-stats --------------------------------------------------------------


async def _fill(db: Path) -> None:
    """small-tags: 3 sampled (2 reviewed, 1 flagged), 1 not sampled; refunds: 1 sampled."""
    store = await SqliteStore.open(db)
    try:
        small = [
            (await store.create_proposal(covered(NOW, None, 100 + i, rule_id="small-tags", **e)))[0]
            for i, e in enumerate([{"review_sampled": True}] * 3 + [{}])
        ]
        await store.create_proposal(covered(NOW, None, 5, rule_id="refunds", review_sampled=True))
        standing = store.standing()
        await standing.record_review(small[0].id, reviewer="U0R", verdict="ok", now=NOW)
        await standing.record_review(
            small[1].id, reviewer="U0R", verdict="should_have_asked", now=NOW
        )
    finally:
        await store.close()


@pytest.mark.usefixtures("environment")
def test_review_stats_prints_the_miss_rate_per_rule_and_in_total(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config, db = write_config(
        tmp_path,
        f"{config_text('http://127.0.0.1:9')}\n"
        '[approvals]\nreview_sample = 0.1\nreview_channel = "C0REVIEWS"\n',
    )
    asyncio.run(_fill(db))

    code = main(["--config", str(config), "policy", "review-stats"])

    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.splitlines() == [
        "review sample: 0.1 of automatic approvals",
        "rule        standing rule  sampled  reviewed  flagged  miss rate",
        "refunds     -                    1         0        0          -",
        "small-tags  -                    3         2        1      50.0%",
        "total                            4         2        1      50.0%",
    ]


@pytest.mark.usefixtures("environment")
def test_review_stats_of_an_empty_store_says_nothing_was_sampled(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config, _ = write_config(tmp_path)

    code = main(["--config", str(config), "policy", "review-stats"])

    assert code == 0
    assert capsys.readouterr().out.splitlines() == [
        "review sample: 0 of automatic approvals",
        "no automatic approval has been sampled for review yet",
    ]
