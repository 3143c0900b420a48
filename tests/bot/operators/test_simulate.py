"""``countersign policy simulate``: the counts on a known call set through a known policy,
what changes under a new configuration, and export-calls writing what simulate reads."""

from __future__ import annotations

import asyncio
import io
import json
import sqlite3
import tracemalloc
from datetime import UTC, datetime, timedelta
from pathlib import Path

import aiosqlite
import pytest

from bot.operators.calls import Call, read_calls
from bot.operators.grants import parse_grant
from bot.operators.report import Report, print_report, report_json
from bot.operators.simulate import export_calls_command, simulate, simulate_command
from bot.settings import Settings, load_settings
from store.migrate import load_migrations
from store.postgres import PostgresStore
from store.proposals import calls as calls_module
from store.protocol import Store
from store.sqlite import SqliteStore
from store.sqlite import apply_migrations as apply_sqlite_migrations
from tests.callmix_example import CONFIG as CALLMIX_CONFIG
from tests.callmix_example import settings as callmix_settings
from tests.e2e.store_outage import postgres_through_proxy
from tests.store.conformance import new_proposal

CONFIG = """
[store]
url = "sqlite:///{store}"

[roles]
support = ["U0SUPPORT1"]
marketing = ["U0MARKETING1"]

[agents.support-bot]
token_env = "COUNTERSIGN_TOKEN_SUPPORT_BOT"
acts_for = ["role:support"]

[operations."crm.send_campaign"]
kind = "webhook"
description = "Email a campaign to a customer segment"
url = "http://127.0.0.1:9/campaigns/send"
secret_env = "COUNTERSIGN_WEBHOOK_SECRET_CRM"
preview = {{ title = "Email {{recipients}} customers in segment {{segment}}" }}

[operations."crm.send_campaign".request_schema]
type = "object"
required = ["segment", "recipients"]
properties = {{ segment = {{ type = "string" }}, recipients = {{ type = "integer" }} }}

[[policy]]
id = "small-campaigns"
operation = "crm.send_campaign"
when = [{{ field = "recipients", lte = 100 }}]
decision = "ask"
approvers = ["support"]
channel = "C0APPROVALS"

[[policy]]
id = "campaigns"
operation = "crm.send_campaign"
when = [{{ field = "recipients", lte = {limit} }}]
decision = "ask"
approvers = ["marketing"]
channel = "C0APPROVALS"

[[policy]]
id = "huge-campaigns"
operation = "crm.send_campaign"
decision = "deny"
reason = "Campaigns this large go through marketing's own process."
"""
ENV = {
    "COUNTERSIGN_TOKEN_SUPPORT_BOT": "support-bot-token-0123456789",
    "COUNTERSIGN_WEBHOOK_SECRET_CRM": "crm-secret",
}
NOW = datetime(2031, 3, 14, 15, 9, 26, tzinfo=UTC)


def _call(recipients: int, operation: str = "crm.send_campaign") -> str:
    call = {"agent": "support-bot", "operation": operation, "requested_by": "U0SUPPORT1"}
    return json.dumps({**call, "request": {"segment": "churn-risk", "recipients": recipients}})


CALLS = "\n".join(
    [
        _call(40),  # small-campaigns
        _call(800),  # campaigns (up to 1,000; the new configuration: up to 500)
        _call(5000),  # huge-campaigns
        _call(2000),  # huge-campaigns
        _call(40, operation="crm.delete_everything"),  # no such operation
    ]
)


def _settings(tmp_path: Path, name: str, limit: int = 1000) -> Settings:
    path = tmp_path / name
    path.write_text(CONFIG.format(store=tmp_path / "cs.sqlite", limit=limit), encoding="utf-8")
    return load_settings(path, ENV)


async def test_counts_per_rule_and_overall_on_a_known_call_set(tmp_path: Path) -> None:
    calls = read_calls(CALLS, source="calls.jsonl")

    tally = await simulate(_settings(tmp_path, "a.toml"), calls, store=None, now=NOW)

    assert [(o.kind, o.rule) for o in tally.outcomes] == [
        ("ask", "small-campaigns"),
        ("ask", "campaigns"),
        ("deny", "huge-campaigns"),
        ("deny", "huge-campaigns"),
        ("refused", None),
    ]
    assert dict(tally.total) == {"ask": 2, "deny": 2}
    assert tally.refused == 1


