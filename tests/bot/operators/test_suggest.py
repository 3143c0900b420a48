"""``countersign policy suggest``: each kind of suggestion measured by a replay (batch windows
for rules whose proposals wait anyway, standing rules for what people approved every time,
thresholds nobody disputed), and never a standing rule above the operator's ceiling for an
irreversible operation."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.operators.calls import Call, read_calls
from bot.operators.simulate import export_calls
from bot.operators.suggest import print_suggestions, rejection_bound, suggest, suggest_command
from bot.settings import Settings
from store.sqlite import SqliteStore
from tests.callmix_example import CONFIG, ENV
from tests.callmix_example import settings as callmix_settings
from tests.store.conformance import new_proposal

T0 = datetime(2031, 3, 14, 9, 0, tzinfo=UTC)


def _unbatched(tmp_path: Path) -> Settings:
    """The mix's careful policy without its batch windows."""
    text = "".join(
        line
        for line in CONFIG.read_text(encoding="utf-8").splitlines(keepends=True)
        if not line.startswith("batch = ")
    )
    return callmix_settings(tmp_path, text)


def _refund(
    cents: int, minute: float, *, agent: str = "billing-bot", verdict: str = "approved"
) -> dict[str, object]:
    at = T0 + timedelta(minutes=minute)
    call: dict[str, object] = {
        "agent": agent,
        "requested_by": "U0SUP01",
        "operation": "payments.refund",
        "request": {
            "payment_id": f"pay_{1000000 + round(minute * 10)}",
            "customer": f"cus_{round(minute * 10)}",
            "amount_cents": cents,
            "currency": "USD",
            "reason": "late",
        },
        "at": at.isoformat(),
        "verdict": verdict,
    }
    if verdict != "expired":
        call["decided_at"] = (at + timedelta(minutes=20)).isoformat()
    return call


def _calls(*calls: dict[str, object]) -> list[Call]:
    return read_calls("\n".join(json.dumps(c) for c in calls), source="calls.jsonl")


async def test_a_rule_whose_proposals_wait_anyway_is_offered_a_batch_window(
    tmp_path: Path,
) -> None:
    settings = _unbatched(tmp_path)
    calls = _calls(*(_refund(2000 + n, minute=n * 2) for n in range(10)))  # decided after 20 min

    suggestions, _ = await suggest(settings, calls, env=ENV, now=T0)

    [batch] = [s for s in suggestions if s.kind == "batch"]
    assert batch.rule == "small-refunds"
    assert '+batch = { window = "20m", max = 25 }' in batch.diff.splitlines()
    assert batch.clicks_saved_per_day == 9  # ten messages become one digest
    assert (batch.money_per_day, batch.irreversible_per_day) == ({}, 0)
    assert batch.added_wait_p95 == timedelta(minutes=20)


async def test_standing_rules_stop_below_a_dispute_and_at_the_operators_ceiling(
    tmp_path: Path,
) -> None:
    settings = callmix_settings(tmp_path)
    calls = _calls(
        *(_refund(1000 + 500 * n, minute=n * 40) for n in range(8)),  # 10.00 to 45.00 USD
        _refund(4800, minute=400, verdict="rejected"),
        _refund(4900, minute=440),
    )

    suggestions, _ = await suggest(settings, calls, env=ENV, ceiling="30.00 USD", now=T0)

    [standing] = [s for s in suggestions if s.kind == "standing"]
    assert standing.grants == [
        "small-refunds:agent=billing-bot,ceiling=30.00 USD,uses=5,for=1d,currency=USD"
    ]
    assert standing.clicks_saved_per_day > 0
    # granted from the start of the day: 10.00, 15.00, 20.00, 25.00 and 30.00 USD, not above
    assert standing.irreversible_per_day == 5
    assert standing.money_per_day == {"USD": "100.00 USD"}


