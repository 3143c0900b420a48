"""The narrow interface store verbs are written over, once for both backends.

A store verb (create a delegation, approve a proposal, ...) is written once, as code that opens
a transaction and runs *named* queries in it with *named* parameters::

    async with self._backend.transaction(write=True) as tx:
        row = await tx.one("revoke_delegation", id=delegation_id, actor=actor, now=now)
        await tx.append_audit(now, delegation_id, actor, "delegation_revoked", detail)

What really differs between SQLite and PostgreSQL lives behind that interface, in each backend:

- the SQL itself, as named blocks beside the verbs that run them, in each table family's
  ``sql/`` folder (``store/audit/sql/``, ...): standard SQL both run alike once in
  ``sql/common/*.sql``, and what differs in ``sql/<dialect>/*.sql`` with the same names in both
  (``tests/store/test_named_queries.py`` fails when a name exists in one and not the other, or
  in common and a dialect too); what belongs to no family is in ``store/sql/*/queries/*.sql``;
- how a value becomes a parameter (:meth:`Tx.param`: SQLite stores times as fixed-width UTC text
  and arrays as JSON text, PostgreSQL as ``timestamptz`` and ``text[]``);
- the audit head (SQLite follows it in memory under its single writer and seals each entry as it
  appends it; PostgreSQL appends entries unsealed, for its sealer),
  the outbox rows a status change enqueues, ``SKIP LOCKED`` and change notifications, and the
  translation of driver errors (at the edge of each backend's ``transaction``).

A row read back is a mapping by column name; :func:`store.rows.read_time` and friends read its
values whichever backend wrote them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import JsonValue

__all__ = [
    "Array",
    "Connector",
    "Dialect",
    "Query",
    "Row",
    "Tx",
    "dialect_query_names",
    "load_queries",
    "query_files",
]

Dialect = Literal["sqlite", "postgres"]


class Row(Protocol):
    """A row as the driver returns it (sqlite3.Row or asyncpg.Record): read by column name."""

    def __getitem__(self, key: str, /) -> Any: ...


#: The folder holding store/sql/ and the table families' packages, each with its sql/ folder.
QUERIES = Path(__file__).parent

#: ``-- name: some_query`` opens a named block; the block runs to the next one.
_NAME = re.compile(r"^--\s*name:\s*([a-z_][a-z0-9_]*)\s*$", re.MULTILINE)
#: ``:param`` (not ``::cast``, not inside a word): a named parameter.
_PARAM = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")


class Array(tuple[str, ...]):
    """A list of text as one parameter: ``text[]`` on PostgreSQL, JSON text on SQLite (read it
    with ``json_each``)."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Query:
    """One named block of SQL, ready for its dialect's driver."""

    name: str
    #: the text the driver runs (``:name`` parameters on SQLite, ``$1``... on PostgreSQL)
    text: str
    #: the parameter names in the order of ``$1``, ``$2``... (PostgreSQL); every name (SQLite)
    params: tuple[str, ...]
    #: the same names as a set, made once for the check of each call's parameters
    names: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", frozenset(self.params))

    def positional(self, values: Mapping[str, Any]) -> list[Any]:
        """``values`` in ``$n`` order; a missing or unexpected name is a programming error."""
        self._check(values)
        return [values[name] for name in self.params]

    def named(self, values: Mapping[str, Any]) -> Mapping[str, Any]:
        self._check(values)
        return values

    def _check(self, values: Mapping[str, Any]) -> None:
        if len(values) == len(self.params) and values.keys() >= self.names:
            return  # each name once (the usual case: one comparison, no sets built)
        missing = set(self.params) - set(values)
        extra = set(values) - set(self.params)
        if missing or extra:
            raise TypeError(
                f"query {self.name!r}: missing parameters {sorted(missing)}, "
                f"unexpected parameters {sorted(extra)}"
            )


def parse_queries(text: str, *, dialect: Dialect, source: str = "<text>") -> dict[str, Query]:
    """The named blocks of one ``.sql`` file (comments inside a block are kept)."""
    marks = list(_NAME.finditer(text))
    head = text[: marks[0].start()] if marks else text
    if any(line.strip() and not line.lstrip().startswith("--") for line in head.splitlines()):
        raise ValueError(f"{source}: SQL before the first '-- name:' block")
    found: dict[str, Query] = {}
    for mark, following in zip(marks, [*marks[1:], None], strict=True):
        name = mark.group(1)
        body = text[mark.end() : following.start() if following else len(text)].strip()
        if not body:
            raise ValueError(f"{source}: query {name!r} is empty")
        if name in found:
            raise ValueError(f"{source}: query {name!r} is named twice")
        found[name] = _compiled(name, body, dialect)
    return found