async def test_the_report_shows_shares_and_the_calls_that_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in ENV.items():  # the new configuration is read with the environment
        monkeypatch.setenv(name, value)
    (tmp_path / "calls.jsonl").write_text(CALLS, encoding="utf-8")
    current = _settings(tmp_path, "current.toml")
    _settings(tmp_path, "new.toml", limit=500)
    out = io.StringIO()

    code = await simulate_command(
        current, tmp_path / "calls.jsonl", tmp_path / "new.toml", out, io.StringIO()
    )

    assert code == 0
    lines = out.getvalue().splitlines()
    totals = [line.split() for line in lines if line.strip().startswith("total")]
    # over every call: calls, auto, standing, ask, messages, clicks, deny, refused, clicks/calls
    assert totals == [
        ["total", "5", "0", "0", "2", "2", "2", "2", "1", "40.0%"],
        ["total", "5", "0", "0", "1", "1", "1", "3", "1", "20.0%"],
    ]
    rule = [line.split() for line in lines if line.strip().startswith("campaigns")]
    assert rule[0] == ["campaigns", "1", "0", "0", "1", "1", "1", "0", "0", "100.0%"]
    assert "     1  422 operation: unknown operation 'crm.delete_everything'" in "\n".join(lines)
    assert "1 of 5 calls decide differently" in lines
    assert "  call 2 (crm.send_campaign): ask (campaigns) -> deny (huge-campaigns)" in lines


async def test_a_store_behind_this_release_is_told_where_it_is_and_what_it_lacks(
    tmp_path: Path,
) -> None:
    migrations = load_migrations("sqlite")
    async with aiosqlite.connect(tmp_path / "cs.sqlite", isolation_level=None) as db:
        await apply_sqlite_migrations(db, migrations[:-2])
    (tmp_path / "calls.jsonl").write_text(CALLS, encoding="utf-8")
    err = io.StringIO()

    code = await simulate_command(
        _settings(tmp_path, "a.toml"), tmp_path / "calls.jsonl", None, io.StringIO(), err
    )

    assert code == 0
    at, before, last = (m.version for m in migrations[-3:])
    assert err.getvalue() == (
        f"note: the store is at {at:04d}; this release needs {last:04d} (migration(s) pending: "
        f"{before:04d}, {last:04d}): run `countersign migrate`; standing rules left out\n"
    )


async def test_a_store_newer_than_this_release_is_told_as_migrate_tells_it(
    tmp_path: Path,
) -> None:
    await (await SqliteStore.open(tmp_path / "cs.sqlite")).close()
    with sqlite3.connect(tmp_path / "cs.sqlite") as db:
        db.execute(
            "INSERT INTO schema_migrations (version, name, applied_at) VALUES (9999, 'future', 'x')"
        )
    (tmp_path / "calls.jsonl").write_text(CALLS, encoding="utf-8")
    err = io.StringIO()

    code = await simulate_command(
        _settings(tmp_path, "a.toml"), tmp_path / "calls.jsonl", None, io.StringIO(), err
    )

    assert code == 0
    last = load_migrations("sqlite")[-1].version
    assert err.getvalue() == (
        "note: the database has migration(s) 9999 that this version of Countersign does not "
        f"know (it knows up to {last:04d}): a newer Countersign migrated it. Migrations are "
        "forward-only: run the newer version (or restore a backup taken before the upgrade); "
        "standing rules left out\n"
    )


async def test_export_calls_writes_what_simulate_reads(tmp_path: Path) -> None:
    settings = _settings(tmp_path, "a.toml")
    store = await SqliteStore.open(tmp_path / "cs.sqlite")
    stored = new_proposal(
        NOW,
        agent="support-bot",
        operation="crm.send_campaign",
        arguments={"segment": "churn-risk", "recipients": 40},
        rule_id="small-campaigns",
    )
    await store.create_proposal(stored)
    await store.close()

    code = await export_calls_command(
        settings, "2031-03-01", tmp_path / "calls.jsonl", io.StringIO(), io.StringIO()
    )

    assert code == 0
    [call] = read_calls((tmp_path / "calls.jsonl").read_text(encoding="utf-8"), source="x")
    assert (call.id, call.agent, call.decision, call.rule_id) == (
        stored.id,
        "support-bot",
        "ask",
        "small-campaigns",
    )
    assert call.arguments == stored.arguments


# --- on the call mix's configuration (examples/callmix) -----------------------------------------


