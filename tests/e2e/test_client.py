"""The Python client (countersign) against a running Countersign and the local Slack: a click in
Slack decides what ``approve()`` and a guarded function see."""

from __future__ import annotations

import asyncio
import json
import textwrap
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

import countersign
from contracts.outcomes import Succeeded
from tests.e2e.harness import (
    AGENT_TOKEN,
    APPROVER,
    APPROVER_2,
    REQUESTER,
    SIGNING_SECRET,
    Countersign,
    eventually,
    running_countersign,
)
from tests.slack_requests import signed_headers, view_submission_body

DECISIONS_CHANNEL = "C0DECISIONS"

DECISION_CONFIG = f"""
[operations."decision"]
kind = "decision"

[operations."coding.tool_use"]
kind = "decision"
description = "A coding agent's tool call, which the agent runs itself"
risk = "reversible"

[operations."coding.tool_use".request_schema]
type = "object"
required = ["tool_name", "command"]
properties = {{ tool_name = {{ type = "string" }}, command = {{ type = "string" }} }}

[operations."coding.tool_use".preview]
title = "Use {{tool_name}}"
fields = [{{ label = "Command", value = "{{command}}" }}]

[[policy]]
id = "read-only-tools"
operation = "coding.tool_use"
when = [{{ field = "tool_name", in = ["Read", "Grep"] }}]
decision = "auto"

[[policy]]
id = "other-tools"
operation = "coding.tool_use"
decision = "ask"
approvers = ["finance"]
channel = "{DECISIONS_CHANNEL}"
expires_after = "1h"

[[policy]]
id = "decisions"
operation = "decision"
decision = "ask"
approvers = ["finance"]
channel = "{DECISIONS_CHANNEL}"
expires_after = "1h"
"""


def with_decisions(text: str) -> str:
    return text.replace("\n[[policy]]\n", textwrap.dedent(DECISION_CONFIG) + "\n[[policy]]\n", 1)


@pytest.fixture
async def cs(tmp_path: Path) -> AsyncIterator[Countersign]:
    async with running_countersign(tmp_path, config_edit=with_decisions) as running:
        yield running


@pytest.fixture
async def client(cs: Countersign) -> AsyncIterator[countersign.AsyncClient]:
    async with countersign.AsyncClient(
        cs.url, AGENT_TOKEN, requested_by=REQUESTER, long_poll_seconds=5
    ) as made:
        yield made


async def pending_in_slack(cs: Countersign, operation: str) -> Any:
    """The proposal of ``operation`` waiting in the decisions channel, once it is posted there
    (its buttons carry only its id)."""

    async def find() -> Any:
        for message in cs.slack.messages(DECISIONS_CHANNEL):
            for block in message.blocks:
                for element in block.get("elements", ()) if block["type"] == "actions" else ():
                    proposal = await cs.store.get_proposal(element["value"])
                    # the message is in Slack before the store records where it is
                    if (
                        proposal.operation == operation
                        and proposal.status == "pending"
                        and proposal.slack_ts is not None
                    ):
                        return proposal
        return None

    return await eventually(find)


# --- approve(): the four answers --------------------------------------------------------------


async def test_a_click_on_approve_answers_approved(
    cs: Countersign, client: countersign.AsyncClient
) -> None:
    asked = asyncio.create_task(
        client.approve("Deploy v2 to production", "All checks passed on main.", timeout=20)
    )
    proposal = await pending_in_slack(cs, "decision")
    message = cs.slack.message(DECISIONS_CHANNEL, proposal.slack_ts)
    assert "The agent asks: Deploy v2 to production" in json.dumps(message.blocks)

    assert await cs.click(APPROVER, "approve", proposal.id) == 200
    answer = await asked

    assert isinstance(answer, countersign.Approved)
    assert answer.by == APPROVER
    assert answer.arguments == {
        "title": "Deploy v2 to production",
        "detail": "All checks passed on main.",
    }
    assert answer.proposal.status == "succeeded"
    assert isinstance(answer.proposal.outcome, Succeeded)
    assert cs.target.requests == []  # nothing was executed server-side


