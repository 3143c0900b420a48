"""Standing rules over HTTP: "Approve + allow similar…" from Slack, the calls a standing rule
approves without asking, listing and revoking it, and the review of sampled automatic approvals.

Everything goes the way it would in production: agents POST proposals, Slack clicks, modal
submissions and slash commands are Slack's payloads signed with the signing secret.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.render.actions import REVIEW_OK, REVIEW_SHOULD_HAVE_ASKED, REVOKE_STANDING
from bot.slack.local import LocalUser
from contracts.standing import sampled
from store.proposals import Proposal
from store.standing import StandingRule
from tests.e2e.harness import (
    APPROVER,
    APPROVER_2,
    CAMPAIGN_CHANNEL,
    FINANCE_GROUP,
    OTHER_AGENT_TOKEN,
    OUTSIDER,
    REFUNDS_CHANNEL,
    REQUESTER,
    SIGNING_SECRET,
    Countersign,
    eventually,
    replace_rule,
    running_countersign,
)
from tests.e2e.test_edit import TAG_RULES, number, open_edit, submit_edit, the_edit_of
from tests.e2e.test_requester_identity import without_ops_bot
from tests.slack_requests import (
    block_action_body,
    signed_headers,
    slash_command_body,
    subteam_members_changed_body,
    user_change_body,
    view_submission_body,
)

ADMIN = APPROVER  #: holds finance-admins (and finance)
REVIEW_CHANNEL = "C0REVIEWS"

MAX_USES = 5  #: calls one standing rule approves at most
#: what is refundable changes with each refund, so it may vary between covered calls
STANDING = (
    '{ max = "7d", admins = ["finance-admins"], ceiling = "amount_cents", '
    f'vary = ["refundable_cents_at_preview"], max_uses = {MAX_USES} }}'
)

REFUNDS_WITH_STANDING = f"""
[[policy]]
id = "refunds"
operation = "payments.refund"
when = [{{ field = "amount_cents", lte = 200000 }}]
decision = "ask"
approvers = ["finance"]
channel = "{REFUNDS_CHANNEL}"
expires_after = "1h"
standing = {STANDING}
"""


def configured(sample: float | None = None) -> Callable[[str], str]:
    """The e2e configuration with standing rules on 'refunds', finance-admins (the approver and
    the requester) and, with ``sample``, review sampling."""
    with_rule = replace_rule("refunds", REFUNDS_WITH_STANDING)

    def edit(text: str) -> str:
        text = with_rule(text).replace(
            "[roles]\n", f'[roles]\nfinance-admins = ["{ADMIN}", "{REQUESTER}"]\n', 1
        )
        if sample is not None:
            text += (
                f'\n[approvals]\nreview_sample = {sample}\nreview_channel = "{REVIEW_CHANNEL}"\n'
            )
        return text

    return edit


@pytest.fixture
async def cs(tmp_path: Path) -> AsyncIterator[Countersign]:
    async with running_countersign(tmp_path, config_edit=configured()) as running:
        yield running


def refund(payment: str, amount: int, *, by: str = REQUESTER, run: str = "") -> dict[str, Any]:
    return {
        "operation": "payments.refund",
        "request": {"payment_id": payment, "amount_cents": amount},
        "requested_by": by,
        "run_id": run or f"run-{payment}-{amount}-{by}",
    }


async def asked(cs: Countersign, body: dict[str, Any], **options: Any) -> dict[str, Any]:
    status, created = await cs.submit(body, **options)
    assert status == 201, created
    return created


def _selected(value: str) -> dict[str, Any]:
    return {
        "type": "static_select",
        "selected_option": {"text": {"type": "plain_text", "text": value}, "value": value},
    }


async def allow_similar(
    cs: Countersign, user: str, proposal_id: str, duration: str, uses: str | None = None
) -> int:
    """``user`` clicks "Approve + allow similar…" and submits the modal with ``duration`` (and
    ``uses``, when given)."""
    assert await cs.click(user, "approve_standing", proposal_id) == 200
    states = {"duration": {"duration": _selected(duration)}}
    if uses is not None:
        states["uses"] = {"uses": _selected(uses)}
    body = view_submission_body(
        user_id=user,
        callback_id="approve_standing",
        private_metadata=proposal_id,
        values={},
        states=states,
    )
    return await cs.post_slack(body)


async def granted(cs: Countersign, duration: str = "1h") -> tuple[dict[str, Any], StandingRule]:
    """A 500.00 refund, approved by the admin with a standing rule; (its final state, the rule)."""
    created = await asked(cs, refund("pay_1002", 50_000))
    await cs.posted(created["id"])
    assert await allow_similar(cs, ADMIN, created["id"], duration) == 200
    _, final = await cs.read(created["id"], wait=10)
    [rule] = await cs.store.standing().active_standing_rules(now=cs.clock())
    await cs.settled()
    return final, rule


def input_element(view: dict[str, Any], block_id: str) -> dict[str, Any]:
    """The element of the modal's input ``block_id``."""
    [element] = [b["element"] for b in view["blocks"] if b.get("block_id") == block_id]
    return dict(element)


def action_ids(blocks: list[dict[str, Any]]) -> list[str]:
    return [
        element["action_id"]
        for block in blocks
        if block["type"] == "actions"
        for element in block["elements"]
    ]


async def events(cs: Countersign, proposal_id: str) -> list[str]:
    return [entry.event for entry in await cs.store.audit_log(proposal_id)]


