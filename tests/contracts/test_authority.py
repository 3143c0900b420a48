"""Separation of duties, including by proxy: who may never decide, whatever their roles."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contracts.authority import (
    COVERING,
    ApproverProfile,
    DecisionChain,
    RefusalWords,
    refusal_reason,
)

TEAM = "T0HOME"
ROLES = {"finance": frozenset({"U1", "U2", "U3", "U4", "U5"})}
CHAIN = DecisionChain(requested_by="U1", agent_owners=("U2",), editors=("U3",), granted_by="U5")


def _refusal(profile: ApproverProfile | None, **changes: object) -> str | None:
    arguments: dict[str, object] = {
        "approver": profile,
        "chain": CHAIN,
        "approver_roles": ("finance",),
        "roles": ROLES,
        "allowed_teams": (TEAM,),
        "allow_guests": False,
    }
    arguments.update(changes)
    return refusal_reason(**arguments)  # type: ignore[arg-type]


def person(user_id: str, **flags: object) -> ApproverProfile:
    return ApproverProfile(user_id=user_id, team_id=flags.pop("team_id", TEAM), **flags)  # type: ignore[arg-type]


def test_a_role_holder_outside_the_chain_may_decide() -> None:
    assert _refusal(person("U4")) is None


@pytest.mark.parametrize(
    ("profile", "expected"),
    [
        (None, "could not check who you are"),
        (person("U4", is_bot=True), "bots and apps"),
        (person("U4", deleted=True), "deactivated"),
        (person("U4", team_id="T0OTHER"), "another workspace"),
        (person("U4", team_id=None), "Slack did not say which workspace you are in"),
        (person("U1"), "accountable"),
        (person("U2"), "own the agent"),
        (person("U3"), "edited"),
        (person("U5"), "granted the standing rule"),
        (person("U4", is_guest=True), "guests"),
        (person("U9"), "needs the role finance"),
    ],
)
def test_each_forbidden_clicker_is_refused_with_the_reason(
    profile: ApproverProfile | None, expected: str
) -> None:
    reason = _refusal(profile)
    assert reason is not None and expected in reason


def test_a_workspace_reads_as_a_sentence_whether_slack_named_it_or_not() -> None:
    """A profile without a workspace read "your workspace is unknown is not configured"."""
    assert _refusal(person("U4", team_id=None)) == (
        "people from another workspace cannot decide proposals here "
        "(Slack did not say which workspace you are in)"
    )
    assert _refusal(person("U4", team_id="T0OTHER")) == (
        "people from another workspace cannot decide proposals here "
        "(your workspace T0OTHER is not configured)"
    )
    assert _refusal(person("U4", team_id=None), words=COVERING) == (
        "the granter is from a workspace whose people cannot decide proposals here "
        "(Slack did not say which workspace the granter is in)"
    )


def test_a_granter_without_an_approver_role_is_said_in_the_granters_terms() -> None:
    """A standing rule's granter who holds none of the rule's approver roles, in the ask's note
    (not "deciding this needs the role finance, which you do not hold")."""
    assert _refusal(person("U9"), words=COVERING) == (
        "the granter does not hold a role that approves it (finance)"
    )


def test_a_rule_may_let_guests_holding_the_role_decide() -> None:
    assert _refusal(person("U4", is_guest=True), allow_guests=True) is None
    assert _refusal(person("U9", is_guest=True), allow_guests=True) is not None


def test_a_role_that_is_not_configured_grants_nothing() -> None:
    assert _refusal(person("U4"), approver_roles=("treasury",)) is not None
    assert _refusal(person("U4"), approver_roles=()) is not None


users = st.sampled_from(["U1", "U2", "U3", "U4", "U5", "U6", "U7"])


@given(
    approver=users,
    requested_by=users,
    owners=st.lists(users, max_size=2),
    editors=st.lists(users, max_size=2),
    granted_by=st.none() | users,
    team=st.sampled_from([TEAM, "T0OTHER", None]),
    allowed=st.lists(st.sampled_from([TEAM, "T0OTHER"]), max_size=2),
    is_bot=st.booleans(),
    deleted=st.booleans(),
    is_guest=st.booleans(),
    allow_guests=st.booleans(),
    members=st.frozensets(users),
)
def test_no_combination_lets_a_forbidden_person_decide(
    approver: str,
    requested_by: str,
    owners: list[str],
    editors: list[str],
    granted_by: str | None,
    team: str | None,
    allowed: list[str],
    is_bot: bool,
    deleted: bool,
    is_guest: bool,
    allow_guests: bool,
    members: frozenset[str],
) -> None:
    reason = refusal_reason(
        approver=ApproverProfile(
            user_id=approver, team_id=team, is_bot=is_bot, deleted=deleted, is_guest=is_guest
        ),
        chain=DecisionChain(
            requested_by=requested_by,
            agent_owners=tuple(owners),
            editors=tuple(editors),
            granted_by=granted_by,
        ),
        approver_roles=("finance",),
        roles={"finance": members},
        allowed_teams=tuple(allowed),
        allow_guests=allow_guests,
    )

    forbidden = (
        approver in (requested_by, *owners, *editors, granted_by)
        or is_bot
        or deleted
        or team not in allowed
        or (is_guest and not allow_guests)
        or approver not in members
    )
    assert (reason is not None) == forbidden


def test_without_a_role_asked_every_other_check_still_holds() -> None:
    # delegating asks no role (a person's own authority), never less of the person
    assert _refusal(person("U9"), approver_roles=None) is None
    assert "bots and apps" in str(_refusal(person("U9", is_bot=True), approver_roles=None))
    assert "accountable" in str(_refusal(person("U1"), approver_roles=None))
    assert _refusal(person("U9"), approver_roles=()) is not None  # no roles: nobody


def test_the_words_change_and_the_checks_do_not() -> None:
    words = RefusalWords(guest="guests cannot handle escalations", role="held by {needed} only")

    assert _refusal(person("U4", is_guest=True), words=words) == words.guest
    assert _refusal(person("U9"), words=words) == "held by finance only"
    assert _refusal(person("U4"), words=words) is None
