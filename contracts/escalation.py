"""Escalating a conversation to people: the agent's context summary, its trigger, and the verdict.

An agent asks for a person to take over a conversation. It reports a summary with fixed parts
(goal, steps done, tool results, what is blocked) and a trigger with *measurable* signals
(counts, error codes, topic labels, scores). Countersign, not the agent, decides whether the
trigger holds, against thresholds the operators configured; a trigger that does not hold is
refused and nothing is stored.

An agent's self-reported confidence is never enough on its own: a model can be confidently
wrong and unconfidently right. A ``low_confidence`` trigger holds only when the confidence is
under the threshold *and* something measurable agrees (failed turns, error codes, or a search
that found nothing).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import timedelta
from typing import Final

from pydantic import Field

from contracts.authority import RefusalWords
from contracts.base import ContractViolation, FieldProblem
from contracts.frozen import Frozen

# what the agent sends and reads back is on the wire: one definition, the agent's side's
from countersign.wire.escalation import (
    Signals,
    Summary,
    ToolResult,
    Trigger,
    TriggerKind,
    TriggerVerdict,
)

__all__ = [
    "RESPONDING",
    "EscalationPolicy",
    "Route",
    "Signals",
    "Summary",
    "ToolResult",
    "Trigger",
    "TriggerKind",
    "TriggerVerdict",
    "agent_verdict",
    "choose_route",
    "judge_trigger",
]


class EscalationPolicy(Frozen):
    """The thresholds operators configure (``[escalation]`` in countersign.toml)."""

    #: repeated_failure holds from this many failed turns (or the same error this often)
    repeated_failure_turns: int = Field(default=3, ge=1)
    #: negative_sentiment holds when the latest score is at or below this
    sentiment_threshold: float = Field(default=-0.5, ge=-1, le=1)
    #: topics only people handle; compared case-insensitively with the topic labels
    reserved_topics: tuple[str, ...] = ()
    #: low_confidence needs a confidence below this (and a corroborating signal)
    confidence_threshold: float = Field(default=0.5, ge=0, le=1)
    #: unclaimed escalations are announced again after this long
    reannounce_after: timedelta = timedelta(minutes=15)
    #: how many times an unclaimed escalation is announced again (only the first one @here's)
    reannounce_max: int = Field(default=3, ge=0, le=100)
    #: roles whose members may take, hand back and resolve escalations; required with routes
    #: (bot/settings/escalation.py), and empty means nobody (fail closed)
    responders: tuple[str, ...] = ()
    routes: tuple[Route, ...] = ()


class Route(Frozen):
    """Where escalations go: by topic, by team, or (neither given) everything else."""

    channel: str
    topic: str | None = None
    team: str | None = None


#: What the agent is told of a verdict: which trigger held, never the threshold it crossed.
_AGENT_NOTES: dict[TriggerKind, str] = {
    TriggerKind.EXPLICIT_REQUEST: "the customer asked for a person",
    TriggerKind.REPEATED_FAILURE: "repeated failures reached the configured threshold",
    TriggerKind.NEGATIVE_SENTIMENT: "the sentiment reached the configured threshold",
    TriggerKind.RESERVED_TOPIC: "the topic is reserved for people",
    TriggerKind.LOW_CONFIDENCE: "low confidence, corroborated by a measured signal",
}


def agent_verdict(verdict: TriggerVerdict) -> TriggerVerdict:
    """The verdict as the agent reads it: the trigger that held (and the reserved topic it
    named), without the configured thresholds the people in Slack see."""
    return TriggerVerdict(kind=verdict.kind, note=_AGENT_NOTES[verdict.kind], topic=verdict.topic)


def judge_trigger(trigger: Trigger, policy: EscalationPolicy) -> TriggerVerdict:
    """The verdict when the signals cross the configured thresholds; ContractViolation naming the
    field and the threshold otherwise."""
    signals = trigger.signals
    kind = trigger.kind
    where = "trigger.signals"
    if kind is TriggerKind.EXPLICIT_REQUEST:
        if signals.customer_quote is None:
            raise _refused(
                f"{where}.customer_quote",
                "explicit_request needs the customer's words asking for a person",
            )
        return TriggerVerdict(kind=kind, note="the customer asked for a person")
    if kind is TriggerKind.REPEATED_FAILURE:
        return _repeated_failure(signals, policy, where)
    if kind is TriggerKind.NEGATIVE_SENTIMENT:
        return _negative_sentiment(signals, policy, where)
    if kind is TriggerKind.RESERVED_TOPIC:
        reserved = {topic.casefold(): topic for topic in policy.reserved_topics}
        matched = [
            reserved[label.casefold()]
            for label in signals.topic_labels
            if label.casefold() in reserved
        ]
        if not matched:
            raise _refused(
                f"{where}.topic_labels",
                f"none of {list(signals.topic_labels)!r} is a reserved topic (configured: "
                f"{sorted(policy.reserved_topics)!r})",
            )
        return TriggerVerdict(
            kind=kind, note=f"topic {matched[0]!r} is reserved for people", topic=matched[0]
        )
    return _low_confidence(signals, policy, where)


def _repeated_failure(signals: Signals, policy: EscalationPolicy, where: str) -> TriggerVerdict:
    need = policy.repeated_failure_turns
    kind = TriggerKind.REPEATED_FAILURE
    if signals.failed_turns is not None and signals.failed_turns >= need:
        return TriggerVerdict(
            kind=kind, note=f"{signals.failed_turns} turns without progress (threshold {need})"
        )
    if signals.error_codes:
        times = Counter(signals.error_codes).most_common(1)[0][1]
        if times >= need:
            return TriggerVerdict(
                kind=kind, note=f"the same error code {times} times (threshold {need})"
            )
    raise _refused(
        f"{where}.failed_turns",
        f"repeated_failure needs at least {need} failed turns, or one error code at least "
        f"{need} times in error_codes (got failed_turns {signals.failed_turns!r}, "
        f"error_codes {list(signals.error_codes)!r}; threshold repeated_failure_turns = {need})",
    )


def _negative_sentiment(signals: Signals, policy: EscalationPolicy, where: str) -> TriggerVerdict:
    scores = signals.sentiment_scores
    threshold = policy.sentiment_threshold
    kind = TriggerKind.NEGATIVE_SENTIMENT
    if scores and scores[-1] <= threshold:
        return TriggerVerdict(kind=kind, note=f"sentiment {scores[-1]:g} (threshold {threshold:g})")
    last3 = scores[-3:]
    if len(last3) == 3 and last3[0] > last3[1] > last3[2] and last3[2] < 0:
        shown = ", ".join(f"{s:g}" for s in last3)
        return TriggerVerdict(kind=kind, note=f"sentiment worsening: {shown}")
    raise _refused(
        f"{where}.sentiment_scores",
        f"negative_sentiment needs a latest score at or below {threshold:g}, or three scores "
        f"falling below 0 (got {list(scores)!r}; threshold sentiment_threshold = {threshold:g})",
    )


def _low_confidence(signals: Signals, policy: EscalationPolicy, where: str) -> TriggerVerdict:
    threshold = policy.confidence_threshold
    if signals.confidence is None or signals.confidence >= threshold:
        raise _refused(
            f"{where}.confidence",
            f"low_confidence needs a confidence below {threshold:g} (got "
            f"{signals.confidence!r}; threshold confidence_threshold = {threshold:g})",
        )
    corroboration = _corroboration(signals)
    if corroboration is None:
        raise _refused(
            f"{where}.confidence",
            "the agent's own confidence alone never suffices: add a measurable signal that "
            "agrees (failed_turns of 1 or more, error_codes, or retrieval_hits = 0)",
        )
    return TriggerVerdict(
        kind=TriggerKind.LOW_CONFIDENCE,
        note=f"confidence {signals.confidence:g} (threshold {threshold:g}) and {corroboration}",
    )


def _corroboration(signals: Signals) -> str | None:
    """The measured signal that agrees with a low confidence, in Countersign's words."""
    if signals.failed_turns:
        return f"{signals.failed_turns} failed turn(s)"
    if signals.error_codes:
        return "an error code"
    if signals.retrieval_hits == 0:
        return "a search that found nothing"
    return None


