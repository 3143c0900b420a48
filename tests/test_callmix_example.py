"""The call mix (examples/callmix): seeded days of the shape its README describes, every call of
them readable by ``policy simulate``, and the careful policy in front of them."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.cli import main
from bot.operators.calls import read_calls
from bot.operators.report import Report
from bot.operators.simulate import simulate
from tests.callmix_example import CONFIG, ENV, callmix, settings

NOW = datetime(2031, 3, 14, 12, tzinfo=UTC)


def test_a_seed_always_gives_the_same_day_and_another_seed_another() -> None:
    first = callmix.day(7, calls=2_000)

    assert callmix.day(7, calls=2_000) == first
    assert callmix.day(8, calls=2_000) != first


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_day_has_the_fleets_shape(seed: int) -> None:
    calls = callmix.day(seed)
    operations = Counter(call["operation"] for call in calls)
    times = [datetime.fromisoformat(call["at"]) for call in calls]
    refunds = [c["request"]["amount_cents"] for c in calls if c["operation"] == "payments.refund"]

    assert 9_000 <= len(calls) <= 11_000
    assert times == sorted(times)
    assert {t.date() for t in times} == {times[0].date()}
    assert all(8 <= t.hour < 19 for t in times)
    reads = operations["crm.lookup_customer"] + operations["orders.lookup_order"]
    assert reads > len(calls) / 2  # mostly reads
    # small refunds with a long tail: the median under 50.00 USD, some over 1,000.00 USD
    assert sorted(refunds)[len(refunds) // 2] < 5_000
    assert max(refunds) > 100_000
    assert {c["agent"] for c in calls} == {"support-bot", "billing-bot", "ops-bot", "reports-bot"}
    assert len({c["requested_by"] for c in calls}) > 20
    # bursts: some minute holds far more calls than the day's average minute
    per_minute = Counter(t.replace(second=0, microsecond=0) for t in times)
    assert max(per_minute.values()) > 5 * len(calls) / 600


def test_check_config_accepts_the_mix_configuration(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)

    code = main(["--config", str(CONFIG), "check-config"])

    assert code == 0, capsys.readouterr().err


async def test_every_call_of_a_day_is_counted_with_no_policy_violation(tmp_path: Path) -> None:
    calls = read_calls(
        "\n".join(json.dumps(call) for call in callmix.day(5, calls=1_500)), source="mix"
    )
    config = settings(tmp_path)

    report = Report.of(config, calls, await simulate(config, calls, store=None, now=NOW))

    assert report.total.calls == len(calls)
    assert report.violations == []
    assert report.total.refused > 0
    kinds = {reason.split(" ", 2)[1] for reason in report.reasons}
    assert kinds <= {"requested_by:", "operation:", "request.amount_cents:", "request.note:"}


async def test_a_day_the_policy_was_not_written_against_costs_under_two_percent_in_clicks(
    tmp_path: Path,
) -> None:
    calls = read_calls("\n".join(json.dumps(call) for call in callmix.day(13)), source="mix")
    config = settings(tmp_path)

    report = Report.of(config, calls, await simulate(config, calls, store=None, now=NOW))

    assert report.total.calls == len(calls)
    assert report.click_share <= 0.02
    assert report.violations == []
    assert report.batched > 0
    assert max(report.waits) <= timedelta(hours=1)  # the longest window of the policy
