"""The per-instance quotas: the token bucket's arithmetic and the long-poll places."""

from __future__ import annotations

import pytest

from bot.api.buckets import TokenBucket
from bot.api.problems import Problem
from bot.api.quotas import Quotas
from bot.settings import AgentSettings
from bot.settings.limits import Limits


class Ticks:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def agent(name: str = "flooder", **limits: float) -> AgentSettings:
    return AgentSettings(name, "t" * 16, "s", limits=Limits.model_validate(limits))


def test_a_full_bucket_gives_its_burst_then_names_the_wait_for_the_next_token() -> None:
    bucket = TokenBucket.filled(4, 3, now=0.0)

    assert [bucket.take(0.0) for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.take(0.0) == pytest.approx(0.25)  # a token every quarter second
    assert bucket.take(0.1) == pytest.approx(0.15)
    assert bucket.take(0.25) == 0.0
    assert bucket.take(100.0) == 0.0  # idle for long: full again, never above the burst
    assert bucket.tokens == pytest.approx(2.0)


def test_a_refused_submission_takes_no_token() -> None:
    ticks = Ticks()
    quotas = Quotas(ticks)
    slow = agent(submissions_per_second=1, submissions_burst=1)
    quotas.admit_submission(slow)

    for _ in range(5):
        with pytest.raises(Problem) as refused:
            quotas.admit_submission(slow)
        assert refused.value.status == 429
        assert refused.value.headers["Retry-After"] == "1"
    ticks.now += 1.0
    quotas.admit_submission(slow)  # the refusals did not push the next token further away


def test_each_agent_has_its_own_bucket() -> None:
    quotas = Quotas(Ticks())
    flooder, other = agent(submissions_burst=1), agent("other", submissions_burst=1)
    quotas.admit_submission(flooder)

    with pytest.raises(Problem):
        quotas.admit_submission(flooder)
    quotas.admit_submission(other)


def test_long_poll_places_are_per_agent_and_given_back_even_when_the_block_raises() -> None:
    quotas = Quotas(Ticks())
    poller = agent(max_long_polls=1)

    with quotas.long_poll(poller), quotas.long_poll(agent("other", max_long_polls=1)):
        with pytest.raises(Problem) as refused:
            quotas.long_poll(poller).__enter__()
        assert refused.value.problems[0].field == "limits.max_long_polls"
    with pytest.raises(RuntimeError), quotas.long_poll(poller):
        raise RuntimeError("the client went away")
    assert quotas.long_polls("flooder") == 0


def test_a_refund_gives_back_one_token_never_more_than_the_burst() -> None:
    quotas = Quotas(Ticks())
    slow = agent(submissions_per_second=0.001, submissions_burst=2)
    quotas.admit_submission(slow)
    quotas.admit_submission(slow)
    quotas.refund(slow)
    quotas.refund(slow)
    quotas.refund(slow)

    quotas.admit_submission(slow)
    quotas.admit_submission(slow)
    with pytest.raises(Problem):
        quotas.admit_submission(slow)
