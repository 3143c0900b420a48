"""``countersign policy suggest``: changes that save clicks without loosening control.

From calls with what people decided (a call file with ``verdict`` and ``decided_at``, or the
store's own history of calls and decisions), it proposes three kinds of change, each measured by
replaying the calls through the changed configuration with ``policy simulate``'s own code:

* **batch**: an ``ask`` rule without a batch window whose proposals waited anyway (people took a
  median of at least the window to decide) gets ``batch = { window, max = 25 }``. It adds no
  exposure; it adds wait, stated as the p95 added wait.
* **standing**: an ``ask`` rule (quorum 1) whose calls from one agent people approved every time
  up to some value (the calls below the first one anyone rejected or left to expire) gets a
  standing rule a lead may grant, with that value as its ceiling (for an irreversible operation
  never above the operator's ``--ceiling``; without one, none is suggested for irreversible
  operations), a use count (a day's calls) and an expiry (a day);
  when the rule does not allow standing rules yet, the change that allows it. Its exposure is
  the money it moves a day and the irreversible effects it runs a day without a click.
* **threshold**: a rule followed by a costlier one for the same operation (an ``ask`` with a
  larger quorum, or an ``ask`` after an ``auto`` for an operation that is not irreversible) has
  its ``lte`` threshold raised up to the values people approved every time under the costlier
  rule, stopping below the first value anyone rejected. Its exposure is the calls a day decided
  by fewer people than before and the money they move.

The calls a suggestion picks are, by construction, calls nobody rejected; on another day some like
them will be. So each suggestion that runs calls without a click also states how many of those a
day people would likely reject, from the share people rejected of each rule's calls over all of
them (not only those picked): about ``(r + 1) / (n + 2)`` of the calls it moves for ``r``
rejected of ``n`` decided (so that a rule nobody happened to reject is not taken as one nobody
ever will, and a call of a rule nobody decided counts as even odds), and at most the rate no
higher than which ``r`` or fewer rejections would be seen one time in twenty
(:func:`rejection_bound`). ``policy simulate`` on a day the suggestion was not drawn from counts
them for real ("against people's decisions").

Each suggestion is printed with the clicks it saves a day and the exposure it adds, as a unified
diff of the configuration file (to review and apply with ``patch``) and, for standing rules, the
``--grant`` that ``policy simulate`` reads and that a lead grants in Slack. Nothing is applied.
"""

from __future__ import annotations

import asyncio
import difflib
import json
import math
import re
import tempfile
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal, TextIO

from pydantic import JsonValue

from bot.operators.calls import Call, Outcome
from bot.operators.clicks import percentile
from bot.operators.grants import parse_grant
from bot.operators.report import Report, click_count, days_of, spoken
from bot.operators.simulate import read_calls_file, simulate
from bot.settings import ConfigError, Settings, load_settings
from contracts.durations import format_duration
from contracts.formats import FieldFormat, parse_money, show_value
from contracts.policy import AskRule, AutoRule, Rule

__all__ = ["Suggestion", "rejection_bound", "suggest", "suggest_command"]

#: The windows a batch suggestion picks from: the longest that people waited anyway.
WINDOWS = tuple(timedelta(minutes=m) for m in (5, 10, 15, 20, 30, 60, 120))
#: How many decided calls a pattern needs before anything is suggested from it.
MIN_EVIDENCE = 5

Kind = Literal["batch", "standing", "threshold"]