async def slash(cs: Countersign, user: str, text: str) -> dict[str, Any]:
    body = slash_command_body(user_id=user, command="/countersign", text=text)
    answer = await cs.request(
        "POST", "/slack/events", data=body.encode(), headers=signed_headers(SIGNING_SECRET, body)
    )
    assert answer.status == 200, answer.body
    answered: dict[str, Any] = answer.json()
    return answered


async def click_value(
    cs: Countersign, user: str, action_id: str, value: str, *, channel: str, ts: str
) -> int:
    """A click on a button that is not a proposal message's (a list's, a review post's)."""
    body = block_action_body(
        user_id=user,
        action_id=action_id,
        value=value,
        channel_id=channel,
        message_ts=ts,
        trigger_id=cs.slack.issue_trigger(user),
    )
    return await cs.post_slack(body)


# --- granting -------------------------------------------------------------------------------------


async def test_an_admins_approve_and_allow_similar_executes_it_and_grants_a_standing_rule(
    cs: Countersign,
) -> None:
    created = await asked(cs, refund("pay_1002", 50_000))
    proposal = await cs.posted(created["id"])
    message = cs.slack.message(REFUNDS_CHANNEL, proposal.slack_ts)
    assert "approve_standing" in action_ids(message.blocks)

    assert await cs.click(ADMIN, "approve_standing", created["id"]) == 200
    [view] = await eventually(lambda: _views(cs, ADMIN))
    assert view.view["callback_id"] == "approve_standing"
    assert view.view["private_metadata"] == created["id"]
    rendered = json.dumps(view.view["blocks"])
    assert "*Amount* up to `500.00 USD`" in rendered and "amount_cents" not in rendered
    options = input_element(view.view, "duration")["options"]
    assert [o["value"] for o in options] == ["1h", "4h", "8h", "1d", "3d", "7d"]
    assert (await cs.store.get_proposal(created["id"])).status == "pending"  # not yet

    assert await allow_similar(cs, ADMIN, created["id"], "1h") == 200

    _, final = await cs.read(created["id"], wait=10)
    assert final["status"] == "succeeded"
    assert final["decision"]["by"] == ADMIN
    trail = await cs.store.audit_log(created["id"])
    assert [e.event for e in trail if e.event in ("approved", "standing_rule_granted")] == [
        "approved",
        "standing_rule_granted",
    ]
    [rule] = await cs.store.standing().active_standing_rules(now=cs.clock())
    assert (rule.operation, rule.agent) == ("payments.refund", "support-bot")
    assert rule.rule_id == "refunds"
    assert (rule.ceiling_field, rule.ceiling, rule.created_by) == ("amount_cents", 50_000, ADMIN)
    assert rule.created_from == created["id"]
    assert rule.expires_at - rule.created_at == timedelta(hours=1)
    note = await eventually(lambda: _ephemeral(cs, ADMIN))
    assert "may also do similar requests without asking" in note.text
    assert rule.id not in note.text  # the rule's id is for the audit log and Revoke
    assert (await cs.store.verify_audit()).ok


async def test_a_similar_call_below_the_ceiling_runs_without_asking_and_is_audited(
    cs: Countersign,
) -> None:
    _, rule = await granted(cs)
    posts_before = cs.slack.messages(REFUNDS_CHANNEL)

    created = await asked(cs, refund("pay_1002", 30_000))

    assert created["status"] == "succeeded"
    await cs.settled()
    assert cs.slack.messages(REFUNDS_CHANNEL) == posts_before  # nobody was asked
    stored = await cs.store.get_proposal(created["id"])
    assert stored.standing_rule_id == rule.id
    assert stored.decision == "auto" and stored.rule_id == "refunds"
    assert rule.id in stored.policy_note and ADMIN in stored.policy_note
    assert rule.expires_at.isoformat(timespec="seconds").replace("+00:00", "") in (
        stored.policy_note
    )
    [auto] = [e for e in await cs.store.audit_log(created["id"]) if e.event == "auto_approved"]
    assert auto.detail["standing_rule_id"] == rule.id
    assert (await cs.store.standing().get_standing_rule(rule.id)).uses == 1


@pytest.mark.parametrize(
    "case",
    ["above-ceiling", "other-payment", "other-agent", "granter-requests", "after-expiry"],
)
async def test_calls_the_standing_rule_does_not_cover_are_asked_again(
    cs: Countersign, case: str
) -> None:
    await granted(cs)
    body, options = refund("pay_1002", 30_000), {}
    if case == "above-ceiling":
        body = refund("pay_1002", 50_001)
    elif case == "other-payment":
        # below the ceiling, but another payment (and customer): not the call that was approved
        body = refund("pay_1001", 3_000)
    elif case == "other-agent":
        options = {"token": OTHER_AGENT_TOKEN}
    elif case == "granter-requests":
        body = refund("pay_1002", 30_000, by=ADMIN)
    else:
        cs.clock.advance(timedelta(hours=1, seconds=1))

    created = await asked(cs, body, **options)

    assert created["status"] == "pending"
    stored = await cs.posted(created["id"])
    assert stored.standing_rule_id is None
    assert "auto_approved" not in await events(cs, created["id"])


