"""The lifecycle is said in three places; they must agree."""

from __future__ import annotations

import re
from pathlib import Path

from store.lifecycle import (
    EFFECTS,
    FINAL,
    INITIAL,
    OUTCOME_STATUS,
    SETTLED,
    TRANSITIONS,
    Status,
    mermaid_diagram,
)

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


def test_every_outcome_kind_ends_execution_in_a_settled_status() -> None:
    assert set(OUTCOME_STATUS.values()) == TRANSITIONS[Status.EXECUTING]
    assert set(OUTCOME_STATUS.values()) <= SETTLED
    # only an uncertain outcome leads anywhere: to a person's resolution or a retry
    assert set(OUTCOME_STATUS.values()) - FINAL == {Status.NEEDS_RECONCILIATION}


def test_every_status_but_final_ones_has_effects_and_every_status_is_listed() -> None:
    assert set(EFFECTS) == set(Status)
    assert all(EFFECTS[status] for status in Status)


def test_every_status_is_reachable_from_an_initial_one() -> None:
    reached = set(INITIAL)
    frontier = list(INITIAL)
    while frontier:
        for target in TRANSITIONS[frontier.pop()]:
            if target not in reached:
                reached.add(target)
                frontier.append(target)
    assert reached == set(Status)
