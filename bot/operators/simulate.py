"""``countersign policy simulate CALLS.jsonl [--config NEW.toml]`` and ``policy export-calls``.

Before a policy change, an operator wants to know how many calls it would put in front of a
person. The simulator replays calls (exported from the store, or written by hand) through the
policy table and the standing rules active now, and counts per rule: automatic, asked, denied,
and the share that reaches a person; with a second configuration it also lists each call whose
decision changes.

A call is one JSON object per line::

    {"agent": "support-bot", "operation": "payments.refund", "requested_by": "U0DANA",
     "request": {"payment_id": "pay_1002"}, "arguments": {...}, "id": "cs_...", "at": "..."}

``arguments`` (the frozen arguments, as export-calls writes them) are classified as they are;
a call with only ``request`` is first put through the operation's contract, as a submission is.
Requesters' roles are those configured in ``[roles]`` (Slack user groups are not read).
"""

from __future__ import annotations

import asyncio
import secrets
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, TextIO

from pydantic import BaseModel, ConfigDict, JsonValue, ValidationError

from bot.audit.export import parse_since
from bot.http import AiohttpClient
from bot.settings import ConfigError, Settings, load_settings
from bot.standing.rules import cover
from contracts.base import Context, ContractViolation
from contracts.policy import Ask, Auto
from contracts.registry import UnknownOperation
from store.base import Store, StoreError
from store.calls import recorded_calls
from store.open import open_store
from store.upgrade import schema_state

__all__ = [
    "Call",
    "Outcome",
    "Tally",
    "export_calls_command",
    "read_calls",
    "simulate",
    "simulate_command",
]

Kind = Literal["auto", "ask", "deny", "invalid"]

#: Changed calls listed by name; the rest are counted.
CHANGES_SHOWN = 50


class Call(BaseModel):
    """One agent call to replay."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    agent: str
    operation: str
    requested_by: str
    request: JsonValue = None
    arguments: dict[str, JsonValue] | None = None
    id: str | None = None  #: the proposal it was, when exported from the store
    at: datetime | None = None
    decision: Literal["auto", "ask", "deny"] | None = None  #: as decided then (export-calls)
    rule_id: str | None = None


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the policy decides for one call."""

    kind: Kind
    rule: str | None  #: the deciding rule; None when no rule matched (or the call is invalid)
    standing: bool = False  #: approved by a standing rule
    problem: str | None = None  #: why the call is invalid

    def label(self) -> str:
        if self.kind == "invalid":
            return f"invalid ({self.problem})"
        by = "standing rule under " if self.standing else ""
        return f"{self.kind} ({by}{self.rule or 'no rule matched'})"


@dataclass
class Tally:
    """Counts per rule (None: no rule matched) and each call's outcome, in order."""

    outcomes: list[Outcome] = field(default_factory=list)
    by_rule: dict[str | None, Counter[str]] = field(default_factory=dict)

    def add(self, outcome: Outcome) -> None:
        self.outcomes.append(outcome)
        if outcome.kind == "invalid":
            return
        counts = self.by_rule.setdefault(outcome.rule, Counter())
        counts[outcome.kind] += 1
        if outcome.standing:
            counts["standing"] += 1

    @property
    def total(self) -> Counter[str]:
        return sum(self.by_rule.values(), Counter())

    @property
    def invalid(self) -> int:
        return sum(1 for outcome in self.outcomes if outcome.kind == "invalid")


def read_calls(text: str, *, source: str) -> list[Call]:
    """The calls of a JSON Lines text; ValueError naming the line and what is wrong."""
    calls = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            call = Call.model_validate_json(line)
        except ValidationError as error:
            problem = "; ".join(
                f"{'.'.join(str(part) for part in e['loc']) or 'line'}: {e['msg']}"
                for e in error.errors()
            )
            raise ValueError(f"{source} line {number}: {problem}") from None
        if call.arguments is None and call.request is None:
            raise ValueError(f"{source} line {number}: expected 'request' or 'arguments'")
        calls.append(call)
    return calls


async def simulate(
    settings: Settings, calls: Iterable[Call], *, store: Store | None, now: datetime
) -> Tally:
    """Classify every call as ``settings`` would, with the standing rules in ``store`` (None:
    without them). Uses of a standing rule are counted through the replay, so one covers no
    more calls than it has uses left."""
    tally = Tally()
    used: Counter[str] = Counter()
    http = AiohttpClient()
    try:
        for call in calls:
            tally.add(await _classify(settings, call, store, used, http, now))
    finally:
        await http.close()
    return tally


async def _classify(
    settings: Settings,
    call: Call,
    store: Store | None,
    used: Counter[str],
    http: AiohttpClient,
    now: datetime,
) -> Outcome:
    try:
        operation = settings.registry.get(call.operation)
    except UnknownOperation:
        return Outcome("invalid", None, problem=f"unknown operation {call.operation!r}")
    arguments: Mapping[str, JsonValue]
    if call.arguments is not None:
        arguments = call.arguments
    else:
        ctx = Context(now=now, http=http, correlation_id=secrets.token_hex(4))
        try:
            resolved = await operation.resolve(operation.parse_request(call.request), ctx)
        except ContractViolation as error:
            first = error.problems[0] if error.problems else None
            detail = "refused" if first is None else f"{first.field}: {first.message}"
            return Outcome("invalid", None, problem=detail)
        arguments = operation.dump_arguments(resolved.arguments)
    roles = frozenset(
        role for role, members in settings.roles.items() if call.requested_by in members
    )
    decision = settings.policy.classify(
        operation=operation.name, agent=call.agent, arguments=arguments, requester_roles=roles
    )
    if store is not None and isinstance(decision, Ask):
        covered, rule = await cover(
            store,
            settings.policy,
            decision,
            operation=operation.name,
            agent=call.agent,
            arguments=arguments,
            requested_by=call.requested_by,
            members=settings.roles,
            now=now,
        )
        left = 0 if rule is None else rule.max_uses - rule.uses - used[rule.id]
        if isinstance(covered, Auto) and rule is not None and left > 0:
            used[rule.id] += 1
            return Outcome("auto", covered.rule_id, standing=True)
    return Outcome(decision.kind, decision.rule_id)