def _compiled(name: str, body: str, dialect: Dialect) -> Query:
    names = list(dict.fromkeys(match.group(1) for match in _PARAM.finditer(_code(body))))
    if dialect == "sqlite":
        return Query(name, body, tuple(names))
    order = {param: index for index, param in enumerate(names, start=1)}
    lines = []
    for line in body.splitlines():
        code, dash, comment = line.partition("--")
        code = _PARAM.sub(lambda match: f"${order[match.group(1)]}", code)
        lines.append(code + dash + comment)
    return Query(name, "\n".join(lines), tuple(names))


def _code(body: str) -> str:
    """``body`` without its ``--`` comments (a colon in a comment is not a parameter)."""
    return "\n".join(line.partition("--")[0] for line in body.splitlines())


def query_files(folder: str) -> list[Path]:
    """The ``.sql`` files of named queries in ``folder`` (``common`` or a dialect): those of
    every table family (``store/<family>/sql/<folder>/*.sql``) and those of none
    (``store/sql/<folder>/queries/*.sql``). Migrations are not among them."""
    return sorted(QUERIES.glob(f"*/sql/{folder}/*.sql")) + sorted(
        QUERIES.glob(f"sql/{folder}/queries/*.sql")
    )


@cache
def load_queries(dialect: Dialect) -> Mapping[str, Query]:
    """Every named query of ``dialect``: the standard SQL both backends run alike, from the
    ``common`` folders (:func:`query_files`), and the SQL written for ``dialect`` alone, from
    its own. A name is defined once: in common, or in every dialect's folder
    (tests/store/test_named_queries.py holds both to that)."""
    found: dict[str, Query] = {}
    for folder in ("common", dialect):
        for path in query_files(folder):
            queries = parse_queries(path.read_text(), dialect=dialect, source=str(path))
            for name, query in queries.items():
                if name in found:
                    raise ValueError(f"{path}: query {name!r} is also named in another file")
                found[name] = query
    return found


def dialect_query_names(dialect: Dialect) -> frozenset[str]:
    """The names ``dialect`` defines for itself (not in common)."""
    names: set[str] = set()
    for path in query_files(dialect):
        names |= set(parse_queries(path.read_text(), dialect=dialect, source=str(path)))
    return frozenset(names)


class Tx(Protocol):
    """One transaction on one backend (or, for a read, one connection).

    ``one``, ``all`` and ``execute`` run a named query with named parameters; each value goes
    through :meth:`param` (times, arrays); ``execute_many`` runs one query once per set of
    parameters, in order. ``append_audit`` adds the next entry of the chain in
    this transaction. What a family needs beyond these
    (a proposal read with its approvals, the outbox rows of a status) is its own function over a
    Tx (store/proposals/rows.py, store/proposals/outbox.py).
    """

    dialect: Dialect

    async def one(self, query: str, /, **params: Any) -> Row | None: ...

    async def all(self, query: str, /, **params: Any) -> list[Row]: ...

    async def execute(self, query: str, /, **params: Any) -> None: ...

    async def execute_many(self, query: str, params: Sequence[Mapping[str, Any]], /) -> None: ...

    async def append_audit(
        self,
        at: datetime,
        proposal_id: str | None,
        actor: str,
        event: str,
        detail: Mapping[str, JsonValue],
    ) -> int: ...

    async def append_audit_entries(
        self, at: datetime, entries: Sequence[tuple[str, str, str, Mapping[str, JsonValue]]]
    ) -> None:
        """Append ``entries`` (proposal id, actor, event, detail), at ``at``, in order, in this
        transaction: one by one where each is sealed as it is appended (SQLite), in one
        statement where they are appended unsealed (PostgreSQL)."""
        ...

    def appended_unsealed(self, count: int) -> None:
        """A named query of this transaction appended ``count`` audit entries unsealed (in the
        statement of the change they record; only where ``Backend.appends_unsealed``): the
        sealer seals them once they commit."""
        ...


class Connector(Protocol):
    """What a backend gives the verbs written over it: transactions."""

    def tx(self, *, write: bool) -> AbstractAsyncContextManager[Tx]:
        """A transaction for a change (``write``), or a connection for reads: driver errors
        are translated to StoreError at its edge, never seen by the verbs."""
        ...

    async def audit_sealed(self) -> None:
        """Return once every audit entry committed before the call is sealed into the chain
        (store/backend.py): read the audit log after it."""
        ...
