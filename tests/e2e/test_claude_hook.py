"""``countersign-claude-hook`` as Claude Code runs it: a subprocess given the PreToolUse hook's JSON
on stdin, answering on stdout, against a running Countersign; a click in the local Slack decides
what Claude Code is told."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.coding_agent import BIN, agent_env, edit_input, pending_tool_call, with_tool_use
from tests.e2e.harness import APPROVER, APPROVER_2, Countersign, running_countersign
from tests.e2e.test_agent_quotas import both, limits

HOOK = str(BIN / "countersign-claude-hook")


@pytest.fixture
async def cs(tmp_path: Path) -> AsyncIterator[Countersign]:
    async with running_countersign(tmp_path, config_edit=with_tool_use) as running:
        yield running


def hook_call(tool_name: str, tool_input: Mapping[str, Any], tool_use_id: str) -> dict[str, Any]:
    """What Claude Code writes on a PreToolUse hook's stdin."""
    return {
        "session_id": "5f2a1c9e-session",
        "transcript_path": "/home/dev/.claude/projects/shop/5f2a1c9e-session.jsonl",
        "cwd": "/home/dev/shop",
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": tool_name,
        "tool_input": dict(tool_input),
        "tool_use_id": tool_use_id,
    }


def checkout_env() -> dict[str, str]:
    """PATH, and PYTHONPATH when set: the hook runs this checkout's code (a worktree's), not the
    one the virtualenv was installed from."""
    keep = ("PATH", "PYTHONPATH")
    return {name: os.environ[name] for name in keep if name in os.environ}


async def run_hook(
    stdin: bytes | dict[str, Any],
    env: Mapping[str, str],
    *args: str,
    command: tuple[str, ...] = (HOOK,),
) -> dict[str, Any]:
    """Run the hook as Claude Code does; its exit status must be 0 and stdout one JSON answer."""
    data = stdin if isinstance(stdin, bytes) else json.dumps(stdin).encode()
    process = await asyncio.create_subprocess_exec(
        *command,
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**checkout_env(), **env},
    )
    out, err = await asyncio.wait_for(process.communicate(data), timeout=60)
    assert process.returncode == 0, err.decode()
    answer: dict[str, Any] = json.loads(out)
    assert set(answer) == {"hookSpecificOutput"}
    assert answer["hookSpecificOutput"]["hookEventName"] == "PreToolUse"
    return answer["hookSpecificOutput"]


async def test_a_read_only_tool_is_allowed_at_once_by_policy(cs: Countersign) -> None:
    read = {"file_path": "/home/dev/shop/README.md"}

    answer = await run_hook(hook_call("Read", read, "toolu_read1"), agent_env(cs))

    assert answer["permissionDecision"] == "allow"
    assert answer["updatedInput"] == read
    assert "allowed by Countersign's policy" in answer["permissionDecisionReason"]
    assert cs.slack.messages("C0AGENTTOOLS") == []  # nobody was asked


async def test_countersign_claude_hook_is_the_same_hook(cs: Countersign) -> None:
    """``countersign claude-hook`` (the server's command line) hands over to the hook itself."""
    read = {"file_path": "/home/dev/shop/README.md"}
    command = (str(BIN / "countersign"), "claude-hook")

    answer = await run_hook(hook_call("Read", read, "toolu_read2"), agent_env(cs), command=command)

    assert answer["permissionDecision"] == "allow"
    assert answer["updatedInput"] == read


async def test_a_shell_command_is_allowed_once_an_approver_clicks(cs: Countersign) -> None:
    bash = {"command": "make test", "description": "Run the tests"}
    hook = asyncio.create_task(run_hook(hook_call("Bash", bash, "toolu_bash1"), agent_env(cs)))

    proposal = await pending_tool_call(cs, "Bash")
    assert proposal.arguments == {"tool_name": "Bash", "input": bash}
    assert proposal.agent_reason == "Claude Code in /home/dev/shop"
    assert proposal.run_id == "5f2a1c9e-session"
    assert not hook.done()
    assert await cs.click(APPROVER, "approve", proposal.id) == 200
    answer = await hook

    assert answer["permissionDecision"] == "allow"
    assert answer["updatedInput"] == bash
    assert APPROVER in answer["permissionDecisionReason"]


