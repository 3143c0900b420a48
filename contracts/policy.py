"""The policy table: for each proposal, run it (auto), ask a person (ask) or refuse it (deny).

Rules are tried in order and the first that matches decides. When no rule matches, the proposal
is denied: nothing runs unless a rule allows it.

A rule matches when its ``operation`` is the proposal's (or ``"*"``), the agent is one of its
``agents`` (when it names any), the requester holds one of its ``requester_roles`` (when it names
any) and every condition in ``when`` holds for the frozen arguments. A missing argument, or one of
an unexpected type, never satisfies a condition.

Rules for ``"*"`` may not carry conditions: argument names belong to one operation, and a
condition on a field that some operations lack would quietly never match them. Write one rule per
operation instead.

Each operation's risk class bounds what ``auto`` may do (``contracts/risk.py``): irreversible
effects are asked for or denied, reversible writes run automatically only within conditions.
An ``ask`` rule may require ``quorum`` distinct approvers (``contracts/quorum.py``).

:meth:`PolicyTable.load` checks a whole table, as plain data from TOML, against the operation
registry and the configured roles, and reports every problem at once in one :class:`PolicyError`.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from difflib import get_close_matches
from typing import Annotated, Any, Final, Literal, Self

from pydantic import Field, JsonValue, model_validator

from contracts.base import ArgType
from contracts.batching import BackupRoute, BatchPolicy, read_batch, read_then
from contracts.durations import format_duration, parse_duration
from contracts.formats import (
    FieldFormat,
    Formats,
    field_label,
    money_currency,
    parse_money,
    show_value,
)
from contracts.frozen import Frozen
from contracts.quorum import DEFAULT_QUORUM, MAX_QUORUM, quorum_problem, read_quorum
from contracts.registry import Registry
from contracts.reminders import RemindAt, parse_remind_at
from contracts.risk import auto_rule_problems
from contracts.standing import StandingPolicy, read_standing
from contracts.toml_text import as_toml

__all__ = [
    "ANY_OPERATION",
    "COMPARISONS",
    "DEFAULT_EXPIRY",
    "MAX_EXPIRY",
    "Ask",
    "AskRule",
    "Auto",
    "AutoRule",
    "Comparison",
    "Condition",
    "Decision",
    "Deny",
    "DenyRule",
    "PolicyError",
    "PolicyTable",
    "Rule",
    "RuleCheck",
    "agent_note",
]

#: The ``operation`` of a rule that applies to every operation.
ANY_OPERATION: Final = "*"
DEFAULT_EXPIRY: Final = timedelta(hours=1)
MAX_EXPIRY: Final = timedelta(days=7)

Comparison = Literal["lt", "lte", "gt", "gte", "eq", "in"]
COMPARISONS: Final[tuple[Comparison, ...]] = ("lt", "lte", "gt", "gte", "eq", "in")
Scalar = bool | int | float | str

_ORDERINGS: Final[Mapping[str, Callable[[Any, Any], bool]]] = {
    "lt": operator.lt,
    "lte": operator.le,
    "gt": operator.gt,
    "gte": operator.ge,
}
_SYMBOLS: Final = {"lt": "<", "lte": "≤", "gt": ">", "gte": "≥"}
_EXPECTED: Final[Mapping[ArgType, str]] = {
    "integer": "a whole number",
    "number": "a finite number",
    "string": "a string",
    "boolean": "true or false",
}


class PolicyError(ValueError):
    """The policy table is not valid."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = tuple(problems)
        super().__init__("\n".join(self.problems) or self.__doc__)


# --- rules ----------------------------------------------------------------------------------------