async def test_a_rejection_answers_rejected_with_the_reason(
    cs: Countersign, client: countersign.AsyncClient
) -> None:
    asked = asyncio.create_task(
        client.approve("Drop the staging database", "It is recreated nightly.", timeout=20)
    )
    proposal = await pending_in_slack(cs, "decision")

    assert await cs.click(APPROVER, "reject", proposal.id) == 200
    assert await cs.submit_reason(APPROVER, proposal.id, "Not during the release freeze") == 200
    answer = await asked

    assert isinstance(answer, countersign.Rejected)
    assert answer.reason == "Not during the release freeze"
    assert answer.by == APPROVER


async def test_nobody_deciding_before_the_expiry_answers_timed_out_not_rejected(
    cs: Countersign, client: countersign.AsyncClient
) -> None:
    asked = asyncio.create_task(
        client.approve("Rotate the API keys", "They are 90 days old.", timeout=20)
    )
    await pending_in_slack(cs, "decision")

    cs.clock.advance(timedelta(hours=2))
    answer = await asked

    assert isinstance(answer, countersign.TimedOut)
    assert answer.by == "expiry"
    assert answer.proposal.status == "expired"


async def test_the_callers_deadline_withdraws_the_proposal_and_answers_timed_out(
    cs: Countersign, client: countersign.AsyncClient
) -> None:
    answer = await client.approve("Restart the workers", "Memory keeps growing.", timeout=1.5)

    assert isinstance(answer, countersign.TimedOut)
    assert answer.by == "deadline"
    assert answer.proposal.status == "cancelled"
    await cs.settled()  # the post went out before the deadline; its ts is recorded by now
    stored = await cs.store.get_proposal(answer.proposal.id)
    assert stored.status == "cancelled"
    assert stored.slack_ts is not None
    message = cs.slack.message(DECISIONS_CHANNEL, stored.slack_ts)
    assert "Withdrawn by the agent" in json.dumps(message.blocks)
    assert not any(block["type"] == "actions" for block in message.blocks)


async def test_a_withdrawal_by_another_call_answers_cancelled(
    cs: Countersign, client: countersign.AsyncClient
) -> None:
    asked = asyncio.create_task(
        client.approve("Reindex the search cluster", "Queries are slow.", timeout=20)
    )
    proposal = await pending_in_slack(cs, "decision")

    withdrawn = await client.cancel(proposal.id)
    answer = await asked

    assert withdrawn.status == "cancelled"
    assert isinstance(answer, countersign.Cancelled)
    assert answer.proposal.id == proposal.id
    assert answer.proposal.status == "cancelled"
    assert "withdrawn by the agent" in answer.describe()


async def test_cancel_of_a_decided_proposal_raises_a_409_naming_its_status(
    cs: Countersign, client: countersign.AsyncClient
) -> None:
    asked = asyncio.create_task(client.approve("Tag the release", "v2.1.0", timeout=20))
    proposal = await pending_in_slack(cs, "decision")
    await cs.click(APPROVER, "approve", proposal.id)
    assert isinstance(await asked, countersign.Approved)

    with pytest.raises(countersign.ProblemError) as refused:
        await client.cancel(proposal.id)

    assert refused.value.status == 409
    assert "'succeeded'" in refused.value.detail
    assert [e.field for e in refused.value.errors] == ["status"]


async def test_a_policy_denial_answers_rejected_with_the_rules_reason(
    tmp_path: Path,
) -> None:
    def deny_decisions(text: str) -> str:
        return with_decisions(text).replace(
            'id = "decisions"\noperation = "decision"\ndecision = "ask"\napprovers = ["finance"]\n'
            f'channel = "{DECISIONS_CHANNEL}"\nexpires_after = "1h"',
            'id = "decisions"\noperation = "decision"\ndecision = "deny"\n'
            'reason = "Agents do not ask this here."',
        )

    async with (
        running_countersign(tmp_path, config_edit=deny_decisions) as cs,
        countersign.AsyncClient(cs.url, AGENT_TOKEN, requested_by=REQUESTER) as client,
    ):
        answer = await client.approve("Anything", "At all.", timeout=5)

    assert isinstance(answer, countersign.Rejected)
    assert answer.by is None
    assert "Agents do not ask this here." in answer.reason