def _mix_call(
    operation: str, request: object, *, minute: int = 0, **fields: object
) -> dict[str, object]:
    call: dict[str, object] = {
        "agent": "billing-bot",
        "requested_by": "U0BIL01",
        "operation": operation,
        "request": request,
        "at": f"2031-03-14T09:{minute:02d}:00Z",
    }
    return call | fields


def _refund(cents: int, *, minute: int = 0, **fields: object) -> dict[str, object]:
    request = {
        "payment_id": f"pay_{1000000 + minute}",
        "customer": "cus_ada",
        "amount_cents": cents,
        "currency": "USD",
        "reason": "late",
    }
    return _mix_call("payments.refund", request, minute=minute, **fields)


def _lines(*calls: dict[str, object]) -> list[Call]:
    return read_calls("\n".join(json.dumps(c) for c in calls), source="calls.jsonl")


async def test_every_call_is_counted_and_every_refusal_reason_of_each(tmp_path: Path) -> None:
    calls = _lines(
        _refund(1200),  # asked by small-refunds
        _refund(1200, requested_by="U0OPS1"),  # billing-bot does not act for ops: 403
        _mix_call("crm.tag_customer", {"tag": "vip", "note": "x"}),  # two contract problems
        _refund(1200, agent="rogue-bot"),  # no such agent
        _mix_call("crm.tag_customer", ["vip"]),  # a request that is not an object
    )
    settings = callmix_settings(tmp_path)

    tally = await simulate(settings, calls, store=None, now=NOW)
    report = Report.of(settings, calls, tally)

    assert [o.kind for o in tally.outcomes] == ["ask", *["refused"] * 4]
    assert report.total.calls == 5
    assert report.total.refused == 4
    assert sorted(tally.reasons) == [
        "401 unknown agent 'rogue-bot' (no such agent is configured)",
        "403 requested_by: agent 'billing-bot' may not act for (a person): it may name holders "
        "of role 'billing', holders of role 'support'",
        "422 request.customer: required field is missing; expected string",
        "422 request.note: unexpected field (allowed: customer, tag)",
        '422 request: expected object, got array ["vip"]',
    ]


async def test_the_requester_check_is_the_servers_acts_for(tmp_path: Path) -> None:
    allowed = _refund(1200, requested_by="U0SUP03")  # billing-bot acts for support too
    stranger = _refund(1200, requested_by="U0ANA1")
    settings = callmix_settings(tmp_path)

    tally = await simulate(settings, _lines(allowed, stranger), store=None, now=NOW)

    assert [(o.kind, o.rule) for o in tally.outcomes] == [
        ("ask", "small-refunds"),
        ("refused", None),
    ]


async def test_quorum_counts_each_person_and_rejections_and_expiries_are_counted(
    tmp_path: Path,
) -> None:
    calls = _lines(
        _refund(250_000, minute=1),  # large-refunds, quorum 2, approved: 2 clicks
        _refund(20_000, minute=2, verdict="rejected"),  # one click
        _refund(20_000, minute=3, verdict="expired"),  # nobody clicked
        _refund(900_000, minute=4),  # denied
    )
    settings = callmix_settings(tmp_path)

    report = Report.of(settings, calls, await simulate(settings, calls, store=None, now=NOW))

    rows = {row.name: row for row in report.rows}
    assert (rows["large-refunds"].ask, rows["large-refunds"].clicks) == (1, 2)
    assert (rows["refunds"].ask, rows["refunds"].clicks) == (2, 1)
    assert rows["huge-refunds"].deny == 1
    assert report.total.clicks == 3
    assert report.busiest() == ("finance, finance-leads", 2.0)
    assert report.violations == []


async def test_a_grant_answers_what_a_standing_rule_would_save_within_its_uses(
    tmp_path: Path,
) -> None:
    settings = callmix_settings(tmp_path)
    calls = _lines(*(_refund(1000 + minute, minute=minute) for minute in range(4)), _refund(6000))
    grant = parse_grant(
        "small-refunds:agent=billing-bot,ceiling=50.00 USD,uses=3,for=1d,currency=USD",
        settings,
        start=NOW,
        number=0,
    )

    tally = await simulate(settings, calls, store=None, now=NOW, grants=[grant])
    report = Report.of(settings, calls, tally)

    assert [o.kind for o in tally.outcomes] == ["auto", "auto", "auto", "ask", "ask"]
    assert [o.standing for o in tally.outcomes[:3]] == ["sr_what_if_1"] * 3
    assert report.standing_shown == {"USD": "30.03 USD"}  # 10.00 + 10.01 + 10.02, in one day
    assert report.total.clicks == 2
    assert report.violations == []