async def test_once_its_uses_are_spent_similar_calls_are_asked_again(cs: Countersign) -> None:
    _, rule = await granted(cs)
    note = await eventually(lambda: _ephemeral(cs, ADMIN))
    assert f"at most {MAX_USES} calls" in note.text

    ran = [await asked(cs, refund("pay_1002", 1000 + i)) for i in range(MAX_USES)]
    beyond = await asked(cs, refund("pay_1002", 999))

    assert [created["status"] for created in ran] == ["succeeded"] * MAX_USES
    assert beyond["status"] == "pending"
    stored = await cs.posted(beyond["id"])
    assert stored.standing_rule_id is None
    assert "auto_approved" not in await events(cs, beyond["id"])
    spent = await cs.store.standing().get_standing_rule(rule.id)
    assert (spent.uses, spent.remaining) == (MAX_USES, 0)
    listed = json.dumps((await slash(cs, ADMIN, "standing"))["blocks"])
    assert f"0 of {MAX_USES} uses remaining" in listed


async def test_the_admin_may_grant_fewer_uses_than_the_rule_allows(cs: Countersign) -> None:
    created = await asked(cs, refund("pay_1002", 50_000))
    await cs.posted(created["id"])

    assert await allow_similar(cs, ADMIN, created["id"], "1h", uses="1") == 200

    [view] = await eventually(lambda: _views(cs, ADMIN))
    offered = input_element(view.view, "uses")
    assert [o["value"] for o in offered["options"]] == ["1", "3", str(MAX_USES)]
    assert offered["initial_option"]["value"] == str(MAX_USES)
    _, final = await cs.read(created["id"], wait=10)
    assert final["status"] == "succeeded"
    [rule] = await cs.store.standing().active_standing_rules(now=cs.clock())
    assert rule.max_uses == 1
    first = await asked(cs, refund("pay_1002", 1000))
    second = await asked(cs, refund("pay_1002", 1001))
    assert (first["policy"]["decision"], second["policy"]["decision"]) == ("auto", "ask")


async def test_more_uses_than_the_rule_allows_are_refused(cs: Countersign) -> None:
    created = await asked(cs, refund("pay_1002", 50_000))
    await cs.posted(created["id"])

    # a forged submission: the modal never offers more than the rule's max_uses
    assert await allow_similar(cs, ADMIN, created["id"], "1h", uses=str(MAX_USES + 1)) == 200

    refusal = await eventually(lambda: _ephemeral(cs, ADMIN, containing="number of uses"))
    assert f"is not one of: 1, 3, {MAX_USES}" in refusal.text
    assert (await cs.store.get_proposal(created["id"])).status == "pending"
    assert await cs.store.standing().active_standing_rules(now=cs.clock()) == []
    assert "approve_standing_refused" in await events(cs, created["id"])


async def test_concurrent_similar_calls_run_at_most_max_uses_times(cs: Countersign) -> None:
    _, rule = await granted(cs)
    extra = 4

    answers = await asyncio.gather(
        *(asked(cs, refund("pay_1002", 500 + i)) for i in range(MAX_USES + extra))
    )

    # covered calls ran at once (a refund may then ask for a revision, as the others changed
    # what is refundable); the others wait for a person
    decisions = sorted(created["policy"]["decision"] for created in answers)
    assert decisions == ["ask"] * extra + ["auto"] * MAX_USES
    assert all(
        created["status"] == "pending"
        for created in answers
        if created["policy"]["decision"] == "ask"
    )
    assert (await cs.store.standing().get_standing_rule(rule.id)).uses == MAX_USES
    await cs.settled()
    assert (await cs.store.verify_audit()).ok


@pytest.mark.parametrize("race", ["spent", "revoked"])
async def test_an_edit_whose_standing_rule_is_spent_or_revoked_while_it_is_stored_is_asked(
    cs: Countersign, monkeypatch: pytest.MonkeyPatch, race: str
) -> None:
    """The race: an approver's edit is classified as covered by a standing rule's last use, then
    a similar call takes that use (or an admin revokes the rule), then the edit is inserted.
    The database refuses the insert; the edit is classified again and asked, not an error."""
    created = await asked(cs, refund("pay_1002", 50_000))
    await cs.posted(created["id"])
    assert await allow_similar(cs, ADMIN, created["id"], "1h", uses="1") == 200
    await cs.read(created["id"], wait=10)
    [rule] = await cs.store.standing().active_standing_rules(now=cs.clock())
    old = await asked(cs, refund("pay_1002", 60_000))  # above the ceiling: asked
    await cs.posted(old["id"])
    view = await open_edit(cs, APPROVER_2, old["id"])
    supersede = cs.store.supersede
    covered: list[str | None] = []  # the standing rule of the edit's first classification

    async def taken_meanwhile(old_id: str, new: Any, **options: Any) -> Any:
        if not covered:
            covered.append(new.standing_rule_id)
            if race == "spent":
                status, similar = await cs.submit(refund("pay_1002", 1000))
                assert (status, similar["policy"]["decision"]) == (201, "auto"), similar
            else:
                standing = cs.store.standing()
                await standing.revoke_standing_rule(rule.id, actor=ADMIN, now=cs.clock())
        return await supersede(old_id, new, **options)

    monkeypatch.setattr(cs.store, "supersede", taken_meanwhile)

    answer = await submit_edit(cs, APPROVER_2, view, amount_cents=number("300.00"))

    assert (answer.status, answer.body) == (200, b"")
    assert covered == [rule.id]  # without the race the rule would have approved the edit
    edit = await the_edit_of(cs, old["id"])
    assert (edit.status, edit.decision, edit.standing_rule_id) == ("pending", "ask", None)
    assert edit.arguments["amount_cents"] == 30_000
    await cs.posted(edit.id)
    assert "auto_approved" not in await events(cs, edit.id)
    await cs.settled()
    ledger = cs.service.settings.registry.get("payments.refund").ledger
    assert 30_000 not in [done.amount_cents for done in ledger.refunds]
    assert (await cs.store.verify_audit()).ok


