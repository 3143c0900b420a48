"""A recorded click applied twice at once, because its lease ended while its first application
still waited: the second application finds the clicker's approval, rejection, extension, retry,
recorded outcome, take or resolution, made by the first, and tells them nothing false nor
audits or runs it again. Two instances on one PostgreSQL schema, each with its running applier;
a connection of the test holds the proposal's (or escalation's) row lock, so the first
application really waits in the store (where an approval locks its proposal, and every other
decision's compare-and-set updates its row), its lease really ends (the second instance's clock
is a minute ahead), and the second instance's applier leases the click again and waits there
too. Every click is a signed block_actions (or view_submission) payload sent over HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from bot.app import DECISIONS
from bot.render.actions import DIGEST_APPROVE_ALL, DIGEST_REJECT_ALL
from store.escalations import Moved
from store.proposals import Status, Transitioned
from tests.e2e.harness import (
    APPROVER,
    APPROVER_2,
    CAMPAIGN_CHANNEL,
    REQUESTER,
    Countersign,
    eventually,
    replace_rule,
    running_countersign,
)
from tests.e2e.test_digests import click as digest_click
from tests.e2e.test_digests import posted_digest, submit_all, submit_view
from tests.e2e.test_escalations import click as escalation_click
from tests.e2e.test_escalations import escalation
from tests.e2e.test_escalations import post as post_escalation
from tests.e2e.test_escalations import posted as escalation_posted
from tests.slack_requests import view_submission_body

pytestmark = pytest.mark.postgres

#: The applier's lease of a click (bot/app.py), and a moment past it.
PAST_THE_LEASE = timedelta(seconds=61)
#: What each campaign's one extension adds to its expiry.
EXTEND_BY = timedelta(minutes=30)
RECORDED = "Your approval is recorded: 1 of 2"
REFUSED = ":no_entry_sign: Countersign did not do that"
CAMPAIGN: dict[str, Any] = {
    "operation": "crm.send_campaign",
    "request": {"segment": "vip", "template": "tmpl_winback", "recipients": 10},
    "requested_by": REQUESTER,
    "run_id": "run-1",
}


def campaigns(quorum: int) -> Callable[[str], str]:
    """Campaigns asked of finance, ``quorum`` approvers each, extendable once."""
    return replace_rule(
        "campaigns",
        f"""
        [[policy]]
        id = "campaigns"
        operation = "crm.send_campaign"
        decision = "ask"
        approvers = ["finance"]
        quorum = {quorum}
        channel = "{CAMPAIGN_CHANNEL}"
        expires_after = "30m"
        extend_by = "30m"
        """,
    )


@dataclass
class Twice:
    """The two instances, and the proposal whose click both applied (for a digest's click, the
    item whose row was held, among ``items``)."""

    first: Countersign
    second: Countersign
    proposal_id: str
    items: list[str]

    def told(self, user: str) -> list[str]:
        """What ``user`` was told privately, by either instance."""
        return [m.text for cs in (self.first, self.second) for m in cs.slack.ephemeral(user)]

    async def approvals(self) -> list[str]:
        """The proposal's audit entries of approvals and refused approvals, oldest first."""
        return await self.events("approv")

    async def events(self, about: str, proposal_id: str | None = None) -> list[str]:
        """The proposal's (or item's) audit entries whose event names ``about``, oldest first."""
        entries = await self.first.store.audit_log(proposal_id or self.proposal_id)
        return [e.event for e in entries if about in e.event]

    def tallies(self, verb: str) -> list[str]:
        """What a digest's clicks told APPROVER they did: "Approved 3, ...", once each."""
        return [text for text in self.told(APPROVER) if text.startswith(verb)]

    async def refusal(self, user: str) -> str:
        """The refusal ``user`` was told, once it is told (only one, ever)."""
        [refusal] = await eventually(lambda: _async([t for t in self.told(user) if REFUSED in t]))
        return str(refusal)

    def executions(self) -> int:
        return len(self.first.target.executions()) + len(self.second.target.executions())


#: A person's decision on a proposal (or a digest), sent to an instance: the click to apply
#: twice.
Click = Callable[[Countersign, str], Awaitable[int]]


