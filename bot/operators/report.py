"""What ``policy simulate`` reports from a replay: per rule and in total over every call, the
clicks, who clicks most, the wait batching adds, and what standing rules move without a click.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, TextIO

from pydantic import JsonValue

from bot.flow.timing import ask_timing
from bot.operators.clicks import Asked, Digest, digests, percentile
from contracts.durations import spoken_duration
from contracts.formats import money_currency, show_value
from contracts.registry import UnknownOperation

if TYPE_CHECKING:
    from bot.operators.calls import Call, Outcome, Tally
    from bot.settings import Settings

__all__ = ["Report", "RuleRow", "print_report", "report_json", "spoken"]


@dataclass
class RuleRow:
    """One rule's counts (or the total's)."""

    name: str
    auto: int = 0
    standing: int = 0
    ask: int = 0
    clicks: int = 0
    deny: int = 0
    refused: int = 0
    digests: int = 0
    handed_over: int = 0  #: asked calls offered to the rule's backup roles (``then``)

    @property
    def calls(self) -> int:
        return self.auto + self.ask + self.deny + self.refused

    def as_json(self) -> dict[str, JsonValue]:
        return {
            "rule": self.name,
            "calls": self.calls,
            "auto": self.auto,
            "standing": self.standing,
            "ask": self.ask,
            "messages": self.digests,
            "clicks": self.clicks,
            "deny": self.deny,
            "refused": self.refused,
            "handed_over": self.handed_over,
        }


@dataclass
class Report:
    rows: list[RuleRow]
    total: RuleRow
    reasons: Counter[str]
    days: int
    clicks_by_role: dict[str, int]
    waits: list[timedelta]  #: each batched ask's added wait
    batched: int
    standing_money: dict[str, int | float]  #: the ceiling argument summed per currency
    standing_shown: dict[str, str]  #: the same per day, in the operation's terms
    violations: list[str] = field(default_factory=list)
    #: what people are shown: each digest, and each proposal shown alone
    messages: list[Digest] = field(default_factory=list)
    #: each rule with backup approvers (``then``) whose asks reached them: its backup roles
    backup_roles: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, settings: Settings, calls: Sequence[Call], tally: Tally) -> Report:
        rows: dict[str, RuleRow] = {}
        asked: list[Asked] = []
        refused = RuleRow("(refused before the policy)")
        money: dict[str, int | float] = defaultdict(int)
        example: dict[str, dict[str, JsonValue]] = {}
        formats: dict[str, Any] = {}
        violations = []
        for index, (call, outcome) in enumerate(zip(calls, tally.outcomes, strict=True)):
            if outcome.kind == "refused":
                refused.refused += 1
                continue
            name = outcome.rule or "(no rule matched)"
            row = rows.setdefault(name, RuleRow(name))
            if outcome.kind == "auto":
                row.auto += 1
                if outcome.standing:
                    row.standing += 1
                    _add_money(settings, call, outcome, money, example, formats)
                elif outcome.risk == "irreversible":
                    violations.append(
                        f"call {index + 1} ({call.operation}) is irreversible and runs under "
                        f"rule {outcome.rule!r} without a person or a standing rule"
                    )
            elif outcome.kind == "deny":
                row.deny += 1
            else:
                row.ask += 1
                ask = outcome.ask
                assert ask is not None
                # whether it waits for a batch, as the server decides it (an urgent call does not)
                timing = ask_timing(
                    ask,
                    operation=call.operation,
                    now=call.at or datetime.now(UTC),
                    default_remind_at=settings.approvals.remind_at,
                    urgent=call.urgent,
                    edit=False,
                )
                batch = timing.batch
                asked.append(
                    Asked(
                        index=index,
                        at=call.at,
                        rule=name,
                        channel=ask.channel,
                        approvers=ask.approvers,
                        quorum=ask.quorum,
                        window=None if batch is None else batch.window,
                        max=1 if batch is None else batch.max,
                        verdict=call.verdict,
                        decided_at=call.decided_at,
                        then=ask.then,
                        expires_after=ask.expires_after,
                    )
                )
        shown = digests(asked)
        by_role: Counter[str] = Counter()
        waits: list[timedelta] = []
        batched = 0
        backup_roles: dict[str, str] = {}
        for digest in shown:
            row = rows[digest.rule]
            row.digests += 1
            row.clicks += digest.clicks
            handed = digest.handed_over()
            row.handed_over += len(handed)
            route = digest.items[0].then
            if handed and route is not None:
                backup_roles[digest.rule] = ", ".join(route.approvers)
            by_role.update(digest.clicks_by_role())
            if digest.items[0].window is not None and digest.items[0].at is not None:
                batched += len(digest.items)
                waits += digest.waits()
            violations += _quorum_problems(digest)
        ordered = sorted(rows.values(), key=lambda r: r.name)
        if refused.refused:
            ordered.append(refused)
        total = RuleRow("total")
        for row in ordered:
            for attribute in (
                "auto",
                "standing",
                "ask",
                "clicks",
                "deny",
                "refused",
                "digests",
                "handed_over",
            ):
                setattr(total, attribute, getattr(total, attribute) + getattr(row, attribute))
        dates = {call.at.date() for call in calls if call.at is not None}
        days = max(1, len(dates))
        shown_money = {  # per day
            currency: show_value(formats[currency], round(amount / days), example[currency])
            for currency, amount in money.items()
        }
        return cls(
            rows=ordered,
            total=total,
            reasons=tally.reasons,
            days=days,
            clicks_by_role=dict(by_role),
            waits=waits,
            batched=batched,
            standing_money=dict(money),
            standing_shown=shown_money,
            violations=violations,
            messages=shown,
            backup_roles=backup_roles,
        )

    @property
    def click_share(self) -> float:
        return self.total.clicks / self.total.calls if self.total.calls else 0.0

    def busiest(self) -> tuple[str, float] | None:
        """The approver roles with the most clicks, and their clicks per day."""
        if not self.clicks_by_role:
            return None
        role, clicks = max(self.clicks_by_role.items(), key=lambda item: (item[1], item[0]))
        return role, clicks / self.days


def _quorum_problems(digest: Digest) -> list[str]:
    approved = any(item.verdict in (None, "approved") for item in digest.items)
    if approved and digest.clicks < digest.quorum:
        return [f"a message of rule {digest.rule!r} is approved with fewer than its quorum"]
    return []


def _add_money(
    settings: Settings,
    call: Call,
    outcome: Outcome,
    money: dict[str, int | float],
    example: dict[str, dict[str, JsonValue]],
    formats: dict[str, Any],
) -> None:
    """Adds a standing-approved call's ceiling argument, when it is money, per currency."""
    try:
        operation = settings.registry.get(call.operation)
    except UnknownOperation:
        return
    rule = next((r for r in settings.policy.rules if r.id == outcome.rule), None)
    standing = getattr(rule, "standing", None)
    if standing is None or outcome.arguments is None:
        return
    shown = operation.field_formats().get(standing.ceiling)
    value = outcome.arguments.get(standing.ceiling)
    if shown is None or shown.kind != "money" or not isinstance(value, int | float):
        return
    currency = money_currency(shown, outcome.arguments) or "?"
    money[currency] += value
    example.setdefault(currency, outcome.arguments)
    formats.setdefault(currency, shown)


