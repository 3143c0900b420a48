"""What ``policy simulate`` reports from a replay: per rule and in total over every call, the
clicks, who clicks most, the wait batching adds, what standing rules move without a click, and
which of people's own decisions the configuration goes against (:class:`Overridden`).
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
from contracts.formats import field_label, money_currency, show_value
from contracts.registry import UnknownOperation

if TYPE_CHECKING:
    from bot.operators.calls import Call, Outcome, Tally
    from bot.settings import Settings

__all__ = [
    "Overridden",
    "Report",
    "RuleRow",
    "click_count",
    "days_of",
    "print_report",
    "report_json",
    "spoken",
]

#: How many of the calls that go against people's decisions the printed report names.
OVERRIDDEN_SHOWN = 10


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
    #: calls sent again under the key of one stored before, with the same body: the server
    #: answers with the first call's proposal (no new proposal, message or click)
    replayed: int = 0
    digests: int = 0
    handed_over: int = 0  #: asked calls offered to the rule's backup roles (``then``)

    @property
    def calls(self) -> int:
        return self.auto + self.ask + self.deny + self.refused + self.replayed

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
            "replayed": self.replayed,
            "handed_over": self.handed_over,
        }


@dataclass(frozen=True)
class Overridden:
    """A call whose recorded verdict this configuration goes against: people rejected it, or
    left it to expire, and it runs without a click here; or people approved it and it is denied.
    On the day it was asked these are zero by construction; on another day (or under a looser
    configuration, a standing rule, a raised threshold) they are what the change costs."""

    number: int  #: the call's place in the file, from 1
    call: Call
    verdict: str  #: what people decided: rejected, expired or approved
    now: str  #: what this configuration does: auto or deny
    rule: str
    standing: bool  #: run by a standing rule
    what: str  #: the call as a person reads it (operation and its money, in their currency)

    def as_json(self) -> dict[str, JsonValue]:
        return {
            "call": self.number,
            "id": self.call.id,
            "at": None if self.call.at is None else self.call.at.isoformat(),
            "agent": self.call.agent,
            "operation": self.call.operation,
            "what": self.what,
            "verdict": self.verdict,
            "now": self.now,
            "rule": self.rule,
            "standing": self.standing,
        }

    def line(self) -> str:
        at = "" if self.call.at is None else f" at {_when(self.call.at)}"
        by = f"a standing rule under {self.rule!r}" if self.standing else f"rule {self.rule!r}"
        done = "runs by" if self.now == "auto" else "is denied by"
        said = {"rejected": "people rejected it", "expired": "nobody answered it in time"}
        return (
            f"call {self.number:,}{at} ({self.call.agent}): {self.what}; "
            f"{said.get(self.verdict, 'people approved it')}, and here it {done} {by}"
        )


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
    #: the calls this configuration decides against what people decided (:class:`Overridden`)
    overridden: list[Overridden] = field(default_factory=list)
    verdicts: int = 0  #: calls with a recorded verdict, the ones that could be overridden

    @classmethod
    def of(cls, settings: Settings, calls: Sequence[Call], tally: Tally) -> Report:
        rows: dict[str, RuleRow] = {}
        asked: list[Asked] = []
        refused = RuleRow("(refused before the policy)")
        replayed = RuleRow("(replays of an earlier call)")
        money: dict[str, int | float] = defaultdict(int)
        example: dict[str, dict[str, JsonValue]] = {}
        formats: dict[str, Any] = {}
        violations = []
        overridden: list[Overridden] = []
        for index, (call, outcome) in enumerate(zip(calls, tally.outcomes, strict=True)):
            if outcome.kind == "refused":
                refused.refused += 1
                continue
            if outcome.kind == "replay":
                replayed.replayed += 1
                continue
            against = _against(settings, index, call, outcome)
            if against is not None:
                overridden.append(against)
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
        if replayed.replayed:
            ordered.append(replayed)
        total = RuleRow("total")
        for row in ordered:
            for attribute in (
                "auto",
                "standing",
                "ask",
                "clicks",
                "deny",
                "refused",
                "replayed",
                "digests",
                "handed_over",
            ):
                setattr(total, attribute, getattr(total, attribute) + getattr(row, attribute))
        days = days_of(calls)
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
            overridden=sorted(overridden, key=lambda o: (_GRAVITY[o.verdict], o.number)),
            verdicts=sum(1 for call in calls if call.verdict is not None),
        )

    def overridden_count(self, verdict: str) -> int:
        """Calls people decided ``verdict`` that this configuration decides otherwise."""
        return sum(1 for o in self.overridden if o.verdict == verdict)

    @property
    def click_share(self) -> float:
        return self.total.clicks / self.total.calls if self.total.calls else 0.0

    def busiest(self) -> tuple[str, float] | None:
        """The approver roles with the most clicks, and their clicks per day."""
        if not self.clicks_by_role:
            return None
        role, clicks = max(self.clicks_by_role.items(), key=lambda item: (item[1], item[0]))
        return role, clicks / self.days


#: The order the calls against people's decisions are told in: what ran against a rejection
#: first, then what ran unanswered, then what is denied although approved.
_GRAVITY = {"rejected": 0, "expired": 1, "approved": 2}


def _when(at: datetime) -> str:
    """A call's time as the file gave it, with its zone ("2031-03-14 09:02 UTC")."""
    zone = at.tzname()
    return at.strftime("%Y-%m-%d %H:%M") + ("" if zone is None else f" {zone}")