@dataclass
class Suggestion:
    kind: Kind
    rule: str
    summary: str
    diff: str = ""
    grants: list[str] = field(default_factory=list)
    clicks_saved_per_day: float = 0.0
    money_per_day: dict[str, str] = field(default_factory=dict)  #: exposure, shown
    irreversible_per_day: float = 0.0  #: irreversible effects a day without a click
    fewer_approvers_per_day: float = 0.0  #: calls a day decided by fewer people than before
    #: of the calls a day it runs without a click, how many people would likely reject: each
    #: call's rule's share of rejections over all its decided calls, summed
    likely_rejected_per_day: float = 0.0
    #: the same at its 95% bound
    at_most_rejected_per_day: float = 0.0
    #: the rules those shares come from: rule -> (rejected, decided)
    rejection_rates: dict[str, tuple[int, int]] = field(default_factory=dict)
    added_wait_p95: timedelta | None = None

    def as_json(self) -> dict[str, JsonValue]:
        return {
            "kind": self.kind,
            "rule": self.rule,
            "summary": self.summary,
            "clicks_saved_per_day": round(self.clicks_saved_per_day, 2),
            "exposure": {
                "money_per_day": dict(self.money_per_day),
                "irreversible_without_a_click_per_day": round(self.irreversible_per_day, 2),
                "fewer_approvers_per_day": round(self.fewer_approvers_per_day, 2),
                "likely_rejected_per_day": round(self.likely_rejected_per_day, 2),
                "at_most_rejected_per_day": round(self.at_most_rejected_per_day, 2),
                "rejection_rates": {
                    rule: {"rejected": rejected, "decided": decided}
                    for rule, (rejected, decided) in sorted(self.rejection_rates.items())
                },
            },
            "added_wait_p95_seconds": None
            if self.added_wait_p95 is None
            else self.added_wait_p95.total_seconds(),
            "grants": list(self.grants),
            "diff": self.diff,
        }


@dataclass
class _Baseline:
    settings: Settings
    text: str
    calls: Sequence[Call]
    outcomes: list[Outcome]
    report: Report
    start: datetime


async def suggest(
    settings: Settings,
    calls: Sequence[Call],
    *,
    env: Mapping[str, str] | None = None,
    ceiling: str | None = None,
    now: datetime | None = None,
) -> tuple[list[Suggestion], list[str]]:
    """The suggestions for ``calls`` under ``settings`` (best first), and notes on what was not
    suggested and why. ``ceiling`` is the operator's bound for automatic irreversible effects
    (``"50.00 USD"``, or a number in the field's unit); ValueError when it cannot be read."""
    now = now or datetime.now(UTC)
    if settings.path is None:
        raise ValueError("the configuration has no file to suggest changes to")
    text = await asyncio.to_thread(Path(settings.path).read_text, encoding="utf-8")
    tally = await simulate(settings, calls, store=None, now=now)
    start = min((c.at for c in calls if c.at is not None), default=now)
    base = _Baseline(
        settings, text, calls, tally.outcomes, Report.of(settings, calls, tally), start
    )
    notes: list[str] = []
    found: list[Suggestion] = []
    rules = settings.policy.rules
    for position, rule in enumerate(rules):
        if isinstance(rule, AskRule):
            batch = await _batch(base, rule, env, now, notes)
            if batch is not None:
                found.append(batch)
            standing = await _standing(base, rule, env, now, ceiling, notes)
            if standing is not None:
                found.append(standing)
        later = next((r for r in rules[position + 1 :] if r.operation == rule.operation), None)
        if isinstance(later, AskRule):
            threshold = await _threshold(base, rule, later, env, now, notes)
            if threshold is not None:
                found.append(threshold)
    useful = [s for s in found if s.clicks_saved_per_day > 0]
    useful.sort(key=lambda s: (-s.clicks_saved_per_day, s.rule, s.kind))
    return useful, notes


# --- the three kinds --------------------------------------------------------------------------


async def _batch(
    base: _Baseline,
    rule: AskRule,
    env: Mapping[str, str] | None,
    now: datetime,
    notes: list[str],
) -> Suggestion | None:
    if rule.batch is not None:
        return None
    waits = [
        call.decided_at - call.at
        for call, outcome in _asked(base, rule.id)
        if call.decided_at is not None and call.at is not None
    ]
    if len(waits) < MIN_EVIDENCE:
        return None
    median = percentile(waits, 0.5)
    assert median is not None
    fitting = [w for w in WINDOWS if w <= median and w < rule.expires_after]
    if not fitting:
        notes.append(
            f"rule {rule.id!r}: people decided within {spoken(median)} (median); "
            "no batch window suggested"
        )
        return None
    window = fitting[-1]
    line = f'batch = {{ window = "{format_duration(window)}", max = 25 }}'
    changed = _add_line(base.text, rule.id, line)
    if changed is None:
        return None
    suggestion = Suggestion(
        "batch",
        rule.id,
        f"Batch rule {rule.id!r}: people took {spoken(median)} to decide anyway (median of "
        f"{len(waits):,} decisions), so its proposals may wait {spoken(window)} to be shown "
        "together",
    )
    return await _measured(base, suggestion, changed, [], env, now)


