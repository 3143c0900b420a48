"""``policy simulate`` and ``policy suggest`` on days another generator made (tests/othermix.py:
other shares, a night shift over midnight or several days, times in several zones and out of
order, retry storms, amounts at the thresholds, unicode, calls the API refuses), with the
example fleet's careful policy (examples/callmix/countersign.toml). The server's agreement on a
slice of such a day is in tests/bench/test_othermix_server.py."""

from __future__ import annotations

import asyncio
import json
import math
import subprocess
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.cli import main
from bot.operators.calls import Call, read_calls
from bot.operators.grants import parse_grant
from bot.operators.report import Report
from bot.operators.simulate import simulate
from bot.operators.suggest import Suggestion, suggest
from bot.settings import Settings, load_settings
from tests import othermix
from tests.callmix_example import CONFIG, ENV, settings

NOW = datetime(2032, 6, 1, 12, tzinfo=UTC)
#: the shapes tried: (seed, calls, hours): one night, a night and a day, three days
SHAPES = [(1, 1_500, 10.0), (2, 1_500, 30.0), (3, 1_500, 80.0)]


def _calls(seed: int, count: int, hours: float) -> list[Call]:
    return read_calls(
        othermix.lines(othermix.day(seed, calls=count, hours=hours), seed), source="x"
    )


def _unbatched(tmp_path: Path) -> Settings:
    """The careful policy without its batch windows (so that suggest offers every kind)."""
    text = "".join(
        line
        for line in CONFIG.read_text(encoding="utf-8").splitlines(keepends=True)
        if not line.startswith("batch = ")
    )
    return settings(tmp_path, text)


@pytest.mark.parametrize(("seed", "count", "hours"), SHAPES)
async def test_every_call_is_counted_once_and_refused_for_what_the_api_refuses(
    tmp_path: Path, seed: int, count: int, hours: float
) -> None:
    generated, meant = othermix.refusals(seed, calls=count, hours=hours)
    calls = read_calls(othermix.lines(generated, seed), source="other.jsonl")
    config = settings(tmp_path)

    tally = await simulate(config, calls, store=None, now=NOW)
    report = Report.of(config, calls, tally)

    assert len(calls) == len(generated) == len(tally.outcomes)
    kinds = Counter(outcome.kind for outcome in tally.outcomes)
    counted = ("auto", "ask", "deny", "refused", "replay")
    assert sum(kinds[kind] for kind in counted) == len(calls)
    total = report.total
    assert (total.calls, total.auto, total.ask, total.deny, total.refused, total.replayed) == (
        len(calls),
        *(kinds[kind] for kind in counted),
    )
    # the retry storm (one refund sent again under its run_id, without an Idempotency-Key) is
    # stored once, as the server stores it; every later copy replays the first
    storm = [n for n, c in enumerate(generated) if str(c.get("run_id")).startswith("run-retry-")]
    assert len(storm) >= 3
    assert tally.outcomes[storm[0]].kind in ("auto", "ask", "deny")
    assert [tally.outcomes[n].replays for n in storm[1:]] == [storm[0] + 1] * (len(storm) - 1)
    assert kinds["replay"] == len(storm) - 1
    assert sum(row.calls for row in report.rows) == len(calls)
    assert report.violations == []
    # refused exactly when it was meant to be, each for the field it was meant to be
    for number, (why, outcome) in enumerate(zip(meant, tally.outcomes, strict=True), start=1):
        if why is None:
            assert outcome.kind != "refused", (number, outcome.reasons)
        elif why == "agent":
            assert outcome.reasons == ("401 unknown agent 'marketing-bot' (no such agent is "
                                       "configured)",), number  # fmt: skip
        else:
            assert outcome.kind == "refused", (number, why)
            assert any(reason.split(" ")[1] == f"{why}:" for reason in outcome.reasons), (
                number,
                why,
                outcome.reasons,
            )
    # every threshold amount lands under the rule whose lte it meets
    for call, outcome in zip(calls, tally.outcomes, strict=True):
        amount = (outcome.arguments or {}).get("amount_cents")
        if outcome.kind == "refused" or call.operation != "payments.refund":
            continue
        assert isinstance(amount, int | float)
        expected = (
            "small-refunds"
            if amount <= 5_000
            else "refunds"
            if amount <= 100_000
            else "large-refunds"
            if amount <= 500_000
            else "huge-refunds"
        )
        assert outcome.rule == expected, (amount, outcome.rule)
    # the days are the UTC dates the calls fall on
    dates = {c.at.astimezone(UTC).date() for c in calls if c.at is not None}
    assert report.days == len(dates) > (1 if hours > 5 else 0)


def _applied(base: Settings, suggestions: list[Suggestion], folder: Path) -> Settings:
    """The configuration with the suggestions' diffs applied by ``patch``, as a person applies
    them."""
    assert base.path is not None
    folder.mkdir()
    target = folder / Path(base.path).name
    target.write_text(Path(base.path).read_text(encoding="utf-8"), encoding="utf-8")
    for suggestion in suggestions:
        if suggestion.diff:
            subprocess.run(
                ["patch", "--silent", str(target)], input=suggestion.diff, text=True, check=True
            )
    return load_settings(target, ENV)


async def _against_people(
    config: Settings, calls: list[Call], grants: list[str]
) -> tuple[Report, list[int]]:
    """The report of ``calls`` under ``config`` with ``grants``, and the calls people rejected
    or left to expire that run without a click."""
    start = min(c.at for c in calls if c.at is not None)
    granted = [parse_grant(text, config, start=start, number=n) for n, text in enumerate(grants)]
    report = Report.of(
        config, calls, await simulate(config, calls, store=None, now=NOW, grants=granted)
    )
    return report, [o.number for o in report.overridden if o.now == "auto"]


