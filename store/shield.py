"""Store calls that finish even when their caller is cancelled."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

__all__ = ["finish_even_if_cancelled"]

_T = TypeVar("_T")
_P = ParamSpec("_P")


def finish_even_if_cancelled(
    method: Callable[_P, Coroutine[Any, Any, _T]],
) -> Callable[_P, Coroutine[Any, Any, _T]]:
    """Run a store call to its end even when the caller is cancelled.

    A cancellation that lands between sending COMMIT and reading its answer leaves nobody knowing
    whether the transaction committed, and a connection interrupted mid-protocol must be thrown
    away. The call runs in a shielded task instead: a cancelled caller gets CancelledError at
    once, while the transaction commits or rolls back on its own and the connection goes back to
    its pool clean.
    """

    @functools.wraps(method)
    async def shielded(*args: _P.args, **kwargs: _P.kwargs) -> _T:
        task = asyncio.ensure_future(method(*args, **kwargs))
        task.add_done_callback(_consume)
        return await asyncio.shield(task)

    return shielded


def _consume(task: asyncio.Future[Any]) -> None:
    """Retrieve a shielded call's error when its caller is no longer waiting for it."""
    if not task.cancelled():
        task.exception()
