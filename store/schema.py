"""The current schema of each backend in one place: ``store/sql/<backend>/schema.sql``.

The migrations are the truth (a database is built by applying them in order); reading eleven
files to learn what a table looks like today is not. So each backend keeps a ``schema.sql``
that shows every table, index, trigger and function as the migrations leave them, written by
this module from a database they were just applied to. ``tests/store/test_schema.py`` builds
one the same way and fails when the file is out of date; after adding a migration, run::

    .venv/bin/python -m store.schema --write

The file is for reading; nothing applies it.
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import sys
from pathlib import Path

import aiosqlite
import asyncpg

from store.migrate import load_migrations

__all__ = ["SCHEMA_FILES", "postgres_schema", "sqlite_schema"]

SQL = Path(__file__).parent / "sql"
SCHEMA_FILES = {
    "sqlite": SQL / "sqlite" / "schema.sql",
    "postgres": SQL / "postgres" / "schema.sql",
}
DEFAULT_POSTGRES = "postgresql://postgres@127.0.0.1:5432/test"

_HEADER = """\
-- The {label} schema as migrations 0001..{last:04d} leave it: for reading, never applied.
-- Written by `python -m store.schema --write` (tests/store/test_schema.py checks it is current).
-- To change the schema, add a migration (docs/store.md says how), then write this file again.
"""


def _header(label: str, backend: str) -> str:
    return _HEADER.format(label=label, last=len(load_migrations(backend)))


async def sqlite_schema() -> str:
    """The schema of a new SQLite database after every migration."""
    # Imported here: store.sqlite imports the feature stores, which need nothing of this module.
    from store.sqlite import apply_migrations

    async with aiosqlite.connect(":memory:") as db:
        await apply_migrations(db, load_migrations("sqlite"))
        rows = await db.execute_fetchall(
            "SELECT type, name, sql FROM sqlite_master "
            "WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' "
            "ORDER BY CASE type WHEN 'table' THEN 0 WHEN 'index' THEN 1 ELSE 2 END, name"
        )
    parts = [_header("SQLite", "sqlite")]
    parts += [f"{sql.strip()};\n" for _, _, sql in rows]
    return "\n".join(parts)


async def postgres_schema(url: str = DEFAULT_POSTGRES) -> str:
    """The schema of a new PostgreSQL schema (made in the database at ``url``, then dropped)
    after every migration."""
    from store.pg_migrate import apply_migrations

    name = f"cs_schema_{secrets.token_hex(4)}"
    db = await asyncpg.connect(url)
    try:
        await db.execute(f'CREATE SCHEMA "{name}"')
        try:
            await db.execute(f'SET search_path TO "{name}"')
            await apply_migrations(db, load_migrations("postgres"))
            return _header("PostgreSQL", "postgres") + "\n" + await _described(db, name)
        finally:
            await db.execute(f'DROP SCHEMA "{name}" CASCADE')
    finally:
        await db.close()


async def _described(db: asyncpg.Connection, schema: str) -> str:
    """Tables with their columns and constraints, then indexes, functions and triggers, from
    the catalog (independent of the server's pg_dump)."""
    out: list[str] = []
    tables = await db.fetch(
        "SELECT c.oid, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = $1 AND c.relkind = 'r' ORDER BY c.relname",
        schema,
    )
    for table in tables:
        columns = await db.fetch(
            "SELECT a.attname, format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull, "
            "pg_get_expr(d.adbin, d.adrelid) AS default "
            "FROM pg_attribute a LEFT JOIN pg_attrdef d "
            "ON d.adrelid = a.attrelid AND d.adnum = a.attnum "
            "WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
            table["oid"],
        )
        constraints = await db.fetch(
            "SELECT conname, pg_get_constraintdef(oid) AS definition FROM pg_constraint "
            "WHERE conrelid = $1 ORDER BY conname",
            table["oid"],
        )
        lines = [
            f"    {c['attname']} {c['type']}"
            + (" NOT NULL" if c["attnotnull"] else "")
            + (f" DEFAULT {c['default']}" if c["default"] is not None else "")
            for c in columns
        ]
        lines += [f"    CONSTRAINT {c['conname']} {c['definition']}" for c in constraints]
        out.append(f"CREATE TABLE {table['relname']} (\n" + ",\n".join(lines) + "\n);\n")
    indexes = await db.fetch(
        "SELECT indexdef FROM pg_indexes WHERE schemaname = $1 ORDER BY tablename, indexname",
        schema,
    )
    out += [f"{_unqualified(row['indexdef'], schema)};\n" for row in indexes]
    functions = await db.fetch(
        "SELECT pg_get_functiondef(p.oid) AS definition FROM pg_proc p "
        "JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1 ORDER BY p.proname",
        schema,
    )
    out += [f"{_unqualified(row['definition'], schema).strip()};\n" for row in functions]
    triggers = await db.fetch(
        "SELECT pg_get_triggerdef(t.oid) AS definition FROM pg_trigger t "
        "JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = $1 AND NOT t.tgisinternal ORDER BY c.relname, t.tgname",
        schema,
    )
    out += [f"{_unqualified(row['definition'], schema)};\n" for row in triggers]
    return "\n".join(out)


def _unqualified(text: str, schema: str) -> str:
    """``text`` without the throwaway schema's name (``"cs_schema_1a2b".proposals``)."""
    return text.replace(f'"{schema}".', "").replace(f"{schema}.", "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m store.schema",
        description="Show (or --write) each backend's schema as the migrations leave it.",
    )
    parser.add_argument("--write", action="store_true", help="write store/sql/*/schema.sql")
    parser.add_argument(
        "--postgres", default=DEFAULT_POSTGRES, metavar="URL",
        help=f"a database to build the PostgreSQL schema in, in a throwaway schema "
        f"(default {DEFAULT_POSTGRES})",
    )  # fmt: skip
    args = parser.parse_args(argv)
    schemas = {
        "sqlite": asyncio.run(sqlite_schema()),
        "postgres": asyncio.run(postgres_schema(args.postgres)),
    }
    for backend, text in schemas.items():
        if args.write:
            SCHEMA_FILES[backend].write_text(text)
            print(f"wrote {SCHEMA_FILES[backend]}")
        else:
            sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