class Condition(Frozen):
    """One test on one frozen argument, such as ``amount_cents <= 5000``.

    ``format`` is how the operation shows the field (contracts/formats.py), so the sentence
    saying whether it held reads in the operation's terms ("Amount 450.00 USD ≤ 2,000.00 USD
    limit"). A money threshold written with its currency holds only for amounts in
    ``currency``.
    """

    field: str
    comparison: Comparison
    value: Scalar | tuple[Scalar, ...]
    format: FieldFormat | None = None
    currency: str | None = None

    @model_validator(mode="after")
    def _value_fits_comparison(self) -> Self:
        if self.comparison == "in":
            if not isinstance(self.value, tuple) or not self.value:
                raise ValueError("'in' needs a non-empty tuple of values")
        elif isinstance(self.value, tuple):
            raise ValueError(f"{self.comparison!r} needs one value, not a list")
        elif self.comparison != "eq" and not _is_number(self.value):
            raise ValueError(f"{self.comparison!r} needs a number, got {self.value!r}")
        if self.currency is not None and (self.format is None or self.format.kind != "money"):
            raise ValueError("a currency is for a condition on a money field")
        return self

    def evaluate(self, arguments: Mapping[str, JsonValue]) -> tuple[bool, str]:
        """Whether the condition holds, and a sentence saying so with the actual value."""
        label = field_label({self.field: self.format} if self.format else {}, self.field)
        if self.field not in arguments:
            return False, f"{label} is missing"
        actual = arguments[self.field]
        shown = self._shown(actual, arguments, threshold=False)
        if self.currency is not None and self.format is not None:
            held = money_currency(self.format, arguments)
            if held != self.currency:
                return False, f"{label} {shown} is not in {self.currency}"
        if isinstance(self.value, tuple):
            options = ", ".join(self._shown(option, arguments) for option in self.value)
            if any(_same(actual, option) for option in self.value):
                return True, f"{label} {shown} is one of {options}"
            return False, f"{label} {shown} is none of {options}"
        expected = self._shown(self.value, arguments)
        if self.comparison == "eq":
            if _same(actual, self.value):
                return True, f"{label} is {shown}"
            return False, f"{label} is {shown}, not {expected}"
        if not _is_number(actual):
            return False, f"{label} is {shown}, not a number"
        symbol = _SYMBOLS[self.comparison]
        limit = " limit" if self.comparison in ("lt", "lte") else ""
        if _ORDERINGS[self.comparison](actual, self.value):
            return True, f"{label} {shown} {symbol} {expected}{limit}"
        return False, f"{label} {shown} is not {symbol} {expected}{limit}"

    def _shown(
        self, value: object, arguments: Mapping[str, JsonValue], *, threshold: bool = True
    ) -> str:
        """``value`` in the field's terms; a threshold in the currency it was written in."""
        if self.format is None:
            return _show(value)
        if threshold and self.currency is not None and self.format.currency_field is not None:
            arguments = {**arguments, self.format.currency_field: self.currency}
        text = show_value(self.format, value, arguments)  # type: ignore[arg-type]
        if isinstance(value, str) and self.format.kind == "text":
            return repr(text) if len(text) <= 80 else repr(text[:77]) + "..."
        return text


class _RuleBase(Frozen):
    id: str = Field(min_length=1)
    operation: str = Field(min_length=1)  #: an operation name, or ANY_OPERATION
    agents: tuple[str, ...] = ()  #: empty: any agent
    requester_roles: tuple[str, ...] = ()  #: empty: any requester
    when: tuple[Condition, ...] = ()  #: all must hold

    def evaluate(
        self,
        *,
        operation: str,
        agent: str,
        arguments: Mapping[str, JsonValue],
        requester_roles: Collection[str],
    ) -> tuple[bool, str]:
        """Whether the rule matches, and why (every clause that held) or why not (the first
        that failed)."""
        if self.operation not in (ANY_OPERATION, operation):
            return False, f"it is for operation {self.operation!r}, not {operation!r}"
        clauses = []
        if self.agents:
            if agent not in self.agents:
                return False, f"agent {agent!r} not in {_show(self.agents)}"
            clauses.append(f"agent {agent!r} in {_show(self.agents)}")
        if self.requester_roles:
            held = [role for role in self.requester_roles if role in requester_roles]
            if not held:
                return False, f"the requester holds none of the roles {_show(self.requester_roles)}"
            clauses.append(f"the requester holds {_show(held)}")
        for condition in self.when:
            ok, clause = condition.evaluate(arguments)
            if not ok:
                return False, clause
            clauses.append(clause)
        if not clauses:
            every = "operation" if self.operation == ANY_OPERATION else self.operation
            return True, f"rule {self.id!r} matches every {every}"
        return True, f"rule {self.id!r}: " + " and ".join(clauses)


class AutoRule(_RuleBase):
    """Matching proposals run without asking anyone."""

    decision: Literal["auto"] = "auto"