def spoken(duration: timedelta) -> str:
    """A duration as people say it ("12 minutes", "1 hour")."""
    return spoken_duration(duration.total_seconds())


def _share(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def print_report(report: Report, out: TextIO) -> None:
    """The counts per rule and in total, then the figures people ask about."""
    rows = [*report.rows, report.total]
    width = max(len(row.name) for row in rows)
    heads = ("calls", "auto", "standing", "ask", "messages", "clicks", "deny", "refused")
    print(
        f"  {'rule':<{width}}  " + "  ".join(f"{h:>8}" for h in heads) + "  clicks/calls",
        file=out,
    )
    for row in rows:
        figures = (
            row.calls,
            row.auto,
            row.standing,
            row.ask,
            row.digests,
            row.clicks,
            row.deny,
            row.refused,
        )
        print(
            f"  {row.name:<{width}}  "
            + "  ".join(f"{n:>8,}" for n in figures)
            + f"  {_share(row.clicks, row.calls):>12}",
            file=out,
        )
    total = report.total
    days = report.days
    day_word = "1 day" if days == 1 else f"{days:,} days"
    print(
        f"clicks: {total.clicks:,} of {total.calls:,} calls ({_share(total.clicks, total.calls)}) "
        f"over {day_word}: {total.clicks / days:,.0f} a day",
        file=out,
    )
    busiest = report.busiest()
    if busiest is not None:
        print(f"busiest approvers: {busiest[0]}, {busiest[1]:,.0f} clicks a day", file=out)
    if report.batched:
        p50 = percentile(report.waits, 0.5)
        p95 = percentile(report.waits, 0.95)
        assert p50 is not None and p95 is not None
        print(
            f"batching: {report.batched:,} asked calls waited to be shown together; added wait "
            f"p50 {spoken(p50)}, p95 {spoken(p95)}",
            file=out,
        )
    else:
        print("batching: no rule holds its proposals (no batch window, or no 'at' times)", file=out)
    if report.total.handed_over:
        print(
            f"handed over to backup approvers: {report.total.handed_over:,} asked calls nobody "
            "decided in time",
            file=out,
        )
        for row in report.rows:
            if row.handed_over:
                roles = report.backup_roles.get(row.name, "?")
                print(f"  {row.name}: {row.handed_over:,} to {roles}", file=out)
    if report.standing_shown:
        moved = ", ".join(report.standing_shown.values())
        print(f"standing rules moved without a click: {moved} a day", file=out)
    if report.violations:
        print(f"policy violations: {len(report.violations):,}", file=out)
        for line in report.violations[:10]:
            print(f"  {line}", file=out)
    else:
        print(
            "policy violations: none (no irreversible call ran without a person or a standing "
            "rule; every approval had its quorum)",
            file=out,
        )
    if report.reasons:
        print(
            f"refused before the policy: {total.refused:,} calls; reasons "
            "(a call may have several):",
            file=out,
        )
        for reason, count in sorted(report.reasons.items(), key=lambda kv: (-kv[1], kv[0])):
            print(f"  {count:>6,}  {reason}", file=out)


def report_json(report: Report) -> dict[str, JsonValue]:
    p50 = percentile(report.waits, 0.5)
    p95 = percentile(report.waits, 0.95)
    busiest = report.busiest()
    return {
        "rules": [row.as_json() for row in report.rows],
        "total": report.total.as_json(),
        "days": report.days,
        "click_share": round(report.click_share, 6),
        "clicks_per_day": round(report.total.clicks / report.days, 2),
        "busiest_approvers": None
        if busiest is None
        else {"roles": busiest[0], "clicks_per_day": round(busiest[1], 2)},
        "batched": report.batched,
        "backup_roles": dict(report.backup_roles),
        "added_wait_seconds": {
            "p50": None if p50 is None else p50.total_seconds(),
            "p95": None if p95 is None else p95.total_seconds(),
        },
        "standing_money_per_day": {
            currency: {
                "amount": amount / report.days,  # in the field's own unit (cents)
                "shown": report.standing_shown[currency],
            }
            for currency, amount in report.standing_money.items()
        },
        "violations": list(report.violations),
        "refusal_reasons": dict(report.reasons),
    }
