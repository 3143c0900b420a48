"""Whether an escalation's trigger holds is decided from measured signals against thresholds."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contracts.base import ContractViolation
from contracts.escalation import (
    EscalationPolicy,
    Route,
    Signals,
    Trigger,
    TriggerKind,
    choose_route,
    judge_trigger,
)

POLICY = EscalationPolicy(
    repeated_failure_turns=3,
    sentiment_threshold=-0.5,
    reserved_topics=("legal", "Safety"),
    confidence_threshold=0.4,
)


def judge(kind: TriggerKind, **signals: object) -> str:
    return judge_trigger(Trigger(kind=kind, signals=Signals(**signals)), POLICY).note  # type: ignore[arg-type]


def refused(kind: TriggerKind, **signals: object) -> tuple[str, str]:
    with pytest.raises(ContractViolation) as raised:
        judge(kind, **signals)
    [problem] = raised.value.problems
    return problem.field, problem.message


def test_repeated_failure_holds_from_the_threshold_of_turns_or_of_one_error() -> None:
    assert judge(TriggerKind.REPEATED_FAILURE, failed_turns=3) == (
        "3 turns without progress (threshold 3)"
    )
    verdict = judge_trigger(
        Trigger(
            kind=TriggerKind.REPEATED_FAILURE, signals=Signals(error_codes=("E1", "E9", "E9", "E9"))
        ),
        POLICY,
    )
    # Countersign's words alone: the agent's error code is shown apart, with its signals
    assert verdict.note == "the same error code 3 times (threshold 3)"
    field, message = refused(TriggerKind.REPEATED_FAILURE, failed_turns=2, error_codes=("A", "B"))
    assert field == "trigger.signals.failed_turns"
    assert "repeated_failure_turns = 3" in message and "got failed_turns 2" in message


def test_negative_sentiment_holds_at_the_threshold_or_when_falling_below_zero() -> None:
    assert judge(TriggerKind.NEGATIVE_SENTIMENT, sentiment_scores=(0.1, -0.5)).startswith(
        "sentiment -0.5"
    )
    assert "worsening" in judge(TriggerKind.NEGATIVE_SENTIMENT, sentiment_scores=(0.2, 0, -0.1))
    field, message = refused(TriggerKind.NEGATIVE_SENTIMENT, sentiment_scores=(-0.1, 0.2, -0.3))
    assert field == "trigger.signals.sentiment_scores"
    assert "sentiment_threshold = -0.5" in message


def test_reserved_topics_match_case_insensitively_and_name_the_topic() -> None:
    verdict = judge_trigger(
        Trigger(kind=TriggerKind.RESERVED_TOPIC, signals=Signals(topic_labels=("safety",))),
        POLICY,
    )
    assert verdict.topic == "Safety"
    field, message = refused(TriggerKind.RESERVED_TOPIC, topic_labels=("billing",))
    assert field == "trigger.signals.topic_labels"
    assert "['Safety', 'legal']" in message


def test_self_reported_confidence_alone_never_suffices() -> None:
    field, message = refused(TriggerKind.LOW_CONFIDENCE, confidence=0.0)
    assert field == "trigger.signals.confidence"
    assert "alone never suffices" in message
    assert "retrieval_hits" in message
    assert "2 failed turn(s)" in judge(TriggerKind.LOW_CONFIDENCE, confidence=0.1, failed_turns=2)
    assert "found nothing" in judge(TriggerKind.LOW_CONFIDENCE, confidence=0.1, retrieval_hits=0)
    coded = judge_trigger(
        Trigger(
            kind=TriggerKind.LOW_CONFIDENCE, signals=Signals(confidence=0.1, error_codes=("E*7*",))
        ),
        POLICY,
    )
    assert coded.note == "confidence 0.1 (threshold 0.4) and an error code"
    assert (
        "confidence_threshold = 0.4"
        in refused(TriggerKind.LOW_CONFIDENCE, confidence=0.4, failed_turns=5)[1]
    )


@given(
    confidence=st.floats(min_value=0, max_value=1),
    hits=st.one_of(st.none(), st.integers(min_value=1, max_value=100)),
    topics=st.lists(st.text(min_size=1, max_size=5), max_size=3),
)
def test_no_confidence_without_a_corroborating_signal_escalates(
    confidence: float, hits: int | None, topics: list[str]
) -> None:
    trigger = Trigger(
        kind=TriggerKind.LOW_CONFIDENCE,
        signals=Signals(confidence=confidence, retrieval_hits=hits, topic_labels=tuple(topics)),
    )
    with pytest.raises(ContractViolation):
        judge_trigger(trigger, POLICY)


def test_explicit_request_needs_the_customers_words() -> None:
    assert refused(TriggerKind.EXPLICIT_REQUEST)[0] == "trigger.signals.customer_quote"
    assert judge(TriggerKind.EXPLICIT_REQUEST, customer_quote="a human please")


def test_the_first_fitting_route_wins_and_a_default_catches_the_rest() -> None:
    routes = (
        Route(channel="C0LEGAL", topic="legal"),
        Route(channel="C0BILLING", team="billing"),
        Route(channel="C0ALL"),
    )
    assert choose_route(routes, topic="legal", labels=(), team="billing").channel == "C0LEGAL"
    assert choose_route(routes, topic=None, labels=("LEGAL",), team=None).channel == "C0LEGAL"
    assert choose_route(routes, topic=None, labels=(), team="billing").channel == "C0BILLING"
    assert choose_route(routes, topic=None, labels=(), team="ops").channel == "C0ALL"
    assert choose_route(routes[:2], topic=None, labels=(), team="ops") is None