class AskRule(_RuleBase):
    """Matching proposals wait for a person holding one of ``approvers`` to decide."""

    decision: Literal["ask"] = "ask"
    approvers: tuple[str, ...] = Field(min_length=1)  #: role names
    channel: str = Field(min_length=1)  #: Slack channel id to ask in
    expires_after: timedelta = Field(default=DEFAULT_EXPIRY, gt=timedelta(0), le=MAX_EXPIRY)
    #: whether guests (multi- or single-channel) holding an approver role may decide
    allow_guests: bool = False
    #: when to remind the approvers (contracts.reminders); None: the [approvals] default
    remind_at: RemindAt | None = None
    #: how much one Extend click adds to the expiry; None: proposals cannot be extended
    extend_by: timedelta | None = Field(default=None, gt=timedelta(0))
    #: how many distinct people holding an approver role must approve before it runs
    quorum: int = Field(default=DEFAULT_QUORUM, ge=1, le=MAX_QUORUM)
    #: whether an admin may approve and grant a standing rule (contracts.standing); None: no
    standing: StandingPolicy | None = None
    #: how long its proposals may wait to be shown together (contracts.batching); None: at once
    batch: BatchPolicy | None = None
    #: who else may decide when nobody has, and from when (contracts.batching); None: nobody
    then: BackupRoute | None = None

    @model_validator(mode="after")
    def _extended_lifetime_fits(self) -> Self:
        waits = self.batch.window if self.batch is not None else timedelta(0)
        lives = waits + self.expires_after + (self.extend_by or timedelta(0))
        if lives > MAX_EXPIRY:
            raise ValueError(
                f"batch.window + expires_after + extend_by is {lives}; "
                f"at most {MAX_EXPIRY} is allowed"
            )
        if self.batch is not None and self.batch.window >= self.expires_after:
            raise ValueError("batch.window must be shorter than expires_after")
        if self.then is not None and (
            isinstance(self.then.after, timedelta) and self.then.after >= self.expires_after
        ):
            raise ValueError("then.after must be shorter than expires_after")
        if self.then is not None and set(self.then.approvers) & set(self.approvers):
            raise ValueError("then.approvers must not repeat the rule's approvers")
        return self


class DenyRule(_RuleBase):
    """Matching proposals are refused; ``reason`` is told to the agent."""

    decision: Literal["deny"] = "deny"
    reason: str = Field(min_length=1)


Rule = AutoRule | AskRule | DenyRule


# --- decisions ------------------------------------------------------------------------------------


class Auto(Frozen):
    kind: Literal["auto"] = "auto"
    rule_id: str
    explanation: str  #: which rule matched and which conditions held, with the actual values


class Ask(Frozen):
    kind: Literal["ask"] = "ask"
    rule_id: str
    explanation: str
    approvers: tuple[str, ...]
    channel: str
    expires_after: timedelta
    remind_at: RemindAt | None = None  #: the rule's own; None: the [approvals] default
    quorum: int = DEFAULT_QUORUM  #: distinct approvals needed
    batch: BatchPolicy | None = None  #: the rule's batching window; None: shown at once
    then: BackupRoute | None = None  #: the rule's backup approvers; None: none


class Deny(Frozen):
    kind: Literal["deny"] = "deny"
    rule_id: str | None  #: None when no rule matched
    reason: str  #: for the agent to read


Decision = Annotated[Auto | Ask | Deny, Field(discriminator="kind")]


def agent_note(
    decision: Literal["auto", "ask", "deny"],
    rule_id: str | None,
    stored_note: str,
    *,
    standing: bool = False,
) -> str:
    """What the agent is told about the policy's decision: the rule, never its conditions.

    Approvers see the full explanation (``stored_note``: which conditions held, with their
    thresholds and the actual values); an agent shown the same could probe the table for the
    largest value that runs without asking. So an automatic approval and an ask name only the
    rule, and a deny gives the operator's ``reason`` (``stored_note`` for a deny), written for
    the agent to read.
    """
    if decision == "deny":
        return stored_note
    rule = f"policy rule {rule_id!r}" if rule_id is not None else "the policy"
    if decision == "ask":
        return f"asked by {rule}: a person has to approve it"
    if standing:
        return f"approved automatically under {rule} by a standing approval"
    return f"approved automatically by {rule}"


class RuleCheck(Frozen):
    """One line of :meth:`PolicyTable.explain`: how one rule fared against one proposal."""

    rule_id: str
    decision: Literal["auto", "ask", "deny"]
    matched: bool
    decides: bool  #: the first rule that matched: the one whose decision applies
    detail: str  #: the explanation when it matched, else the first thing that did not hold


# --- the table ------------------------------------------------------------------------------------