async def test_a_grant_by_an_owner_of_the_agent_covers_none_of_its_calls(tmp_path: Path) -> None:
    """As on the server, a granter who could not decide a call by hand (here: configured as an
    owner of the agent that asks) covers none of it: the replay asks them, saying why."""
    text = CALLMIX_CONFIG.read_text(encoding="utf-8")
    agent = "[agents.billing-bot]\n"
    assert agent in text
    settings = callmix_settings(
        tmp_path, text.replace(agent, agent + 'owners = ["U0FINLEAD1"]\n', 1)
    )
    calls = _lines(*(_refund(1000 + minute, minute=minute) for minute in range(2)))
    grant = parse_grant(
        "small-refunds:agent=billing-bot,ceiling=50.00 USD,by=U0FINLEAD1,currency=USD",
        settings,
        start=NOW,
        number=0,
    )

    tally = await simulate(settings, calls, store=None, now=NOW, grants=[grant])

    assert [(o.kind, o.standing) for o in tally.outcomes] == [("ask", None)] * 2
    ask = tally.outcomes[0].ask
    assert ask is not None and "the granter owns the agent that asked" in ask.explanation


def _leads_not_approving() -> str:
    """The mix's configuration, small-refunds asked of finance only (not of its admins)."""
    text = CALLMIX_CONFIG.read_text(encoding="utf-8")
    rule = text.index('id = "small-refunds"\n')
    approvers = 'approvers = ["finance", "finance-leads"]\n'
    assert text.index(approvers, rule) < text.index("[[policy]]", rule)
    return text[:rule] + text[rule:].replace(approvers, 'approvers = ["finance"]\n', 1)


async def test_a_grant_by_an_admin_who_no_longer_approves_the_rule_covers_none_of_its_calls(
    tmp_path: Path,
) -> None:
    """As on the server, a granter who holds the rule's admin role but none of its approver roles
    as configured now could not approve a call by hand, so their grant covers none: granted by a
    finance lead who approves small refunds, replayed through a configuration where only finance
    does, every call is asked, saying why."""
    granted_under = callmix_settings(tmp_path)
    grant = parse_grant(
        "small-refunds:agent=billing-bot,ceiling=50.00 USD,currency=USD",
        granted_under,
        start=NOW,
        number=0,
    )
    assert grant.created_by == "U0FINLEAD1"
    (tmp_path / "later").mkdir()
    later = callmix_settings(tmp_path / "later", _leads_not_approving())
    calls = _lines(*(_refund(1000 + minute, minute=minute) for minute in range(2)))

    tally = await simulate(later, calls, store=None, now=NOW, grants=[grant])

    assert [(o.kind, o.standing) for o in tally.outcomes] == [("ask", None)] * 2
    ask = tally.outcomes[0].ask
    assert ask is not None
    assert ask.explanation.endswith(
        "standing rule sr_what_if_1, granted by U0FINLEAD1, does not cover it: the granter does "
        "not hold a role that approves it (finance), so they could not decide it"
    )


@pytest.mark.parametrize(
    ("by", "problem"),
    [
        ("", "(members of both: nobody), and none is given"),
        (",by=U0FINLEAD1", "(members of both: nobody), got 'U0FINLEAD1'"),
    ],
)
async def test_a_grant_by_an_admin_who_cannot_approve_the_rules_calls_is_refused(
    tmp_path: Path, by: str, problem: str
) -> None:
    """Granting from Slack approves the call too, so a granter must hold an approver role of
    the rule as well as an admin role; an admin who does not could grant nothing."""
    settings = callmix_settings(tmp_path, _leads_not_approving())

    with pytest.raises(ValueError, match="must be a member of one of the rule's approvers") as e:
        parse_grant(
            f"small-refunds:agent=billing-bot,ceiling=50.00 USD,currency=USD{by}",
            settings,
            start=NOW,
            number=0,
        )

    assert str(e.value).endswith(
        "'by' must be a member of one of the rule's approvers (finance) and of one of its "
        "standing.admins (finance-leads), as a person granting one from Slack must be " + problem
    )