async def test_the_same_call_twice_is_one_proposal(
    cs: Countersign, client: countersign.AsyncClient
) -> None:
    first = await client.propose("decision", {"title": "Ship it", "detail": "Green."})
    again = await client.propose("decision", {"title": "Ship it", "detail": "Green."})
    other = await client.propose("decision", {"title": "Ship it", "detail": "Green!"})

    assert again.id == first.id
    assert other.id != first.id
    assert await cs.proposal_count() == 2


async def test_the_sync_client_answers_from_a_plain_thread(cs: Countersign) -> None:
    with countersign.Client(cs.url, AGENT_TOKEN, requested_by=REQUESTER) as client:
        asked = asyncio.create_task(
            asyncio.to_thread(client.approve, "Merge the pull request", "Reviewed.", timeout=20)
        )
        proposal = await pending_in_slack(cs, "decision")
        await cs.click(APPROVER, "approve", proposal.id)
        answer = await asked

    assert isinstance(answer, countersign.Approved)


# --- the decorator ------------------------------------------------------------------------------


async def test_a_guarded_function_runs_once_approved_with_the_approved_arguments(
    cs: Countersign, client: countersign.AsyncClient
) -> None:
    ran: list[tuple[str, str]] = []

    @countersign.requires_approval("coding.tool_use", client=client, timeout=20)
    async def use_tool(tool_name: str, command: str) -> str:
        ran.append((tool_name, command))
        return "done"

    called = asyncio.create_task(use_tool("Bash", "make deploy"))
    proposal = await pending_in_slack(cs, "coding.tool_use")
    assert ran == []
    await cs.click(APPROVER, "approve", proposal.id)

    assert await called == "done"
    assert ran == [("Bash", "make deploy")]


async def test_a_read_only_tool_runs_at_once_by_policy(client: countersign.AsyncClient) -> None:
    @countersign.requires_approval("coding.tool_use", client=client, timeout=5)
    async def use_tool(tool_name: str, command: str) -> str:
        return f"{tool_name}: {command}"

    assert await use_tool("Read", "README.md") == "Read: README.md"


async def test_a_guarded_function_does_not_run_when_rejected(
    cs: Countersign, client: countersign.AsyncClient
) -> None:
    ran: list[str] = []

    @countersign.requires_approval("coding.tool_use", client=client, timeout=20)
    async def use_tool(tool_name: str, command: str) -> None:
        ran.append(command)

    called = asyncio.create_task(use_tool("Bash", "rm -rf build"))
    proposal = await pending_in_slack(cs, "coding.tool_use")
    await cs.click(APPROVER, "reject", proposal.id)
    await cs.submit_reason(APPROVER, proposal.id, "Use make clean")

    with pytest.raises(countersign.NotApproved) as refused:
        await called
    assert isinstance(refused.value.answer, countersign.Rejected)
    assert refused.value.answer.reason == "Use make clean"
    assert ran == []


async def test_a_sync_guarded_function_returns_the_configured_message_when_rejected(
    cs: Countersign,
) -> None:
    ran: list[str] = []
    with countersign.Client(cs.url, AGENT_TOKEN, requested_by=REQUESTER) as client:

        @countersign.requires_approval(
            "coding.tool_use",
            client=client,
            timeout=20,
            refused="The user did not allow this: {reason}",
        )
        def use_tool(tool_name: str, command: str) -> str:
            ran.append(command)
            return "ran"

        called = asyncio.create_task(asyncio.to_thread(use_tool, "Bash", "git push --force"))
        proposal = await pending_in_slack(cs, "coding.tool_use")
        await cs.click(APPROVER, "reject", proposal.id)
        await cs.submit_reason(APPROVER, proposal.id, "Never force-push main")

        assert await called == "The user did not allow this: Never force-push main"
    assert ran == []


