"""The store as the app uses it, each verb timed (``countersign_store_call_seconds``).

A wrapper given to the app in place of the store: every coroutine method of the store is
measured under its own name, whatever verbs the store has, and so is every verb of the stores
it hands out (escalations, standing rules, delegations, recorded clicks, digests: they share its
transactions) under ``<store>.<verb>`` (``digests.get_proposals``). Everything else passes
through. Counted, they say how many store calls a request or an outbox round costs.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from typing import Any, cast

from prometheus_client import Histogram

from store.protocol import Store

__all__ = ["timed_store"]


def timed_store(store: Store, seconds: Histogram) -> Store:
    """``store``, each verb's duration observed in ``seconds`` (labelled ``verb``)."""
    return cast(Store, _TimedStore(store, seconds))


#: The Store's methods that hand out the stores of other table families.
_STORES = frozenset({"escalations", "standing", "delegations", "clicks", "digests"})


class _TimedStore:
    def __init__(self, store: Any, seconds: Histogram, prefix: str = "") -> None:
        self._store = store
        self._seconds = seconds
        self._prefix = prefix
        self._verbs: dict[str, Callable[..., Any]] = {}

    def __getattr__(self, name: str) -> Any:
        timed = self._verbs.get(name)
        if timed is not None:
            return timed
        value = getattr(self._store, name)
        if not self._prefix and name in _STORES:
            inner = _TimedStore(value(), self._seconds, f"{name}.")
            self._verbs[name] = lambda: inner
            return self._verbs[name]
        if not inspect.iscoroutinefunction(value):
            return value
        observe = self._seconds.labels(self._prefix + name).observe

        async def verb(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return await value(*args, **kwargs)
            finally:
                observe(time.perf_counter() - started)

        self._verbs[name] = verb
        return verb
