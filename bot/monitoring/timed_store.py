"""The store as the app uses it, each verb timed (``countersign_store_call_seconds``).

A wrapper given to the app in place of the store: every coroutine method of the store is
measured under its own name, whatever verbs the store has; everything else (the escalations',
standing rules' and digests' stores, which share its transactions) passes through untimed.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from typing import Any, cast

from prometheus_client import Histogram

from store.base import Store

__all__ = ["timed_store"]


def timed_store(store: Store, seconds: Histogram) -> Store:
    """``store``, each verb's duration observed in ``seconds`` (labelled ``verb``)."""
    return cast(Store, _TimedStore(store, seconds))


class _TimedStore:
    def __init__(self, store: Store, seconds: Histogram) -> None:
        self._store = store
        self._seconds = seconds
        self._verbs: dict[str, Callable[..., Any]] = {}

    def __getattr__(self, name: str) -> Any:
        timed = self._verbs.get(name)
        if timed is not None:
            return timed
        value = getattr(self._store, name)
        if not inspect.iscoroutinefunction(value):
            return value
        observe = self._seconds.labels(name).observe

        async def verb(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return await value(*args, **kwargs)
            finally:
                observe(time.perf_counter() - started)

        self._verbs[name] = verb
        return verb