async def test_a_grant_without_by_is_granted_by_an_admin_who_asked_for_none_of_the_calls(
    tmp_path: Path,
) -> None:
    """A standing rule never covers what its granter asked for: the default granter (the first
    admin) asking for every call made the grant cover none, silently."""
    text = CALLMIX_CONFIG.read_text(encoding="utf-8")
    support = 'support = ["U0SUP01",'
    assert support in text
    settings = callmix_settings(tmp_path, text.replace(support, 'support = ["U0FINLEAD1",', 1))
    calls = [
        _refund(1000 + minute, minute=minute, requested_by="U0FINLEAD1") for minute in range(3)
    ]
    (tmp_path / "calls.jsonl").write_text("\n".join(json.dumps(c) for c in calls))
    grant = "small-refunds:agent=billing-bot,ceiling=50.00 USD,currency=USD"
    out = io.StringIO()

    code = await simulate_command(
        settings, tmp_path / "calls.jsonl", None, out, io.StringIO(), grants=[grant], as_json=True
    )

    assert code == 0
    [row] = [
        r for r in json.loads(out.getvalue())["current"]["rules"] if r["rule"] == "small-refunds"
    ]
    assert (row["auto"], row["standing"], row["clicks"]) == (3, 3, 0)


@pytest.mark.parametrize(
    ("grant", "problem"),
    [
        ("refunds:agent=billing-bot,ceiling=10", "policy rule 'refunds' does not allow standing"),
        ("small-refunds:agent=nobody,ceiling=10", "'agent' must name a configured agent"),
        ("small-refunds:agent=billing-bot", "'ceiling' is missing"),
        ("small-refunds:agent=billing-bot,ceiling=10,uses=5000", "'uses' must be a whole number"),
        ("small-refunds:agent=billing-bot,ceiling=10,by=U0FIN1", "'by' must be a member"),
        ("small-refunds:agent=billing-bot,ceiling=10,payment_id=pay_1", "'payment_id' may vary"),
        ("small-refunds agent=billing-bot", "expected RULE:agent=NAME"),
        ("small-refunds:agent=billing-bot,ceiling=10", "give currency=VALUE"),
    ],
)
async def test_a_grant_that_cannot_be_granted_is_refused_naming_why(
    tmp_path: Path, grant: str, problem: str
) -> None:
    settings = callmix_settings(tmp_path)
    (tmp_path / "calls.jsonl").write_text(json.dumps(_refund(1000)), encoding="utf-8")
    err = io.StringIO()

    code = await simulate_command(
        settings, tmp_path / "calls.jsonl", None, io.StringIO(), err, grants=[grant]
    )

    assert code == 2
    assert problem in err.getvalue()


async def test_the_report_as_json_counts_every_call(tmp_path: Path) -> None:
    settings = callmix_settings(tmp_path)
    calls = [_refund(1000, minute=1), _refund(1000, minute=2, requested_by="U0OPS1")]
    (tmp_path / "calls.jsonl").write_text("\n".join(json.dumps(c) for c in calls))
    out = io.StringIO()

    code = await simulate_command(
        settings, tmp_path / "calls.jsonl", None, out, io.StringIO(), as_json=True
    )

    assert code == 0
    document = json.loads(out.getvalue())["current"]
    assert document["total"] | {"rule": None} == {
        "rule": None,
        "calls": 2,
        "auto": 0,
        "standing": 0,
        "ask": 1,
        "messages": 1,
        "clicks": 1,
        "deny": 0,
        "refused": 1,
        "replayed": 0,
        "handed_over": 0,
    }
    assert document["click_share"] == 0.5


async def test_a_batch_window_groups_asks_by_their_arrival_into_one_click(
    tmp_path: Path,
) -> None:
    # small-refunds holds its proposals up to 30 minutes (examples/callmix/countersign.toml)
    calls = _lines(*(_refund(1000, minute=minute) for minute in (0, 10, 20, 40)))
    settings = callmix_settings(tmp_path)

    report = Report.of(settings, calls, await simulate(settings, calls, store=None, now=NOW))

    [row] = report.rows
    assert (row.name, row.ask, row.digests, row.clicks) == ("small-refunds", 4, 2, 2)
    assert report.batched == 4
    assert sorted(w.total_seconds() / 60 for w in report.waits) == [10, 20, 30, 30]
    out = io.StringIO()
    print_report(report, out)
    assert "added wait p50 20 minutes, p95 30 minutes" in out.getvalue()