async def test_an_approvers_edit_is_the_input_that_runs(cs: Countersign) -> None:
    asked = {"command": "rm -rf build dist", "description": "Clean"}
    edited = {"command": "rm -rf build", "description": "Clean"}
    hook = asyncio.create_task(run_hook(hook_call("Bash", asked, "toolu_edit1"), agent_env(cs)))

    proposal = await pending_tool_call(cs, "Bash")
    edit = await edit_input(cs, APPROVER, proposal.id, edited)
    await cs.posted(edit.id)
    assert await cs.click(APPROVER_2, "approve", edit.id) == 200
    answer = await hook

    assert answer["permissionDecision"] == "allow"
    assert answer["updatedInput"] == edited


async def test_a_rejection_denies_with_the_reason(cs: Countersign) -> None:
    push = {"command": "git push --force origin main"}
    hook = asyncio.create_task(run_hook(hook_call("Bash", push, "toolu_push1"), agent_env(cs)))

    proposal = await pending_tool_call(cs, "Bash")
    assert await cs.click(APPROVER, "reject", proposal.id) == 200
    assert await cs.submit_reason(APPROVER, proposal.id, "Never force-push main") == 200
    answer = await hook

    assert answer["permissionDecision"] == "deny"
    assert "Never force-push main" in answer["permissionDecisionReason"]
    assert "updatedInput" not in answer


async def test_a_policy_denial_denies_with_the_rules_reason(cs: Countersign) -> None:
    fetch = {"url": "https://example.com/install.sh", "prompt": "Read it"}

    answer = await run_hook(hook_call("WebFetch", fetch, "toolu_fetch1"), agent_env(cs))

    assert answer["permissionDecision"] == "deny"
    assert "This agent does not reach the network." in answer["permissionDecisionReason"]


async def test_a_refused_call_says_each_field_at_fault_once(cs: Countersign) -> None:
    """Claude reads the reason: the problem's detail already lists the fields at fault, so the
    reason says each one once rather than twice."""
    call = hook_call("Bash", {"command": "ls"}, "toolu_unknown_op1")

    answer = await run_hook(call, agent_env(cs), "--operation", "coding.no_such_tool")

    reason = answer["permissionDecisionReason"]
    assert answer["permissionDecision"] == "deny"
    assert reason.count("unknown operation 'coding.no_such_tool'") == 1, reason


@pytest.mark.parametrize(
    ("env", "said"),
    [
        ({"COUNTERSIGN_TOKEN": "agent-token-nobody-has-this-one-0000"}, "unknown agent token"),
        ({"COUNTERSIGN_REQUESTED_BY": "U0SOMEONEELSE"}, "may not act for"),
    ],
)
async def test_a_request_countersign_refuses_is_denied_even_with_undecided_ask(
    cs: Countersign, env: dict[str, str], said: str
) -> None:
    """A wrong token (401) or a requester the agent may not act for (403) would be refused
    again: the person at the terminal is not asked to let the call through instead."""
    call = hook_call("Bash", {"command": "ls"}, "toolu_refused1")

    answer = await run_hook(call, agent_env(cs, **env), "--undecided", "ask")

    assert answer["permissionDecision"] == "deny"
    assert said in answer["permissionDecisionReason"]
    assert await cs.proposal_count() == 0


@pytest.mark.parametrize(("flags", "expected"), [((), "deny"), (("--undecided", "ask"), "ask")])
async def test_nobody_deciding_within_the_wait_answers_deny_or_ask_as_configured(
    cs: Countersign, flags: tuple[str, ...], expected: str
) -> None:
    write = {"file_path": "/home/dev/shop/app.py", "content": "print('hi')\n"}

    answer = await run_hook(
        hook_call("Write", write, f"toolu_write_{expected}"), agent_env(cs), "--wait", "1", *flags
    )

    assert answer["permissionDecision"] == expected
    # it was posted at once: people were shown it (shown_at), and nobody decided
    assert "People were asked about Write" in answer["permissionDecisionReason"]
    assert "nobody decided within 1 s" in answer["permissionDecisionReason"]
    proposal_id = re.search(r"proposal (cs_\w+)", answer["permissionDecisionReason"])
    assert proposal_id is not None, answer
    stored = await cs.store.get_proposal(proposal_id.group(1))
    assert stored.arguments == {"tool_name": "Write", "input": write}
    assert "the request was withdrawn" in answer["permissionDecisionReason"]
    assert stored.status == "cancelled"
    assert stored.shown_at is not None


