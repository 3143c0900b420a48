"""What Claude Code is told when Countersign fails while asked about a tool call: the store really
stops answering (PostgreSQL behind a proxy that is cut), before the call was proposed or while
it waits for people. The hook never allows it, never says a person denied it, says whether
anyone was asked and whether the request is still open, and when to try again; what it says
matches what the store holds."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.e2e.coding_agent import agent_env, pending_tool_call, with_tool_use
from tests.e2e.harness import Countersign, running_countersign
from tests.e2e.store_outage import StoreProxy, postgres_through_proxy
from tests.e2e.test_claude_hook import hook_call, run_hook

pytestmark = pytest.mark.postgres


@pytest.fixture
async def outage(tmp_path: Path) -> AsyncIterator[tuple[Countersign, StoreProxy]]:
    async with (
        postgres_through_proxy() as (url, proxy),
        running_countersign(tmp_path, store_url=url, config_edit=with_tool_use) as running,
    ):
        yield running, proxy


def proposal_named(reason: str) -> str:
    found = re.search(r"proposal (cs_\w+)", reason)
    assert found is not None, reason
    return found.group(1)


async def test_a_store_outage_before_the_call_is_proposed_says_nobody_was_asked_and_when_to_retry(
    outage: tuple[Countersign, StoreProxy],
) -> None:
    cs, proxy = outage
    await proxy.cut()
    started = time.monotonic()

    answer = await run_hook(hook_call("Bash", {"command": "ls"}, "toolu_out1"), agent_env(cs))

    assert time.monotonic() - started < 20
    assert answer["permissionDecision"] == "deny"
    reason = answer["permissionDecisionReason"]
    assert "nobody was asked" in reason
    assert "Store unavailable" in reason
    assert "retry after 5 s" in reason  # the server says when; the hook does not say it twice
    assert "refused" not in reason  # nobody refused it: it could not be taken


async def test_a_store_outage_while_waiting_says_the_request_is_still_open_and_nobody_decided(
    outage: tuple[Countersign, StoreProxy],
) -> None:
    cs, proxy = outage
    bash = hook_call("Bash", {"command": "make deploy"}, "toolu_out2")
    hook = asyncio.create_task(run_hook(bash, agent_env(cs), "--wait", "4"))
    proposal = await pending_tool_call(cs, "Bash")
    await proxy.cut()

    answer = await hook
    await proxy.restore()

    assert answer["permissionDecision"] == "deny"
    reason = answer["permissionDecisionReason"]
    assert "could not be reached" not in reason  # it was: its store was not
    assert "refused" not in reason
    assert "Store unavailable" in reason
    assert "nobody had decided it" in reason
    assert proposal_named(reason) == proposal.id
    assert "may still be decided in Slack" in reason
    assert (await cs.store.get_proposal(proposal.id)).status == "pending"  # as it says


async def test_a_store_back_within_the_grace_lets_the_request_be_withdrawn_and_says_so(
    outage: tuple[Countersign, StoreProxy],
) -> None:
    cs, proxy = outage
    bash = hook_call("Bash", {"command": "make deploy"}, "toolu_out3")
    hook = asyncio.create_task(run_hook(bash, agent_env(cs), "--wait", "4", "--undecided", "ask"))
    proposal = await pending_tool_call(cs, "Bash")
    await proxy.cut()
    await asyncio.sleep(2)  # the wait's read meets the outage; the withdrawal is retried
    await proxy.restore()

    answer = await hook

    assert answer["permissionDecision"] == "ask"
    reason = answer["permissionDecisionReason"]
    assert "nobody had decided it" in reason
    assert f"The request was withdrawn (proposal {proposal.id})" in reason
    assert (await cs.store.get_proposal(proposal.id)).status == "cancelled"  # as it says
