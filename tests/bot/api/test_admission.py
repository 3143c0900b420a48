from __future__ import annotations

import pytest

from bot.api.admission import Admission


def test_slots_are_granted_up_to_the_limit_and_released_after_the_block() -> None:
    admission = Admission(2)
    with admission.slot() as first, admission.slot() as second, admission.slot() as third:
        assert (first, second, third) == (True, True, False)
        assert admission.in_flight == 2
    assert admission.in_flight == 0
    assert admission.refused == 1
    with admission.slot() as again:
        assert again


def test_a_slot_is_released_when_the_block_raises() -> None:
    admission = Admission(1)
    with pytest.raises(RuntimeError), admission.slot():
        raise RuntimeError("boom")
    assert admission.in_flight == 0


def test_a_limit_below_one_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match="limit"):
        Admission(0)