def choose_route(
    routes: Sequence[Route], *, topic: str | None, labels: Sequence[str], team: str | None
) -> Route | None:
    """The first route whose topic is the matched reserved topic (or one of the labels), or whose
    team is ``team``, or that names neither (the default); None when no route fits."""
    topics = {label.casefold() for label in labels}
    if topic is not None:
        topics.add(topic.casefold())
    for route in routes:
        if route.topic is not None and route.topic.casefold() in topics:
            return route
        if route.team is not None and team is not None and route.team == team:
            return route
        if route.topic is None and route.team is None:
            return route
    return None


#: An escalation's words for the checks of any decision (bot/flow/deciders.py): Take it, Hand
#: back and Resolve are refused for the same reasons an approval is, said of escalations.
RESPONDING: Final = RefusalWords(
    bot="bots and apps cannot take part in escalations",
    deleted="deactivated accounts cannot take part in escalations",
    team="people from another workspace cannot handle escalations here",
    requester="you are the person accountable for this conversation; someone else has to "
    "handle its escalation",
    owner="you own the agent that escalated; someone outside that chain has to handle it",
    guest="guests cannot handle escalations",
    no_role="no responder role is configured (escalation.responders), so nobody can handle it",
    role="escalations are handled by the role {needed}, which you do not hold",
    unknown_agent="agent {agent!r} is no longer configured, so its owners cannot be told apart "
    "from other responders; nobody can handle its escalations",
)


def _refused(field: str, message: str) -> ContractViolation:
    return ContractViolation([FieldProblem(field=field, message=message)])


EscalationPolicy.model_rebuild()