async def approve(cs: Countersign, proposal_id: str) -> int:
    return await cs.click(APPROVER, "approve", proposal_id)


async def reject(cs: Countersign, proposal_id: str) -> int:
    """The reason modal of APPROVER's Reject, submitted."""
    return await cs.submit_reason(APPROVER, proposal_id, "not this week")


async def extend(cs: Countersign, proposal_id: str) -> int:
    return await cs.click(APPROVER, "extend", proposal_id)


async def retry(cs: Countersign, proposal_id: str) -> int:
    return await cs.click(APPROVER, "reconcile_retry", proposal_id)


async def happened(cs: Countersign, proposal_id: str) -> int:
    return await cs.click(APPROVER, "reconcile_succeeded", proposal_id)


async def take(cs: Countersign, escalation_id: str) -> int:
    return await escalation_click(cs, APPROVER, "escalation_take", escalation_id)


async def resolve(cs: Countersign, escalation_id: str) -> int:
    return await escalation_click(cs, APPROVER, "escalation_resolve", escalation_id)


async def hand_back(cs: Countersign, escalation_id: str) -> int:
    """The hand-back modal of APPROVER, submitted with a note for the agent."""
    body = view_submission_body(
        user_id=APPROVER,
        callback_id="escalation_hand_back",
        private_metadata=escalation_id,
        values={"note": {"note": "refunded by hand"}},
    )
    return await cs.post_slack(body)


async def approve_all(cs: Countersign, digest_id: str) -> int:
    digest = await cs.store.digests().get_digest(digest_id)
    return await digest_click(cs, APPROVER, DIGEST_APPROVE_ALL, digest)


async def reject_all(cs: Countersign, digest_id: str) -> int:
    """Reject all… clicked, and its modal submitted with a reason."""
    digest = await cs.store.digests().get_digest(digest_id)
    assert await digest_click(cs, APPROVER, DIGEST_REJECT_ALL, digest) == 200
    [opened] = await eventually(lambda: _async(cs.slack.views(APPROVER)))
    values = {"reason": {"reason": {"type": "plain_text_input", "value": "not this week"}}}
    await submit_view(cs, APPROVER, opened.view, values)  # answered 200, or it fails
    return 200