async def test_no_standing_rule_for_an_irreversible_operation_without_a_ceiling(
    tmp_path: Path,
) -> None:
    settings = callmix_settings(tmp_path)
    calls = _calls(*(_refund(1000 + 100 * n, minute=n * 40) for n in range(8)))

    suggestions, notes = await suggest(settings, calls, env=ENV, now=T0)

    assert [s for s in suggestions if s.kind == "standing"] == []
    assert (
        "rule 'small-refunds': payments.refund is irreversible and no --ceiling is set; "
        "no standing rule suggested" in notes
    )


async def test_a_threshold_nobody_disputed_is_raised_to_below_the_first_dispute(
    tmp_path: Path,
) -> None:
    settings = _unbatched(tmp_path)
    large = [120_000 + 30_000 * n for n in range(6)]  # 1,200.00 to 2,700.00: two people each
    calls = _calls(
        *(_refund(cents, minute=n * 30) for n, cents in enumerate(large)),
        _refund(310_000, minute=200, verdict="rejected"),
        _refund(320_000, minute=230),
    )

    suggestions, _ = await suggest(settings, calls, env=ENV, now=T0)

    [threshold] = [s for s in suggestions if s.kind == "threshold"]
    assert threshold.rule == "refunds"
    assert 'when = [{ field = "amount_cents", lte = "2700.00 USD" }]' in threshold.diff
    assert threshold.clicks_saved_per_day == 6  # six calls now decided by one person, not two
    assert threshold.fewer_approvers_per_day == 6
    assert threshold.money_per_day == {"USD": "11,700.00 USD"}


async def test_the_command_prints_each_suggestion_as_a_diff_to_apply(tmp_path: Path) -> None:
    settings = _unbatched(tmp_path)
    path = tmp_path / "calls.jsonl"
    path.write_text("\n".join(json.dumps(_refund(2000 + n, minute=n * 2)) for n in range(10)))
    out = io.StringIO()

    code = await suggest_command(settings, path, None, None, out, io.StringIO(), env=ENV)

    assert code == 0
    text = out.getvalue()
    assert "1. Batch rule 'small-refunds': people took 20 minutes to decide anyway" in text
    assert "saves 9 clicks a day; adds no exposure; added wait p95 20 minutes" in text
    assert f"   --- {settings.path}" in text


async def test_a_ceiling_that_cannot_bound_the_field_suggests_nothing_for_it(
    tmp_path: Path,
) -> None:
    settings = callmix_settings(tmp_path)
    calls = _calls(*(_refund(1000 + 100 * n, minute=n * 40) for n in range(8)))

    suggestions, notes = await suggest(settings, calls, env=ENV, ceiling="lots", now=T0)

    assert [s for s in suggestions if s.kind == "standing"] == []
    assert any("--ceiling 'lots' cannot bound 'amount_cents'" in note for note in notes)


async def test_the_stores_history_is_read_with_what_people_decided(tmp_path: Path) -> None:
    settings = callmix_settings(tmp_path)
    store = await SqliteStore.open(tmp_path / "callmix.sqlite")
    arguments = {
        "payment_id": "pay_1000001",
        "customer": "cus_ada",
        "amount_cents": 2000,
        "currency": "USD",
        "reason": "late",
    }
    made = []
    for n in range(2):
        new = new_proposal(
            T0 + timedelta(minutes=n),
            agent="billing-bot",
            operation="payments.refund",
            requested_by="U0SUP01",
            request=arguments,
            arguments=arguments,
            rule_id="small-refunds",
        )
        await store.create_proposal(new)
        made.append(new)
    await store.reject(made[0].id, actor="U0FIN1", reason="no", now=T0 + timedelta(minutes=9))
    await store.close()

    calls = await export_calls(settings, "2031-03-14")
    out = io.StringIO()
    code = await suggest_command(settings, None, "2031-03-14", None, out, io.StringIO(), env=ENV)

    assert [(c.id, c.verdict, c.decided_at) for c in calls] == [
        (made[0].id, "rejected", T0 + timedelta(minutes=9)),
        (made[1].id, None, None),  # still pending: nobody decided
    ]
    assert code == 0
    assert "2 calls over 1 day(s)" in out.getvalue()