class PolicyTable:
    """Ordered rules; the first that matches decides, and no match means deny.

    Build one with :meth:`load`, which checks everything; the constructor trusts its rules.
    """

    def __init__(
        self, rules: Iterable[Rule], *, roles: Mapping[str, Collection[str]] | None = None
    ) -> None:
        self._rules = tuple(rules)
        self._roles = {name: frozenset(members) for name, members in (roles or {}).items()}
        seen: set[str] = set()
        for rule in self._rules:
            if rule.id in seen:
                raise PolicyError([f"policy rule {rule.id!r}: field 'id' is used more than once"])
            seen.add(rule.id)

    @classmethod
    def load(
        cls,
        rules: Sequence[object],
        *,
        registry: Registry,
        roles: Mapping[str, Collection[str]],
        agents: Collection[str] | None = None,
    ) -> PolicyTable:
        """Check rules given as plain data (as tomllib reads them) and build the table.

        ``roles`` maps each configured role to its members' Slack user ids. When ``agents`` is
        given, rules may only name those agents. Raises PolicyError listing every problem, one
        per line, each naming the rule (by id, or by position when it has none) and the field.
        """
        if not isinstance(rules, list | tuple):
            raise PolicyError([f"policy: expected a list of rules, got {as_toml(rules)}"])
        context = _Context(
            registry, frozenset(roles), None if agents is None else set(agents), members=roles
        )
        problems: list[str] = []
        loaded: list[Rule] = []
        first_position: dict[str, int] = {}
        for position, raw in enumerate(rules, start=1):
            if not isinstance(raw, Mapping):
                problems.append(
                    f"policy rule #{position}: expected a table of fields, got {as_toml(raw)}"
                )
                continue
            reader = _RuleReader(raw, position, context)
            rule = reader.read()
            problems += reader.problems
            if reader.id is not None:
                if reader.id in first_position:
                    problems.append(
                        f"{reader.label}: field 'id' is already used by rule "
                        f"#{first_position[reader.id]} (this is rule #{position}); "
                        "ids must be unique"
                    )
                first_position.setdefault(reader.id, position)
            if rule is not None:
                loaded.append(rule)
        # judged over the rules that read well (a rule that did not could only shadow more, so
        # each rule named here is unreachable whatever the others' problems), each id once: a
        # repeated id is its own problem, not one of order
        distinct = {rule.id: rule for rule in reversed(loaded)}
        problems += _unreachable([rule for rule in loaded if distinct[rule.id] is rule])
        if problems:
            raise PolicyError(problems)
        return cls(loaded, roles=roles)

    @property
    def rules(self) -> tuple[Rule, ...]:
        return self._rules

    @property
    def roles(self) -> Mapping[str, frozenset[str]]:
        """Each configured role and the Slack user ids that hold it."""
        return self._roles

    def roles_of(self, user_id: str) -> frozenset[str]:
        """The roles ``user_id`` holds, for :meth:`classify`'s ``requester_roles``."""
        return frozenset(role for role, members in self._roles.items() if user_id in members)

    def classify(
        self,
        *,
        operation: str,
        agent: str,
        arguments: Mapping[str, JsonValue],
        requester_roles: Collection[str],
    ) -> Decision:
        """The decision of the first rule that matches; Deny when none does. Never raises."""
        for rule in self._rules:
            matched, explanation = rule.evaluate(
                operation=operation,
                agent=agent,
                arguments=arguments,
                requester_roles=requester_roles,
            )
            if matched:
                return _decide(rule, explanation)
        return Deny(
            rule_id=None,
            reason=(
                f"no policy rule matched operation {operation!r} from agent {agent!r}; "
                "nothing runs unless a rule allows it"
            ),
        )

    def explain(
        self,
        *,
        operation: str,
        agent: str,
        arguments: Mapping[str, JsonValue],
        requester_roles: Collection[str],
    ) -> tuple[RuleCheck, ...]:
        """Every rule in order: whether it matched and why, or why not."""
        checks = []
        decided = False
        for rule in self._rules:
            matched, detail = rule.evaluate(
                operation=operation,
                agent=agent,
                arguments=arguments,
                requester_roles=requester_roles,
            )
            checks.append(
                RuleCheck(
                    rule_id=rule.id,
                    decision=rule.decision,
                    matched=matched,
                    decides=matched and not decided,
                    detail=detail,
                )
            )
            decided = decided or matched
        return tuple(checks)


def _unreachable(rules: Sequence[Rule]) -> list[str]:
    """Rules that can never decide: an earlier catch-all takes everything they could match.

    A catch-all is a rule with no agents, requester roles or conditions; it shadows every later
    rule for the same operation (or, when it is for every operation, all later rules).
    """
    problems = []
    for position, rule in enumerate(rules):
        for earlier in rules[:position]:
            catch_all = not (earlier.agents or earlier.requester_roles or earlier.when)
            covers = earlier.operation in (ANY_OPERATION, rule.operation)
            if catch_all and covers:
                problems.append(
                    f"policy rule {rule.id!r}: unreachable: rule {earlier.id!r} before it "
                    f"matches every {_scope(earlier.operation)} and decides first; move "
                    f"{rule.id!r} above it or remove it"
                )
                break
    return problems


def _scope(operation: str) -> str:
    return "proposal" if operation == ANY_OPERATION else f"{operation} proposal"