@asynccontextmanager
async def applied_twice(
    tmp_path: Path,
    postgres_url: str,
    quorum: int = 2,
    click: Click = approve,
    items: int = 1,
    uncertain: bool = False,
    escalated: bool = False,
    taken: bool = False,
) -> AsyncIterator[Twice]:
    """APPROVER's ``click`` (Approve unless told), applied by both instances' appliers at once
    (see the module's docstring), both applications done. With ``items`` more than one, the
    campaigns are one digest, ``click`` is on the digest, and the first item's row is held:
    the first application decides the others before the second reads them. ``uncertain``: the
    proposal was claimed by an executor that died, its lease ended, and it waits for a person
    to reconcile it (or retry it) when it is clicked. ``escalated``: ``click`` is on an
    escalation, whose row is held; ``taken``: APPROVER has taken it."""
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
    edit = campaigns(quorum) if items == 1 else _digested(campaigns(quorum))
    async with (
        running_countersign(tmp_path / "a", store_url=postgres_url, config_edit=edit) as first,
        _connection(postgres_url) as reader,
        _connection(postgres_url) as locker,
    ):
        table = "escalations" if escalated else "proposals"
        if escalated:
            status, created = await post_escalation(first, escalation())
            assert status == 201, created
            subject = created["id"]
            await escalation_posted(first, subject)
            if taken:
                took = await first.store.escalations().take(
                    subject, actor=APPROVER, now=first.clock()
                )
                assert isinstance(took, Moved), took
            ids = [subject]
        elif items == 1:
            status, created = await first.submit(CAMPAIGN)
            assert status == 201, created
            subject = created["id"]
            await first.posted(subject)
            ids = [subject]
            if uncertain:
                await _claimed_by_an_executor_that_died(first, subject)
        else:
            ids = await submit_all(first, [_campaign(n) for n in range(items)])
            subject = (await posted_digest(first, ids)).id
        proposal_id = ids[0]
        holder = await locker.fetchval("SELECT pg_backend_pid()")

        async def leased(attempts: int) -> bool:
            query = "SELECT attempts FROM recorded_clicks WHERE subject = $1"
            return bool(await reader.fetchval(query, subject) == attempts)

        async def waiting_for_the_row(count: int) -> bool:
            """``count`` sessions wait for the lock: on it, or queued behind one that does."""
            query = "SELECT pid, pg_blocking_pids(pid) AS behind FROM pg_stat_activity"
            rows = {row["pid"]: set(row["behind"]) for row in await reader.fetch(query)}
            waiting: set[int] = set()
            more = {holder}
            while more:
                more = {pid for pid, behind in rows.items() if behind & more} - waiting
                waiting |= more
            return len(waiting) == count

        lock = locker.transaction()
        await lock.start()
        held = True
        try:  # an approval locks its proposal's row first (store/proposals/approvals.py), a
            # rejection's or an extension's compare-and-set updates it
            held_row = f"SELECT id FROM {table} WHERE id = $1 FOR UPDATE"
            await locker.execute(held_row, proposal_id)
            assert await click(first, subject) == 200
            await eventually(lambda: leased(1))  # by the first instance's applier
            await eventually(lambda: waiting_for_the_row(1), timeout=20)
            async with running_countersign(
                tmp_path / "b", store_url=postgres_url, config_edit=edit
            ) as second:
                # the first application's lease ends
                second.clock.advance(PAST_THE_LEASE + (first.clock() - second.clock()))
                await eventually(lambda: leased(2))  # by the second instance's applier
                await eventually(lambda: waiting_for_the_row(2), timeout=20)
                await lock.rollback()  # both applications go on
                held = False

                async def applied_by_both() -> bool:
                    both = (first.app[DECISIONS], second.app[DECISIONS])
                    return sum(d.applied for d in both) == 2 and not any(d.answering for d in both)

                await eventually(applied_by_both, timeout=20)
                assert await first.store.clicks().waiting_clicks() == 0
                yield Twice(first, second, proposal_id, ids)
        finally:  # never left held: the instances could not stop
            if held:
                await lock.rollback()


async def _claimed_by_an_executor_that_died(cs: Countersign, proposal_id: str) -> None:
    """``proposal_id`` claimed for execution by an executor that never records an outcome:
    its lease ends and the instance hands it to a person (needs_reconciliation)."""
    proposal = await cs.store.get_proposal(proposal_id)
    now = cs.clock()
    claimed = await cs.store.claim_for_execution(
        proposal_id,
        actor=APPROVER_2,
        now=now,
        binding_hash=proposal.binding_hash,
        lease_until=now + timedelta(seconds=1),
    )
    assert isinstance(claimed, Transitioned), claimed
    cs.clock.advance(timedelta(seconds=2))

    async def uncertain() -> bool:
        status = (await cs.store.get_proposal(proposal_id)).status
        return status is Status.NEEDS_RECONCILIATION

    await eventually(uncertain, timeout=20)


def _digested(edit: Callable[[str], str]) -> Callable[[str], str]:
    """``edit``, and a digest window long enough for the test's submissions to share one."""
    return lambda text: edit(text) + "\n[slack]\ndigest_window_seconds = 1.5\n"


def _campaign(n: int) -> dict[str, Any]:
    """CAMPAIGN to segment ``n``: similar campaigns, one digest."""
    request = {**CAMPAIGN["request"], "segment": f"vip-{n}"}
    return {**CAMPAIGN, "request": request, "run_id": f"run-{n}"}


@asynccontextmanager
async def _connection(url: str) -> AsyncIterator[asyncpg.Connection]:
    db = await asyncpg.connect(url)
    try:
        yield db
    finally:
        await db.close()