async def _standing(
    base: _Baseline,
    rule: AskRule,
    env: Mapping[str, str] | None,
    now: datetime,
    ceiling_text: str | None,
    notes: list[str],
) -> Suggestion | None:
    if rule.quorum != 1:
        return None
    operation = base.settings.registry.get(rule.operation)
    types = operation.argument_types()
    formats = operation.field_formats()
    field_name = rule.standing.ceiling if rule.standing is not None else _numeric(types, formats)
    if field_name is None:
        return None
    shown = formats.get(field_name)
    by_agent: dict[str, list[tuple[Call, Outcome]]] = defaultdict(list)
    for call, outcome in _asked(base, rule.id):
        by_agent[call.agent].append((call, outcome))
    irreversible = operation.risk == "irreversible"
    limit = None
    if irreversible:
        if ceiling_text is None:
            notes.append(
                f"rule {rule.id!r}: {rule.operation} is irreversible and no --ceiling is set; "
                "no standing rule suggested"
            )
            return None
        limit = _read_ceiling(ceiling_text, shown)
        if limit is None:
            notes.append(
                f"rule {rule.id!r}: --ceiling {ceiling_text!r} cannot bound {field_name!r}; "
                "no standing rule suggested"
            )
            return None
    grants: list[str] = []
    vary: set[str] = set()
    for agent, asked in sorted(by_agent.items()):
        # the pattern people approved every time: the calls below the first value anyone
        # rejected or left to expire (at a value also approved, the dispute comes first)
        decided = sorted(
            (
                (value, call.verdict, outcome.arguments or {})
                for call, outcome in asked
                if isinstance(value := (outcome.arguments or {}).get(field_name), int | float)
            ),
            key=lambda item: (item[0], not _disputed(item[1])),
        )
        approved: list[tuple[int | float, dict[str, JsonValue]]] = []
        for value, verdict, called in decided:
            if _disputed(verdict):
                break
            approved.append((value, called))
        if limit is not None:
            approved = [(value, called) for value, called in approved if value <= limit]
        if len(approved) < MIN_EVIDENCE:
            continue
        bound_to = max(value for value, _ in approved)
        seen = [called for _, called in approved]
        constant = {
            name: seen[0][name]
            for name in seen[0]
            if name != field_name and all(a.get(name) == seen[0][name] for a in seen)
        }
        if rule.standing is not None:  # what the rule lets vary is never bound
            constant = {k: v for k, v in constant.items() if k not in rule.standing.varying}
        vary |= {name for name in types if name != field_name and name not in constant}
        days = base.report.days
        uses = min(1000, max(1, math.ceil(len(approved) / days)))
        bound = "".join(f",{name}={_arg(value)}" for name, value in sorted(constant.items()))
        grants.append(
            f"{rule.id}:agent={agent},ceiling={_value(bound_to, shown, seen[0])},"
            f"uses={uses},for=1d{bound}"
        )
    if not grants:
        return None
    changed = base.text
    if rule.standing is None:
        admins = ", ".join(json.dumps(role) for role in rule.approvers)
        varying = ", ".join(json.dumps(name) for name in sorted(vary))
        line = (
            f'standing = {{ max = "1d", admins = [{admins}], ceiling = "{field_name}", '
            f"vary = [{varying}], max_uses = 1000 }}"
        )
        edited = _add_line(base.text, rule.id, line)
        if edited is None:
            return None
        changed = edited
    elif set(vary) - set(rule.standing.varying):
        missing = ", ".join(sorted(set(vary) - set(rule.standing.varying)))
        notes.append(
            f"rule {rule.id!r}: its standing rules may not vary {missing}, which differ between "
            "the calls people approved; a grant covers only calls that repeat them"
        )
        return None
    bound_note = " (never above the --ceiling)" if irreversible else ""
    suggestion = Suggestion(
        "standing",
        rule.id,
        f"Standing rules under {rule.id!r}: people approved every call of these agents up to "
        f"the ceiling below{bound_note}; a lead may grant each agent one for a day",
        grants=grants,
    )
    return await _measured(base, suggestion, changed, grants, env, now)


