"""The lifecycle is said in three places; they must agree."""

from __future__ import annotations

import re
from pathlib import Path

from store.lifecycle import FINAL, INITIAL, OUTCOME_STATUS, TRANSITIONS, Status, mermaid_diagram

README = Path(__file__).parents[2] / "README.md"


def test_readme_state_diagram_is_generated_from_the_transitions_table() -> None:
    text = README.read_text(encoding="utf-8")
    shown = re.search(r"```mermaid\n(stateDiagram-v2\n.*?)\n```", text, re.S)

    assert shown is not None, "README.md has no mermaid state diagram"
    assert shown.group(1) == mermaid_diagram()


def test_every_status_has_a_row_and_final_statuses_lead_nowhere() -> None:
    assert set(TRANSITIONS) == set(Status)
    assert all(not TRANSITIONS[status] for status in FINAL)
    assert Status.PENDING not in FINAL and Status.EXECUTING not in FINAL


def test_every_outcome_kind_ends_execution_in_a_final_status() -> None:
    assert set(OUTCOME_STATUS.values()) == TRANSITIONS[Status.EXECUTING]
    assert set(OUTCOME_STATUS.values()) <= FINAL


def test_every_status_is_reachable_from_an_initial_one() -> None:
    reached = set(INITIAL)
    frontier = list(INITIAL)
    while frontier:
        for target in TRANSITIONS[frontier.pop()]:
            if target not in reached:
                reached.add(target)
                frontier.append(target)
    assert reached == set(Status)