async def test_a_click_applied_again_while_its_approval_was_made_is_not_told_already_approved(
    tmp_path: Path, postgres_url: str
) -> None:
    """Quorum 2: the first application counts the approval and says so; the second finds it
    there and refuses nothing (no "you already approved", no refusal audited). A later Approve
    click of the same person is another click: it is refused, honestly; the second approver's
    runs the proposal once."""
    async with applied_twice(tmp_path, postgres_url, quorum=2) as twice:
        first, proposal_id = twice.first, twice.proposal_id
        proposal = await first.store.get_proposal(proposal_id)
        assert [a.approver for a in proposal.approvals] == [APPROVER]
        assert await twice.approvals() == ["approval_recorded"]
        told = twice.told(APPROVER)
        assert len([text for text in told if RECORDED in text]) == 1, told
        assert not any("already" in text or REFUSED in text for text in told), told

        # a click of their own again, later (at the instance whose clock is ahead: its moment
        # follows their approval whichever instance made it)
        assert await twice.second.click(APPROVER, "approve", proposal_id) == 200

        async def refused() -> bool:
            return await twice.approvals() == ["approval_recorded", "approve_refused"]

        await eventually(refused, timeout=20)
        refusal = await twice.refusal(APPROVER)
        assert "you already approved this; 1 more approval(s) needed" in refusal

        assert await first.click(APPROVER_2, "approve", proposal_id) == 200
        _, final = await first.read(proposal_id, wait=10)
        assert final["status"] == "succeeded", final
        assert twice.executions() == 1
        assert await twice.approvals() == ["approval_recorded", "approve_refused", "approved"]


async def test_a_click_applied_again_after_its_approval_ran_the_proposal_is_not_told_decided(
    tmp_path: Path, postgres_url: str
) -> None:
    """Quorum 1: the first application's approval claims and runs the proposal; the second
    finds it decided by that approval and does not tell its clicker it was decided already."""
    async with applied_twice(tmp_path, postgres_url, quorum=1) as twice:
        _, final = await twice.first.read(twice.proposal_id, wait=10)
        assert final["status"] == "succeeded", final
        assert twice.executions() == 1
        assert await twice.approvals() == ["approved"]
        told = twice.told(APPROVER)
        assert not any("already" in text or REFUSED in text for text in told), told


async def test_a_rejection_applied_again_while_it_was_made_is_not_told_already_decided(
    tmp_path: Path, postgres_url: str
) -> None:
    """The reason modal of a Reject, applied twice at once: the proposal is rejected once, with
    one audit entry; the second application finds the rejection its own and tells its clicker
    nothing (not "already decided: Rejected"). A later submission of theirs, after their
    rejection, is told honestly that it was decided."""
    async with applied_twice(tmp_path, postgres_url, click=reject) as twice:
        first, proposal_id = twice.first, twice.proposal_id
        proposal = await first.store.get_proposal(proposal_id)
        assert (proposal.status, proposal.decided_by) == (Status.REJECTED, APPROVER)
        assert proposal.decision_note == "not this week"
        assert await twice.events("reject") == ["rejected"]
        told = twice.told(APPROVER)
        assert not any("already" in text or REFUSED in text for text in told), told

        # the modal submitted again, later: no longer recorded (the proposal is decided), it
        # goes to the decision path, which says who decided it
        assert await twice.second.submit_reason(APPROVER, proposal_id, "still no") == 200

        async def decided() -> list[str]:
            return [t for t in twice.told(APPROVER) if "already decided" in t]

        [text] = await eventually(decided)
        assert "Rejected" in text and APPROVER in text, text
        assert await twice.events("reject") == ["rejected"]
        assert (await first.store.get_proposal(proposal_id)).decision_note == "not this week"
        _, final = await first.read(proposal_id)
        assert final["status"] == "rejected", final
        assert twice.executions() == 0


