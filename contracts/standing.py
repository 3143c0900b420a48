"""Standing rules: "approve, and allow similar calls for a while", as an ``ask`` rule permits.

An ``ask`` rule may carry ``standing = { max = "7d", admins = ["finance-admins"], ceiling =
"amount_cents" }``. A person holding one of ``admins`` may then approve one of its proposals
*and* grant a standing rule: for up to ``max``, later calls of the same operation by the same
agent that the same rule matches, whose ``ceiling`` argument is at most the approved call's, are
approved automatically. The ceiling is required: a standing rule always has a numeric bound, the
approved call's own value, so "similar" never means "anything this rule matches".

"Similar" means *the same call but for the ceiling*: a grant binds every other argument to the
approved call's value (the same payment, the same customer, the same segment). The rule may name
more arguments that may differ (``vary = ["note"]``); nothing else may. And a grant covers at
most ``max_uses`` calls (default :data:`DEFAULT_MAX_USES`, at most :data:`MAX_USES`), counted by
the store in the transaction that records each covered call, so concurrent calls never exceed it.

This module reads the ``standing`` table of a rule (:func:`read_standing`), says whether a granted
rule covers a call (:func:`covers`, of a :class:`CallToCover`), and decides which automatic
approvals are sampled for a person to review after the fact (:func:`sampled`). Pure functions;
no I/O.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from difflib import get_close_matches
from typing import Final

from pydantic import Field, JsonValue

from contracts.base import ArgType
from contracts.durations import format_duration, parse_duration
from contracts.frozen import Frozen
from contracts.toml_text import as_toml

__all__ = [
    "DEFAULT_MAX_USES",
    "DURATION_CHOICES",
    "MAX_STANDING",
    "MAX_USES",
    "STANDING_KEYS",
    "CallToCover",
    "Grant",
    "StandingPolicy",
    "bound_arguments",
    "covers",
    "duration_choices",
    "read_standing",
    "sampled",
    "uses_choices",
]

#: The longest a standing rule may last, whatever a rule allows.
MAX_STANDING: Final = timedelta(days=30)
#: The durations an admin may pick from (those up to the rule's ``max``, and ``max`` itself).
DURATION_CHOICES: Final = tuple(
    timedelta(hours=hours) for hours in (1, 4, 8, 24, 72, 168, 336, 720)
)
#: How many calls a standing rule covers when its policy rule does not say (``max_uses``).
DEFAULT_MAX_USES: Final = 10
#: The most calls any standing rule may cover, whatever a rule says.
MAX_USES: Final = 1000
STANDING_KEYS: Final = ("max", "admins", "ceiling", "max_uses", "vary")
_EXAMPLE: Final = '{ max = "7d", admins = ["finance-admins"], ceiling = "amount_cents" }'


class StandingPolicy(Frozen):
    """What an ``ask`` rule allows: who may grant standing rules, how long, bounded by what."""

    max: timedelta = Field(gt=timedelta(0), le=MAX_STANDING)
    admins: tuple[str, ...] = Field(min_length=1)  #: roles whose members may grant one
    ceiling: str = Field(min_length=1)  #: the numeric argument bounded by the approved value
    #: how many calls one standing rule covers at most
    max_uses: int = Field(default=DEFAULT_MAX_USES, ge=1, le=MAX_USES)
    #: arguments besides the ceiling that may differ from the approved call's
    vary: tuple[str, ...] = ()

    @property
    def varying(self) -> tuple[str, ...]:
        """Every argument a covered call may change: the ceiling, then ``vary``."""
        return (self.ceiling, *(name for name in self.vary if name != self.ceiling))


class Grant(Frozen):
    """A standing rule as granted: what it covers, how often and until when (stored by the
    store, never changed)."""

    operation: str
    agent: str
    rule_id: str
    ceiling_field: str
    ceiling: int | float
    #: the approved call's arguments but the varying ones: a covered call has exactly these
    arguments: dict[str, JsonValue] = Field(default_factory=dict)
    #: the arguments a covered call may change (the ceiling field first)
    varying: tuple[str, ...] = ()
    #: how many calls it covers at most
    max_uses: int = Field(default=DEFAULT_MAX_USES, ge=1, le=MAX_USES)
    created_by: str
    created_from: str  #: the proposal whose approval granted it
    created_at: datetime
    expires_at: datetime


def duration_choices(maximum: timedelta) -> tuple[timedelta, ...]:
    """The durations offered for a rule whose ``max`` is ``maximum``, shortest first."""
    shorter = [choice for choice in DURATION_CHOICES if choice < maximum]
    return (*shorter, maximum)


#: The numbers of uses an admin may pick from (those below the rule's ``max_uses``, and it).
USES_CHOICES: Final = (1, 3, 5, 10, 25, 50, 100, 250, 500)


def uses_choices(maximum: int) -> tuple[int, ...]:
    """The numbers of uses offered for a rule whose ``max_uses`` is ``maximum``, largest last."""
    return (*(choice for choice in USES_CHOICES if choice < maximum), maximum)


def bound_arguments(
    arguments: Mapping[str, JsonValue], varying: Collection[str]
) -> dict[str, JsonValue]:
    """The arguments a grant binds: all of them but the ``varying`` ones."""
    return {name: value for name, value in arguments.items() if name not in varying}


@dataclass(frozen=True, slots=True)
class CallToCover:
    """A call a standing rule may cover: what it asks for, from whom and when."""

    operation: str
    agent: str
    #: the policy rule that asks for it
    rule_id: str
    arguments: Mapping[str, JsonValue]
    requested_by: str
    now: datetime
    #: an edit's editor and everyone who edited a version it replaced: none of them may decide
    #: it, so no standing rule one of them granted covers it
    editors: tuple[str, ...] = ()


def covers(grant: Grant, call: CallToCover) -> bool:
    """Whether ``grant`` (unrevoked, with uses left) covers ``call``: same operation, agent and
    rule, unexpired, not requested nor edited by the granter, its ceiling argument a number at
    most the ceiling, and every other argument that may not vary the approved call's, none
    missing and none added (compared as JSON text: ``1`` is not ``1.0`` nor ``true``)."""
    value = call.arguments.get(grant.ceiling_field)
    varying = {grant.ceiling_field, *grant.varying}
    return (
        grant.operation == call.operation
        and grant.agent == call.agent
        and grant.rule_id == call.rule_id
        and call.requested_by != grant.created_by
        and grant.created_by not in call.editors
        and call.now < grant.expires_at
        and _is_number(value)
        and value <= grant.ceiling  # type: ignore[operator]
        and _same(bound_arguments(call.arguments, varying), grant.arguments)
    )


def _same(arguments: Mapping[str, JsonValue], bound: Mapping[str, JsonValue]) -> bool:
    """The same names, each with the same JSON text: nested objects with their keys in the same
    order, as the database compares them (so Python never covers what SQLite's trigger would
    refuse)."""
    return arguments.keys() == bound.keys() and all(
        _text(arguments[name]) == _text(bound[name]) for name in bound
    )


def _text(value: JsonValue) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def sampled(proposal_id: str, rate: float) -> bool:
    """Whether the automatic approval of ``proposal_id`` is posted for review at ``rate``.

    Decided by the id alone (SHA-256 to a number in [0, 1)), so the same proposal is always
    sampled or never, on every instance, and tests are stable.
    """
    if rate <= 0:
        return False
    digest = hashlib.sha256(proposal_id.encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < rate


def read_standing(
    raw: object,
    *,
    operation: str | None,
    argument_types: Mapping[str, ArgType] | None,
    roles: Collection[str],
    quorum: object,
) -> tuple[StandingPolicy | None, list[str]]:
    """The ``standing`` table of a rule, and every problem with it (each naming the field).

    ``argument_types`` are the rule's operation's (None when the operation is unknown, which is
    reported elsewhere); ``quorum`` is the rule's raw quorum, if any: a standing rule comes with
    one approval, so a rule needing more cannot allow one.
    """
    if not isinstance(raw, Mapping):
        return None, [f"field 'standing': expected a table such as {_EXAMPLE}, got {as_toml(raw)}"]
    problems = [
        f"field 'standing': unknown key {key!r}{_did_you_mean(key)} "
        f"(expected {', '.join(STANDING_KEYS)})"
        for key in raw
        if key not in STANDING_KEYS
    ]
    maximum = _max(raw.get("max"), problems)
    admins = _admins(raw.get("admins"), roles, problems)
    ceiling = _ceiling(raw.get("ceiling"), operation, argument_types, problems)
    max_uses = _max_uses(raw.get("max_uses", DEFAULT_MAX_USES), problems)
    vary = _vary(raw.get("vary", []), ceiling, operation, argument_types, problems)
    if isinstance(quorum, int) and not isinstance(quorum, bool) and quorum > 1:
        problems.append(
            f"field 'standing': this rule needs {quorum} approvals (field 'quorum'), but a "
            "standing rule is granted with one; remove 'standing' or set quorum to 1"
        )
    if problems or maximum is None or ceiling is None:
        return None, problems
    return (
        StandingPolicy(max=maximum, admins=admins, ceiling=ceiling, max_uses=max_uses, vary=vary),
        [],
    )


def _max_uses(value: object, problems: list[str]) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_USES:
        problems.append(
            "field 'standing.max_uses': expected a whole number of calls from 1 to "
            f"{MAX_USES} (how many calls one standing rule may approve), got {as_toml(value)}"
        )
        return DEFAULT_MAX_USES
    return value


def _vary(
    value: object,
    ceiling: str | None,
    operation: str | None,
    types: Mapping[str, ArgType] | None,
    problems: list[str],
) -> tuple[str, ...]:
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        problems.append(
            "field 'standing.vary': expected a list of the argument names (besides the ceiling) "
            f'that a covered call may change, such as ["note"], got {as_toml(value)}'
        )
        return ()
    names = tuple(dict.fromkeys(name for name in value if name != ceiling))
    unknown = [name for name in names if types is not None and name not in types]
    if unknown:
        problems.append(
            f"field 'standing.vary': {unknown!r} are not arguments of operation {operation!r} "
            f"(it has: {', '.join(sorted(types or ())) or 'none'})"
        )
        return ()
    return names


def _max(value: object, problems: list[str]) -> timedelta | None:
    if value is None:
        problems.append(
            "field 'standing.max' is missing (the longest a standing rule may last, such as "
            f"'7d'; at most {format_duration(MAX_STANDING)})"
        )
        return None
    try:
        duration = parse_duration(value)  # type: ignore[arg-type]
    except ValueError as error:
        problems.append(f"field 'standing.max': {error}")
        return None
    if duration <= timedelta(0) or duration > MAX_STANDING:
        problems.append(
            f"field 'standing.max' is {value!r}; it must be longer than zero and at most "
            f"{format_duration(MAX_STANDING)}"
        )
        return None
    return duration


def _admins(value: object, roles: Collection[str], problems: list[str]) -> tuple[str, ...]:
    if not isinstance(value, list | tuple) or not value:
        problems.append(
            "field 'standing.admins': expected a list of at least one role (whose members may "
            f"grant standing rules), got {as_toml(value)}"
        )
        return ()
    names = []
    for item in value:
        if not isinstance(item, str) or item not in roles:
            listed = ", ".join(sorted(roles)) or "none"
            problems.append(
                f"field 'standing.admins': unknown role {as_toml(item)} "
                f"(configured roles: {listed})"
            )
        else:
            names.append(item)
    return tuple(names)


def _ceiling(
    value: object,
    operation: str | None,
    types: Mapping[str, ArgType] | None,
    problems: list[str],
) -> str | None:
    if not isinstance(value, str) or not value:
        problems.append(
            "field 'standing.ceiling': expected the name of the operation's numeric argument that "
            f"a standing rule bounds (such as 'amount_cents'), got {as_toml(value)}"
        )
        return None
    if operation == "*":
        problems.append(
            "field 'standing': a rule for every operation ('*') cannot allow standing rules, "
            "because the ceiling names one operation's argument; write one rule per operation"
        )
        return None
    if types is None:
        return value  # the unknown operation is reported once, with the rule's 'operation'
    if value not in types:
        problems.append(
            f"field 'standing.ceiling': {value!r} is not an argument of operation {operation!r} "
            f"(it has: {', '.join(sorted(types)) or 'none'})"
        )
        return None
    if types[value] not in ("integer", "number"):
        numeric = sorted(name for name, kind in types.items() if kind in ("integer", "number"))
        problems.append(
            f"field 'standing.ceiling': {value!r} is a {types[value]} argument of operation "
            f"{operation!r}; the ceiling must be an integer or number argument "
            f"(numeric ones: {', '.join(numeric) or 'none'})"
        )
        return None
    return value


def _did_you_mean(word: object) -> str:
    close = get_close_matches(str(word), STANDING_KEYS, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _is_number(value: object) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and (not isinstance(value, float) or math.isfinite(value))
    )
