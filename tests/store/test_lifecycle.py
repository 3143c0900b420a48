"""The lifecycle is said in four places, and they must agree: ``store/proposals/lifecycle.py`` (the
statuses and the table of transitions), the README's state diagram, and each database's schema as
its migrations leave it (the status ``CHECK`` and the trigger that allows only the transitions),
read back from SQLite's ``sqlite_master`` and PostgreSQL's catalog.

That each database also acts as its schema says, every pair of statuses tried with a raw
``UPDATE``, is tested in ``test_sqlite.py`` and ``test_postgres.py``.
"""

from __future__ import annotations

import re
import secrets
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import pytest

from store.open import open_store
from store.proposals import (
    EFFECTS,
    FINAL,
    INITIAL,
    OUTCOME_STATUS,
    SETTLED,
    TRANSITIONS,
    Status,
    mermaid_diagram,
)

README = Path(__file__).parents[2] / "README.md"
POSTGRES = "postgresql://postgres@127.0.0.1:5432/test"

EDGES = {
    (source.value, target.value) for source, targets in TRANSITIONS.items() for target in targets
}


def test_readme_state_diagram_is_generated_from_the_transitions_table() -> None:
    text = README.read_text(encoding="utf-8")
    shown = re.search(r"```mermaid\n(stateDiagram-v2\n.*?)\n```", text, re.S)

    assert shown is not None, "README.md has no mermaid state diagram"
    assert shown.group(1) == mermaid_diagram()


def test_every_status_has_a_row_and_final_statuses_lead_nowhere() -> None:
    assert set(TRANSITIONS) == set(Status)
    assert all(not TRANSITIONS[status] for status in FINAL)
    assert Status.PENDING not in FINAL and Status.EXECUTING not in FINAL


def test_every_outcome_kind_ends_execution_in_a_settled_status() -> None:
    assert set(OUTCOME_STATUS.values()) == TRANSITIONS[Status.EXECUTING]
    assert set(OUTCOME_STATUS.values()) <= SETTLED
    # only an uncertain outcome leads anywhere: to a person's resolution or a retry
    assert set(OUTCOME_STATUS.values()) - FINAL == {Status.NEEDS_RECONCILIATION}


def test_every_status_but_final_ones_has_effects_and_every_status_is_listed() -> None:
    assert set(EFFECTS) == set(Status)
    assert all(EFFECTS[status] for status in Status)


def test_every_status_is_reachable_from_an_initial_one() -> None:
    reached = set(INITIAL)
    frontier = list(INITIAL)
    while frontier:
        for target in TRANSITIONS[frontier.pop()]:
            if target not in reached:
                reached.add(target)
                frontier.append(target)
    assert reached == set(Status)


# --- the databases' schemas -----------------------------------------------------------------------


@dataclass(frozen=True)
class Schema:
    """What the migrations left in a database, as its catalog shows it."""

    checks: list[str]  #: every CHECK constraint of the proposals table
    #: every trigger that fires on an update of proposals.status (on PostgreSQL with the body of
    #: the function it runs)
    status_triggers: list[str]


#: how the trigger guarding transitions starts, on either backend
TRANSITIONS_TRIGGER = r"BEFORE\s+UPDATE\s+OF\s+status\s+ON"


async def _sqlite_schema(tmp_path: Path) -> Schema:
    path = tmp_path / "lifecycle.sqlite"
    await (await open_store(str(path))).close()
    db = sqlite3.connect(path)
    try:
        [(table,)] = db.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'proposals'"
        ).fetchall()
        triggers = [
            sql
            for (sql,) in db.execute(
                "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'proposals'"
            )
        ]
    finally:
        db.close()
    return Schema(
        checks=_sqlite_checks(table),
        # the transitions trigger fires BEFORE a change of status; the pending counts' triggers
        # (AFTER UPDATE OF status, agent) only follow it
        status_triggers=[sql for sql in triggers if re.search(TRANSITIONS_TRIGGER, sql)],
    )


def _sqlite_checks(table: str) -> list[str]:
    """Each CHECK (...) of a CREATE TABLE statement, its parentheses balanced."""
    found = []
    for match in re.finditer(r"\bCHECK\s*\(", table):
        depth, end = 1, match.end()
        while depth:
            depth += {"(": 1, ")": -1}.get(table[end], 0)
            end += 1
        found.append(table[match.start() : end])
    return found


async def _postgres_schema() -> Schema:
    schema = f"countersign_lifecycle_{secrets.token_hex(6)}"
    admin = await asyncpg.connect(POSTGRES)
    try:
        await admin.execute(f'CREATE SCHEMA "{schema}"')
        await (await open_store(f"{POSTGRES}?search_path={schema}")).close()
        checks = await admin.fetch(
            "SELECT pg_get_constraintdef(c.oid) FROM pg_constraint c "
            "JOIN pg_class t ON t.oid = c.conrelid "
            "JOIN pg_namespace n ON n.oid = t.relnamespace "
            "WHERE n.nspname = $1 AND t.relname = 'proposals' AND c.contype = 'c'",
            schema,
        )
        triggers = await admin.fetch(
            "SELECT pg_get_triggerdef(g.oid) AS fires, pg_get_functiondef(g.tgfoid) AS body "
            "FROM pg_trigger g JOIN pg_class t ON t.oid = g.tgrelid "
            "JOIN pg_namespace n ON n.oid = t.relnamespace "
            "WHERE n.nspname = $1 AND t.relname = 'proposals' AND NOT g.tgisinternal",
            schema,
        )
    finally:
        await admin.execute(f'DROP SCHEMA "{schema}" CASCADE')
        await admin.close()
    return Schema(
        checks=[row[0] for row in checks],
        status_triggers=[
            f"{row['fires']}\n{row['body']}"
            for row in triggers
            if re.search(r"BEFORE UPDATE OF status ON", row["fires"])
        ],
    )


@pytest.fixture(
    params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)],
)
async def applied(request: pytest.FixtureRequest, tmp_path: Path) -> Schema:
    """A new database migrated by its store, as its catalog shows it."""
    if request.param == "sqlite":
        return await _sqlite_schema(tmp_path)
    return await _postgres_schema()


def _listed(check: str) -> set[str] | None:
    """The values of ``status IN (...)`` (SQLite) or ``status = ANY (ARRAY[...])`` (PostgreSQL's
    rendering of it); None when ``check`` is about something else."""
    listed = re.fullmatch(
        r"CHECK\s*\(+\s*status\s+(?:IN\s*\((.*)\)|= ANY\s*\(+ARRAY\[(.*)\]\)+)\s*\)+", check, re.S
    )
    if listed is None:
        return None
    return set(re.findall(r"'(\w+)'", listed[1] or listed[2]))


async def test_the_databases_status_check_allows_exactly_the_lifecycle_statuses(
    applied: Schema,
) -> None:
    [statuses] = [listed for check in applied.checks if (listed := _listed(check)) is not None]

    assert statuses == {status.value for status in Status}


async def test_the_databases_trigger_allows_exactly_the_lifecycle_transitions(
    applied: Schema,
) -> None:
    [trigger] = applied.status_triggers
    # the trigger refuses every change of status that is NOT IN its list of 'source -> target'
    listed = re.search(r"NOT IN\s*\((.*?)\)", trigger, re.S)

    assert listed is not None, trigger
    assert set(re.findall(r"'(\w+) -> (\w+)'", listed[1])) == EDGES