async def test_an_extension_applied_again_while_it_was_made_is_not_told_already_extended(
    tmp_path: Path, postgres_url: str
) -> None:
    """An Extend click applied twice at once: the expiry moves once, by the rule's extend_by,
    with one audit entry; the second application finds the extension its own and neither
    tells its clicker "already extended once, by you" nor audits a refusal. A later Extend
    click of theirs is another click: it is refused, honestly, and audited."""
    async with applied_twice(tmp_path, postgres_url, click=extend) as twice:
        first, proposal_id = twice.first, twice.proposal_id
        proposal = await first.store.get_proposal(proposal_id)
        assert proposal.extended_by == APPROVER and proposal.status is Status.PENDING
        [entry] = [e for e in await first.store.audit_log(proposal_id) if e.event == "extended"]
        moved = {k: datetime.fromisoformat(str(entry.detail[k])) for k in ("from", "to")}
        assert moved["to"] - moved["from"] == EXTEND_BY and moved["to"] == proposal.expires_at
        assert await twice.events("extend") == ["extended"]
        told = twice.told(APPROVER)
        assert not any("already" in text or REFUSED in text for text in told), told

        # a click of their own again, later (at the instance whose clock is ahead: its moment
        # follows their extension whichever instance made it)
        assert await twice.second.click(APPROVER, "extend", proposal_id) == 200

        async def refused() -> bool:
            return await twice.events("extend") == ["extended", "extend_refused"]

        await eventually(refused, timeout=20)
        refusal = await twice.refusal(APPROVER)
        assert f"it was already extended once, by {APPROVER}" in refusal
        assert (await first.store.get_proposal(proposal_id)).expires_at == proposal.expires_at


async def test_a_digests_approve_all_applied_again_counts_its_own_approvals_and_refuses_none(
    tmp_path: Path, postgres_url: str
) -> None:
    """Approve all on a digest of three, quorum 2, applied twice at once: the second
    application finds two items approved by the first (when it reads the digest) and the third
    approved meanwhile (the store refuses its approval). Each item has one approval and one
    audit entry, none refused; each application tells the same true tally. A later Approve all
    of the same person is refused, item by item, honestly."""
    async with applied_twice(tmp_path, postgres_url, click=approve_all, items=3) as twice:
        first = twice.first
        for proposal_id in twice.items:
            proposal = await first.store.get_proposal(proposal_id)
            assert [a.approver for a in proposal.approvals] == [APPROVER]
            assert await twice.events("approv", proposal_id) == ["approval_recorded"]
        counted = (
            "Approved 0, 3 approvals counted, waiting for more approvers, 0 already decided, "
            "0 refused."
        )
        assert twice.tallies("Approved") == [counted, counted]

        # Approve all again, later (at the instance whose clock is ahead)
        digest_id = (await first.store.get_proposal(twice.proposal_id)).digest_id
        assert digest_id is not None
        assert await approve_all(twice.second, digest_id) == 200

        async def refused() -> list[str]:
            return [t for t in twice.tallies("Approved") if t != counted]

        [refusal] = await eventually(refused, timeout=20)
        assert refusal.startswith("Approved 0, 0 already decided, 3 refused."), refusal
        assert "3 refused: you already approved this; 1 more approval(s) needed" in refusal
        for proposal_id in twice.items:
            events = await twice.events("approv", proposal_id)
            assert events == ["approval_recorded", "approve_refused"], events
        assert twice.executions() == 0


async def test_a_digests_reject_all_applied_again_counts_its_own_rejections(
    tmp_path: Path, postgres_url: str
) -> None:
    """Reject all… on a digest of three, applied twice at once: every item is rejected once,
    with one audit entry; the second application counts the rejections the first made as its
    own, not as "already decided", and tells the same true tally."""
    async with applied_twice(tmp_path, postgres_url, click=reject_all, items=3) as twice:
        for proposal_id in twice.items:
            proposal = await twice.first.store.get_proposal(proposal_id)
            assert (proposal.status, proposal.decided_by) == (Status.REJECTED, APPROVER)
            assert await twice.events("reject", proposal_id) == ["rejected"]
        rejected = "Rejected 3, 0 already decided, 0 refused."
        assert twice.tallies("Rejected") == [rejected, rejected]
        assert twice.executions() == 0