def _decide(rule: Rule, explanation: str) -> Decision:
    if isinstance(rule, AskRule):
        return Ask(
            rule_id=rule.id,
            explanation=explanation,
            approvers=rule.approvers,
            channel=rule.channel,
            expires_after=rule.expires_after,
            remind_at=rule.remind_at,
            quorum=rule.quorum,
            batch=rule.batch,
            then=rule.then,
        )
    if isinstance(rule, DenyRule):
        return Deny(rule_id=rule.id, reason=rule.reason)
    return Auto(rule_id=rule.id, explanation=explanation)


# --- loading --------------------------------------------------------------------------------------

_RULE_FIELDS: Final = (
    "id",
    "operation",
    "agents",
    "requester_roles",
    "when",
    "decision",
    "approvers",
    "channel",
    "expires_after",
    "allow_guests",
    "remind_at",
    "extend_by",
    "quorum",
    "standing",
    "batch",
    "then",
    "reason",
)
_ONLY_FOR: Final = {
    "approvers": "ask",
    "channel": "ask",
    "expires_after": "ask",
    "allow_guests": "ask",
    "remind_at": "ask",
    "extend_by": "ask",
    "quorum": "ask",
    "standing": "ask",
    "batch": "ask",
    "then": "ask",
    "reason": "deny",
}
_CONDITION_EXAMPLE: Final = '{ field = "amount_cents", lte = 5000 }'


@dataclass(frozen=True, slots=True)
class _Context:
    registry: Registry
    roles: frozenset[str]
    agents: set[str] | None
    members: Mapping[str, Collection[str]]  #: each role's members (user ids and groups)


