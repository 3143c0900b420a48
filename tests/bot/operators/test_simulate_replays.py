"""``policy simulate`` tells a call sent again from a new one as the server does: under the key of
a call stored before (its Idempotency-Key, or one derived from its agent, run_id, operation and
request), the same body is a replay of the first call's answer (no new proposal, message or
click) and another body is refused; and export-calls writes the key an agent sent."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from pathlib import Path

from bot.flow.intake import SubmissionKey, submission_identity
from bot.operators.calls import Call, read_calls
from bot.operators.report import Report, print_report, report_json
from bot.operators.simulate import export_calls_command, simulate
from store.sqlite import SqliteStore
from tests.callmix_example import settings as callmix_settings
from tests.store.conformance import new_proposal

NOW = datetime(2031, 3, 14, 15, 9, 26, tzinfo=UTC)
REQUEST = {
    "payment_id": "pay_1000001",
    "customer": "cus_ada",
    "amount_cents": 1200,
    "currency": "USD",
    "reason": "late",
}


def _refund(
    minute: int, request: dict[str, object] = REQUEST, **fields: object
) -> dict[str, object]:
    return {
        "agent": "billing-bot",
        "requested_by": "U0BIL01",
        "operation": "payments.refund",
        "request": request,
        "at": f"2031-03-14T09:{minute:02d}:00Z",
        "verdict": "approved",
        "decided_at": f"2031-03-14T09:{minute + 30:02d}:00Z",
    } | fields


def _lines(*calls: dict[str, object]) -> list[Call]:
    return read_calls("\n".join(json.dumps(c) for c in calls), source="calls.jsonl")


async def _report(tmp_path: Path, calls: list[Call]) -> tuple[Report, list[tuple[str, object]]]:
    settings = callmix_settings(tmp_path)
    tally = await simulate(settings, calls, store=None, now=NOW)
    outcomes = [
        (o.kind, o.replays if o.kind == "replay" else o.reasons or o.rule) for o in tally.outcomes
    ]
    return Report.of(settings, calls, tally), outcomes


async def test_a_call_sent_again_with_its_run_id_and_request_is_one_ask_and_a_replay(
    tmp_path: Path,
) -> None:
    calls = _lines(_refund(1, run_id="run-1"), _refund(3, run_id="run-1"))

    report, outcomes = await _report(tmp_path, calls)

    assert outcomes == [("ask", "small-refunds"), ("replay", 1)]
    total = report.total
    assert (total.calls, total.ask, total.replayed, total.digests, total.clicks) == (2, 1, 1, 1, 1)
    out = io.StringIO()
    print_report(report, out)
    assert "replays of an earlier call: 1 " in out.getvalue()
    assert report_json(report)["total"]["replayed"] == 1  # type: ignore[index,call-overload]


async def test_a_call_sent_again_under_its_idempotency_key_is_one_ask_and_a_replay(
    tmp_path: Path,
) -> None:
    # another run_id would be another submission without the key; with it, the key decides
    calls = _lines(
        _refund(1, idempotency_key="refund-ada-1"),
        _refund(2, idempotency_key="refund-ada-1"),
        _refund(4, idempotency_key="refund-ada-2"),
    )

    report, outcomes = await _report(tmp_path, calls)

    assert outcomes == [("ask", "small-refunds"), ("replay", 1), ("ask", "small-refunds")]
    assert (report.total.ask, report.total.replayed) == (2, 1)
    # the messages and clicks of the two calls without the one sent again
    without, _ = await _report(tmp_path, [calls[0], calls[2]])
    assert (report.total.digests, report.total.clicks) == (
        without.total.digests,
        without.total.clicks,
    )
    assert report.total.clicks > 0


async def test_a_key_sent_again_with_another_body_is_refused_as_the_server_refuses_it(
    tmp_path: Path,
) -> None:
    other = REQUEST | {"amount_cents": 1300}
    calls = _lines(
        _refund(1, idempotency_key="refund-ada-1"),
        _refund(2, other, idempotency_key="refund-ada-1"),
        _refund(3, run_id="run-1"),
        # the same run, operation and request without a key, for another reason: refused too
        _refund(4, run_id="run-1", reason="asked twice"),
    )

    report, outcomes = await _report(tmp_path, calls)

    assert [kind for kind, _ in outcomes] == ["ask", "refused", "ask", "refused"]
    assert outcomes[1][1] == ("422 Idempotency-Key: already used with a different body",)
    [derived] = outcomes[3][1]  # type: ignore[misc]
    assert derived.startswith("422 run_id: proposal cs_")
    assert report.reasons == {
        "422 Idempotency-Key: already used with a different body": 1,
        "422 run_id: proposal (a proposal) already has this run_id, operation and request with "
        "other details (reason, requested_by or callback_url); send another run_id or an "
        "Idempotency-Key to make a new proposal": 1,
    }
    assert (report.total.calls, report.total.refused, report.total.replayed) == (4, 2, 0)


async def test_a_refused_call_sent_again_is_refused_again_not_replayed(tmp_path: Path) -> None:
    negative = REQUEST | {"amount_cents": -500}
    calls = _lines(
        _refund(1, negative, run_id="run-1"),
        _refund(2, negative, run_id="run-1"),
        _refund(3, requested_by="U0OPS1", idempotency_key="k"),  # not someone it acts for
        _refund(4, requested_by="U0OPS1", idempotency_key="k"),
        _refund(5, idempotency_key="k" * 201),  # past the header's length
    )

    report, outcomes = await _report(tmp_path, calls)

    assert [kind for kind, _ in outcomes] == ["refused"] * 5
    assert outcomes[0] == outcomes[1]
    assert outcomes[2] == outcomes[3]
    assert outcomes[4][1] == ("422 Idempotency-Key: 1 to 200 printable characters",)
    assert (report.total.refused, report.total.replayed, report.total.ask) == (5, 0, 0)


async def test_a_denied_call_is_stored_and_sent_again_replays_its_denial(tmp_path: Path) -> None:
    huge = REQUEST | {"amount_cents": 900_000}
    calls = _lines(_refund(1, huge, run_id="r"), _refund(2, huge, run_id="r"))

    report, outcomes = await _report(tmp_path, calls)

    assert outcomes == [("deny", "huge-refunds"), ("replay", 1)]
    assert (report.total.calls, report.total.deny, report.total.replayed) == (2, 1, 1)
    # a person approved both, and the configuration denies the first: only it is named
    assert [o.number for o in report.overridden] == [1]


async def test_export_calls_writes_the_key_an_agent_sent_and_never_a_derived_one(
    tmp_path: Path,
) -> None:
    settings = callmix_settings(tmp_path)
    store = await SqliteStore.open(tmp_path / "callmix.sqlite")
    sent = new_proposal(NOW, agent="billing-bot", submission_key="agent-key-7")
    derived = new_proposal(NOW, agent="billing-bot", run_id="run-8")
    identity = submission_identity(
        "billing-bot", run_id="run-8", operation=derived.operation, request=derived.request
    )
    derived = derived.model_copy(update={"submission_key": SubmissionKey.derived_key(identity)})
    for proposal in (sent, derived):
        await store.create_proposal(proposal)
    await store.close()

    code = await export_calls_command(
        settings, "2031-03-01", tmp_path / "calls.jsonl", io.StringIO(), io.StringIO()
    )

    assert code == 0
    text = (tmp_path / "calls.jsonl").read_text(encoding="utf-8")
    keys = {call.id: call.idempotency_key for call in read_calls(text, source="x")}
    assert keys == {sent.id: "agent-key-7", derived.id: None}
    assert text.count("idempotency_key") == 1