async def test_a_retry_applied_again_while_it_was_made_runs_once_and_is_not_told_refused(
    tmp_path: Path, postgres_url: str
) -> None:
    """A Retry of an uncertain execution applied twice at once: the execution is tried again
    once, with one audit entry; the second application finds the retry its own and tells its
    clicker nothing (not "it is being executed right now", nor "already decided"). A later
    Retry of theirs, once it ran, is told honestly that it was decided."""
    async with applied_twice(
        tmp_path, postgres_url, quorum=1, click=retry, uncertain=True
    ) as twice:
        first, proposal_id = twice.first, twice.proposal_id
        _, final = await first.read(proposal_id, wait=10)
        assert final["status"] == "succeeded", final
        assert twice.executions() == 1
        assert (await first.store.get_proposal(proposal_id)).attempt == 2
        assert await twice.events("retry") == ["retry_approved"]
        told = twice.told(APPROVER)
        assert not any("already" in text or REFUSED in text for text in told), told

        # a Retry of their own again, later (at the instance whose clock is ahead)
        assert await twice.second.click(APPROVER, "reconcile_retry", proposal_id) == 200

        async def decided() -> list[str]:
            return [t for t in twice.told(APPROVER) if "already decided" in t]

        [text] = await eventually(decided, timeout=20)
        assert "Succeeded" in text, text
        assert await twice.events("retry") == ["retry_approved"]
        assert twice.executions() == 1


async def test_a_reconciliation_applied_again_while_it_was_made_is_not_told_already_decided(
    tmp_path: Path, postgres_url: str
) -> None:
    """ "It happened", recorded for an uncertain execution and applied twice at once: the
    outcome is recorded once, with one audit entry, nothing executed; the second application
    finds the resolution its own and tells its clicker nothing. A later click of theirs is
    told honestly that it was decided."""
    async with applied_twice(
        tmp_path, postgres_url, quorum=1, click=happened, uncertain=True
    ) as twice:
        first, proposal_id = twice.first, twice.proposal_id
        proposal = await first.store.get_proposal(proposal_id)
        assert proposal.status is Status.SUCCEEDED
        assert await twice.events("reconcil") == ["reconciled"]
        told = twice.told(APPROVER)
        assert not any("already" in text or REFUSED in text for text in told), told

        assert await twice.second.click(APPROVER, "reconcile_failed", proposal_id) == 200

        async def decided() -> list[str]:
            return [t for t in twice.told(APPROVER) if "already decided" in t]

        [text] = await eventually(decided, timeout=20)
        assert "Succeeded" in text, text
        assert await twice.events("reconcil") == ["reconciled"]
        assert (await first.store.get_proposal(proposal_id)).status is Status.SUCCEEDED
        assert twice.executions() == 0


async def test_a_take_applied_again_while_it_was_made_is_not_told_already_taken(
    tmp_path: Path, postgres_url: str
) -> None:
    """Take it, applied twice at once: the escalation is taken once, by APPROVER, with one
    audit entry; the second application finds the take its own and tells its clicker nothing
    (not "you have already taken it"). A later Take of theirs is told so, honestly."""
    async with applied_twice(tmp_path, postgres_url, click=take, escalated=True) as twice:
        escalations = twice.first.store.escalations()
        found = await escalations.get_escalation(twice.proposal_id)
        assert (found.status.value, found.owner) == ("taken", APPROVER)
        events = [e.event for e in await escalations.escalation_log(found.id)]
        assert events.count("taken") == 1 and not any("refused" in e for e in events), events
        told = twice.told(APPROVER)
        assert not any("already" in text or REFUSED in text for text in told), told

        # a Take of their own again, later (at the instance whose clock is ahead)
        assert await take(twice.second, found.id) == 200
        assert "you have already taken it" in await twice.refusal(APPROVER)
        events = [e.event for e in await escalations.escalation_log(found.id)]
        assert events.count("taken") == 1, events


async def test_a_resolve_applied_again_while_it_was_made_is_not_told_already_resolved(
    tmp_path: Path, postgres_url: str
) -> None:
    """Resolve, applied twice at once: resolved once, by APPROVER, with one audit entry; the
    second application tells its clicker nothing (not "it was already resolved by <you>"). A
    later Resolve of theirs is told so, honestly."""
    async with applied_twice(tmp_path, postgres_url, click=resolve, escalated=True) as twice:
        escalations = twice.first.store.escalations()
        found = await escalations.get_escalation(twice.proposal_id)
        assert (found.status.value, found.resolved_by) == ("resolved", APPROVER)
        events = [e.event for e in await escalations.escalation_log(found.id)]
        assert events.count("resolved") == 1 and not any("refused" in e for e in events), events
        told = twice.told(APPROVER)
        assert not any("already" in text or REFUSED in text for text in told), told

        # a Resolve of their own again, later (at the instance whose clock is ahead)
        assert await resolve(twice.second, found.id) == 200

        async def resolved() -> list[str]:
            return [t for t in twice.told(APPROVER) if "already resolved" in t]

        [text] = await eventually(resolved, timeout=20)
        assert APPROVER in text, text
        events = [e.event for e in await escalations.escalation_log(found.id)]
        assert events.count("resolved") == 1, events