class _RuleReader:
    """Reads one rule from plain data, recording every problem instead of stopping at the first."""

    def __init__(self, raw: Mapping[Any, Any], position: int, context: _Context) -> None:
        self._raw = raw
        self._context = context
        self.problems: list[str] = []
        given = raw.get("id")
        self.id = given if isinstance(given, str) and given.strip() else None
        self.label = f"policy rule {given!r}" if self.id else f"policy rule #{position}"

    def _problem(self, message: str) -> None:
        self.problems.append(f"{self.label}: {message}")

    def read(self) -> Rule | None:
        for key in self._raw:
            if key not in _RULE_FIELDS:
                self._problem(
                    f"field {key!r} is not a rule field{_did_you_mean(key, _RULE_FIELDS)} "
                    f"(rule fields: {', '.join(_RULE_FIELDS)})"
                )
        rule_id = self._text("id", "every rule needs a unique id")
        operation = self._operation()
        agents = self._names("agents", "agent", self._context.agents)
        requester_roles = self._names("requester_roles", "role", self._context.roles)
        when = self._conditions(operation)
        decision = self._decision()
        for key, only_for in _ONLY_FOR.items():
            if key in self._raw and decision is not None and decision != only_for:
                self._problem(
                    f"field {key!r} only applies to decision {only_for!r}, "
                    f"but this rule's decision is {decision!r}"
                )
        approvers: tuple[str, ...] = ()
        channel = reason = None
        expires_after = None
        allow_guests = False
        remind_at: RemindAt | None = None
        extend_by: timedelta | None = None
        quorum = DEFAULT_QUORUM
        standing: StandingPolicy | None = None
        batch: BatchPolicy | None = None
        then: BackupRoute | None = None
        if decision == "ask":
            approvers = self._names("approvers", "role", self._context.roles, required=True)
            channel = self._channel()
            expires_after = self._expiry()
            allow_guests = self._flag("allow_guests")
            remind_at = self._remind_at()
            extend_by = self._extend_by(expires_after)
            quorum = self._quorum(approvers)
            standing = self._standing(operation)
            batch = self._batch(expires_after, extend_by)
            then = self._then(approvers, expires_after)
        elif decision == "auto" and operation is not None:
            given = self._raw.get("when")  # counted as given: a bad condition is still one
            conditions = len(given) if isinstance(given, list | tuple) else 0
            for problem in auto_rule_problems(
                operation=operation, conditions=conditions, registry=self._context.registry
            ):
                self._problem(problem)
        elif decision == "deny":
            reason = self._text("reason", "a sentence telling the agent why it is refused")
        if self.problems or rule_id is None or operation is None:
            return None
        if decision == "ask" and channel is not None and expires_after is not None:
            return AskRule(
                id=rule_id,
                operation=operation,
                agents=agents,
                requester_roles=requester_roles,
                when=when,
                approvers=approvers,
                channel=channel,
                expires_after=expires_after,
                allow_guests=allow_guests,
                remind_at=remind_at,
                extend_by=extend_by,
                quorum=quorum,
                standing=standing,
                batch=batch,
                then=then,
            )
        if decision == "deny" and reason is not None:
            return DenyRule(
                id=rule_id,
                operation=operation,
                agents=agents,
                requester_roles=requester_roles,
                when=when,
                reason=reason,
            )
        return AutoRule(
            id=rule_id,
            operation=operation,
            agents=agents,
            requester_roles=requester_roles,
            when=when,
        )

    def _standing(self, operation: str | None) -> StandingPolicy | None:
        if "standing" not in self._raw:
            return None
        registry = self._context.registry
        types = None
        if operation is not None and operation in registry:
            types = registry.get(operation).argument_types()
        standing, problems = read_standing(
            self._raw["standing"],
            operation=operation,
            argument_types=types,
            roles=self._context.roles,
            quorum=self._raw.get("quorum"),
        )
        for problem in problems:
            self._problem(problem)
        return standing

    def _batch(
        self, expires_after: timedelta | None, extend_by: timedelta | None
    ) -> BatchPolicy | None:
        if "batch" not in self._raw:
            return None
        batch, problems = read_batch(self._raw["batch"], expires_after=expires_after)
        for problem in problems:
            self._problem(problem)
        if batch is None or expires_after is None:
            return batch
        lives = batch.window + expires_after + (extend_by or timedelta(0))
        if lives > MAX_EXPIRY:
            self._problem(
                f"field 'batch.window' is {format_duration(batch.window)!r}; a proposal may "
                f"wait that long before its {format_duration(expires_after)} to decide "
                f"(field 'expires_after'{' plus extend_by' if extend_by else ''}) starts, so "
                f"it would live {format_duration(lives)}, but at most "
                f"{format_duration(MAX_EXPIRY)} is allowed"
            )
            return None
        return batch

    def _then(
        self, approvers: tuple[str, ...], expires_after: timedelta | None
    ) -> BackupRoute | None:
        if "then" not in self._raw:
            return None
        route, problems = read_then(
            self._raw["then"],
            approvers=approvers,
            roles=self._context.roles,
            expires_after=expires_after,
        )
        for problem in problems:
            self._problem(problem)
        return route

    def _quorum(self, approvers: tuple[str, ...]) -> int:
        quorum, problem = read_quorum(self._raw.get("quorum"))
        given = self._raw.get("approvers")
        named = given if isinstance(given, list | tuple) else ()
        # a role that is not configured is a problem of its own: not counted again as too few
        known = bool(approvers) and all(name in self._context.roles for name in named)
        if problem is None and known:
            problem = quorum_problem(quorum, approvers, self._context.members)
        if problem is not None:
            self._problem(problem)
        return quorum

    def _flag(self, key: str) -> bool:
        value = self._raw.get(key, False)
        if not isinstance(value, bool):
            self._problem(f"field {key!r}: expected true or false, got {as_toml(value)}")
            return False
        return value

    def _text(self, key: str, meaning: str) -> str | None:
        value = self._raw.get(key)
        if value is None:
            self._problem(f"field {key!r} is missing ({meaning})")
            return None
        if not isinstance(value, str) or not value.strip():
            self._problem(
                f"field {key!r}: expected text that is not empty ({meaning}), got {as_toml(value)}"
            )
            return None
        return value

    def _operation(self) -> str | None:
        known = self._context.registry.names()
        operation = self._text("operation", "an operation name, or '*' for any")
        if operation is not None and operation != ANY_OPERATION and operation not in known:
            self._problem(
                f"field 'operation': unknown operation {operation!r} "
                f"(known: {', '.join(sorted(known)) or 'none'}; or '*' for any)"
            )
        return operation

    def _decision(self) -> str | None:
        value = self._raw.get("decision")
        if value is None:
            self._problem("field 'decision' is missing (expected 'auto', 'ask' or 'deny')")
            return None
        if not isinstance(value, str) or value not in ("auto", "ask", "deny"):
            self._problem(
                f"field 'decision': expected 'auto', 'ask' or 'deny', got {as_toml(value)}"
            )
            return None
        return value

    def _names(
        self, key: str, noun: str, known: Collection[str] | None, *, required: bool = False
    ) -> tuple[str, ...]:
        value = self._raw.get(key)
        if value is None:
            if required:
                self._problem(f"field {key!r} is required for decision 'ask' (a list of {noun}s)")
            return ()
        if not isinstance(value, list | tuple):
            self._problem(f"field {key!r}: expected a list of {noun} names, got {as_toml(value)}")
            return ()
        if required and not value:
            self._problem(f"field {key!r} must name at least one {noun}")
        names = []
        for item in value:
            if not isinstance(item, str) or not item.strip():
                self._problem(
                    f"field {key!r}: expected {noun} names in quotes, got {as_toml(item)}"
                )
            elif known is not None and item not in known:
                listed = ", ".join(sorted(known)) or "none"
                self._problem(
                    f"field {key!r}: unknown {noun} {item!r} (configured {noun}s: {listed})"
                )
            else:
                names.append(item)
        return tuple(names)

    def _channel(self) -> str | None:
        channel = self._text("channel", "the Slack channel id to ask in, such as 'C0123ABCD'")
        if channel is None:
            return None
        if channel.startswith("#") or any(char.isspace() for char in channel):
            self._problem(
                f"field 'channel' is {channel!r}, which is not a channel id; give the id "
                "(such as 'C0123ABCD', shown in the channel's details in Slack)"
            )
            return None
        return channel

    def _expiry(self) -> timedelta | None:
        value = self._raw.get("expires_after")
        if value is None:
            return DEFAULT_EXPIRY
        try:
            duration = parse_duration(value)
        except ValueError as error:
            self._problem(f"field 'expires_after': {error}")
            return None
        if duration <= timedelta(0):
            self._problem(f"field 'expires_after' is {value!r}; it must be longer than zero")
            return None
        if duration > MAX_EXPIRY:
            self._problem(
                f"field 'expires_after' is {value!r}; "
                f"at most {format_duration(MAX_EXPIRY)} is allowed"
            )
            return None
        return duration

    def _remind_at(self) -> RemindAt | None:
        if "remind_at" not in self._raw:
            return None
        try:
            return parse_remind_at(self._raw["remind_at"])
        except ValueError as error:
            self._problem(f"field 'remind_at': {error}")
            return None

    def _extend_by(self, expires_after: timedelta | None) -> timedelta | None:
        """The one extension an approver may grant; the proposal's whole life (expires_after
        plus extend_by) stays within MAX_EXPIRY."""
        value = self._raw.get("extend_by")
        if value is None:
            return None
        try:
            duration = parse_duration(value)
        except ValueError as error:
            self._problem(f"field 'extend_by': {error}")
            return None
        if duration <= timedelta(0):
            self._problem(f"field 'extend_by' is {value!r}; it must be longer than zero")
            return None
        if expires_after is not None and expires_after + duration > MAX_EXPIRY:
            self._problem(
                f"field 'extend_by' is {value!r}; with expires_after "
                f"{format_duration(expires_after)!r} an extended proposal would live "
                f"{format_duration(expires_after + duration)}, but at most "
                f"{format_duration(MAX_EXPIRY)} is allowed (expires_after + extend_by)"
            )
            return None
        return duration

    def _conditions(self, operation: str | None) -> tuple[Condition, ...]:
        value = self._raw.get("when")
        if value is None:
            return ()
        if not isinstance(value, list | tuple):
            self._problem(
                f"field 'when': expected a list of conditions such as [{_CONDITION_EXAMPLE}], "
                f"got {as_toml(value)}"
            )
            return ()
        if value and operation == ANY_OPERATION:
            self._problem(
                "field 'when': a rule for every operation ('*') cannot have conditions, "
                "because argument names belong to one operation; write one rule per operation"
            )
            return ()
        registry = self._context.registry
        types = None
        formats: Formats = {}
        if operation is not None and operation in registry:
            types = registry.get(operation).argument_types()
            formats = registry.get(operation).field_formats()
        conditions = []
        for index, item in enumerate(value, start=1):
            condition = self._condition(index, item, operation, types, formats)
            if condition is not None:
                conditions.append(condition)
        return tuple(conditions)

    def _condition(
        self,
        index: int,
        raw: object,
        operation: str | None,
        types: Mapping[str, ArgType] | None,
        formats: Formats,
    ) -> Condition | None:
        where = f"condition #{index} in 'when'"
        if not isinstance(raw, Mapping):
            self._problem(
                f"{where}: expected a table such as {_CONDITION_EXAMPLE}, got {as_toml(raw)}"
            )
            return None
        allowed = ("field", *COMPARISONS)
        for key in raw:
            if key not in allowed:
                self._problem(
                    f"{where} has unknown key {key!r}{_did_you_mean(key, allowed)} "
                    f"(expected 'field' and one of {', '.join(COMPARISONS)})"
                )
        name = raw.get("field")
        if not isinstance(name, str) or not name:
            self._problem(f"{where} needs 'field', the argument to compare, got {as_toml(name)}")
            name = None
        subject = where if name is None else f"field {name!r}"
        given = [key for key in COMPARISONS if key in raw]
        if len(given) != 1:
            self._problem(
                f"{subject}: a condition needs exactly one comparison among "
                f"{', '.join(COMPARISONS)}; it has {', '.join(given) or 'none'}"
            )
            return None
        if name is None or types is None:
            return None  # an unknown operation is reported once, by _operation
        if name not in types:
            self._problem(
                f"field {name!r} is not an argument of operation {operation!r} "
                f"(it has: {', '.join(sorted(types)) or 'none'})"
            )
            return None
        comparison = given[0]
        value = raw[comparison]
        shown = formats.get(name)
        currency = None
        if shown is not None and shown.kind == "money" and comparison != "in":
            money = self._money(name, operation, shown, value)
            if money is None:
                return None
            value, currency = money
        problems = _value_problems(types[name], comparison, value)
        for problem in problems:
            self._problem(f"field {name!r}: {problem}")
        if problems:
            return None
        if comparison == "in":
            value = tuple(value)
        return Condition(
            field=name, comparison=comparison, value=value, format=shown, currency=currency
        )

    def _money(
        self, name: str, operation: str | None, shown: FieldFormat, value: object
    ) -> tuple[object, str | None] | None:
        """A money threshold as the field holds it, and the currency it names: ``"2000.00
        USD"`` is 200000 in USD; a bare number is taken as held (minor units), but only where
        the amounts cannot be in several currencies."""
        if isinstance(value, str):
            try:
                amount, currency = parse_money(value, shown)
            except ValueError as error:
                self._problem(f"field {name!r}: {error}")
                return None
            if shown.currency is not None and currency != shown.currency:
                self._problem(
                    f"field {name!r}: {value!r} is in {currency}, but {shown.label} is always "
                    f"in {shown.currency}"
                )
                return None
            if shown.currencies and currency not in shown.currencies:
                self._problem(
                    f"field {name!r}: {value!r} is in {currency}, but operation {operation!r} "
                    f"has amounts in {', '.join(shown.currencies)} only"
                )
                return None
            return amount, (currency if shown.currency is None else None)
        if shown.several_currencies and _is_number(value):
            self._problem(
                f"field {name!r}: {value!r} names no currency, but operation {operation!r} has "
                f"amounts in {', '.join(shown.currencies)}; write the threshold with its currency, "
                f"such as '{_major(value, shown)} {shown.currencies[0]}' (the condition then "
                "holds only for amounts in that currency)"
            )
            return None
        return value, None