async def test_a_wait_that_ends_before_slack_takes_the_post_says_nobody_was_shown_it(
    cs: Countersign,
) -> None:
    """Slack answers 429 to the post for longer than the hook waits: nobody saw the request, so
    the hook must not say that people were asked and left it undecided."""
    cs.slack.fail_next("chat.postMessage", status=429, retry_after=30, times=5)
    write = {"file_path": "/home/dev/shop/app.py", "content": "print('slow slack')\n"}

    answer = await run_hook(
        hook_call("Write", write, "toolu_write_unshown"), agent_env(cs), "--wait", "1"
    )

    reason = answer["permissionDecisionReason"]
    assert answer["permissionDecision"] == "deny"
    assert "Nobody has been shown the request to use Write in Countersign yet" in reason
    assert "(Slack has not taken it yet)" in reason
    assert "People were asked" not in reason and "Nobody decided" not in reason
    assert "the request was withdrawn" in reason
    proposal_id = re.search(r"proposal (cs_\w+)", reason)
    assert proposal_id is not None, answer
    stored = await cs.store.get_proposal(proposal_id.group(1))
    assert stored.status == "cancelled" and stored.slack_ts is None and stored.shown_at is None


async def test_countersign_unreachable_denies_or_asks_and_never_allows() -> None:
    call = hook_call("Bash", {"command": "ls"}, "toolu_down1")

    denied = await run_hook(call, agent_env(None))
    asked = await run_hook(call, agent_env(None), "--undecided", "ask")

    assert denied["permissionDecision"] == "deny"
    assert "could not be reached" in denied["permissionDecisionReason"]
    assert asked["permissionDecision"] == "ask"


@pytest.mark.parametrize(("flags", "expected"), [((), "deny"), (("--undecided", "ask"), "ask")])
async def test_at_the_agents_own_limit_the_hook_answers_within_its_wait_and_says_when_to_retry(
    tmp_path: Path, flags: tuple[str, ...], expected: str
) -> None:
    """The server answers 429 with a Retry-After longer than the hook's wait: the hook does not
    wait it out (Claude Code would stop a hook that outlives its timeout, and then only its own
    permission rules apply); it answers at once, saying the limit and when to try again."""
    edit = both(with_tool_use, limits(submissions_per_second=0.02, submissions_burst=1))
    async with running_countersign(tmp_path, config_edit=edit) as cs:
        read = {"file_path": "/home/dev/shop/README.md"}
        first = await run_hook(hook_call("Read", read, "toolu_limit1"), agent_env(cs))
        assert first["permissionDecision"] == "allow"  # the bucket is empty now, for 50 s
        started = time.monotonic()

        answer = await run_hook(
            hook_call("Read", read, "toolu_limit2"), agent_env(cs), "--wait", "2", *flags
        )

    assert time.monotonic() - started < 10  # it waited out 30 s three times before
    assert answer["permissionDecision"] == expected
    reason = answer["permissionDecisionReason"]
    assert "limits.submissions_per_second" in reason
    assert re.search(r"Retry after \d+ s", reason), reason


async def test_a_hook_without_configuration_or_with_unreadable_input_denies() -> None:
    call = hook_call("Bash", {"command": "ls"}, "toolu_conf1")

    unconfigured = await run_hook(call, {})
    garbled = await run_hook(b"{not json", agent_env(None))
    other_event = await run_hook({**call, "hook_event_name": "PostToolUse"}, agent_env(None))

    assert unconfigured["permissionDecision"] == "deny"
    assert "COUNTERSIGN_URL" in unconfigured["permissionDecisionReason"]
    assert garbled["permissionDecision"] == "deny"
    assert "could not read the tool call" in garbled["permissionDecisionReason"]
    assert other_event["permissionDecision"] == "deny"


# --- what the hook imports ---------------------------------------------------------------------

#: Run the hook as its console script does, then write the modules it imported to a file.
RUN_AND_LIST = """
import json, sys
from importlib import import_module
entry, args, listing = sys.argv[1], sys.argv[2:-1], sys.argv[-1]
code = import_module(entry).main(args)
with open(listing, "w") as out:
    json.dump(sorted(sys.modules), out)
sys.exit(code)
"""

#: What the hook path must never import: the full client's HTTP (aiohttp, asyncio), pydantic and
#: the wire models it needs none of, the callback receiver, and anything of the server.
FORBIDDEN = (
    "aiohttp",
    "asyncio",
    "pydantic",
    "pydantic_core",
    "http.client",
    "slack_bolt",
    "slack_sdk",
    "aiosqlite",
    "asyncpg",
    "contracts",
    "store",
    # the wire models (pydantic); canonical JSON and the signing scheme are standard library only
    "countersign.wire.base",
    "countersign.wire.api",
    "countersign.wire.outcomes",
    "countersign.wire.escalation",
    "countersign.client",
    "countersign.transport",
    "countersign.callbacks",
    "countersign.answers",
)


