"""Open the store a database URL names."""

from __future__ import annotations

from contracts.redaction import shown_store_url
from store.base import StoreError
from store.postgres import POOL_SIZE, PostgresStore
from store.protocol import Store
from store.sqlite import SqliteStore

__all__ = ["open_store", "sqlite_path"]

_SQLITE = "sqlite://"
_POSTGRES = ("postgresql://", "postgres://")
_EXAMPLES = (
    "sqlite:///relative/path.sqlite, sqlite:////absolute/path.sqlite, a file path, "
    "or postgresql://user@host:5432/database"
)


async def open_store(url: str, *, durable: bool = True, pool_size: int = POOL_SIZE) -> Store:
    """The store at ``url``, opened and migrated.

    ``sqlite:///data/countersign.sqlite`` is relative to the working directory,
    ``sqlite:////var/lib/countersign.sqlite`` absolute; a URL without a scheme is a file path.
    ``postgresql://`` and ``postgres://`` URLs (libpq's form) open the PostgreSQL store, with a
    pool of ``pool_size`` connections; a SQLite store (one file, its connections fixed by
    store/sqlite.py) takes no notice of it.
    """
    if url.startswith(_POSTGRES):
        return await PostgresStore.open(url, durable=durable, max_size=pool_size)
    return await SqliteStore.open(_sqlite_file(url), durable=durable)


def sqlite_path(url: str) -> str | None:
    """The file a SQLite store URL names (as :func:`open_store` reads it); None for PostgreSQL.
    StoreError when ``url`` names neither."""
    if url.startswith(_POSTGRES):
        return None
    return _sqlite_file(url)


def _sqlite_file(url: str) -> str:
    if url.startswith(_SQLITE):
        rest = url.removeprefix(_SQLITE)
        if not rest.startswith("/") or rest == "/":
            raise StoreError(
                f"store URL {shown_store_url(url)!r}: no database path; expected {_EXAMPLES}"
            )
        path = rest[1:]
    elif "://" in url:
        scheme = url.split("://", 1)[0]
        raise StoreError(
            f"store URL {shown_store_url(url)!r}: unknown scheme {scheme!r}; expected {_EXAMPLES}"
        )
    elif not url:
        raise StoreError(f"store URL is empty; expected {_EXAMPLES}")
    else:
        path = url
    return path
