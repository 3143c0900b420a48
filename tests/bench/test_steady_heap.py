"""The benchmark's own garbage collector stays out of its timed windows: what the process holds
when a scenario starts is frozen out of the collector's passes (a full pass over it held the
benchmark's loop up to 163 ms, charged to the server as a slow answer)."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from bot.bench.load import steady_heap


class _Held:
    """Something the benchmark holds, like a stored Slack message."""


@pytest.fixture
def thawed() -> Iterator[None]:
    """The test process's objects are back in the collector's care afterwards."""
    gc.unfreeze()
    try:
        yield
    finally:
        gc.unfreeze()


def test_what_is_held_is_frozen_and_what_is_garbage_is_collected_first(thawed: None) -> None:
    held = [_Held() for _ in range(1000)]
    loop_of_garbage = _Held()
    loop_of_garbage.me = loop_of_garbage  # type: ignore[attr-defined]
    garbage = weakref.ref(loop_of_garbage)
    del loop_of_garbage  # garbage only the collector frees (it refers to itself)

    steady_heap()

    assert garbage() is None  # collected before freezing, not kept for the process's life
    assert gc.get_freeze_count() >= len(held)  # out of every pass from now on