def _against(settings: Settings, index: int, call: Call, outcome: Outcome) -> Overridden | None:
    """The call, when this configuration goes against what people decided about it."""
    if call.verdict in ("rejected", "expired") and outcome.kind == "auto":
        now = "auto"
    elif call.verdict == "approved" and outcome.kind == "deny":
        now = "deny"
    else:
        return None
    return Overridden(
        number=index + 1,
        call=call,
        verdict=call.verdict,
        now=now,
        rule=outcome.rule or "(no rule matched)",
        standing=bool(outcome.standing),
        what=_described(settings, call, outcome),
    )


def _described(settings: Settings, call: Call, outcome: Outcome) -> str:
    """The operation, with each of its money fields under its label ("payments.refund, Amount
    23.07 USD")."""
    arguments = outcome.arguments
    try:
        formats = settings.registry.get(call.operation).field_formats()
    except UnknownOperation:
        return call.operation
    if arguments is None:
        return call.operation
    shown = [
        f"{field_label(formats, name)} {show_value(fmt, arguments[name], arguments)}"
        for name, fmt in formats.items()
        if fmt.kind == "money" and name in arguments
    ]
    return ", ".join([call.operation, *shown])


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


def days_of(calls: Sequence[Call]) -> int:
    """The days the calls fall on (at least one), counted in UTC: the same instants are the same
    days whatever zone each time is written in."""
    return max(1, len({call.at.astimezone(UTC).date() for call in calls if call.at is not None}))


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
        print(f"busiest approvers: {busiest[0]}, {click_count(busiest[1])} a day", file=out)
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
    _print_overridden(report, out)
    if total.replayed:
        print(
            f"replays of an earlier call: {total.replayed:,} (sent again under the key of a "
            "call stored before, with the same body: answered with its proposal, no new "
            "message or click)",
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


def _print_overridden(report: Report, out: TextIO) -> None:
    """What the configuration does against people's decisions, when the calls carry any."""
    if not report.verdicts:
        return
    if not report.overridden:
        print(
            f"against people's decisions: none (of {_calls(report.verdicts)} people decided, "
            "none they rejected or left unanswered runs without a click, and none they approved "
            "is denied)",
            file=out,
        )
        return
    parts = []
    rejected = report.overridden_count("rejected")
    if rejected:
        standing = sum(1 for o in report.overridden if o.verdict == "rejected" and o.standing)
        rules = "a standing rule" if standing == 1 else "standing rules"
        by = f" ({standing:,} by {rules})" if standing else ""
        parts.append(f"{_calls(rejected)} people rejected {_runs(rejected)} without a click{by}")
    expired = report.overridden_count("expired")
    if expired:
        parts.append(f"{_calls(expired)} nobody answered in time {_runs(expired)} without a click")
    denied = report.overridden_count("approved")
    if denied:
        parts.append(f"{_calls(denied)} people approved {'is' if denied == 1 else 'are'} denied")
    print(f"against people's decisions: {'; '.join(parts)}", file=out)
    for overridden in report.overridden[:OVERRIDDEN_SHOWN]:
        print(f"  {overridden.line()}", file=out)
    if len(report.overridden) > OVERRIDDEN_SHOWN:
        print(f"  and {len(report.overridden) - OVERRIDDEN_SHOWN:,} more", file=out)


def _calls(count: int) -> str:
    return "1 call" if count == 1 else f"{count:,} calls"


def _runs(count: int) -> str:
    return "runs" if count == 1 else "run"


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
        "decided_by_people": report.verdicts,
        "overridden": {
            "rejected_run": report.overridden_count("rejected"),
            "expired_run": report.overridden_count("expired"),
            "approved_denied": report.overridden_count("approved"),
            "calls": [o.as_json() for o in report.overridden],
        },
        "refusal_reasons": dict(report.reasons),
    }


def click_count(count: float) -> str:
    """``count`` clicks as a person says it, rounded: "1 click", "1,204 clicks"."""
    shown = f"{count:,.0f}"
    return f"{shown} click" if shown == "1" else f"{shown} clicks"
