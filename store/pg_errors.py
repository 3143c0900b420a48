"""asyncpg's errors, translated into the store's own at the PostgreSQL backend's edge.

Two kinds of answer matter to a caller: the change itself was refused (a constraint, a trigger,
a value PostgreSQL cannot hold: trying again will not help), or the database could not do it now
(unreachable, restarting, overloaded, a lock or statement timeout, a deadlock: trying again
later may). The first is a plain :class:`StoreError`, the second :class:`StoreUnavailable`.
"""

from __future__ import annotations

import asyncpg

from store.base import StoreError, StoreUnavailable

__all__ = ["DRIVER_ERRORS", "translate"]

#: Everything the driver or the network raises that :func:`translate` understands.
DRIVER_ERRORS = (asyncpg.PostgresError, asyncpg.InterfaceError, OSError, TimeoutError)

#: A text value holding NUL: PostgreSQL text cannot store the character U+0000.
_NUL = (asyncpg.CharacterNotInRepertoireError, asyncpg.UntranslatableCharacterError)


def translate(error: BaseException) -> StoreError:
    """The store error that tells the caller what ``error`` means for them."""
    if isinstance(error, StoreError):
        return error
    if isinstance(error, _NUL):
        return StoreError(
            "the database refused the change: a text value contains the NUL character "
            f"(\\x00), which PostgreSQL cannot store ({error})"
        )
    if isinstance(error, asyncpg.IntegrityConstraintViolationError | asyncpg.DataError):
        return StoreError(f"the database refused the change: {error}{_where(error)}")
    if isinstance(error, asyncpg.PostgresError):
        return StoreUnavailable(f"PostgreSQL: {error}{_where(error)}")
    if isinstance(error, OSError | TimeoutError):
        return StoreUnavailable(f"cannot reach PostgreSQL: {str(error) or type(error).__name__}")
    return StoreUnavailable(f"PostgreSQL connection: {error}")


def _where(error: asyncpg.PostgresError) -> str:
    """The SQLSTATE and, when the server named them, the table and constraint."""
    parts = [f"SQLSTATE {error.sqlstate}"]
    table = getattr(error, "table_name", None)
    constraint = getattr(error, "constraint_name", None)
    if table:
        parts.append(f"table {table}")
    if constraint:
        parts.append(f"constraint {constraint}")
    return f" ({', '.join(parts)})"