# --- callbacks and errors -----------------------------------------------------------------------


async def test_verify_callback_accepts_countersigns_callback_and_refuses_forged_or_stale(
    cs: Countersign, client: countersign.AsyncClient
) -> None:
    received: list[tuple[dict[str, str], bytes]] = []

    async def hook(request: web.Request) -> web.Response:
        received.append((dict(request.headers), await request.read()))
        return web.Response(status=204)

    url = cs.agent_hook("decisions", hook)
    proposal = await client.propose(
        "decision", {"title": "Tell me", "detail": "By callback."}, callback_url=url
    )
    await cs.posted(proposal.id)
    await cs.click(APPROVER, "approve", proposal.id)
    [(headers, body)] = await eventually(lambda: asyncio.sleep(0, received))

    document = countersign.verify_callback(headers, body, AGENT_TOKEN)
    assert isinstance(document, countersign.ProposalOut)
    assert document.id == proposal.id
    assert document.status == "succeeded"

    forged = body.replace(b"succeeded", b"rejected")
    with pytest.raises(countersign.InvalidCallback):
        countersign.verify_callback(headers, forged, AGENT_TOKEN)
    with pytest.raises(countersign.InvalidCallback):
        countersign.verify_callback(headers, body, "another-secret-entirely")
    earlier = str(int(headers["X-Countersign-Timestamp"]) - 600)
    stale = {**headers, "X-Countersign-Timestamp": earlier}
    with pytest.raises(countersign.InvalidCallback):
        countersign.verify_callback(stale, body, AGENT_TOKEN)


async def test_a_refused_request_raises_a_problem_carrying_its_fields(
    client: countersign.AsyncClient,
) -> None:
    with pytest.raises(countersign.ProblemError) as refused:
        await client.propose("decision", {"title": "No detail"})

    problem = refused.value
    assert problem.status == 422
    assert problem.title == "Request does not satisfy the contract"
    assert problem.type == "about:blank"
    assert "request.detail" in problem.detail
    assert [e.field for e in problem.errors] == ["request.detail"]


async def test_an_unknown_proposal_is_a_404_problem(client: countersign.AsyncClient) -> None:
    with pytest.raises(countersign.ProblemError) as refused:
        await client.get("cs_nothing_here")

    assert refused.value.status == 404
    assert refused.value.errors == ()


async def edit_in_slack(cs: Countersign, user: str, proposal_id: str, **typed: str) -> Any:
    """``user`` clicks Edit and submits the modal as Slack would: the prefilled values, except
    the ``typed`` fields; the stored edit (the proposal that superseded ``proposal_id``)."""
    before = len(cs.slack.views(user))
    assert await cs.click(user, "edit", proposal_id) == 200

    async def opened() -> Any:
        views = cs.slack.views(user)
        return views[-1].view if len(views) > before else None

    view = await eventually(opened)
    states = {}
    for block in view["blocks"]:
        if block["type"] == "input":
            element = block["element"]
            value = typed.get(block["block_id"].removeprefix("request."))
            value = element.get("initial_value") if value is None else value
            states[block["block_id"]] = {
                element["action_id"]: {"type": element["type"], "value": value}
            }
    body = view_submission_body(
        user_id=user,
        callback_id=view["callback_id"],
        private_metadata=view["private_metadata"],
        values={},
        states=states,
    )
    answer = await cs.request(
        "POST", "/slack/events", data=body.encode(), headers=signed_headers(SIGNING_SECRET, body)
    )
    assert answer.status == 200, answer.body

    async def superseded() -> Any:
        old = await cs.store.get_proposal(proposal_id)
        return old.superseded_by and await cs.store.get_proposal(old.superseded_by)

    return await eventually(superseded)


