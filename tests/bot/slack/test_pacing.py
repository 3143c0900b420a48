"""Slack's rate limits on Countersign's side: a 429 holds back the whole method (for posting,
the channel) for its Retry-After, and the backlog after it goes at the method's tier."""

from __future__ import annotations

from bot.slack.pacing import PACED_FOR_SECONDS, SlackPacer


class Ticks:
    def __init__(self) -> None:
        self.now = 500.0

    def __call__(self) -> float:
        return self.now


def test_without_a_429_calls_go_at_once() -> None:
    pacer = SlackPacer(monotonic=Ticks())
    assert [pacer.wait("chat.postMessage", "C1", longest=5) for _ in range(10)] == [0.0] * 10


def test_a_429_on_posting_holds_back_that_channel_only_then_paces_it_a_post_at_a_time() -> None:
    ticks = Ticks()
    pacer = SlackPacer(monotonic=ticks)
    pacer.limited("chat.postMessage", "C1", retry_after=3)

    assert pacer.wait("chat.postMessage", "C2", longest=5) == 0.0  # another channel: not held
    waits = [round(pacer.wait("chat.postMessage", "C1", longest=10), 6) for _ in range(4)]
    assert waits == [3.0, 4.2, 5.4, 6.6]  # the Retry-After, then a little over a second apart
    assert round(pacer.wait("chat.postMessage", "C1", longest=5), 6) == 7.8  # not taken
    assert round(pacer.wait("chat.postMessage", "C1", longest=10), 6) == 7.8  # still its turn


def test_a_429_on_a_tier_3_method_holds_back_the_method_in_every_channel() -> None:
    ticks = Ticks()
    pacer = SlackPacer(monotonic=ticks)
    pacer.limited("chat.update", "C1", retry_after=2)

    waits = [round(pacer.wait("chat.update", f"C{n}", longest=10), 6) for n in range(7)]
    # Tier 3: about 50 a minute (1.2 s apart), bursts of 5 after the wait Slack asked
    assert waits == [2.0, 2.0, 2.0, 2.0, 2.0, 3.2, 4.4]


def test_pacing_ends_a_while_after_the_last_429() -> None:
    ticks = Ticks()
    pacer = SlackPacer(monotonic=ticks)
    pacer.limited("chat.postMessage", "C1", retry_after=1)
    ticks.now += 1 + PACED_FOR_SECONDS
    assert [pacer.wait("chat.postMessage", "C1", longest=5) for _ in range(3)] == [0.0] * 3