async def test_an_urgent_call_is_shown_at_once_outside_its_rules_batch(tmp_path: Path) -> None:
    calls = _lines(
        _refund(1000, minute=0),
        _refund(1000, minute=5, urgent=True),
        _refund(1000, minute=10),
    )
    settings = callmix_settings(tmp_path)

    report = Report.of(settings, calls, await simulate(settings, calls, store=None, now=NOW))

    [row] = report.rows
    assert (row.ask, row.digests, row.clicks) == (3, 2, 2)  # the urgent one alone, the others held
    assert report.batched == 2


def _with_backup(then: str) -> str:
    """The mix's configuration, its ``refunds`` rule (up to 1,000.00 USD, asked of finance,
    4 hours, a 30-minute batch window) handing over to finance leads by ``then``."""
    text = CALLMIX_CONFIG.read_text(encoding="utf-8")
    rule = text.index('id = "refunds"')
    batch = text.index('batch = { window = "30m", max = 25 }\n', rule)
    end = text.index("\n", batch) + 1
    return text[:end] + f"then = {then}\n" + text[end:]


def _decided(cents: int, minute: int, verdict: str, decided_at: str) -> dict[str, object]:
    return _refund(cents, minute=minute, verdict=verdict, decided_at=f"2031-03-14T{decided_at}Z")


async def test_what_nobody_decided_by_then_after_is_handed_over_and_its_clicks_are_the_backups(
    tmp_path: Path,
) -> None:
    calls = _lines(
        # one digest shown at 09:30, handed over at 10:30
        _decided(20_000, 0, "approved", "09:40:00"),  # decided by finance in time
        _decided(20_000, 5, "rejected", "10:45:00"),  # rejected after the hand-over
        # another, opened at 09:50, shown at 10:20, handed over at 11:20
        _decided(20_000, 50, "approved", "11:30:00"),  # approved by a finance lead
        _decided(20_000, 55, "expired", "13:20:00"),  # nobody decided: offered, no click
    )
    settings = callmix_settings(
        tmp_path, _with_backup('{ after = "1h", approvers = ["finance-leads"] }')
    )

    report = Report.of(settings, calls, await simulate(settings, calls, store=None, now=NOW))

    [row] = report.rows
    assert (row.name, row.ask, row.digests, row.clicks, row.handed_over) == ("refunds", 4, 2, 3, 3)
    assert report.total.handed_over == 3
    assert report.clicks_by_role == {"finance": 1, "finance-leads": 2}
    assert report.backup_roles == {"refunds": "finance-leads"}
    out = io.StringIO()
    print_report(report, out)
    assert "handed over to backup approvers: 3 asked calls nobody decided in time" in out.getvalue()
    assert "  refunds: 3 to finance-leads\n" in out.getvalue()
    assert report_json(report)["rules"] == [report.rows[0].as_json()]
    assert report.rows[0].as_json()["handed_over"] == 3

    # the same calls without backup approvers: nothing handed over, every click finance's
    plain = callmix_settings(tmp_path)
    report = Report.of(plain, calls, await simulate(plain, calls, store=None, now=NOW))
    assert (report.total.clicks, report.total.handed_over) == (3, 0)
    assert report.clicks_by_role == {"finance": 3}
    assert "handed over" not in _printed(report)


async def test_a_share_of_the_lifetime_counts_from_when_the_digest_is_shown(
    tmp_path: Path,
) -> None:
    # shown at 09:30 (the window opened at 09:00), expiring at 13:30: half is 11:30
    calls = _lines(
        _decided(20_000, 0, "approved", "11:29:59"),
        _decided(20_000, 1, "rejected", "11:30:00"),
    )
    settings = callmix_settings(
        tmp_path, _with_backup('{ after = "50%", approvers = ["finance-leads"] }')
    )

    report = Report.of(settings, calls, await simulate(settings, calls, store=None, now=NOW))

    assert report.total.handed_over == 1
    assert report.clicks_by_role == {"finance": 1, "finance-leads": 1}


def _printed(report: Report) -> str:
    out = io.StringIO()
    print_report(report, out)
    return out.getvalue()