async def test_an_approvers_edit_is_what_approved_carries(
    cs: Countersign, client: countersign.AsyncClient
) -> None:
    """The agent carries out what people approved: the edited arguments, never its own."""
    asked = asyncio.create_task(
        client.ask("coding.tool_use", {"tool_name": "Bash", "command": "rm -rf build dist"})
    )
    proposal = await pending_in_slack(cs, "coding.tool_use")

    edit = await edit_in_slack(cs, APPROVER, proposal.id, command="rm -rf build")
    await cs.posted(edit.id)
    assert not asked.done()
    assert await cs.click(APPROVER_2, "approve", edit.id) == 200
    answer = await asked

    assert isinstance(answer, countersign.Approved)
    assert answer.arguments == {"tool_name": "Bash", "command": "rm -rf build"}
    assert answer.by == APPROVER_2
    assert (answer.proposal.id, answer.proposal.supersedes) == (edit.id, proposal.id)
    assert answer.proposal.edited_by == APPROVER


# --- waiting, reconnecting, escalating ---------------------------------------------------------


async def test_wait_returns_the_undecided_proposal_once_its_timeout_passes(
    cs: Countersign, client: countersign.AsyncClient
) -> None:
    proposal = await client.propose("decision", {"title": "Wait", "detail": "For nobody."})
    started = asyncio.get_running_loop().time()

    seen = await client.wait(proposal.id, timeout=0.5)

    assert seen.status == "pending"
    assert asyncio.get_running_loop().time() - started < 3


async def test_short_long_polls_are_reconnected_until_the_decision(cs: Countersign) -> None:
    async with countersign.AsyncClient(
        cs.url, AGENT_TOKEN, requested_by=REQUESTER, long_poll_seconds=0.1
    ) as client:
        asked = asyncio.create_task(client.approve("Poll", "In short slices.", timeout=20))
        proposal = await pending_in_slack(cs, "decision")
        await asyncio.sleep(0.5)  # several long polls come and go
        assert not asked.done()
        await cs.click(APPROVER, "approve", proposal.id)

        assert isinstance(await asked, countersign.Approved)


async def test_an_unreachable_countersign_raises_unreachable_after_its_attempts() -> None:
    async with countersign.AsyncClient(
        "http://127.0.0.1:9", AGENT_TOKEN, requested_by=REQUESTER, attempts=2
    ) as client:
        with pytest.raises(
            countersign.Unreachable, match=r"POST http://127\.0\.0\.1:9/v1/proposals"
        ):
            await client.propose("decision", {"title": "Anyone?", "detail": "Hello."})


async def test_escalate_hands_the_conversation_to_people(client: countersign.AsyncClient) -> None:
    summary = {
        "goal": "Refund the second charge of order 7",
        "steps_done": ["Looked up the order"],
        "tool_results": [{"tool": "payments.refund", "result_summary": "HTTP 500"}],
        "blocked_on": "The refund tool keeps failing",
    }
    trigger = {"kind": "explicit_request", "signals": {"customer_quote": "A human, please"}}

    made = await client.escalate("conv-7", summary=summary, trigger=trigger)
    again = await client.escalate("conv-7", summary=summary, trigger=trigger)
    read = await client.get_escalation(made.id)

    assert isinstance(made, countersign.EscalationOut)
    assert made.status == "open"
    assert made.requested_by == REQUESTER
    assert again.id == made.id == read.id


async def test_asking_on_an_operation_whose_outcome_is_unknown_says_not_to_retry_it(
    cs: Countersign, client: countersign.AsyncClient
) -> None:
    """ask() on an operation Countersign carries out, whose target is called and times out:
    never a failure the agent may retry, but OutcomeUnknown saying the effect may have happened
    and that a person must find out."""
    cs.target.delay = 4.0  # past the operation's timeout_seconds = 2, after being called
    tags = {"segment": "churn-risk", "tag": "winback", "customers": 40}  # a rule runs it at once

    with pytest.raises(countersign.OutcomeUnknown) as raised:
        await client.ask("crm.tag_customers", tags, timeout=30)

    said = str(raised.value)
    assert len(cs.target.taggings()) == 1
    assert "The effect may have happened" in said
    assert "Do NOT retry it" in said
    assert "a person must find out" in said
    stored = await cs.store.get_proposal(raised.value.proposal_id)
    assert stored.status == "needs_reconciliation"  # as it says