@pytest.mark.parametrize("editor", ["granter", "earlier-editor"])
async def test_a_standing_rule_does_not_approve_an_edit_by_its_granter(
    cs: Countersign, editor: str
) -> None:
    """The granter of a standing rule approves every call it covers, and an editor may not
    decide their edit, nor any later edit of it (separation of duties): an admin who edits a
    call above their rule's ceiling down into it (or edited an earlier version of it) would
    otherwise approve that edit alone, without anyone else ever seeing it. Asked instead."""
    _, rule = await granted(cs)
    old = await asked(cs, refund("pay_1002", 60_000))  # above the ceiling: asked
    await cs.posted(old["id"])
    if editor == "earlier-editor":  # the granter's edit, still above the ceiling, is asked
        view = await open_edit(cs, ADMIN, old["id"])
        await submit_edit(cs, ADMIN, view, amount_cents=number("550.00"))
        first = await the_edit_of(cs, old["id"])
        assert (first.status, first.decision) == ("pending", "ask")
        await cs.posted(first.id)
        old, user = {"id": first.id}, APPROVER_2
    else:
        user = ADMIN

    view = await open_edit(cs, user, old["id"])
    answer = await submit_edit(cs, user, view, amount_cents=number("300.00"))

    assert (answer.status, answer.body) == (200, b"")
    edit = await the_edit_of(cs, old["id"])
    assert (edit.status, edit.decision, edit.standing_rule_id) == ("pending", "ask", None)
    assert edit.arguments["amount_cents"] == 30_000
    await cs.posted(edit.id)
    assert "auto_approved" not in await events(cs, edit.id)
    assert (await cs.store.standing().get_standing_rule(rule.id)).uses == 0
    # the granter cannot approve it either: they edited it, or an earlier version of it
    assert await cs.click(ADMIN, "approve", edit.id) == 200
    await eventually(lambda: _count(events(cs, edit.id), "approve_refused", 1))
    await cs.settled()
    assert (await cs.store.get_proposal(edit.id)).status == "pending"
    ledger = cs.service.settings.registry.get("payments.refund").ledger
    assert 30_000 not in [done.amount_cents for done in ledger.refunds]
    assert (await cs.store.verify_audit()).ok


async def _asked_not_covered(cs: Countersign, rule: StandingRule) -> Proposal:
    """A call the standing rule would cover is asked instead: the stored proposal."""
    created = await asked(cs, refund("pay_1002", 30_000))
    assert created["status"] == "pending"
    stored = await cs.posted(created["id"])
    assert (stored.decision, stored.standing_rule_id) == ("ask", None)
    assert "auto_approved" not in await events(cs, created["id"])
    assert (await cs.store.standing().get_standing_rule(rule.id)).uses == 0
    return stored


@pytest.mark.parametrize("slack_says", ["deactivated", "nothing"])
async def test_a_granter_slack_no_longer_vouches_for_covers_nothing(
    cs: Countersign, caplog: pytest.LogCaptureFixture, slack_says: str
) -> None:
    """The granter approves every call their standing rule covers, so they are judged as a
    click of theirs would be, when it would cover one: a granter deactivated since (Slack says
    so) covers nothing more, nor one Slack cannot tell about (fail closed). Asked instead, and
    the note says why."""
    caplog.set_level(logging.DEBUG, logger="bot.slack.directory")
    _, rule = await granted(cs)  # the granter's profile is now cached
    gone = LocalUser(id=ADMIN, deleted=True)
    if slack_says == "deactivated":
        cs.slack.add_user(gone)
    else:
        cs.slack.fail_next("users.info", status=200, error="user_not_found", times=5)
    event = user_change_body(gone.to_api("T0001"))
    headers = signed_headers(SIGNING_SECRET, event, content_type="application/json")
    assert await cs.post_slack(event, headers) == 200

    async def forgotten() -> bool:  # Slack's event is handled after it is acknowledged
        return f"user {ADMIN} changed: read again" in caplog.text

    await eventually(forgotten)
    note = (await _asked_not_covered(cs, rule)).policy_note

    why = "account is deactivated" if slack_says == "deactivated" else "could not check the granter"
    assert f"standing rule {rule.id}, granted by {ADMIN}, does not cover it" in note
    assert why in note


async def test_a_granter_made_an_owner_of_the_agent_covers_nothing(tmp_path: Path) -> None:
    """An owner of the agent may not decide its calls: a granter configured as one since
    covers nothing more of that agent's calls."""
    async with running_countersign(tmp_path, config_edit=configured()) as cs:
        _, rule = await granted(cs)
    owned = {"support-bot": {"owners": [ADMIN]}}
    async with running_countersign(tmp_path, agent_settings=owned, config_edit=configured()) as cs:
        note = (await _asked_not_covered(cs, rule)).policy_note
    assert f"standing rule {rule.id}, granted by {ADMIN}, does not cover it" in note
    assert "the granter owns the agent that asked" in note


#: an admin (finance-admins) who holds the rule's approver role, finance, only through its user
#: group
GRANTER = "U0GRANTER"


