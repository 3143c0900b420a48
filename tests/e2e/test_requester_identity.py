"""Who asked is verified, not asserted: an agent names as requested_by only people it acts for
(acts_for: people, user groups, roles; else its owners), or acts for one person under a
delegation made in Slack. Every test plays the agent (the attacker) over HTTP."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.slack.local import LocalUser
from store.delegations import token_hash
from tests.e2e.harness import (
    AGENT_TOKEN,
    APPROVER,
    APPROVER_2,
    FINANCE_GROUP,
    OTHER_AGENT_TOKEN,
    REQUESTER,
    SIGNING_SECRET,
    Countersign,
    eventually,
    replace_rule,
    running_countersign,
)
from tests.e2e.test_escalations import click as click_escalation
from tests.e2e.test_escalations import escalation, escalation_rows
from tests.e2e.test_escalations import post as post_escalation
from tests.e2e.test_escalations import posted as posted_escalation
from tests.e2e.test_workspace import home_click, open_home
from tests.slack_requests import signed_headers, slash_command_body

DANA = REQUESTER  #: runs the agent, and holds the finance role that approves campaigns
ALEX = APPROVER  #: another finance member, whom Dana's agent would like to name
AGENT_PEOPLE = "S0AGENTPEOPLE"  #: a user group the agent may act for
GROUPIE = "U0GROUPIE"

CAMPAIGN: dict[str, Any] = {
    "operation": "crm.send_campaign",
    "request": {"segment": "beta", "template": "tmpl_hi", "recipients": 12},
    "run_id": "run-1",
}


def campaign(requested_by: str | None, run: str = "run-1") -> dict[str, Any]:
    body = {**CAMPAIGN, "run_id": run}
    if requested_by is not None:
        body["requested_by"] = requested_by
    return body


@pytest.fixture
async def cs(tmp_path: Path) -> AsyncIterator[Countersign]:
    # Dana's agent: it may act for Dana only, and people may delegate to it from Slack
    settings = {"support-bot": {"acts_for": [DANA], "delegation": True}}
    async with running_countersign(tmp_path, agent_settings=settings) as running:
        yield running


async def slash(cs: Countersign, user: str, text: str) -> dict[str, Any]:
    body = slash_command_body(user_id=user, command="/countersign", text=text)
    answer = await cs.request(
        "POST", "/slack/events", data=body.encode(), headers=signed_headers(SIGNING_SECRET, body)
    )
    assert answer.status == 200, answer.body
    answered: dict[str, Any] = answer.json()
    return answered


async def delegate(cs: Countersign, user: str, text: str = "support-bot") -> tuple[str, str]:
    """``user`` runs /countersign delegate; the token shown to them and the delegation id."""
    answered = await slash(cs, user, f"delegate {text}")
    shown = json.dumps(answered["blocks"])
    token = re.search(r"csd_[A-Za-z0-9_-]+", shown)
    delegation = re.search(r"dl_[a-z0-9]+", shown)
    assert token and delegation, answered
    assert token.group(0) not in answered["text"]  # never in the notification's fallback text
    return token.group(0), delegation.group(0)


async def nothing_stored_or_posted(cs: Countersign) -> None:
    assert await cs.proposal_count() == 0
    assert await cs.store.audit_log() == [] or all(
        e.event.startswith("delegation_") for e in await cs.store.audit_log()
    )
    assert cs.slack.calls("chat.postMessage") == []


async def refused_click(cs: Countersign, user: str, proposal_id: str) -> str:
    await cs.click(user, "approve", proposal_id)

    async def refusal() -> Any:
        found = cs.slack.ephemeral(user)
        return found[-1] if found else None

    text: str = (await eventually(refusal)).text
    assert (await cs.store.get_proposal(proposal_id)).status == "pending"
    assert cs.target.executions() == []
    return text


# --- acts_for ------------------------------------------------------------------------------------


async def test_dana_s_agent_naming_alex_is_refused_and_nothing_is_stored_or_posted(
    cs: Countersign,
) -> None:
    status, problem = await cs.submit(campaign(ALEX))

    assert status == 403
    assert [e["field"] for e in problem["errors"]] == ["requested_by"]
    message = problem["errors"][0]["message"]
    assert f"may not act for {ALEX}" in message and DANA in message  # what it may name
    await cs.settled()
    await nothing_stored_or_posted(cs)


async def test_the_refusal_is_problem_json(cs: Countersign) -> None:
    answer = await cs.request(
        "POST",
        "/v1/proposals",
        data=json.dumps(campaign(ALEX)).encode(),
        headers={"Authorization": f"Bearer {AGENT_TOKEN}", "Content-Type": "application/json"},
    )
    assert answer.status == 403
    assert answer.headers["Content-Type"].startswith("application/problem+json")


async def test_the_person_the_agent_acts_for_is_then_the_requester_and_cannot_approve(
    cs: Countersign,
) -> None:
    status, created = await cs.submit(campaign(DANA))
    assert status == 201 and created["requested_by"] == DANA
    await cs.posted(created["id"])

    assert "accountable" in await refused_click(cs, DANA, created["id"])


async def test_a_missing_requested_by_without_a_delegation_is_422_naming_it(
    cs: Countersign,
) -> None:
    status, problem = await cs.submit(campaign(None))

    assert status == 422
    assert [e["field"] for e in problem["errors"]] == ["requested_by"]
    assert DANA in problem["errors"][0]["message"]
    await nothing_stored_or_posted(cs)


async def test_acts_for_a_user_group_admits_its_members_only_and_they_cannot_approve(
    tmp_path: Path,
) -> None:
    settings = {"support-bot": {"acts_for": [AGENT_PEOPLE]}}
    async with running_countersign(tmp_path, agent_settings=settings) as cs:
        cs.slack.set_usergroup(AGENT_PEOPLE, [GROUPIE])
        cs.slack.set_usergroup(FINANCE_GROUP, [GROUPIE])  # GROUPIE may approve campaigns

        status, problem = await cs.submit(campaign(DANA, run="dana"))
        assert status == 403 and problem["errors"][0]["field"] == "requested_by"
        assert f"members of user group {AGENT_PEOPLE}" in problem["errors"][0]["message"]

        status, created = await cs.submit(campaign(GROUPIE, run="groupie"))
        assert status == 201
        await cs.posted(created["id"])
        assert "accountable" in await refused_click(cs, GROUPIE, created["id"])


async def test_acts_for_a_user_group_slack_cannot_list_refuses_everyone(tmp_path: Path) -> None:
    settings = {"support-bot": {"acts_for": [AGENT_PEOPLE]}}
    async with running_countersign(tmp_path, agent_settings=settings) as cs:
        cs.slack.usergroups_allowed = False  # fail closed: the group adds nobody

        status, problem = await cs.submit(campaign(GROUPIE))

        assert status == 403 and problem["errors"][0]["field"] == "requested_by"
        assert await cs.proposal_count() == 0


async def test_acts_for_a_role_admits_its_holders_only_and_they_cannot_approve(
    tmp_path: Path,
) -> None:
    settings = {"support-bot": {"acts_for": ["role:support"]}}  # support = [DANA]
    async with running_countersign(tmp_path, agent_settings=settings) as cs:
        status, problem = await cs.submit(campaign(ALEX, run="alex"))
        assert status == 403 and "holders of role 'support'" in problem["errors"][0]["message"]

        status, created = await cs.submit(campaign(DANA, run="dana"))
        assert status == 201
        await cs.posted(created["id"])
        # Dana holds finance too, but she is the accountable human
        assert "accountable" in await refused_click(cs, DANA, created["id"])


async def test_without_acts_for_an_agent_may_name_only_its_owners(tmp_path: Path) -> None:
    settings = {"support-bot": {"acts_for": [], "owners": [APPROVER_2]}}
    async with running_countersign(tmp_path, agent_settings=settings) as cs:
        status, problem = await cs.submit(campaign(DANA, run="dana"))
        assert status == 403 and f"its owners {APPROVER_2}" in problem["errors"][0]["message"]

        status, created = await cs.submit(campaign(APPROVER_2, run="owner"))
        assert status == 201
        await cs.posted(created["id"])
        assert "accountable" in await refused_click(cs, APPROVER_2, created["id"])


async def test_an_escalation_naming_someone_the_agent_does_not_act_for_is_refused(
    cs: Countersign,
) -> None:
    status, problem = await post_escalation(cs, escalation(requested_by=ALEX))

    assert status == 403
    assert [e["field"] for e in problem["errors"]] == ["requested_by"]
    assert await escalation_rows(cs) == 0
    assert await cs.store.audit_log() == []
    assert cs.slack.calls("chat.postMessage") == []


async def test_an_escalation_for_a_customer_only_needs_no_requester(cs: Countersign) -> None:
    status, created = await post_escalation(cs, escalation(requested_by=None))

    assert status == 201, created
    assert created["requested_by"] is None


# --- delegation from Slack -----------------------------------------------------------------------


async def test_a_delegated_proposal_names_the_delegating_person_who_cannot_approve_it(
    cs: Countersign,
) -> None:
    token, delegation_id = await delegate(cs, ALEX)  # Alex is not in the agent's acts_for

    status, created = await cs.submit(campaign(None), token=token)

    assert status == 201, created
    assert created["agent"] == "support-bot" and created["requested_by"] == ALEX
    await cs.posted(created["id"])
    assert "accountable" in await refused_click(cs, ALEX, created["id"])
    [submitted] = [e for e in await cs.store.audit_log(created["id"]) if e.event == "submitted"]
    assert submitted.actor == "support-bot"
    assert (submitted.detail["delegation_id"], submitted.detail["requested_by"]) == (
        delegation_id,
        ALEX,
    )
    assert (await cs.store.get_proposal(created["id"])).delegation_id == delegation_id
    # another approver decides it
    await cs.click(APPROVER_2, "approve", created["id"])
    _, final = await cs.read(created["id"], wait=10, token=token)
    assert final["status"] == "succeeded"


async def test_a_delegation_token_with_another_requested_by_is_refused(cs: Countersign) -> None:
    token, _ = await delegate(cs, ALEX)

    status, problem = await cs.submit(campaign(DANA), token=token)  # Dana is in acts_for

    assert status == 403
    assert [e["field"] for e in problem["errors"]] == ["requested_by"]
    assert f"acts for {ALEX} only" in problem["errors"][0]["message"]
    assert await cs.proposal_count() == 0
    assert cs.slack.calls("chat.postMessage") == []


async def test_the_same_requested_by_as_the_delegation_is_accepted(cs: Countersign) -> None:
    token, _ = await delegate(cs, ALEX)

    status, created = await cs.submit(campaign(ALEX), token=token)

    assert status == 201 and created["requested_by"] == ALEX


async def test_only_the_hash_of_a_delegation_token_is_stored(cs: Countersign) -> None:
    token, delegation_id = await delegate(cs, ALEX)

    found = await cs.store.delegations().delegation_for_token(token_hash(token))
    assert found is not None and found.id == delegation_id and found.person == ALEX
    await cs.store.close()  # everything on disk
    assert token.encode() not in cs.db_path.read_bytes()
    granted = [e for e in await _audit(cs) if e.event == "delegation_granted"]
    assert [e.actor for e in granted] == [ALEX]


async def _audit(cs: Countersign) -> list[Any]:
    from store.sqlite import SqliteStore

    store = await SqliteStore.open(cs.db_path)
    try:
        return await store.audit_log()
    finally:
        await store.close()


async def test_a_revoked_delegation_is_refused_with_401(cs: Countersign) -> None:
    token, delegation_id = await delegate(cs, ALEX)
    # someone else cannot revoke it (and learns nothing about it)
    other = await slash(cs, DANA, f"revoke-delegation {delegation_id}")
    assert "no delegation" in other["text"]
    assert (await cs.submit(campaign(None, run="before"), token=token))[0] == 201

    answered = await slash(cs, ALEX, f"revoke-delegation {delegation_id}")
    assert "revoked" in answered["text"]

    answer = await cs.request(
        "POST",
        "/v1/proposals",
        data=json.dumps(campaign(None, run="after")).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    assert answer.status == 401
    assert answer.headers["Content-Type"].startswith("application/problem+json")
    assert "revoked" in answer.json()["detail"]
    assert await cs.proposal_count() == 1
    events = [e.event for e in await cs.store.audit_log(delegation_id)]
    assert events == ["delegation_granted", "delegation_revoked"]


async def test_an_expired_delegation_is_refused_with_401(cs: Countersign) -> None:
    token, _ = await delegate(cs, ALEX)  # the default: one hour
    cs.clock.advance(timedelta(hours=1, seconds=1))

    status, problem = await cs.submit(campaign(None), token=token)

    assert status == 401 and "expired" in problem["detail"]
    assert await cs.proposal_count() == 0


async def test_an_unknown_delegation_token_is_refused_with_401(cs: Countersign) -> None:
    status, _ = await cs.submit(campaign(None), token="csd_" + "x" * 40)

    assert status == 401
    assert await cs.proposal_count() == 0


async def test_a_delegation_lasts_what_was_asked_within_the_maximum(cs: Countersign) -> None:
    too_long = await slash(cs, ALEX, "delegate support-bot for 48h")
    assert "at most 1 day" in too_long["text"]  # as people say it, not "1d"
    assert await cs.store.delegations().delegations_of(ALEX, now=cs.clock()) == []

    await delegate(cs, ALEX, "support-bot for 8h")

    [delegation] = await cs.store.delegations().delegations_of(ALEX, now=cs.clock())
    assert delegation.expires_at - delegation.created_at == timedelta(hours=8)


async def test_an_agent_without_delegation_refuses_delegate(tmp_path: Path) -> None:
    async with running_countersign(tmp_path) as cs:
        answered = await slash(cs, ALEX, "delegate support-bot")

        assert "does not accept delegations" in answered["text"]
        assert await cs.store.delegations().delegations_of(ALEX, now=cs.clock()) == []


async def test_delegations_are_listed_and_revoked_on_the_home_tab(cs: Countersign) -> None:
    token, delegation_id = await delegate(cs, ALEX)
    listed = await slash(cs, ALEX, "delegations")
    assert delegation_id in json.dumps(listed["blocks"])

    view = await open_home(cs, ALEX)
    buttons = [
        block["accessory"]
        for block in view["blocks"]
        if block.get("block_id") == f"delegation-{delegation_id}"
    ]
    assert [b["action_id"] for b in buttons] == ["delegation_revoke"]

    assert await home_click(cs, ALEX, "delegation_revoke", delegation_id) == 200

    async def revoked() -> bool:
        found = await cs.store.delegations().get_delegation(delegation_id)
        return found.revoked_by == ALEX

    await eventually(revoked)
    assert (await cs.submit(campaign(None), token=token))[0] == 401


async def test_the_requester_roles_condition_sees_the_verified_requester(tmp_path: Path) -> None:
    # tagging runs automatically for support people (Dana) and asks finance for anyone else
    rules = replace_rule(
        "small-tags",
        """
        [[policy]]
        id = "support-tags"
        operation = "crm.tag_customers"
        requester_roles = ["support"]
        when = [{ field = "customers", lte = 100 }]
        decision = "auto"

        [[policy]]
        id = "other-tags"
        operation = "crm.tag_customers"
        decision = "ask"
        approvers = ["finance"]
        channel = "C0TAGS"
        expires_after = "1h"
        """,
    )
    settings = {"support-bot": {"acts_for": [ALEX], "delegation": True}}
    async with running_countersign(tmp_path, agent_settings=settings, config_edit=rules) as cs:
        tagging = {
            "operation": "crm.tag_customers",
            "request": {"segment": "vip", "tag": "gold", "customers": 5},
        }
        # the agent acts for Alex; naming Dana (support) to make it run by itself is refused
        status, problem = await cs.submit({**tagging, "requested_by": DANA})
        assert status == 403 and problem["errors"][0]["field"] == "requested_by"
        # with Alex's delegation it cannot name Dana either
        alex_token, _ = await delegate(cs, ALEX)
        status, _ = await cs.submit({**tagging, "requested_by": DANA}, token=alex_token)
        assert status == 403
        status, asked = await cs.submit({**tagging, "run_id": "alex"}, token=alex_token)
        assert status == 201 and asked["policy"]["rule_id"] == "other-tags"
        assert asked["status"] == "pending"
        # Dana's own delegation: she holds support, so it runs by itself
        dana_token, _ = await delegate(cs, DANA)
        status, ran = await cs.submit({**tagging, "run_id": "dana"}, token=dana_token)
        assert status == 201 and ran["policy"]["rule_id"] == "support-tags"
        assert ran["requested_by"] == DANA


# --- the agent's owners, always ------------------------------------------------------------------


def without_ops_bot(text: str) -> str:
    start = text.index("[agents.ops-bot]\n")
    end = text.index("\n[", start)
    return text[:start] + text[end + 1 :]


async def test_once_its_agent_is_removed_nobody_decides_a_proposal(tmp_path: Path) -> None:
    # ops-bot is owned by Alex, who holds finance; its proposal waits when ops-bot is removed
    owned = {"ops-bot": {"owners": [ALEX]}}
    async with running_countersign(tmp_path, agent_settings=owned) as cs:
        status, created = await cs.submit(campaign(DANA), token=OTHER_AGENT_TOKEN)
        assert status == 201
        await cs.posted(created["id"])

    async with running_countersign(tmp_path, config_edit=without_ops_bot) as cs:
        # Alex's ownership is no longer written anywhere: he must not become an approver
        assert "no longer configured" in await refused_click(cs, ALEX, created["id"])


async def test_once_its_agent_is_removed_its_former_owner_cannot_take_its_escalation(
    tmp_path: Path,
) -> None:
    # ops-bot is owned by Alex, who holds finance, the responder role; its escalation stays open
    owned = {"ops-bot": {"owners": [ALEX]}}
    async with running_countersign(tmp_path, agent_settings=owned) as cs:
        status, created = await post_escalation(cs, escalation(), token=OTHER_AGENT_TOKEN)
        assert status == 201, created
        await posted_escalation(cs, created["id"])

    async with running_countersign(tmp_path, config_edit=without_ops_bot) as cs:
        # Alex's ownership is no longer written anywhere: he must not become a responder
        assert await click_escalation(cs, ALEX, "escalation_take", created["id"]) == 200

        async def told() -> Any:
            found = cs.slack.ephemeral(ALEX)
            return found[-1] if found else None

        assert "no longer configured" in (await eventually(told)).text
        await cs.settled()
        log = await cs.store.escalations().escalation_log(created["id"])
        assert "take_refused" in [e.event for e in log] and "taken" not in [e.event for e in log]
        found = await cs.store.escalations().get_escalation(created["id"])
        assert (found.status.value, found.owner) == ("open", None)


async def test_a_delegation_stops_working_when_its_agent_no_longer_accepts_delegations(
    tmp_path: Path,
) -> None:
    settings = {"support-bot": {"acts_for": [DANA], "delegation": True}}
    async with running_countersign(tmp_path, agent_settings=settings) as cs:
        token, _ = await delegate(cs, ALEX)

    async with running_countersign(tmp_path) as cs:  # delegation = false again
        status, problem = await cs.submit(campaign(None), token=token)

        assert status == 401 and "no longer accepts delegations" in problem["detail"]
        assert await cs.proposal_count() == 0


@pytest.mark.parametrize(
    ("profile", "expected"),
    [
        ({"is_bot": True}, "bots"),
        ({"deleted": True}, "deactivated"),
        ({"is_restricted": True}, "guests"),
        ({"team_id": "T0ELSEWHERE"}, "another workspace"),
    ],
)
async def test_only_full_members_of_the_workspace_may_delegate(
    cs: Countersign, profile: dict[str, Any], expected: str
) -> None:
    cs.slack.add_user(LocalUser(id=ALEX, **profile))

    answered = await slash(cs, ALEX, "delegate support-bot")

    assert expected in answered["text"]
    assert await cs.store.delegations().delegations_of(ALEX, now=cs.clock()) == []


async def test_one_person_s_delegated_run_never_replays_as_another_s(cs: Countersign) -> None:
    alex, _ = await delegate(cs, ALEX)
    dana, _ = await delegate(cs, DANA)
    status, first = await cs.submit(campaign(None), token=alex)
    assert status == 201

    # the same run id and request, under Dana's delegation: not Alex's proposal handed back
    status, answer = await cs.submit(campaign(None), token=dana)

    assert status == 422 and [e["field"] for e in answer["errors"]] == ["run_id"]
    assert await cs.proposal_count() == 1
    assert (await cs.store.get_proposal(first["id"])).requested_by == ALEX


async def test_a_delegation_revoked_while_its_proposal_is_being_stored_is_refused_with_401(
    cs: Countersign, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race: the token is checked, the person revokes it, then the proposal is inserted.
    The database refuses the insert; the agent is told 401 (not a 500) and nothing is stored."""
    token, delegation_id = await delegate(cs, ALEX)
    create = cs.store.create_proposal

    async def revoked_meanwhile(new: Any, **options: Any) -> Any:
        assert "revoked" in (await slash(cs, ALEX, f"revoke-delegation {delegation_id}"))["text"]
        return await create(new, **options)

    monkeypatch.setattr(cs.store, "create_proposal", revoked_meanwhile)

    status, problem = await cs.submit(campaign(None), token=token)

    assert status == 401, problem
    assert "revoked" in problem["detail"]
    assert await cs.proposal_count() == 0