def heavy(modules: list[str]) -> list[str]:
    """The modules of ``modules`` the hook path must not import."""
    server = [m for m in modules if m.startswith("bot.") and m != "bot.cli"]
    banned = [m for m in modules if any(m == f or m.startswith(f + ".") for f in FORBIDDEN)]
    return server + banned


@pytest.mark.parametrize(
    ("entry", "args"), [("countersign.claude_hook", ()), ("bot.cli", ("claude-hook",))]
)
async def test_an_allowed_call_imports_nothing_but_the_light_client(
    cs: Countersign, tmp_path: Path, entry: str, args: tuple[str, ...]
) -> None:
    """Claude Code starts the hook for every tool call: through either name it answers with the
    standard library and the light client, never the full client, pydantic or the server."""
    listing = tmp_path / "modules.json"
    read = {"file_path": "/home/dev/shop/README.md"}
    command = (sys.executable, "-c", RUN_AND_LIST, entry, *args, str(listing))

    answer = await run_hook(
        hook_call("Read", read, f"toolu_imports_{entry}"),
        {**agent_env(cs), "PYTHONPATH": os.environ.get("PYTHONPATH", "")},
        command=command,
    )

    assert answer["permissionDecision"] == "allow"
    imported = json.loads(listing.read_text())
    assert "countersign.light" in imported
    assert heavy(imported) == []


def test_the_import_check_sees_what_the_full_client_imports() -> None:
    """The check above would fail for the full client (what the hook imported before)."""
    code = "import sys, json, countersign.client; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)

    found = heavy(json.loads(out.stdout))

    assert "aiohttp" in found
    assert "pydantic" in found
    assert "countersign.wire.api" in found


def with_a_tool_countersign_runs(text: str) -> str:
    """The coding agent's configuration and an operation Countersign itself carries out for a
    tool call (a webhook to the target), run at once by its rule."""
    found = re.search(r'url = "(http://[^"]+)/campaigns/send"', text)
    assert found is not None
    operation = f"""
[operations."coding.tool_run"]
kind = "webhook"
description = "A tool call run on the build host"
url = "{found.group(1)}/tools/run"
secret_env = "E2E_WEBHOOK_SECRET"
timeout_seconds = 2
risk = "reversible"
request_schema.type = "object"
request_schema.required = ["tool_name", "input"]
request_schema.properties.tool_name = {{ type = "string" }}
request_schema.properties.input = {{ type = "object" }}
preview = {{ title = "Run {{tool_name}}" }}

[[policy]]
id = "tool-runs"
operation = "coding.tool_run"
when = [{{ field = "tool_name", in = ["Bash"] }}]
decision = "auto"
"""
    return with_tool_use(text).replace("\n[[policy]]\n", operation + "\n[[policy]]\n", 1)


async def test_an_operation_whose_outcome_is_unknown_is_denied_saying_not_to_retry_it(
    tmp_path: Path,
) -> None:
    """A hook configured on an operation Countersign carries out, whose target is called and
    times out: the call is denied, not left to the person at the terminal, and the reason says
    the effect may have happened, that it must not be retried, and that a person must find
    out."""
    async with running_countersign(tmp_path, config_edit=with_a_tool_countersign_runs) as cs:
        cs.target.delay = 4.0  # past the operation's timeout_seconds = 2, after being called
        bash = hook_call("Bash", {"command": "make deploy"}, "toolu_run1")
        flags = ("--operation", "coding.tool_run", "--undecided", "ask")

        answer = await run_hook(bash, agent_env(cs), *flags)

        assert answer["permissionDecision"] == "deny"
        reason = answer["permissionDecisionReason"]
        assert "The effect may have happened" in reason
        assert "Do NOT retry it" in reason
        assert "a person must find out" in reason
        assert [r["path"] for r in cs.target.requests] == ["/tools/run"]
        proposal_id = re.search(r"proposal (cs_\w+)", reason)
        assert proposal_id is not None, reason
        stored = await cs.store.get_proposal(proposal_id.group(1))
        assert stored.status == "needs_reconciliation"  # as it says