async def test_a_standing_rule_states_the_rejections_its_calls_will_likely_meet(
    tmp_path: Path,
) -> None:
    # the calls picked are the ones nobody rejected; the share comes from all of the rule's
    settings = callmix_settings(tmp_path)
    calls = _calls(
        *(_refund(1000 + 100 * n, minute=n * 20) for n in range(8)),  # 10.00 to 17.00 USD
        _refund(1800, minute=200, verdict="rejected"),
        _refund(1900, minute=220),
    )
    path = tmp_path / "calls.jsonl"
    path.write_text("\n".join(json.dumps(c.model_dump(mode="json")) for c in calls))
    out = io.StringIO()

    suggestions, _ = await suggest(settings, calls, env=ENV, ceiling="50.00 USD", now=T0)
    code = await suggest_command(settings, path, None, "50.00 USD", out, io.StringIO(), env=ENV)

    [standing] = [s for s in suggestions if s.kind == "standing"]
    assert standing.irreversible_per_day == 8  # the eight below the rejected 18.00 USD
    assert standing.rejection_rates == {"small-refunds": (1, 10)}
    # 8 calls at (1 + 1) / (10 + 2) each; at most 8 at the 95% bound of 1 in 10, 4.74 / 10
    assert standing.likely_rejected_per_day == pytest.approx(8 * 2 / 12)
    assert standing.at_most_rejected_per_day == pytest.approx(8 * rejection_bound(1, 10))
    assert standing.as_json()["exposure"]["likely_rejected_per_day"] == 1.33  # type: ignore[index]
    assert code == 0
    assert (
        "people rejected 1 of 10 under 'small-refunds': expect about 1.3 a day that they would "
        "reject to run without a click (3.8 at the 95% bound of that share;" in out.getvalue()
    )


@pytest.mark.parametrize(
    ("rejected", "decided", "bound"),
    # the Poisson upper bounds of a rare count: 3.00 for none seen (the rule of three), 4.74
    # for one, 6.30 for two, 9.15 for four, 16.96 for ten
    [
        (0, 1000, 0.00300),
        (1, 1000, 0.00474),
        (2, 1000, 0.00630),
        (4, 1000, 0.00915),
        (10, 1000, 0.01696),
        (1000, 100_000, 0.010536),  # 1,053.6 (Wilson and Hilferty): the tail never underflows
        (0, 0, 1.0),
        (5, 5, 1.0),
    ],
)
def test_the_rejection_bound_is_the_rate_at_which_so_few_is_one_time_in_twenty(
    rejected: int, decided: int, bound: float
) -> None:
    assert rejection_bound(rejected, decided) == pytest.approx(bound, abs=5e-5)


async def test_a_batch_window_runs_nothing_without_a_click_so_states_no_rejections(
    tmp_path: Path,
) -> None:
    settings = _unbatched(tmp_path)
    calls = _calls(
        *(_refund(2000 + n, minute=n * 2) for n in range(10)),
        _refund(2100, minute=30, verdict="rejected"),
    )

    suggestions, _ = await suggest(settings, calls, env=ENV, now=T0)

    [batch] = [s for s in suggestions if s.kind == "batch"]
    assert (batch.likely_rejected_per_day, batch.at_most_rejected_per_day) == (0, 0)
    assert batch.rejection_rates == {}


async def test_calls_nobody_decided_are_not_taken_as_calls_nobody_will_reject(
    tmp_path: Path,
) -> None:
    # calls without verdicts count as approved when a pattern is picked; what they say of
    # rejections is nothing, not none
    settings = callmix_settings(tmp_path)
    undecided = [_refund(1000 + 100 * n, minute=n * 20) for n in range(8)]
    for call in undecided:
        del call["verdict"], call["decided_at"]
    calls = _calls(*undecided)
    out = io.StringIO()

    suggestions, notes = await suggest(settings, calls, env=ENV, ceiling="50.00 USD", now=T0)
    print_suggestions(suggestions, notes, 1, out)

    [standing] = [s for s in suggestions if s.kind == "standing"]
    assert standing.rejection_rates == {"small-refunds": (0, 0)}
    assert (standing.likely_rejected_per_day, standing.at_most_rejected_per_day) == (4, 8)
    assert (
        "   people decided no call under 'small-refunds': expect about 4 a day that they would "
        "reject to run without a click (8 at the 95% bound of that share;" in out.getvalue()
    )