def _granter_in_the_group(text: str) -> str:
    """:func:`configured`, with GRANTER among finance-admins."""
    admins = f'finance-admins = ["{ADMIN}"'
    text = configured()(text)
    assert admins in text
    return text.replace(admins, f'finance-admins = ["{GRANTER}", "{ADMIN}"', 1)


async def _finance_group_is(
    cs: Countersign, caplog: pytest.LogCaptureFixture, members: list[str], **change: list[str]
) -> None:
    """The finance user group holds ``members`` from now on, and Slack says so
    (subteam_members_changed, with ``added`` or ``removed``): Countersign reads it again."""
    cs.slack.set_usergroup(FINANCE_GROUP, members)
    said = caplog.text.count(f"group {FINANCE_GROUP} changed: read again")
    event = subteam_members_changed_body(FINANCE_GROUP, **change)
    assert (
        await cs.post_slack(
            event, signed_headers(SIGNING_SECRET, event, content_type="application/json")
        )
        == 200
    )

    async def forgotten() -> bool:
        return caplog.text.count(f"group {FINANCE_GROUP} changed: read again") > said

    await eventually(forgotten)


async def test_a_granter_removed_from_the_approver_role_covers_nothing_until_back_in_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The granter approves every call their standing rule covers, so they must hold an approver
    role of the rule now, as their Approve click would: removed from it (here from the user
    group that makes them finance) while still an admin, they could not approve a similar call
    by hand, so the rule covers nothing: the call is asked and its note says why. Back in the
    group, the rule covers again."""
    caplog.set_level(logging.DEBUG, logger="bot.slack.directory")
    async with running_countersign(tmp_path, config_edit=_granter_in_the_group) as cs:
        cs.slack.set_usergroup(FINANCE_GROUP, [GRANTER])
        first = await asked(cs, refund("pay_1002", 50_000))
        await cs.posted(first["id"])
        assert await allow_similar(cs, GRANTER, first["id"], "1h") == 200
        _, approved = await cs.read(first["id"], wait=10)
        assert approved["status"] == "succeeded"
        [rule] = await cs.store.standing().active_standing_rules(now=cs.clock())
        assert rule.created_by == GRANTER
        await cs.settled()

        await _finance_group_is(cs, caplog, [], removed=[GRANTER])
        stored = await _asked_not_covered(cs, rule)

        assert stored.policy_note.endswith(
            f"; standing rule {rule.id}, granted by {GRANTER}, does not cover it: the granter "
            "does not hold a role that approves it (finance), so they could not decide it"
        )
        shown = cs.slack.message(REFUNDS_CHANNEL, stored.slack_ts)
        assert (
            "a standing rule does not cover it: the granter does not hold a role that approves "
            "it (finance), so they could not decide it"
        ) in json.dumps(shown.blocks, ensure_ascii=False)

        await _finance_group_is(cs, caplog, [GRANTER], added=[GRANTER])
        covered = await asked(cs, refund("pay_1002", 20_000))
        again = await cs.store.get_proposal(covered["id"])
        assert (again.decision, again.standing_rule_id) == ("auto", rule.id)


async def test_a_granter_the_configuration_no_longer_makes_an_approver_covers_nothing(
    tmp_path: Path,
) -> None:
    """The same when the approver role's configured members no longer list the granter (who
    stays an admin): asked, saying why."""
    async with running_countersign(tmp_path, config_edit=configured()) as cs:
        _, rule = await granted(cs)
    finance = f'finance = ["{REQUESTER}", "{ADMIN}", '

    def without_admin(text: str) -> str:
        text = configured()(text)
        assert finance in text
        return text.replace(finance, f'finance = ["{REQUESTER}", ', 1)

    async with running_countersign(tmp_path, config_edit=without_admin) as cs:
        note = (await _asked_not_covered(cs, rule)).policy_note
    assert f"standing rule {rule.id}, granted by {ADMIN}, does not cover it" in note
    assert "the granter does not hold a role that approves it (finance)" in note


async def test_the_list_shows_each_rules_remaining_uses(cs: Countersign) -> None:
    _, rule = await granted(cs)
    await asked(cs, refund("pay_1002", 1000))

    listed = json.dumps((await slash(cs, ADMIN, "standing"))["blocks"])

    assert f"1 call approved so far, {MAX_USES - 1} of {MAX_USES} uses remaining" in listed
    assert "may differ)" in listed and rule.id in listed


async def test_a_non_admin_cannot_allow_similar_and_nothing_is_granted(cs: Countersign) -> None:
    created = await asked(cs, refund("pay_1002", 50_000))
    await cs.posted(created["id"])

    assert await cs.click(APPROVER_2, "approve_standing", created["id"]) == 200
    refusal = await eventually(lambda: _ephemeral(cs, APPROVER_2))
    assert "finance-admins" in refusal.text
    assert cs.slack.views(APPROVER_2) == []
    # a submission that never came from a modal of ours is refused the same way
    assert await cs.post_slack(_submission(APPROVER_2, created["id"], "7d")) == 200
    await eventually(lambda: _count(events(cs, created["id"]), "approve_standing_refused", 2))

    assert (await cs.store.get_proposal(created["id"])).status == "pending"
    assert await cs.store.standing().active_standing_rules(now=cs.clock()) == []
    assert "standing_rule_granted" not in await events(cs, created["id"])


async def test_the_requester_cannot_allow_similar_even_as_an_admin(cs: Countersign) -> None:
    created = await asked(cs, refund("pay_1002", 50_000))
    await cs.posted(created["id"])

    assert await allow_similar(cs, REQUESTER, created["id"], "1h") == 200

    refusal = await eventually(lambda: _ephemeral(cs, REQUESTER))
    assert "accountable" in refusal.text
    assert cs.slack.views(REQUESTER) == []
    await eventually(lambda: _count(events(cs, created["id"]), "approve_standing_refused", 2))
    assert (await cs.store.get_proposal(created["id"])).status == "pending"
    assert await cs.store.standing().active_standing_rules(now=cs.clock()) == []


async def test_a_duration_beyond_the_rules_max_is_refused(cs: Countersign) -> None:
    created = await asked(cs, refund("pay_1002", 50_000))
    await cs.posted(created["id"])

    assert await cs.post_slack(_submission(ADMIN, created["id"], "14d")) == 200

    refusal = await eventually(lambda: _ephemeral(cs, ADMIN))
    assert "'14d' is not one of: 1h, 4h, 8h, 1d, 3d, 7d" in refusal.text
    assert (await cs.store.get_proposal(created["id"])).status == "pending"
    assert await cs.store.standing().active_standing_rules(now=cs.clock()) == []


# --- numbers past 64 bits, from a hostile agent ---------------------------------------------------

#: A rule whose ceiling is a count the agent writes itself (a webhook's request, no bound but 1).
CAMPAIGNS_WITH_STANDING = f"""
[[policy]]
id = "campaigns"
operation = "crm.send_campaign"
decision = "ask"
approvers = ["finance"]
channel = "{CAMPAIGN_CHANNEL}"
expires_after = "30m"
standing = {{ max = "7d", admins = ["finance-admins"], ceiling = "recipients", max_uses = 5 }}
"""


def campaign(recipients: int, run: str) -> dict[str, Any]:
    return {
        "operation": "crm.send_campaign",
        "request": {"segment": "vip", "template": "tmpl_winback", "recipients": recipients},
        "requested_by": REQUESTER,
        "run_id": run,
    }


@pytest.fixture
async def campaigns(tmp_path: Path) -> AsyncIterator[Countersign]:
    with_rule = replace_rule("campaigns", CAMPAIGNS_WITH_STANDING)

    def edit(text: str) -> str:
        return configured()(with_rule(text))

    async with running_countersign(tmp_path, config_edit=edit) as running:
        yield running


async def test_a_count_past_64_bits_is_asked_never_covered_nor_a_500(
    campaigns: Countersign,
) -> None:
    cs = campaigns
    first = await asked(cs, campaign(100, "run-100"))
    await cs.posted(first["id"])
    assert await allow_similar(cs, ADMIN, first["id"], "1h") == 200
    [rule] = await eventually(lambda: cs.store.standing().active_standing_rules(now=cs.clock()))
    assert rule.ceiling == 100

    for recipients in (2**63, 2**64 + 1, 10**30, 10**400):
        created = await asked(cs, campaign(recipients, f"run-{len(str(recipients))}"))

        assert created["status"] == "pending", created  # asked: past the ceiling of 100
        assert created["policy"]["decision"] == "ask"
    assert (await cs.store.standing().get_standing_rule(rule.id)).uses == 0


async def test_a_standing_rule_granted_on_a_count_past_64_bits_covers_no_more_than_it(
    campaigns: Countersign,
) -> None:
    cs = campaigns
    huge = 10**19  # past SQLite's integers; a float holds it exactly
    first = await asked(cs, campaign(huge, "run-first"))
    await cs.posted(first["id"])

    assert await allow_similar(cs, ADMIN, first["id"], "1h") == 200

    _, final = await cs.read(first["id"], wait=10)
    assert final["status"] == "succeeded"
    [rule] = await cs.store.standing().active_standing_rules(now=cs.clock())
    assert rule.ceiling == huge
    again = await asked(cs, campaign(huge, "run-again"))
    assert again["status"] == "succeeded"  # covered: at the ceiling
    above = await asked(cs, campaign(huge + 1, "run-above"))
    assert above["status"] == "pending"  # past it, by one
    assert (await cs.store.standing().get_standing_rule(rule.id)).uses == 1


# --- listing and revoking -------------------------------------------------------------------------


async def test_admins_list_and_revoke_standing_rules_from_slack(cs: Countersign) -> None:
    first, rule = await granted(cs)

    listed = await slash(cs, ADMIN, "standing")
    refused_list = await slash(cs, APPROVER_2, "standing")

    [revoke] = [
        block["accessory"]
        for block in listed["blocks"]
        if block.get("accessory", {}).get("action_id") == REVOKE_STANDING
    ]
    assert revoke["value"] == rule.id
    assert "*Amount* up to `500.00 USD`" in json.dumps(listed["blocks"])
    assert "Only people holding finance-admins" in refused_list["text"]

    # someone who is not an admin cannot revoke it, even with a forged click
    status = await click_value(
        cs, APPROVER_2, REVOKE_STANDING, rule.id, channel=REFUNDS_CHANNEL, ts="1.1"
    )
    assert status == 200
    refusal = await eventually(lambda: _ephemeral(cs, APPROVER_2))
    assert "finance-admins" in refusal.text
    assert "revoke_standing_refused" in await events(cs, first["id"])
    assert (await cs.store.standing().get_standing_rule(rule.id)).revoked_at is None

    status = await click_value(
        cs, ADMIN, REVOKE_STANDING, rule.id, channel=REFUNDS_CHANNEL, ts="1.1"
    )
    assert status == 200
    revoked = await eventually(lambda: _revoked(cs, rule.id))
    assert revoked.revoked_by == ADMIN
    trail = await cs.store.audit_log(first["id"])
    [entry] = [e for e in trail if e.event == "standing_rule_revoked"]
    assert (entry.actor, entry.detail) == (ADMIN, {"standing_rule_id": rule.id})
    assert "revoked" in (await eventually(lambda: _ephemeral(cs, ADMIN))).text

    after = await asked(cs, refund("pay_1002", 30_000))
    assert after["status"] == "pending"
    assert (await slash(cs, ADMIN, "standing"))["text"] == "0 active standing rule(s)"


# --- reviews of sampled automatic approvals -------------------------------------------------------


AUTO_TAG: dict[str, Any] = {
    "operation": "crm.tag_customers",
    "request": {"segment": "churn-risk", "tag": "winback", "customers": 40},
    "requested_by": REQUESTER,
}


async def test_sampled_automatic_approvals_are_posted_for_review_and_judged_once(
    tmp_path: Path,
) -> None:
    async with running_countersign(tmp_path, config_edit=configured(sample=0.5)) as cs:
        _, rule = await granted(cs)
        autos = [await asked(cs, {**AUTO_TAG, "run_id": f"run-{i}"}) for i in range(8)]
        covered = [await asked(cs, refund("pay_1002", 1000 + i)) for i in range(4)]
        ids = [p["id"] for p in autos + covered]
        assert {p["status"] for p in autos + covered} == {"succeeded"}
        expected = {i for i in ids if sampled(i, 0.5)}

        posts = await eventually(lambda: _reviews(cs, len(expected))) if expected else []
        await cs.settled()
        posts = [m for m in cs.slack.messages(REVIEW_CHANNEL) if not m.is_reply]

        assert {post.metadata["event_payload"]["proposal_id"] for post in posts} == expected
        for post in posts:
            assert action_ids(post.blocks) == [REVIEW_OK, REVIEW_SHOULD_HAVE_ASKED]
            assert "Succeeded" in json.dumps(post.blocks)  # posted with its outcome
        for proposal_id in ids:
            stored = await cs.store.get_proposal(proposal_id)
            assert stored.review_sampled == (proposal_id in expected)
        if not posts:
            return  # nothing sampled in this run (1 in 4096): the rest needs a post
        post = posts[0]
        judged = post.metadata["event_payload"]["proposal_id"]
        if any(p["id"] == judged for p in covered):
            assert "a standing rule granted by" in json.dumps(post.blocks)

        # the requester of the call, and someone without an approver role, may not judge it
        for user in (REQUESTER, OUTSIDER):
            await click_value(cs, user, REVIEW_OK, judged, channel=REVIEW_CHANNEL, ts=post.ts)
        await eventually(lambda: _count(events(cs, judged), "review_refused", 2))
        await click_value(
            cs, APPROVER_2, REVIEW_SHOULD_HAVE_ASKED, judged, channel=REVIEW_CHANNEL, ts=post.ts
        )
        await eventually(lambda: _count(events(cs, judged), "reviewed", 1))
        await click_value(cs, ADMIN, REVIEW_OK, judged, channel=REVIEW_CHANNEL, ts=post.ts)
        late = await eventually(lambda: _ephemeral(cs, ADMIN, containing="already reviewed"))
        assert APPROVER_2 in late.text

        review = await cs.store.standing().get_review(judged)
        assert review is not None
        assert (review.verdict, review.reviewer) == ("should_have_asked", APPROVER_2)
        assert (await events(cs, judged)).count("reviewed") == 1
        shown = cs.slack.message(REVIEW_CHANNEL, post.ts)
        assert action_ids(shown.blocks) == []
        assert "Should have been asked" in json.dumps(shown.blocks)

        stats = {
            (s.rule_id, s.standing_rule_id): (s.sampled, s.reviewed, s.flagged)
            for s in await cs.store.standing().review_stats()
        }
        sampled_autos = sum(1 for p in autos if p["id"] in expected)
        sampled_covered = sum(1 for p in covered if p["id"] in expected)
        judged_by_rule = any(p["id"] == judged for p in covered)
        if sampled_autos:
            assert stats[("small-tags", None)] == (
                sampled_autos,
                0 if judged_by_rule else 1,
                0 if judged_by_rule else 1,
            )
        if sampled_covered:
            assert stats[("refunds", rule.id)] == (
                sampled_covered,
                1 if judged_by_rule else 0,
                1 if judged_by_rule else 0,
            )
        assert (await cs.store.verify_audit()).ok


async def _judged(cs: Countersign, user: str, proposal_id: str, ts: str) -> str:
    """``user`` clicks Looks right on ``proposal_id``'s review post (at ``ts``): what they were
    told, once the refusal is audited and no review recorded."""
    await click_value(cs, user, REVIEW_OK, proposal_id, channel=REVIEW_CHANNEL, ts=ts)
    await eventually(lambda: _count(events(cs, proposal_id), "review_refused", 1))
    told = await eventually(lambda: _ephemeral(cs, user))
    assert await cs.store.standing().get_review(proposal_id) is None
    return str(told.text)


async def _review_post(cs: Countersign, proposal_id: str) -> str:
    """The ts of ``proposal_id``'s review post, once it is posted."""
    [post] = await eventually(lambda: _reviews(cs, 1))
    assert post.metadata["event_payload"]["proposal_id"] == proposal_id
    return str(post.ts)


