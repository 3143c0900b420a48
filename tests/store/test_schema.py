"""``store/sql/<backend>/schema.sql`` shows what the migrations build, and migrations from 0012
on are numbered and named alike in both backends."""

from __future__ import annotations

import pytest

from store.migrate import load_migrations
from store.schema import SCHEMA_FILES, postgres_schema, sqlite_schema

#: The last migration whose number may differ in meaning between the backends (before the
#: numbering was aligned: store/sql/postgres/0011_numbering_aligned_with_sqlite.sql).
ALIGNED_AFTER = 11

REWRITE = "the file is out of date: run `.venv/bin/python -m store.schema --write`"


async def test_the_sqlite_schema_file_is_what_the_migrations_build() -> None:
    assert SCHEMA_FILES["sqlite"].read_text() == await sqlite_schema(), REWRITE


async def test_the_postgres_schema_file_is_what_the_migrations_build() -> None:
    assert SCHEMA_FILES["postgres"].read_text() == await postgres_schema(), REWRITE


def test_both_backends_have_every_migration_up_to_where_the_numbering_was_aligned() -> None:
    assert len(load_migrations("sqlite")) >= ALIGNED_AFTER
    assert len(load_migrations("postgres")) >= ALIGNED_AFTER


def test_migrations_after_the_alignment_have_the_same_number_and_name_in_both_backends() -> None:
    later = {
        backend: [
            (m.version, m.name) for m in load_migrations(backend) if m.version > ALIGNED_AFTER
        ]
        for backend in ("sqlite", "postgres")
    }
    assert later["sqlite"] == later["postgres"]


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_the_schema_file_names_the_last_migration(backend: str) -> None:
    last = len(load_migrations(backend))
    assert f"migrations 0001..{last:04d} leave it" in SCHEMA_FILES[backend].read_text()
