"""The agent API's wire format: the bodies agents send and the documents they read back.

One definition for the server and the agents' client, which ships it (countersign.wire.api): the
server answers with these models and the client parses its answers into the same ones. The server
builds them from stored rows (its ``.of(...)`` constructors live beside its routes).
"""

from __future__ import annotations

from countersign.wire.api import (
    SLACK_USER_ID,
    DecisionOut,
    EscalationBody,
    EscalationOut,
    EscalationStatus,
    PolicyOut,
    ProblemOut,
    ProposalOut,
    ProposalStatus,
    SubmitBody,
)

__all__ = [
    "SLACK_USER_ID",
    "DecisionOut",
    "EscalationBody",
    "EscalationOut",
    "EscalationStatus",
    "PolicyOut",
    "ProblemOut",
    "ProposalOut",
    "ProposalStatus",
    "SubmitBody",
]