def _value_problems(arg_type: ArgType, comparison: Comparison, value: object) -> list[str]:
    """What is wrong with comparing an argument of ``arg_type`` with ``value``."""
    if comparison in _ORDERINGS:
        if arg_type not in ("integer", "number"):
            return [
                f"{comparison!r} compares numbers, but it is a {arg_type} argument; "
                "use 'eq' or 'in'"
            ]
        values: Sequence[object] = [value]
    elif comparison == "in":
        if not isinstance(value, list | tuple) or not value:
            return [f"'in' needs a non-empty list of values, got {as_toml(value)}"]
        values = value
    else:
        values = [value]
    return [
        f"{comparison!r} needs {_EXPECTED[arg_type]} (it is {_article(arg_type)} argument), "
        f"got {as_toml(item)}"
        for item in values
        if not _fits(arg_type, item)
    ]


def _fits(arg_type: ArgType, value: object) -> bool:
    if arg_type == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if arg_type == "number":
        return (
            isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
        )
    if arg_type == "string":
        return isinstance(value, str)
    return isinstance(value, bool)


def _article(arg_type: ArgType) -> str:
    return f"an {arg_type}" if arg_type == "integer" else f"a {arg_type}"


def _did_you_mean(word: object, choices: Sequence[str]) -> str:
    close = get_close_matches(str(word), choices, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


# --- values ---------------------------------------------------------------------------------------


def _major(value: object, shown: FieldFormat) -> str:
    """A threshold held in minor units, written in major ones for an example (``2000.00``)."""
    if shown.minor_units and isinstance(value, int):
        return f"{value / 100:.2f}"
    return str(value)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _same(actual: object, expected: object) -> bool:
    """Equality that never confuses true with 1 or a string with a number."""
    if isinstance(actual, bool) or isinstance(expected, bool):
        return isinstance(actual, bool) and isinstance(expected, bool) and actual == expected
    if _is_number(actual) and _is_number(expected):
        return actual == expected
    return isinstance(actual, str) and isinstance(expected, str) and actual == expected


def _show(value: object) -> str:
    """A value as a sentence quotes it: strings quoted, booleans as TOML writes them."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_show(item) for item in value) + "]"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