async def test_whoever_edited_a_call_into_running_automatically_cannot_review_it(
    tmp_path: Path,
) -> None:
    # the editor's edit ran without asking anyone: they stand behind the call they would judge
    edit_rules = replace_rule("small-tags", TAG_RULES)
    sampling = configured(sample=1.0)

    def edits_sampled(text: str) -> str:
        return sampling(edit_rules(text))

    async with running_countersign(tmp_path, config_edit=edits_sampled) as cs:
        status, old = await cs.submit(
            {**AUTO_TAG, "request": {**AUTO_TAG["request"], "customers": 500}}
        )
        assert (status, old["status"]) == (201, "pending"), old
        await cs.posted(old["id"])
        view = await open_edit(cs, APPROVER_2, old["id"])
        assert (await submit_edit(cs, APPROVER_2, view, customers=number("50"))).status == 200
        edit = await the_edit_of(cs, old["id"])
        _, final = await cs.read(edit.id, wait=10)
        assert (final["status"], final["policy"]["decision"]) == ("succeeded", "auto")

        ts = await _review_post(cs, edit.id)
        assert "you edited" in await _judged(cs, APPROVER_2, edit.id, ts)


async def test_once_its_agent_is_removed_its_former_owner_cannot_review_its_call(
    tmp_path: Path,
) -> None:
    # ops-bot is owned by APPROVER_2, who holds finance, an approver role of the policy
    sampling = configured(sample=1.0)
    owned = {"ops-bot": {"owners": [APPROVER_2]}}
    async with running_countersign(tmp_path, agent_settings=owned, config_edit=sampling) as cs:
        ran = await asked(cs, {**AUTO_TAG, "run_id": "run-ops"}, token=OTHER_AGENT_TOKEN)
        assert ran["status"] == "succeeded"
        ts = await _review_post(cs, ran["id"])

    def removed(text: str) -> str:
        return without_ops_bot(sampling(text))

    async with running_countersign(tmp_path, config_edit=removed) as cs:
        # APPROVER_2's ownership is no longer written anywhere: they must not become a reviewer
        assert "no longer configured" in await _judged(cs, APPROVER_2, ran["id"], ts)


