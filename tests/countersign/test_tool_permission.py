"""How a tool call becomes a decision operation's request, and how an answer becomes a verdict:
only an approval naming the same tool, with an input, ever allows."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from contracts.api import ProposalOut
from countersign.answers import Approved, Cancelled, Rejected, TimedOut
from countersign.claude_hook import answer_for
from countersign.mcp_server import permission_answer
from countersign.tool_answers import refusal
from countersign.tool_permission import ToolCallShape, Verdict, tool_call_key, verdict_of

BASH = {"command": "make test"}


def proposal(**fields: Any) -> ProposalOut:
    document: dict[str, Any] = {
        "id": "cs_abc",
        "status": "succeeded",
        "final": True,
        "operation": "coding.tool_use",
        "agent": "claude-code",
        "requested_by": "U0DEV1",
        "run_id": None,
        "preview": {"title": "Claude Code wants to use Bash", "fields": []},
        "arguments": {},
        "policy": {"decision": "ask", "rule_id": "shell", "note": "matched"},
        "created_at": datetime.now(UTC).isoformat(),
        "expires_at": None,
        "decision": None,
        "outcome": None,
        "supersedes": None,
        "edited_by": None,
        "superseded_by": None,
        **fields,
    }
    return ProposalOut.model_validate_json(json.dumps(document))


def test_the_default_request_holds_the_tool_name_and_its_input() -> None:
    assert ToolCallShape().request("Bash", BASH) == {"tool_name": "Bash", "input": BASH}


def test_a_spread_input_sits_beside_the_tool_name_and_may_not_hide_it() -> None:
    shape = ToolCallShape(operation="coding.shell", input_field="*")

    assert shape.request("Bash", BASH) == {"tool_name": "Bash", "command": "make test"}
    assert shape.approved_input("Bash", {"tool_name": "Bash", "command": "ls"}) == {"command": "ls"}
    with pytest.raises(ValueError, match="has a field 'tool_name'"):
        shape.request("Bash", {"tool_name": "Read"})


def test_the_shape_comes_from_flags_then_the_environment_then_the_defaults() -> None:
    env = {"COUNTERSIGN_TOOL_OPERATION": "agent.tool", "COUNTERSIGN_TOOL_INPUT_FIELD": "args"}

    assert ToolCallShape.configured({}) == ToolCallShape()
    assert ToolCallShape.configured(env) == ToolCallShape("agent.tool", "tool_name", "args")
    assert ToolCallShape.configured(env, operation="x.y").operation == "x.y"
    with pytest.raises(ValueError, match="other than 'tool_name'"):
        ToolCallShape.configured({"COUNTERSIGN_TOOL_INPUT_FIELD": "tool_name"})


@pytest.mark.parametrize(
    "arguments",
    [
        {"tool_name": "Read", "input": BASH},  # an approver changed the tool
        {"tool_name": "Bash"},  # no input
        {"tool_name": "Bash", "input": "make test"},  # not an object
    ],
)
def test_an_approval_that_does_not_name_this_tool_with_an_input_denies(
    arguments: dict[str, Any],
) -> None:
    approved = Approved(proposal=proposal(arguments=arguments), arguments=arguments, by="U0R1")

    verdict = verdict_of(ToolCallShape(), "Bash", approved, wait=60)

    assert verdict.decision == "deny"
    assert not verdict.allowed
    assert permission_answer(
        verdict.allowed, updated_input=verdict.updated_input, message=verdict.message
    ).startswith('{"behavior": "deny"')
    assert answer_for(verdict, "ask")["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_only_an_approval_allows_and_undecided_answers_follow_the_fallback() -> None:
    pending = proposal(status="pending", final=False)
    approved = Approved(
        proposal=proposal(), arguments={"tool_name": "Bash", "input": BASH}, by="U0R1"
    )
    answers = {
        "approved": approved,
        "rejected": Rejected(proposal=pending, reason="No", by="U0R1"),
        "denied": Rejected(proposal=pending, reason="Policy", by=None),
        "expired": TimedOut(proposal=pending, by="expiry"),
        "deadline": TimedOut(proposal=pending, by="deadline"),
        "cancelled": Cancelled(proposal=pending),
    }
    verdicts = {name: verdict_of(ToolCallShape(), "Bash", a, wait=5) for name, a in answers.items()}
    decided = {
        name: answer_for(v, "ask")["hookSpecificOutput"]["permissionDecision"]
        for name, v in verdicts.items()
    }

    assert decided == {
        "approved": "allow",
        "rejected": "deny",
        "denied": "deny",
        "expired": "ask",
        "deadline": "ask",
        "cancelled": "deny",
    }
    assert verdicts["approved"].updated_input == BASH
    assert [name for name, v in verdicts.items() if v.allowed] == ["approved"]


def test_an_allow_without_an_input_is_a_deny() -> None:
    assert permission_answer(True, updated_input=None, message="?") == (
        '{"behavior": "deny", "message": "?"}'
    )
    assert not Verdict("allow", "approved").allowed


def test_a_tool_call_without_an_id_never_shares_a_proposal() -> None:
    assert tool_call_key("hook", "toolu_1", "s1") == tool_call_key("hook", "toolu_1", "s1")
    assert tool_call_key("hook", "toolu_1", "s1") != tool_call_key("hook", "toolu_2", "s1")
    assert tool_call_key("hook", None, "s1") != tool_call_key("hook", None, "s1")


def test_an_undecided_request_says_whether_people_were_shown_it() -> None:
    """Nobody deciding means something else when nobody was shown it yet: its batch still held
    it (the time it goes out is told), or Slack had not taken the post."""
    now = datetime.now(UTC)
    created = now.isoformat()
    later = (now + timedelta(minutes=10)).replace(microsecond=0)
    held = proposal(status="cancelled", shown_after=later.isoformat(), shown_at=None)
    unposted = proposal(status="cancelled", shown_after=created, shown_at=None)
    asked = proposal(status="cancelled", shown_after=created, shown_at=created)
    expired_unseen = proposal(status="expired", shown_after=created, shown_at=None)

    def message(answer: TimedOut) -> str:
        return verdict_of(ToolCallShape(), "Bash", answer, wait=5).message

    held_message = message(TimedOut(proposal=held, by="deadline"))
    assert held_message.startswith(
        "Nobody has been shown the request to use Bash in Countersign yet (it is scheduled to "
        "be shown at "
    )
    assert held_message.endswith(
        f"{later:%H:%M:%S} UTC), so nobody could decide within 5 s; the request was withdrawn "
        "(proposal cs_abc)"
    )
    assert "(Slack has not taken it yet), so nobody could decide within 5 s" in message(
        TimedOut(proposal=unposted, by="deadline")
    )
    assert message(TimedOut(proposal=asked, by="deadline")).startswith(
        "People were asked about Bash in Countersign and nobody decided within 5 s; the request "
        "was withdrawn"
    )
    assert message(TimedOut(proposal=expired_unseen, by="expiry")).startswith(
        "Nobody was shown the request to use Bash in Countersign before it expired"
    )
    assert refusal(TimedOut(proposal=held, by="deadline")).startswith(
        "nobody had been shown the approval request yet"
    )
    assert refusal(TimedOut(proposal=asked, by="deadline")).startswith("people were asked")
