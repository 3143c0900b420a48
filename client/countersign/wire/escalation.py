"""An escalation as the agent reports it: the summary of the conversation and the trigger with
the signals it measured, and the verdict the server gave on it.

The server judges the trigger against thresholds its operators configured (contracts.escalation
on the server's side); here are only the values both sides read.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import Field, StringConstraints

from countersign.wire.base import Frozen

__all__ = [
    "Label",
    "Signals",
    "Summary",
    "Text",
    "ToolResult",
    "Trigger",
    "TriggerKind",
    "TriggerVerdict",
]

Text = Annotated[str, StringConstraints(min_length=1, max_length=2000)]
Label = Annotated[str, StringConstraints(min_length=1, max_length=100)]


class ToolResult(Frozen):
    """One tool call that matters, as the agent summarises it."""

    tool: Label
    result_summary: Text


class Summary(Frozen):
    """The conversation as the agent reports it: every part is the agent's words."""

    goal: Text  #: what the customer (or the person) wants
    steps_done: tuple[Text, ...] = Field(default=(), max_length=20)
    tool_results: tuple[ToolResult, ...] = Field(default=(), max_length=20)
    blocked_on: Text  #: what the agent cannot get past


class TriggerKind(StrEnum):
    EXPLICIT_REQUEST = "explicit_request"  #: the customer asked for a person
    REPEATED_FAILURE = "repeated_failure"  #: the same error, or no progress, for N turns
    NEGATIVE_SENTIMENT = "negative_sentiment"  #: negative or worsening sentiment
    RESERVED_TOPIC = "reserved_topic"  #: a topic only people handle (legal, safety...)
    LOW_CONFIDENCE = "low_confidence"  #: low confidence, corroborated by something measurable


class Signals(Frozen):
    """What the agent measured. Each trigger kind reads the signals it needs."""

    #: consecutive turns without progress
    failed_turns: int | None = Field(default=None, ge=0, le=10_000)
    #: the error codes of the recent turns, oldest first
    error_codes: tuple[Label, ...] = Field(default=(), max_length=100)
    #: sentiment scores from -1 (very negative) to 1 (very positive), oldest first
    sentiment_scores: tuple[Annotated[float, Field(ge=-1, le=1)], ...] = Field(
        default=(), max_length=100
    )
    #: topic labels of the conversation
    topic_labels: tuple[Label, ...] = Field(default=(), max_length=20)
    #: the agent's own confidence, from 0 to 1 (never sufficient alone)
    confidence: float | None = Field(default=None, ge=0, le=1)
    #: how many documents the agent's search found (0 corroborates low confidence)
    retrieval_hits: int | None = Field(default=None, ge=0)
    #: the customer's words asking for a person (explicit_request), quoted as theirs
    customer_quote: Text | None = None


class Trigger(Frozen):
    kind: TriggerKind
    signals: Signals = Signals()


class TriggerVerdict(Frozen):
    """Why the server agreed that a person must take over: shown in Slack as Countersign's words."""

    kind: TriggerKind
    #: the measured signal and the threshold it crossed, in Countersign's words alone: never a
    #: value the agent wrote (its error codes are shown apart, as the signals it measured)
    note: str
    topic: str | None = None  #: the reserved topic that matched, for routing