@pytest.mark.parametrize("unbatched", [False, True])
@pytest.mark.parametrize("seed", [2])
async def test_no_suggestion_runs_or_thins_out_what_people_disputed_on_its_own_day(
    tmp_path: Path, seed: int, unbatched: bool
) -> None:
    config = _unbatched(tmp_path) if unbatched else settings(tmp_path)
    calls = _calls(seed, 3_000, 30.0)
    before = await simulate(config, calls, store=None, now=NOW)

    suggestions, _ = await suggest(config, calls, env=ENV, ceiling="50.00 USD", now=NOW)

    assert suggestions, "another generator's day offers nothing to try"
    for n, suggestion in enumerate(suggestions):
        changed = await asyncio.to_thread(_applied, config, [suggestion], tmp_path / f"s{n}")
        _, against = await _against_people(changed, calls, suggestion.grants)
        assert against == [], (suggestion.summary, against)
        after = await simulate(
            changed,
            calls,
            store=None,
            now=NOW,
            grants=[
                parse_grant(g, changed, start=min(c.at for c in calls if c.at), number=k)
                for k, g in enumerate(suggestion.grants)
            ],
        )
        for call, old, new in zip(calls, before.outcomes, after.outcomes, strict=True):
            if call.verdict not in ("rejected", "expired") or old.kind != "ask":
                continue
            assert new.kind != "auto", (suggestion.summary, call)
            if old.ask is not None and new.ask is not None:
                assert new.ask.quorum >= old.ask.quorum, (suggestion.summary, call)


#: suggestions drawn from day N, applied to day N + 1 (3,000 calls over 30 hours each)
HELD_OUT = [2, 5, 8]


async def test_suggestions_from_one_day_run_about_as_many_rejected_calls_as_they_said_next_day(
    tmp_path: Path,
) -> None:
    """Every suggestion of day N applied at once (its diffs and its grants) to day N + 1. What
    they run that people rejected is counted against what they said to expect: over the days,
    no more than a count that expectation would reach one time in twenty. docs/clicks.md gives
    the figures of days 1 to 8."""
    config = settings(tmp_path)
    expected = 0.0
    ran_rejected = ran_before = moved = 0
    for seed in HELD_OUT:
        drawn, following = _calls(seed, 3_000, 30.0), _calls(seed + 1, 3_000, 30.0)
        suggestions, _ = await suggest(config, drawn, env=ENV, ceiling="50.00 USD", now=NOW)
        _, without = await _against_people(config, following, [])
        changed = await asyncio.to_thread(_applied, config, suggestions, tmp_path / f"d{seed}")
        grants = [grant for s in suggestions for grant in s.grants]
        report, against = await _against_people(changed, following, grants)
        days = Report.of(config, drawn, await simulate(config, drawn, store=None, now=NOW)).days
        expected += sum(s.likely_rejected_per_day for s in suggestions) * days
        ran_rejected += sum(1 for n in against if following[n - 1].verdict == "rejected")
        ran_before += sum(1 for n in without if following[n - 1].verdict == "rejected")
        moved += report.total.standing

    assert ran_before == 0  # the careful policy runs nothing people rejected
    assert moved > 0  # the suggestions did run calls without a click
    assert ran_rejected <= _poisson_quantile(expected, 0.95), (ran_rejected, expected)


def _poisson_quantile(mean: float, level: float) -> int:
    """The least count ``k`` with P(X <= k) >= ``level`` for X ~ Poisson(``mean``)."""
    k, term = 0, math.exp(-mean)
    total = term
    while total < level:
        k += 1
        term *= mean / k
        total += term
    return k


@pytest.mark.parametrize(
    ("bad", "named"),
    [
        ("{not json", "Invalid JSON"),
        (json.dumps({"operation": "payments.refund", "request": {}}), "agent: required field"),
        (
            json.dumps({"agent": "billing-bot", "operation": 7, "request": {}}),
            "operation: Input should be a valid string (got 7)",
        ),
        (
            json.dumps({"agent": "billing-bot", "operation": "x", "request": {}, "urgent": "no"}),
            "urgent: Input should be a valid boolean (got 'no')",
        ),
        (
            json.dumps(
                {"agent": "billing-bot", "operation": "x", "request": {}, "at": "2032-01-05 21:00"}
            ),
            "at: expected a time with its zone",
        ),
        (
            json.dumps(
                {
                    "agent": "billing-bot",
                    "operation": "x",
                    "request": {},
                    "at": "2032-01-05T21:00:00Z",
                    "verdict": "approved",
                    "decided_at": "2032-01-05T21:20:00",
                }
            ),
            "decided_at: expected a time with its zone",
        ),
        (json.dumps({"agent": "billing-bot", "operation": "x"}), "expected 'request' or"),
        (json.dumps(["billing-bot", "payments.refund"]), "line: Input should be an object"),
        (
            json.dumps({"agent": "billing-bot", "operation": "x", "request": {}, "amount": 5}),
            "amount: unknown field (a call has: agent, operation",
        ),
    ],
)
def test_a_bad_line_among_anothers_days_is_named_and_nothing_is_counted(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    bad: str,
    named: str,
) -> None:
    text = othermix.lines(othermix.day(4, calls=300, hours=30.0), 4).split("\n")
    where = 123
    text[where - 1] = bad
    path = tmp_path / "calls.jsonl"
    path.write_text("\n".join(text), encoding="utf-8")
    config = settings(tmp_path)

    for name, value in ENV.items():
        monkeypatch.setenv(name, value)

    code = main(["--config", str(config.path), "policy", "simulate", str(path), "--without-store"])

    printed = capsys.readouterr()
    assert code == 2
    assert printed.out == ""
    assert f"{path} line {where}: " in printed.err
    assert named in printed.err, printed.err