async def test_the_granter_cannot_review_a_call_their_standing_rule_approved(
    tmp_path: Path,
) -> None:
    # the granter approved every call their grant covers: their "looks right" would be the
    # approver reviewing their own approval, recorded first and so the only verdict that counts
    async with running_countersign(tmp_path, config_edit=configured(sample=1.0)) as cs:
        _, rule = await granted(cs)
        assert rule.created_by == ADMIN
        covered = await asked(cs, refund("pay_1002", 1000))
        assert covered["status"] == "succeeded"
        stored = await cs.store.get_proposal(covered["id"])
        assert (stored.standing_rule_id, stored.review_sampled) == (rule.id, True)
        ts = await _review_post(cs, covered["id"])

        told = await _judged(cs, ADMIN, covered["id"], ts)
        assert "you granted the standing rule that approved this call" in told
        [refused] = [
            entry
            for entry in await cs.store.audit_log(covered["id"])
            if entry.event == "review_refused"
        ]
        assert refused.actor == ADMIN

        # someone independent still may, and theirs is the verdict that counts
        await click_value(
            cs, APPROVER_2, REVIEW_SHOULD_HAVE_ASKED, covered["id"], channel=REVIEW_CHANNEL, ts=ts
        )
        await eventually(lambda: _count(events(cs, covered["id"]), "reviewed", 1))
        review = await cs.store.standing().get_review(covered["id"])
        assert review is not None
        assert (review.verdict, review.reviewer) == ("should_have_asked", APPROVER_2)
        assert (await cs.store.verify_audit()).ok