def _share(asked: int, total: int) -> str:
    return f"{100 * asked / total:.1f}%" if total else "-"


def print_tally(tally: Tally, out: TextIO) -> None:
    """The counts per rule, in a table, and the total."""
    rows = [(rule or "(no rule matched)", counts) for rule, counts in tally.by_rule.items()]
    rows.sort(key=lambda row: row[0])
    rows.append(("total", tally.total))
    width = max(len(name) for name, _ in rows)
    print(
        f"  {'rule':<{width}}  {'calls':>6}  {'auto':>6}  {'standing':>8}  {'ask':>6}  "
        f"{'deny':>6}  to a person",
        file=out,
    )
    for name, counts in rows:
        calls = counts["auto"] + counts["ask"] + counts["deny"]
        print(
            f"  {name:<{width}}  {calls:>6}  {counts['auto']:>6}  {counts['standing']:>8}  "
            f"{counts['ask']:>6}  {counts['deny']:>6}  {_share(counts['ask'], calls):>11}",
            file=out,
        )
    if tally.invalid:
        print(f"  and {tally.invalid} call(s) the contract refuses (never stored):", file=out)
        for number, outcome in enumerate(tally.outcomes, start=1):
            if outcome.kind == "invalid":
                print(f"    call {number}: {outcome.problem}", file=out)
                break


def changes(calls: Sequence[Call], before: Tally, after: Tally) -> list[str]:
    """One line per call whose decision (or deciding rule) differs between the two tallies."""
    lines = []
    for number, (call, old, new) in enumerate(
        zip(calls, before.outcomes, after.outcomes, strict=True), start=1
    ):
        if old != new:
            name = f" {call.id}" if call.id else ""
            lines.append(
                f"  call {number}{name} ({call.operation}): {old.label()} -> {new.label()}"
            )
    return lines


async def _standing_store(settings: Settings, err: TextIO) -> Store | None:
    """The store, for its standing rules, when it is there and current (opening it must not
    migrate it); None, said on ``err``, when not."""
    try:
        state = await schema_state(settings.store.url)
        if not state.current:
            print("note: the store's schema is not current; standing rules left out", file=err)
            return None
        return await open_store(settings.store.url)
    except StoreError as error:
        print(f"note: the store cannot be read ({error}); standing rules left out", file=err)
        return None


async def simulate_command(
    settings: Settings, calls_path: Path, new_config: Path | None, out: TextIO, err: TextIO
) -> int:
    """0: simulated; 2: the calls or the new configuration cannot be read."""
    try:
        text = await asyncio.to_thread(calls_path.read_text, encoding="utf-8")
        calls = read_calls(text, source=str(calls_path))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        print(f"cannot read the calls: {error}", file=err)
        return 2
    new_settings = None
    if new_config is not None:
        try:
            new_settings = load_settings(new_config)
        except ConfigError as error:
            print(f"--config {new_config}: the configuration has problems:", file=err)
            for problem in error.problems:
                print(f"  - {problem}", file=err)
            return 2
    now = datetime.now(UTC)
    store = await _standing_store(settings, err)
    try:
        current = await simulate(settings, calls, store=store, now=now)
        new = None
        if new_settings is not None:
            new = await simulate(new_settings, calls, store=store, now=now)
    finally:
        if store is not None:
            await store.close()
    standing = "with the standing rules active now" if store else "without standing rules"
    print(f"{len(calls)} calls from {calls_path}, {standing}", file=out)
    print(f"current configuration ({settings.path}):", file=out)
    print_tally(current, out)
    if new is None or new_settings is None:
        return 0
    print(f"new configuration ({new_settings.path}):", file=out)
    print_tally(new, out)
    changed = changes(calls, current, new)
    print(f"{len(changed)} of {len(calls)} calls decide differently", file=out)
    for line in changed[:CHANGES_SHOWN]:
        print(line, file=out)
    if len(changed) > CHANGES_SHOWN:
        print(f"  and {len(changed) - CHANGES_SHOWN} more", file=out)
    return 0


async def export_calls_command(
    settings: Settings, since_text: str, output: Path | None, out: TextIO, err: TextIO
) -> int:
    """Write the agents' calls since a date as JSON Lines (0); 2 on a bad date or store."""
    try:
        since = parse_since(since_text)
    except ValueError as error:
        print(error, file=err)
        return 2
    try:
        store = await open_store(settings.store.url)
    except StoreError as error:
        print(f"cannot open the store: {error}", file=err)
        return 2
    try:
        proposals = await recorded_calls(store, since=since)
    finally:
        await store.close()
    lines = [
        Call(
            agent=p.agent,
            operation=p.operation,
            requested_by=p.requested_by,
            request=p.request,
            arguments=dict(p.arguments),
            id=p.id,
            at=p.created_at,
            decision=p.decision,
            rule_id=p.rule_id,
        ).model_dump_json(exclude_none=True)
        + "\n"
        for p in proposals
    ]
    if output is None:
        out.writelines(lines)
    else:
        await asyncio.to_thread(output.write_text, "".join(lines), encoding="utf-8")
    print(f"exported {len(lines)} calls since {since.isoformat()}", file=err)
    return 0