@pytest.mark.parametrize("ceiling", ["lots", "50 bananas", "inf", "nan", "-5", "0"])
async def test_a_ceiling_that_bounds_nothing_is_refused_before_anything_is_read(
    tmp_path: Path, ceiling: str
) -> None:
    """An operator's typo must not pass as 'no standing rule suggested' notes (nor 'inf' as no
    bound at all): the command names --ceiling and what it expects, and exits 2."""
    settings = _unbatched(tmp_path)
    path = tmp_path / "calls.jsonl"
    path.write_text(json.dumps(_refund(2000, minute=0)))
    out, err = io.StringIO(), io.StringIO()

    code = await suggest_command(settings, path, None, ceiling, out, err, env=ENV)

    assert code == 2
    assert "--ceiling: expected money with its currency, such as '50.00 USD'" in err.getvalue()
    assert repr(ceiling) in err.getvalue()
    assert out.getvalue() == ""


@pytest.mark.parametrize("ceiling", ["50.00 USD", "1,200 EUR", "5000", "12.5"])
async def test_a_ceiling_in_money_or_in_the_fields_unit_is_read(
    tmp_path: Path, ceiling: str
) -> None:
    settings = _unbatched(tmp_path)
    path = tmp_path / "calls.jsonl"
    path.write_text(json.dumps(_refund(2000, minute=0)))

    code = await suggest_command(
        settings, path, None, ceiling, io.StringIO(), io.StringIO(), env=ENV
    )

    assert code == 0


async def test_a_call_file_and_since_together_are_refused(tmp_path: Path) -> None:
    """Either the file's calls or the store's history: given both, the command does not pick
    one silently."""
    settings = _unbatched(tmp_path)
    path = tmp_path / "calls.jsonl"
    path.write_text(json.dumps(_refund(2000, minute=0)))
    out, err = io.StringIO(), io.StringIO()

    code = await suggest_command(settings, path, "2031-03-14", None, out, err, env=ENV)

    assert code == 2
    assert "give a call file or --since DATE, not both" in err.getvalue()
    assert out.getvalue() == ""


async def test_a_threshold_stops_below_a_value_people_both_approved_and_rejected(
    tmp_path: Path,
) -> None:
    """Calls at the same amount, one rejected among approved ones (and one nobody recorded a
    verdict for): the amount was disputed, so the raised threshold stays below it."""
    settings = _unbatched(tmp_path)
    large = [120_000 + 30_000 * n for n in range(6)]  # 1,200.00 to 2,700.00: two people each
    unanswered = _refund(270_000, minute=250)
    del unanswered["verdict"], unanswered["decided_at"]
    calls = _calls(
        *(_refund(cents, minute=n * 30) for n, cents in enumerate(large)),
        _refund(270_000, minute=200, verdict="rejected"),
        unanswered,
    )

    suggestions, _ = await suggest(settings, calls, env=ENV, now=T0)

    [threshold] = [s for s in suggestions if s.kind == "threshold"]
    assert 'when = [{ field = "amount_cents", lte = "2400.00 USD" }]' in threshold.diff


async def test_a_standing_ceiling_stays_below_an_amount_people_rejected_once(
    tmp_path: Path,
) -> None:
    settings = callmix_settings(tmp_path)
    calls = _calls(
        *(_refund(1000 + 200 * n, minute=n * 40) for n in range(6)),  # 10.00 to 20.00 USD
        _refund(2000, minute=300, verdict="rejected"),  # 20.00 USD again, rejected
    )

    suggestions, _ = await suggest(settings, calls, env=ENV, ceiling="50.00 USD", now=T0)

    [standing] = [s for s in suggestions if s.kind == "standing"]
    assert standing.grants == [
        "small-refunds:agent=billing-bot,ceiling=18.00 USD,uses=5,for=1d,currency=USD"
    ]
