"""The named SQL the backends run (each table family's sql/common and sql/<dialect>, and
store/sql/*/queries for SQL of no family): what a dialect writes for itself the other writes
too, nothing is both common and a dialect's own, each block is well formed, every name the verbs
run is defined, and ``:param`` becomes ``$n`` right."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest

from store import connector
from store.connector import Array, Dialect, dialect_query_names, load_queries, parse_queries

ROOT = Path(__file__).resolve().parents[2]
VERBS = ("one", "all", "execute", "execute_many")


def test_both_dialects_name_the_same_queries() -> None:
    sqlite, postgres = set(load_queries("sqlite")), set(load_queries("postgres"))
    assert sqlite, "no named queries found"
    assert sqlite - postgres == set(), "named in SQLite only"
    assert postgres - sqlite == set(), "named in PostgreSQL only"
    assert dialect_query_names("sqlite") == dialect_query_names("postgres")


def test_a_query_in_common_and_in_a_dialect_too_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # once in a family's common SQL, once in SQL of no family written for SQLite alone
    for folder in (tmp_path / "family" / "sql" / "common", tmp_path / "sql" / "sqlite" / "queries"):
        folder.mkdir(parents=True)
        (folder / "x.sql").write_text("-- name: same\nSELECT 1\n")
    monkeypatch.setattr(connector, "QUERIES", tmp_path)
    load_queries.cache_clear()
    try:
        with pytest.raises(ValueError, match="'same' is also named in another file"):
            load_queries("sqlite")
    finally:
        monkeypatch.undo()
        load_queries.cache_clear()


def test_each_query_takes_the_same_parameters_in_both_dialects() -> None:
    sqlite, postgres = load_queries("sqlite"), load_queries("postgres")
    differ = {
        name: (sorted(sqlite[name].params), sorted(postgres[name].params))
        for name in sqlite
        if set(sqlite[name].params) != set(postgres[name].params)
    }
    assert differ == {}


def _names_run_by_the_verbs() -> set[str]:
    """The first argument of every ``tx.one/all/execute/execute_many("name", ...)`` in store/,
    and the query of every ``required(tx, missing, "name", ...)`` (store/rows.py)."""
    used: set[str] = set()
    for path in (ROOT / "store").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "required"
                and len(node.args) > 2
                and isinstance(node.args[2], ast.Constant)
                and isinstance(node.args[2].value, str)
            ):
                used.add(node.args[2].value)
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in VERBS
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "tx"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                used.add(node.args[0].value)
    return used


def test_every_query_a_verb_runs_is_defined_and_every_defined_query_is_run() -> None:
    used, defined = _names_run_by_the_verbs(), set(load_queries("sqlite"))
    assert used, "found no verb written over the connector"
    assert used - defined == set(), "run but not defined"
    assert defined - used == set(), "defined but never run"


def test_postgres_parameters_become_positions_in_first_use_order_and_casts_stay() -> None:
    text = """
-- name: example
-- a comment with :not_a_param
SELECT :b::text, :a, :b  -- :neither
FROM t WHERE x = ANY(:ids)
"""
    [query] = parse_queries(text, dialect="postgres").values()
    assert query.params == ("b", "a", "ids")
    assert "SELECT $1::text, $2, $1  -- :neither" in query.text
    assert "ANY($3)" in query.text
    assert query.positional({"a": 1, "b": 2, "ids": Array(("x",))}) == [2, 1, ("x",)]
    [same] = parse_queries(text, dialect="sqlite").values()
    assert same.params == ("b", "a", "ids") and ":b::text" in same.text


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("SELECT 1\n-- name: a\nSELECT 2", "before the first"),
        ("-- name: a\n\n-- name: b\nSELECT 1", "'a' is empty"),
        ("-- name: a\nSELECT 1\n-- name: a\nSELECT 2", "'a' is named twice"),
    ],
)
def test_malformed_query_files_are_refused_naming_the_problem(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        parse_queries(text, dialect="sqlite", source="x.sql")


def test_a_missing_or_unexpected_parameter_names_both() -> None:
    [query] = parse_queries("-- name: q\nSELECT :a, :b", dialect="postgres").values()
    with pytest.raises(
        TypeError, match=r"missing parameters \['b'\], unexpected parameters \['c'\]"
    ):
        query.positional({"a": 1, "c": 3})


@pytest.mark.parametrize("dialect", ["postgres", "sqlite"])
@pytest.mark.parametrize(
    ("values", "missing", "unexpected"),
    [
        ({"a": 1}, ["b"], []),
        ({"a": 1, "b": 2, "c": 3}, [], ["c"]),
        ({"a": 1, "c": None}, ["b"], ["c"]),  # as many names as expected, one of them wrong
        ({}, ["a", "b"], []),
    ],
)
def test_a_call_without_each_parameter_exactly_once_is_refused_never_bound(
    dialect: Dialect, values: dict[str, Any], missing: list[str], unexpected: list[str]
) -> None:
    [query] = parse_queries("-- name: q\nSELECT :a, :b", dialect=dialect).values()
    problem = re.escape(f"missing parameters {missing}, unexpected parameters {unexpected}")
    with pytest.raises(TypeError, match=problem):
        query.positional(values)
    with pytest.raises(TypeError, match=problem):
        query.named(values)
    assert query.named({"b": None, "a": 1}) == {"b": None, "a": 1}
