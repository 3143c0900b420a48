"""The calls ``policy simulate`` replays and what it finds for each: a call as read from a JSON
Lines file (bot/operators/simulate.py describes the format), the outcome the server would give it,
and the tally of outcomes per rule that the report (bot/operators/report.py) is written from.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, JsonValue, ValidationError

from contracts.policy import Ask, Decision

__all__ = ["Call", "Kind", "Outcome", "Tally", "read_calls"]

#: ``replay``: sent again under the key of a call stored before it, with the same body; the
#: server answers with the first call's proposal (no new proposal, message or click)
Kind = Literal["auto", "ask", "deny", "refused", "replay"]

#: A Slack user id in a refusal: reasons are grouped by what was wrong, not by whom it named.
_PERSON = re.compile(r"\b[UW][0-9A-Z]{5,}\b")
#: A proposal's id in a refusal (a call sent again with another body names the first one).
_PROPOSAL = re.compile(r"\bcs_[0-9a-z]+\b")


class Call(BaseModel):
    """One agent call to replay. Read strictly, as the server reads a submission's body: a
    field of the wrong type (``"urgent": 1``, a time given as a number) is named, never taken
    for what it might mean."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    agent: str
    operation: str
    requested_by: str | None = None
    request: JsonValue = None
    arguments: dict[str, JsonValue] | None = None
    run_id: str | None = None
    #: the Idempotency-Key header it was sent with; without one, the server derives its key
    #: from agent, run_id, operation and request
    idempotency_key: str | None = None
    reason: str | None = None
    callback_url: str | None = None
    #: shown to people at once rather than with its rule's batch (the submission's own field)
    urgent: bool = False
    id: str | None = None  #: the proposal it was, when exported from the store
    at: datetime | None = None  #: when it arrived
    decision: Literal["auto", "ask", "deny"] | None = None  #: as decided then (export-calls)
    rule_id: str | None = None
    #: what people decided about it, when it was asked
    verdict: Literal["approved", "rejected", "expired"] | None = None
    decided_at: datetime | None = None  #: when they decided


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the server decides for one call. Two outcomes are equal when they decide alike
    (the same kind, rule, standing or not, and refusal reasons)."""

    kind: Kind
    rule: str | None  #: the deciding rule; None when no rule matched (or the call is refused)
    standing: str | None = field(default=None, compare=False)  #: the standing rule that approved it
    is_standing: bool = False  #: approved by a standing rule instead of asking
    #: why it is refused before the policy: every reason, as the API names them
    reasons: tuple[str, ...] = ()
    #: the policy's decision (an Ask carries approvers, channel, quorum and batch window)
    decision: Decision | None = field(default=None, compare=False)
    risk: str | None = field(default=None, compare=False)
    arguments: dict[str, JsonValue] | None = field(default=None, compare=False, hash=False)
    #: a replay's first call: its place among the calls, from 1
    replays: int | None = field(default=None, compare=False)

    @property
    def problem(self) -> str | None:
        return "; ".join(self.reasons) if self.reasons else None

    @property
    def ask(self) -> Ask | None:
        """The Ask, when the policy asks a person (and no standing rule approved it)."""
        return self.decision if isinstance(self.decision, Ask) and self.kind == "ask" else None

    def label(self) -> str:
        if self.kind == "refused":
            return f"refused ({self.problem})"
        if self.kind == "replay":
            return f"replay of call {self.replays} ({self.rule or 'no rule matched'})"
        by = f"standing rule {self.standing} under " if self.standing else ""
        return f"{self.kind} ({by}{self.rule or 'no rule matched'})"


class Tally:
    """Each call's outcome, in order, and the counts per rule (None: no rule matched). Calls
    refused and replays of an earlier call are counted apart (:attr:`refused`,
    :attr:`replayed`): auto, ask and deny of :attr:`total` and those two count every call
    once."""

    def __init__(self) -> None:
        self.outcomes: list[Outcome] = []
        self.by_rule: dict[str | None, Counter[str]] = {}
        self.reasons: Counter[str] = Counter()

    def add(self, outcome: Outcome) -> None:
        self.outcomes.append(outcome)
        if outcome.kind == "refused":
            self.reasons.update(
                _PROPOSAL.sub("(a proposal)", _PERSON.sub("(a person)", reason))
                for reason in outcome.reasons
            )
            return
        if outcome.kind == "replay":
            return
        counts = self.by_rule.setdefault(outcome.rule, Counter())
        counts[outcome.kind] += 1
        if outcome.standing:
            counts["standing"] += 1

    @property
    def total(self) -> Counter[str]:
        return sum(self.by_rule.values(), Counter())

    @property
    def refused(self) -> int:
        return sum(1 for outcome in self.outcomes if outcome.kind == "refused")

    @property
    def replayed(self) -> int:
        """Calls that replayed an earlier one: sent again under its key with the same body."""
        return sum(1 for outcome in self.outcomes if outcome.kind == "replay")

    @property
    def invalid(self) -> int:  # the earlier name, for callers that still use it
        return self.refused


def read_calls(text: str, *, source: str) -> list[Call]:
    """The calls of a JSON Lines text; ValueError naming the line and what is wrong."""
    calls = []
    # only a newline ends a line: JSON allows U+2028, U+2029 and U+0085 raw inside a string,
    # which str.splitlines would split at
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        try:
            call = Call.model_validate_json(line)
        except ValidationError as error:
            problem = "; ".join(_problem(e) for e in error.errors(include_url=False))
            raise ValueError(f"{source} line {number}: {problem}") from None
        if call.arguments is None and call.request is None:
            raise ValueError(f"{source} line {number}: expected 'request' or 'arguments'")
        for name, at in (("at", call.at), ("decided_at", call.decided_at)):
            if at is not None and at.tzinfo is None:
                raise ValueError(
                    f"{source} line {number}: {name}: expected a time with its zone, such as "
                    f"'2031-03-14T09:12:03Z', got {at.isoformat()!r}"
                )
        calls.append(call)
    return calls


def _problem(error: Any) -> str:
    """One field's problem in a call's line, as the reference names the fields."""
    where = ".".join(str(part) for part in error["loc"]) or "line"
    if error["type"] == "extra_forbidden" and len(error["loc"]) == 1:
        return f"{where}: unknown field (a call has: {', '.join(Call.model_fields)})"
    if error["type"] == "missing":
        return f"{where}: required field is missing"
    given = error.get("input")
    shown = f" (got {given!r})" if isinstance(given, str | int | float | bool) else ""
    return f"{where}: {error['msg']}{shown}"
