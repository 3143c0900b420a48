"""People's lane: the store's work for a person's click goes ahead of agents' work.

The code that handles a person's click (recording it, applying it, the decision it makes)
runs inside :func:`people_first`; every store call made there, and in the tasks it starts,
takes people's lane. What a lane means is each backend's:

- SQLite has one writer, whose transactions are batched into one COMMIT (store/group_commit.py):
  a write in people's lane joins the batch being built ahead of every agent's write queued
  there, and the batch takes only a few agents' writes more before it commits, so it waits for
  the statements under way, those few and one COMMIT, never a backlog of agents' writes. A read in
  people's lane may also take a reader connection kept for it (store/sqlite.py).
- PostgreSQL has a pool of connections (store/postgres.py): everyone else's work may hold all
  but :data:`store.postgres.KEPT_FOR_PEOPLE` of them at once, so agents' writes filling the pool
  never make a click wait for a connection.

A lane is a context variable: it follows the task that set it, and the tasks that task starts.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["for_people", "people_first"]

_PEOPLE: ContextVar[bool] = ContextVar("countersign_people_lane", default=False)


@contextmanager
def people_first() -> Iterator[None]:
    """Store calls made inside (and in tasks started inside) take people's lane."""
    token = _PEOPLE.set(True)
    try:
        yield
    finally:
        _PEOPLE.reset(token)


def for_people() -> bool:
    """Whether the calling task is in people's lane."""
    return _PEOPLE.get()
