"""LangGraph and LangChain agents whose interrupts people answer in Slack, through Countersign
(``pip install 'countersign-client[langgraph]'``).

- :class:`Reviewer` runs a graph and answers each interrupt while the run waits:
  ``HumanInTheLoopMiddleware``'s requests (approve, edit, reject) and :func:`ask_people`'s.
- :class:`ParkedGraph` parks the run at the interrupt instead (the checkpointer keeps it) and
  resumes it when Countersign's callback brings the decision, in any process, exactly once.
- :func:`ask_people` and :func:`approval` ask from a node of one's own graph.
"""

from __future__ import annotations

try:
    import langgraph.types  # noqa: F401
except ImportError as missing:  # pragma: no cover - depends on the installation
    raise ImportError(
        "countersign.langgraph needs LangGraph: pip install 'countersign-client[langgraph]'"
    ) from missing

from countersign.langgraph.asks import TOOL_CALL, Ask, asks_of, decision_of, tool_call_request
from countersign.langgraph.park import ParkedGraph, Run
from countersign.langgraph.parking import Parking
from countersign.langgraph.review import Reviewer, Verdict, approval, ask_people

__all__ = [
    "TOOL_CALL",
    "Ask",
    "ParkedGraph",
    "Parking",
    "Reviewer",
    "Run",
    "Verdict",
    "approval",
    "ask_people",
    "asks_of",
    "decision_of",
    "tool_call_request",
]
