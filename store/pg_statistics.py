"""Statistics for a young PostgreSQL database: each of the store's tables is analyzed once it
holds :data:`LEAST_ROWS` rows and again each time its rows have doubled since its last analysis.
Rows changed in place do not count: a small table updated all day (the audit chain's head, the
pending counts) keeps the statistics autovacuum gives it, and every connection's plans that use
it are not thrown away every round.

Why: PostgreSQL plans from a table's statistics, and a new database has none, or those of
empty tables. On them reading a whole table looks no dearer than a few lookups by key, and
statements went on reading whole tables as they grew: marking 25 outbox entries delivered read
all 4,371 (without statistics PostgreSQL cannot tell that the entries lie in the order of their
ids), and attaching 25 posts to a digest read every proposal (docs/benchmarks.md). A pooled
connection also keeps a generic plan of a statement it prepared, made from what the tables held
then, until their statistics change. Autovacuum gathers statistics, but only once 50 rows and a
tenth of a table have changed, and it looks once a minute: a busy new install runs its first
minutes, and a benchmark its whole run, on such plans. ANALYZE replaces a table's statistics,
and every connection plans its statements on it again.

Only Countersign's own tables are analyzed (those its migrations create: another application's
tables in the same schema are not its to look after), and a table whose ``autovacuum_enabled``
is off is left alone: who turned off automatic upkeep for it
wants no automatic statistics either. Several instances on one database analyze a table once:
the run takes a transaction-scoped advisory lock, and an instance that does not get it skips
that round. The counts it reads lag the commits (PostgreSQL's cumulative statistics: a busy
connection reports its counts at most once a second, an idle one within ten seconds); a round that
failed (the database away) is tried again at the next.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import re
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING

from store.base import StoreError
from store.migrate import load_migrations

if TYPE_CHECKING:
    from store.pg_migrate import Connection

__all__ = ["CHECK_SECONDS", "LEAST_ROWS", "TableStatistics", "countersign_tables"]

log = logging.getLogger(__name__)

#: How often the tables' changes are read.
CHECK_SECONDS = 2.0
#: The fewest rows that make a table worth analyzing.
LEAST_ROWS = 100

#: Countersign's tables in the schema (named in $2) holding at least $1 rows and twice as many
#: as when last analyzed (never: -1), leaving out those whose autovacuum is turned off.
_DUE = """
SELECT s.relname
FROM pg_stat_user_tables AS s JOIN pg_class AS c ON c.oid = s.relid
WHERE s.schemaname = current_schema() AND s.relname = ANY($2::text[])
  AND s.n_live_tup >= greatest($1::bigint, 2 * c.reltuples::bigint)
  AND NOT coalesce(c.reloptions @> ARRAY['autovacuum_enabled=false'], false)
ORDER BY s.relname
"""

_CREATE_TABLE = re.compile(r"\bCREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)", re.IGNORECASE)

#: One analysis at a time per schema, whichever instance runs it.
_LOCK = "SELECT pg_try_advisory_xact_lock(hashtext('countersign analyze ' || current_schema()))"


@functools.cache
def countersign_tables() -> frozenset[str]:
    """The tables Countersign's PostgreSQL migrations create, with their own record's."""
    created = {"schema_migrations"}  # made by the migration runner (store/pg_migrate.py)
    for migration in load_migrations("postgres"):
        created.update(_CREATE_TABLE.findall(migration.sql))
    return frozenset(created)


class TableStatistics:
    """Analyzes the tables that grew (see the module's docstring) every ``every`` seconds, on a
    connection that ``connection`` lends, from :meth:`start` until :meth:`close`."""

    def __init__(
        self,
        connection: Callable[[], AbstractAsyncContextManager[Connection]],
        *,
        every: float = CHECK_SECONDS,
        least_rows: int = LEAST_ROWS,
    ) -> None:
        self._connection = connection
        self._every = every
        self._least = least_rows
        self._tables = sorted(countersign_tables())
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="table statistics")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def analyze_grown(self) -> list[str]:
        """One round: analyze the tables that grew, unless another instance is analyzing this
        schema's tables now; the tables analyzed."""
        async with self._connection() as db, db.transaction():
            if not await db.fetchval(_LOCK):
                return []
            due = [row["relname"] for row in await db.fetch(_DUE, self._least, self._tables)]
            for table in due:
                await db.execute(f'ANALYZE "{table}"')
        if due:
            log.debug("analyzed %s", ", ".join(due))
        return due

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self._every)
            try:
                await self.analyze_grown()
            except StoreError as error:  # the store is away or closing: the next round tries
                log.debug("table statistics not gathered this round: %s", error)