async def test_what_runs_against_a_rejection_or_unanswered_and_what_is_denied_is_named(
    tmp_path: Path,
) -> None:
    # a lead grants a standing rule for small refunds: the day's calls people rejected or left
    # unanswered below its ceiling now run without a click; a huge refund people approved is
    # denied by the policy
    settings = callmix_settings(tmp_path)
    calls = [
        _refund(1200, minute=1),
        _refund(2307, minute=2, verdict="rejected"),
        _refund(2005, minute=3, verdict="expired"),
        _refund(900_000, minute=4, verdict="approved"),
        _refund(20_000, minute=5, verdict="rejected"),  # asked under 'refunds': still asked
    ]
    (tmp_path / "calls.jsonl").write_text("\n".join(json.dumps(c) for c in calls))
    grant = "small-refunds:agent=billing-bot,ceiling=50.00 USD,currency=USD"
    out, document = io.StringIO(), io.StringIO()

    code = await simulate_command(
        settings, tmp_path / "calls.jsonl", None, out, io.StringIO(), grants=[grant]
    )
    await simulate_command(
        settings,
        tmp_path / "calls.jsonl",
        None,
        document,
        io.StringIO(),
        grants=[grant],
        as_json=True,
    )

    assert code == 0
    lines = out.getvalue().splitlines()
    start = lines.index(
        "against people's decisions: 1 call people rejected runs without a click (1 by a "
        "standing rule); 1 call nobody answered in time runs without a click; 1 call people "
        "approved is denied"
    )
    assert lines[start + 1 : start + 4] == [
        "  call 2 at 2031-03-14 09:02 UTC (billing-bot): payments.refund, Amount 23.07 USD; people "
        "rejected it, and here it runs by a standing rule under 'small-refunds'",
        "  call 3 at 2031-03-14 09:03 UTC (billing-bot): payments.refund, Amount 20.05 USD; nobody "
        "answered it in time, and here it runs by a standing rule under 'small-refunds'",
        "  call 4 at 2031-03-14 09:04 UTC (billing-bot): payments.refund, Amount 9,000.00 USD; "
        "people approved it, and here it is denied by rule 'huge-refunds'",
    ]
    overridden = json.loads(document.getvalue())["current"]["overridden"]
    assert (overridden["rejected_run"], overridden["expired_run"]) == (1, 1)
    assert overridden["approved_denied"] == 1
    assert [c["call"] for c in overridden["calls"]] == [2, 3, 4]
    assert overridden["calls"][0] | {"at": None} == {
        "call": 2,
        "id": None,
        "at": None,
        "agent": "billing-bot",
        "operation": "payments.refund",
        "what": "payments.refund, Amount 23.07 USD",
        "verdict": "rejected",
        "now": "auto",
        "rule": "small-refunds",
        "standing": True,
    }


async def test_when_people_decided_and_nothing_goes_against_them_the_report_says_so(
    tmp_path: Path,
) -> None:
    settings = callmix_settings(tmp_path)
    calls = _lines(
        _refund(1200, minute=1, verdict="rejected"), _refund(1300, minute=2, verdict="approved")
    )
    no_verdicts = _lines(_refund(1200, minute=1))

    decided, undecided = io.StringIO(), io.StringIO()
    tally = await simulate(settings, calls, store=None, now=NOW)
    print_report(Report.of(settings, calls, tally), decided)
    tally = await simulate(settings, no_verdicts, store=None, now=NOW)
    print_report(Report.of(settings, no_verdicts, tally), undecided)

    assert (
        "against people's decisions: none (of 2 calls people decided, none they rejected or "
        "left unanswered runs without a click, and none they approved is denied)"
    ) in decided.getvalue().splitlines()
    assert "against people's decisions" not in undecided.getvalue()


async def test_one_click_a_day_is_said_in_the_singular(tmp_path: Path) -> None:
    settings = callmix_settings(tmp_path)
    (tmp_path / "calls.jsonl").write_text(
        json.dumps(_refund(250_000, minute=1, verdict="rejected"))
    )
    out = io.StringIO()

    code = await simulate_command(settings, tmp_path / "calls.jsonl", None, out, io.StringIO())

    assert code == 0
    assert "busiest approvers: finance, finance-leads, 1 click a day\n" in out.getvalue()


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        (
            {"agent": "billing-bot", "request": {}},
            "calls.jsonl line 1: operation: required field is missing",
        ),
        (
            {"agent": "billing-bot", "operation": "payments.refund", "request": {}, "note": 1},
            "calls.jsonl line 1: note: unknown field (a call has: agent, operation, requested_by,",
        ),
        (
            {
                "agent": "billing-bot",
                "operation": "payments.refund",
                "request": {},
                "urgent": "maybe",
            },
            "calls.jsonl line 1: urgent: Input should be a valid boolean (got 'maybe')",
        ),
    ],
)
def test_a_call_line_that_does_not_read_names_the_field_and_what_a_call_has(
    line: dict[str, object], problem: str
) -> None:
    with pytest.raises(ValueError) as refused:
        read_calls(json.dumps(line), source="calls.jsonl")

    assert str(refused.value).startswith(problem)