async def test_a_hand_back_applied_again_while_it_was_made_is_not_told_nobody_has_it(
    tmp_path: Path, postgres_url: str
) -> None:
    """The hand-back modal, applied twice at once: handed back once, with one audit entry; the
    second application tells its clicker nothing (not "only the person who took it can hand
    it back, and nobody has it now"). A later hand-back of theirs is told so, honestly."""
    async with applied_twice(
        tmp_path, postgres_url, click=hand_back, escalated=True, taken=True
    ) as twice:
        escalations = twice.first.store.escalations()
        found = await escalations.get_escalation(twice.proposal_id)
        assert (found.status.value, found.note) == ("handed_back", "refunded by hand")
        events = [e.event for e in await escalations.escalation_log(found.id)]
        assert events.count("handed_back") == 1, events
        told = twice.told(APPROVER)
        assert not any("nobody has it" in text or REFUSED in text for text in told), told

        # the modal submitted again, later (at the instance whose clock is ahead)
        assert await hand_back(twice.second, found.id) == 200
        assert "nobody has it now" in await twice.refusal(APPROVER)
        events = [e.event for e in await escalations.escalation_log(found.id)]
        assert events.count("handed_back") == 1, events


async def _async(value: Any) -> Any:
    return value


async def test_it_happened_recorded_as_the_persons_retry_runs_is_answered_not_taken_for_it(
    tmp_path: Path, postgres_url: str
) -> None:
    """A person clicks Retry on an uncertain execution, then "It happened" while the Retry's
    application waits in the store (the proposal's row is held), and the second click is
    recorded a moment earlier by the clock than the Retry's answer is made (the clock that
    recorded it runs behind). The Retry runs; "It happened" is another click, not the Retry's
    own answer: it is refused and told why (the proposal is being executed, or was decided),
    not left without an answer, and nothing is recorded for it."""
    async with (
        running_countersign(tmp_path, store_url=postgres_url, config_edit=campaigns(1)) as cs,
        _connection(postgres_url) as locker,
        _connection(postgres_url) as reader,
    ):
        status, created = await cs.submit(CAMPAIGN)
        assert status == 201, created
        proposal_id = created["id"]
        await cs.posted(proposal_id)
        await _claimed_by_an_executor_that_died(cs, proposal_id)
        lock = locker.transaction()
        await lock.start()
        try:
            await locker.execute("SELECT id FROM proposals WHERE id = $1 FOR UPDATE", proposal_id)
            holder = await locker.fetchval("SELECT pg_backend_pid()")
            assert await retry(cs, proposal_id) == 200

            async def retry_waits() -> bool:  # its compare-and-set, on the held row
                query = (
                    "SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))"
                )
                return bool(await reader.fetchval(query, holder) == 1)

            await eventually(retry_waits, timeout=20)
            cs.clock.advance(timedelta(seconds=-1))
            assert await happened(cs, proposal_id) == 200
        finally:
            await lock.rollback()

        async def answered() -> list[str]:
            told = [m.text for m in cs.slack.ephemeral(APPROVER)]
            return [t for t in told if "executed right now" in t or "already decided" in t]

        await eventually(answered, timeout=20)

        async def settled() -> bool:
            return await cs.store.clicks().waiting_clicks() == 0

        await eventually(settled, timeout=20)
        entries = [e.event for e in await cs.store.audit_log(proposal_id)]
        assert "retry_approved" in entries and "reconciled" not in entries, entries
        assert len(cs.target.executions()) == 1