async def test_without_sampling_nothing_is_posted_for_review(cs: Countersign) -> None:
    created = await asked(cs, {**AUTO_TAG, "run_id": "run-unsampled"})

    assert created["status"] == "succeeded"
    await cs.settled()
    assert cs.slack.messages(REVIEW_CHANNEL) == []
    assert not (await cs.store.get_proposal(created["id"])).review_sampled


# --- helpers --------------------------------------------------------------------------------------


def _submission(user: str, proposal_id: str, duration: str) -> str:
    return view_submission_body(
        user_id=user,
        callback_id="approve_standing",
        private_metadata=proposal_id,
        values={},
        states={
            "duration": {
                "duration": {
                    "type": "static_select",
                    "selected_option": {
                        "text": {"type": "plain_text", "text": duration},
                        "value": duration,
                    },
                }
            }
        },
    )


async def _views(cs: Countersign, user: str) -> list[Any]:
    return cs.slack.views(user)


async def _ephemeral(cs: Countersign, user: str, *, containing: str = "") -> Any:
    found = [message for message in cs.slack.ephemeral(user) if containing in message.text]
    return found[-1] if found else None


async def _count(trail: Awaitable[list[str]], event: str, at_least: int) -> bool:
    return (await trail).count(event) >= at_least


async def _revoked(cs: Countersign, standing_rule_id: str) -> StandingRule | None:
    rule = await cs.store.standing().get_standing_rule(standing_rule_id)
    return rule if rule.revoked_at is not None else None


async def _reviews(cs: Countersign, expected: int) -> list[Any] | None:
    posts = [m for m in cs.slack.messages(REVIEW_CHANNEL) if not m.is_reply]
    return posts if len(posts) >= expected else None
