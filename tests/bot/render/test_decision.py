"""A decision operation (contracts/operations/decision.py) reads as a decision from the message to
the outcome: the agent will act itself, trusted to do only this; the approval lets it go ahead;
nothing says "executed" or shows the approved arguments as raw JSON; the agent's detail is
labelled as its words."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from bot.render import digest_reply as render_digest_reply
from bot.render import home as render_home
from bot.render import proposal as render
from bot.render.replies import outcome_reply
from bot.render.status import goes_ahead
from bot.render.words import AGENT_ACTS_LABEL
from contracts.base import Context
from contracts.operations.decision import from_config
from contracts.outcomes import Succeeded
from store.proposals import Proposal, Status
from tests.bot.render.test_figures import shown_texts
from tests.bot.render.test_proposal import NOW, buttons, make_proposal, mrkdwn_texts


class _NoNetwork:
    async def post(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a decision reaches no network")


async def a_decision() -> Proposal:
    """The generic question as the client's approve(title, detail) asks it."""
    operation = from_config({"name": "decision"})
    request = {"title": "Restart the checkout service", "detail": "Memory has grown for 3 days."}
    ctx = Context(now=datetime.now(UTC), http=_NoNetwork(), correlation_id="c")
    resolved = await operation.resolve(operation.parse_request(request), ctx)
    return make_proposal(
        operation="decision",
        request=request,
        arguments=operation.dump_arguments(resolved.arguments),
        preview=resolved.preview,
        rule_id="agent-decisions",
        policy_note="rule 'agent-decisions' matches every decision",
    )


async def approved(proposal: Proposal) -> Proposal:
    operation = from_config({"name": "decision"})
    outcome = await operation.execute(
        operation.load_arguments(proposal.arguments),
        Context(now=NOW, http=_NoNetwork(), correlation_id="c"),
        key="k",  # type: ignore[arg-type]
    )
    return proposal.model_copy(
        update={
            "status": Status.SUCCEEDED,
            "decided_by": "U0PRIYA",
            "decided_at": NOW,
            "outcome": outcome,
        }
    )


async def test_a_pending_decision_says_the_agent_will_act_itself() -> None:
    message = render.proposal_message(await a_decision(), now=NOW, agent_acts=True)

    verdict = message["blocks"][0]["text"]["text"].split("\n")
    assert verdict[0] == AGENT_ACTS_LABEL
    assert "trusts the agent to do only what is described here" in verdict[0]
    text = "\n".join(mrkdwn_texts(message))
    assert "Irreversible" not in text
    assert verdict[1] == (
        "*Why you are asked:* every request of this kind is asked for (rule *agent-decisions*)"
    )
    assert "*Detail (the agent's words)*\nMemory has grown for 3 days." in text
    confirm = buttons(message)["approve"]["confirm"]
    assert confirm["title"]["text"] == "Let the agent go ahead?"
    assert confirm["text"]["text"] == (
        "The agent asks: Restart the checkout service · The agent does this itself;"
        " Countersign runs nothing."
    )
    assert "execute" not in json.dumps(confirm).lower()


async def test_an_approved_decision_lets_the_agent_go_ahead_without_raw_arguments() -> None:
    done = await approved(await a_decision())

    message = render.proposal_message(done, now=NOW, agent_acts=True)
    reply = outcome_reply(done)
    thread = render_digest_reply.digest_reply([(1, done, Status.SUCCEEDED)])
    texts = [
        *shown_texts(message),
        message["text"],
        *shown_texts(reply),
        reply["text"],
        *shown_texts(thread),
    ]

    joined = "\n".join(texts)
    assert "Approved: the agent may go ahead" in message["text"]
    assert "*Approved: the agent may go ahead.* Countersign ran nothing" in joined
    assert "Approved: the agent may go ahead" in reply["text"]
    assert "Succeeded" not in joined
    assert "Arguments" not in joined and '"detail"' not in joined and "executed_by" not in joined
    assert "Irreversible" not in joined  # its outcome says who acts, even without agent_acts


async def test_a_decision_that_ran_through_countersign_still_reads_as_succeeded() -> None:
    """A result that merely looks like a decision's (a target's JSON) is no decision unless it
    is exactly one."""
    done = make_proposal(
        status=Status.SUCCEEDED,
        decided_by="U0PRIYA",
        decided_at=NOW,
        outcome=Succeeded(result={"decision": "approved", "executed_by": "agent", "extra": 1}),
    )
    assert not goes_ahead(done)
    assert outcome_reply(done)["text"].startswith("Succeeded: ")


async def test_the_home_tab_and_show_say_the_agent_will_act_itself() -> None:
    pending = await a_decision()

    home = render_home.home_view(
        waiting=[pending], owned=[], decisions=[], now=NOW, agent_acts_of=lambda _: True
    )
    shown = render_home.proposal_detail_blocks(pending, [], now=NOW, agent_acts=True)

    for blocks in (home["blocks"], shown):
        text = json.dumps(blocks, ensure_ascii=False)
        assert "The agent will do this itself" in text
        assert "Irreversible" not in text