async def _threshold(
    base: _Baseline,
    rule: Rule,
    costlier: AskRule,
    env: Mapping[str, str] | None,
    now: datetime,
    notes: list[str],
) -> Suggestion | None:
    operation = base.settings.registry.get(rule.operation)
    if isinstance(rule, AutoRule):
        if operation.risk == "irreversible":
            return None  # never: irreversible effects are asked for or denied
    elif not (isinstance(rule, AskRule) and rule.quorum < costlier.quorum):
        return None
    limits = [c for c in rule.when if c.comparison == "lte" and not isinstance(c.value, tuple)]
    if len(limits) != 1 or len(rule.when) != 1:
        return None
    condition = limits[0]
    current = condition.value
    assert isinstance(current, int | float) and not isinstance(current, bool)
    decided = sorted(
        (
            (value, call.verdict)
            for call, outcome in _asked(base, costlier.id)
            if isinstance(value := (outcome.arguments or {}).get(condition.field), int | float)
        ),
        key=lambda item: (item[0], not _disputed(item[1])),  # at a value, a dispute first
    )
    undisputed: list[int | float] = []
    for value, verdict in decided:
        if _disputed(verdict):
            break
        undisputed.append(value)
    if len(undisputed) < MIN_EVIDENCE:
        return None
    raised = _round_down(max(undisputed))
    if raised <= current:
        return None
    shown = condition.format
    changed = _raise(base.text, rule.id, condition.field, raised, shown, condition.currency)
    if changed is None:
        notes.append(f"rule {rule.id!r}: its condition on {condition.field!r} could not be edited")
        return None
    before = _show(current, shown, condition.currency)
    after = _show(raised, shown, condition.currency)
    suggestion = Suggestion(
        "threshold",
        rule.id,
        f"Raise rule {rule.id!r} from {before} to {after}: nobody disputed a call up to "
        f"{after} under {costlier.id!r} ({len(undisputed):,} approved, none rejected or left to "
        "expire)",
    )
    return await _measured(base, suggestion, changed, [], env, now)


# --- measuring --------------------------------------------------------------------------------