async def test_export_calls_to_a_file_that_cannot_be_written_exits_2_naming_it(
    tmp_path: Path,
) -> None:
    settings = _settings(tmp_path, "a.toml")
    missing = tmp_path / "no-such-folder" / "calls.jsonl"
    err = io.StringIO()

    code = await export_calls_command(settings, "2031-03-01", missing, io.StringIO(), err)

    assert code == 2
    assert err.getvalue() == f"--output: cannot write {missing}: No such file or directory\n"


# --- export-calls writes a page at a time --------------------------------------------------------


def _settings_at(tmp_path: Path, url: str) -> Settings:
    """The configuration of :func:`_settings`, its store at ``url``."""
    path = tmp_path / "store.toml"
    text = CONFIG.format(store=tmp_path / "cs.sqlite", limit=1000)
    path.write_text(text.replace(f"sqlite:///{tmp_path / 'cs.sqlite'}", url), encoding="utf-8")
    return load_settings(path, ENV)


async def _made(store: Store, count: int) -> list[str]:
    ids = []
    for n in range(count):
        new = new_proposal(NOW + timedelta(seconds=n), agent="support-bot")
        await store.create_proposal(new)
        ids.append(new.id)
    return ids


async def test_export_calls_holds_a_page_of_calls_not_all_of_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A week of a busy install is hundreds of thousands of calls: they were all read, then all
    turned into lines, then written. They are written a page at a time as they are read, so
    what the command holds does not grow with the calls (traced: 600 calls against 60)."""
    monkeypatch.setattr(calls_module, "PAGE", 20)

    async def peak(count: int) -> int:
        folder = tmp_path / str(count)
        folder.mkdir()
        settings = _settings(folder, "a.toml")
        store = await SqliteStore.open(folder / "cs.sqlite")
        ids = await _made(store, count)
        await store.close()
        output = folder / "calls.jsonl"
        tracemalloc.start()
        try:
            code = await export_calls_command(
                settings, "2031-03-01", output, io.StringIO(), io.StringIO()
            )
            _, most = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert code == 0
        calls = read_calls(output.read_text(encoding="utf-8"), source="x")
        assert [call.id for call in calls] == ids  # every call, oldest first
        assert not output.with_name("calls.jsonl.partial").exists()
        return most

    few, many = await peak(60), await peak(600)
    assert many < 2 * few, (few, many)


@pytest.mark.postgres
async def test_export_calls_stopped_by_the_store_says_so_and_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store stops answering part way (its connections dropped, new ones refused): the
    command says reading stopped and exits 2. On standard output the pages written stay
    written, no more; a file is written only whole, so none is left that looks complete."""
    monkeypatch.setattr(calls_module, "PAGE", 2)
    async with postgres_through_proxy() as (url, proxy):
        store = await PostgresStore.open(url)
        ids = await _made(store, 7)
        await store.close()
        settings = _settings_at(tmp_path, url)

        class CutAfterFirstPage(io.StringIO):
            def write(self, text: str) -> int:
                if not self.getvalue():
                    asyncio.get_running_loop().create_task(proxy.cut())
                return super().write(text)

        out, err = CutAfterFirstPage(), io.StringIO()
        code = await export_calls_command(settings, "2031-03-01", None, out, err)
        assert code == 2
        assert "reading the calls stopped" in err.getvalue(), err.getvalue()
        written = read_calls(out.getvalue(), source="x")
        assert [call.id for call in written] == ids[:2]

        await proxy.restore()
        output = tmp_path / "calls.jsonl"
        partial = tmp_path / "calls.jsonl.partial"

        async def cut_once_begun() -> None:
            for _ in range(10_000):  # at most ten seconds
                if partial.exists():
                    break
                await asyncio.sleep(0.001)
            await proxy.cut()

        cutting = asyncio.create_task(cut_once_begun())
        code = await export_calls_command(settings, "2031-03-01", output, io.StringIO(), err)
        await cutting
        assert code == 2
        assert not output.exists() and not partial.exists()
