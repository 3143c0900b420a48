"""The loop's lag: what counts as behind, and how long a stall is kept in mind."""

from __future__ import annotations

import asyncio
import time

import pytest

from bot.api.loop_lag import LoopLag


def test_a_stall_is_kept_in_mind_for_a_few_wake_ups_then_forgotten() -> None:
    lag = LoopLag(threshold=0.05, with_agents=0)
    lag.note(0.2)  # one wake-up 200 ms late
    behind = []
    for _ in range(5):
        behind.append(lag.behind())
        lag.note(0.0)  # then on time
    assert behind == [True, True, True, False, False]  # 200, 100, 50 ms; then 25, 12 ms
    assert lag.shed == 3 and lag.worst == pytest.approx(0.2)


def test_below_the_threshold_nothing_is_shed_and_zero_never_sheds() -> None:
    calm = LoopLag(threshold=0.05, with_agents=0)
    calm.note(0.049)
    off = LoopLag(threshold=0, with_agents=0)
    off.note(5.0)
    assert not calm.behind() and not off.behind()
    assert calm.shed == off.shed == 0


def test_a_late_loop_sheds_only_with_enough_agent_work_in_progress() -> None:
    lag = LoopLag(threshold=0.05, with_agents=2)
    lag.note(0.2)
    with lag.agent_work():
        alone = lag.behind()  # late, but one submission is not what holds the loop
        with lag.agent_work():
            crowded = lag.behind()
    assert (alone, crowded, lag.agents, lag.shed) == (False, True, 0, 1)


def _hold_the_loop(seconds: float) -> None:
    """What a long stretch of work on the loop does: nothing else runs."""
    time.sleep(seconds)


async def test_a_wake_up_overdue_now_counts_before_the_timer_runs() -> None:
    lag = LoopLag(threshold=0.05, interval=0.01, with_agents=0)
    measuring = asyncio.create_task(lag.run())
    try:
        await asyncio.sleep(0.03)  # measuring, on time
        assert not lag.behind()
        _hold_the_loop(0.2)  # the timer cannot run meanwhile
        assert lag.lag >= 0.15 and lag.behind()
    finally:
        measuring.cancel()
        await asyncio.gather(measuring, return_exceptions=True)


@pytest.mark.parametrize(("threshold", "interval"), [(-1, 0.01), (0.05, 0), (0.05, -1)])
def test_a_bad_threshold_or_interval_is_refused(threshold: float, interval: float) -> None:
    with pytest.raises(ValueError, match=r"threshold|interval"):
        LoopLag(threshold=threshold, interval=interval)