async def _measured(
    base: _Baseline,
    suggestion: Suggestion,
    changed: str,
    grants: list[str],
    env: Mapping[str, str] | None,
    now: datetime,
) -> Suggestion | None:
    """The suggestion with what it saves and adds, from a replay of the calls through the
    changed configuration (None when that configuration does not load)."""
    settings = base.settings
    assert settings.path is not None
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / Path(settings.path).name
        path.write_text(changed, encoding="utf-8")
        try:
            new = load_settings(path, env)
            granted = [
                parse_grant(text, new, start=base.start, number=n) for n, text in enumerate(grants)
            ]
        except (ConfigError, ValueError):
            return None
    tally = await simulate(new, base.calls, store=None, now=now, grants=granted)
    report = Report.of(new, base.calls, tally)
    days = base.report.days
    suggestion.clicks_saved_per_day = (base.report.total.clicks - report.total.clicks) / days
    irreversible = fewer = 0
    unasked: Counter[str] = Counter()  #: calls asked before and run without a click now, by rule
    money: dict[str, int | float] = defaultdict(int)
    example: dict[str, tuple[FieldFormat, dict[str, JsonValue]]] = {}
    for call, old, fresh in zip(base.calls, base.outcomes, tally.outcomes, strict=True):
        if old.kind == "ask" and fresh.kind == "auto" and old.rule is not None:
            unasked[old.rule] += 1
        if old.kind != "ask" or fresh.risk != "irreversible":
            continue
        before = old.ask
        after = fresh.ask
        moved = fresh.kind == "auto" or (
            before is not None and after is not None and after.quorum < before.quorum
        )
        if not moved:
            continue
        if fresh.kind == "auto":
            irreversible += 1
        else:
            fewer += 1
        _money(settings, call, fresh, money, example)
    suggestion.irreversible_per_day = irreversible / days
    rates = _rejection_rates(base)
    for rule, count in unasked.items():
        # a rule whose calls nobody decided tells nothing: even odds, at most every one
        rejected, decided = rates.get(rule, (0, 0))
        suggestion.rejection_rates[rule] = (rejected, decided)
        suggestion.likely_rejected_per_day += count * (rejected + 1) / (decided + 2) / days
        suggestion.at_most_rejected_per_day += count * rejection_bound(rejected, decided) / days
    suggestion.fewer_approvers_per_day = fewer / days
    suggestion.money_per_day = {
        currency: show_value(example[currency][0], round(amount / days), example[currency][1])
        for currency, amount in money.items()
    }
    if suggestion.kind == "batch":
        suggestion.added_wait_p95 = percentile(report.waits, 0.95)
    suggestion.diff = "".join(
        difflib.unified_diff(
            base.text.splitlines(keepends=True),
            changed.splitlines(keepends=True),
            fromfile=str(settings.path),
            tofile=f"{settings.path} (suggested)",
        )
    )
    return suggestion


def _money(
    settings: Settings,
    call: Call,
    outcome: Outcome,
    money: dict[str, int | float],
    example: dict[str, tuple[FieldFormat, dict[str, JsonValue]]],
) -> None:
    """Adds the call's money arguments (each field the operation shows as money), per currency."""
    from contracts.formats import money_currency

    operation = settings.registry.get(call.operation)
    arguments = outcome.arguments or {}
    for name, shown in operation.field_formats().items():
        value = arguments.get(name)
        if shown.kind == "money" and isinstance(value, int | float):
            currency = money_currency(shown, arguments) or "?"
            money[currency] += value
            example.setdefault(currency, (shown, arguments))


# --- helpers ----------------------------------------------------------------------------------


def rejection_bound(rejected: int, decided: int, confidence: float = 0.95) -> float:
    """The highest share of rejections under which seeing ``rejected`` or fewer of ``decided``
    is still as likely as ``1 - confidence`` (rejections being rare, counted as Poisson): 3/n
    for none seen, the "rule of three". Found by halving the interval."""
    if decided <= 0:
        return 1.0

    def tail(mean: float) -> float:  # P(X <= rejected) for X ~ Poisson(mean)
        # summed from logarithms: exp(-mean) alone is 0.0 once mean passes about 745
        logs = [k * math.log(mean) - mean - math.lgamma(k + 1) for k in range(rejected + 1)]
        top = max(logs)
        return math.exp(top) * sum(math.exp(log - top) for log in logs)

    low, high = float(rejected), float(rejected) + 10 * math.sqrt(rejected + 1) + 10
    for _ in range(60):
        middle = (low + high) / 2
        low, high = (middle, high) if tail(middle) > 1 - confidence else (low, middle)
    return min(1.0, high / decided)


def _rejection_rates(base: _Baseline) -> dict[str, tuple[int, int]]:
    """Per ask rule with decided calls: how many people rejected, of how many they decided
    (approved, rejected or left to expire)."""
    rates: dict[str, tuple[int, int]] = {}
    for call, outcome in zip(base.calls, base.outcomes, strict=True):
        if outcome.kind != "ask" or outcome.rule is None or call.verdict is None:
            continue
        rejected, decided = rates.get(outcome.rule, (0, 0))
        rates[outcome.rule] = (rejected + (call.verdict == "rejected"), decided + 1)
    return rates


def _disputed(verdict: str | None) -> bool:
    """Whether people rejected the call or left it to expire (a call without a verdict is
    counted as approved, as the simulator counts it)."""
    return verdict in ("rejected", "expired")


def _asked(base: _Baseline, rule_id: str) -> list[tuple[Call, Outcome]]:
    return [
        (call, outcome)
        for call, outcome in zip(base.calls, base.outcomes, strict=True)
        if outcome.kind == "ask" and outcome.rule == rule_id
    ]


def _numeric(types: Mapping[str, str], formats: Mapping[str, FieldFormat]) -> str | None:
    """The argument a standing rule is bounded by: a money one first, else the first number."""
    numeric = sorted(name for name, kind in types.items() if kind in ("integer", "number"))
    money = [name for name in numeric if (f := formats.get(name)) and f.kind == "money"]
    chosen = money or numeric
    return chosen[0] if chosen else None


def _read_ceiling(text: str, shown: FieldFormat | None) -> int | float | None:
    if shown is not None and shown.kind == "money":
        try:
            return parse_money(text, shown)[0]
        except ValueError:
            pass
    try:
        number = float(text)
    except ValueError:
        return None
    return int(number) if number.is_integer() else number


def _ceiling_text(text: str) -> bool:
    """Whether ``text`` reads as a ceiling of some field: a number, or an amount and its
    currency (which field it bounds is told per rule)."""
    try:
        number = float(text)
    except ValueError:
        return _MONEY_CEILING.fullmatch(text.strip()) is not None
    return math.isfinite(number) and number > 0


_MONEY_CEILING = re.compile(r"[0-9][0-9,]*(?:\.[0-9]+)?\s+[A-Z]{3}")


def _round_down(value: int | float) -> int | float:
    """Down to two significant figures: 487,320 -> 480,000."""
    if value <= 0:
        return value
    step = 10 ** max(0, math.floor(math.log10(value)) - 1)
    rounded = (value // step) * step
    return int(rounded) if isinstance(value, int) else rounded


def _show(value: object, shown: FieldFormat | None, currency: str | None) -> str:
    arguments: dict[str, JsonValue] = {}
    if shown is not None and shown.currency_field is not None and currency is not None:
        arguments = {shown.currency_field: currency}
    return show_value(shown, value, arguments)  # type: ignore[arg-type]


def _value(value: int | float, shown: FieldFormat | None, arguments: Mapping[str, Any]) -> str:
    """A ceiling as ``--grant`` reads it: money in the operation's terms, else the number."""
    if shown is not None and shown.kind == "money":
        text = show_value(shown, value, dict(arguments)).replace(",", "")
        if re.fullmatch(r"[0-9.]+ [A-Z]{3}", text):
            return text
    return str(value)


def _arg(value: JsonValue) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _block(text: str, rule_id: str) -> re.Match[str] | None:
    return re.search(
        r"\[\[policy\]\]\s*\nid = " + re.escape(json.dumps(rule_id)) + r"\n.*?(?=\n\s*\n|\n\[|\Z)",
        text,
        re.S,
    )


def _add_line(text: str, rule_id: str, line: str) -> str | None:
    """``text`` with ``line`` added at the end of the rule's table (None: not found)."""
    block = _block(text, rule_id)
    if block is None:
        return None
    return text[: block.end()] + "\n" + line + text[block.end() :]


def _raise(
    text: str,
    rule_id: str,
    field_name: str,
    value: int | float,
    shown: FieldFormat | None,
    currency: str | None,
) -> str | None:
    """``text`` with the rule's ``lte`` on ``field_name`` set to ``value`` (written as money with
    its currency when the threshold was)."""
    block = _block(text, rule_id)
    if block is None:
        return None
    pattern = re.compile(
        r'(field\s*=\s*"' + re.escape(field_name) + r'"\s*,\s*lte\s*=\s*)([^}]+?)(\s*\})'
    )
    found = pattern.search(block.group(0))
    if found is None:
        return None
    written = found.group(2).strip()
    if written.startswith('"') and currency is not None and shown is not None:
        major = value / 100 if shown.minor_units else value
        new = f'"{major:.2f} {currency}"' if shown.minor_units else f'"{major} {currency}"'
    else:
        new = str(value)
    edited = block.group(0)[: found.start(2)] + new + block.group(0)[found.end(2) :]
    return text[: block.start()] + edited + text[block.end() :]


# --- the command ------------------------------------------------------------------------------


def print_suggestions(
    suggestions: Sequence[Suggestion], notes: Sequence[str], days: int, out: TextIO
) -> None:
    if not suggestions:
        print("no change would save clicks without loosening control on these calls", file=out)
    for number, s in enumerate(suggestions, start=1):
        print(f"{number}. {s.summary}", file=out)
        exposure = []
        if s.irreversible_per_day:
            exposure.append(
                f"{s.irreversible_per_day:,.0f} irreversible effects a day without a click"
            )
        if s.fewer_approvers_per_day:
            exposure.append(f"{s.fewer_approvers_per_day:,.0f} calls a day decided by fewer people")
        if s.money_per_day:
            exposure.append(", ".join(s.money_per_day.values()) + " a day")
        adds = "adds " + "; ".join(exposure) if exposure else "adds no exposure"
        wait = "" if s.added_wait_p95 is None else f"; added wait p95 {spoken(s.added_wait_p95)}"
        print(f"   saves {click_count(s.clicks_saved_per_day)} a day; {adds}{wait}", file=out)
        if s.rejection_rates:
            shares = "; ".join(
                f"people rejected {rejected:,} of {decided:,} under {rule!r}"
                if decided
                else f"people decided no call under {rule!r}"
                for rule, (rejected, decided) in sorted(s.rejection_rates.items())
            )
            print(
                f"   {shares}: expect about {_about(s.likely_rejected_per_day)} a day that they "
                "would reject to run without a click ("
                f"{_about(s.at_most_rejected_per_day)} at the 95% bound of that share; check it "
                "with policy simulate on another day's calls)",
                file=out,
            )
        for grant in s.grants:
            print(f"   a lead grants: --grant {json.dumps(grant)}", file=out)
        if s.diff:
            for line in s.diff.splitlines():
                print(f"   {line}", file=out)
    for note in notes:
        print(f"note: {note}", file=out)


def _about(count: float) -> str:
    """A small expected count as people say it ("1", "2.4", "fewer than 0.1")."""
    if count < 0.1:
        return "fewer than 0.1"
    return f"{count:,.0f}" if count >= 10 else f"{count:.1f}".removesuffix(".0")


async def suggest_command(
    settings: Settings,
    calls_path: Path | None,
    since: str | None,
    ceiling: str | None,
    out: TextIO,
    err: TextIO,
    *,
    as_json: bool = False,
    env: Mapping[str, str] | None = None,
) -> int:
    """0: suggested (perhaps nothing); 2: the calls or the ceiling cannot be read."""
    from bot.operators.simulate import export_calls

    if calls_path is not None and since is not None:
        print(
            f"give a call file or --since DATE, not both (got {str(calls_path)!r} "
            f"and --since {since!r})",
            file=err,
        )
        return 2
    if ceiling is not None and not _ceiling_text(ceiling):
        print(
            f"--ceiling: expected money with its currency, such as '50.00 USD', or a number "
            f"above zero in the field's own unit; got {ceiling!r}",
            file=err,
        )
        return 2
    try:
        if calls_path is not None:
            calls = await read_calls_file(calls_path)
        elif since is not None:
            calls = await export_calls(settings, since)
        else:
            print("give a call file, or --since DATE to read the store's history", file=err)
            return 2
    except (OSError, UnicodeDecodeError, ValueError) as error:
        print(f"cannot read the calls: {error}", file=err)
        return 2
    try:
        suggestions, notes = await suggest(settings, calls, env=env, ceiling=ceiling)
    except ValueError as error:
        print(error, file=err)
        return 2
    days = days_of(calls)
    if as_json:
        document = {"suggestions": [s.as_json() for s in suggestions], "notes": notes}
        print(json.dumps(document, indent=2), file=out)
        return 0
    print(f"{len(calls):,} calls over {days:,} day(s), {settings.path}:", file=out)
    print_suggestions(suggestions, notes, days, out)
    return 0
