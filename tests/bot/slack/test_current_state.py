"""The current state the Home tab and ``/countersign show`` give: each operation's revalidation,
run in the background, at most once per proposal while its last check is fresh, with a short
timeout (``show`` waits a moment for it); never for an operation that checks nothing."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timedelta
from typing import Any

from bot.render.home import StateCheck, home_view, proposal_detail_blocks
from bot.slack.current_state import CurrentState
from contracts.base import Context
from contracts.operations.refund import InMemoryLedger, Payment, Refund
from contracts.operations.webhook import from_config as webhook_from_config
from contracts.registry import Registry
from store.proposals import Proposal
from tests.bot.render.test_proposal import NOW, make_proposal, mrkdwn_texts


class CountingLedger(InMemoryLedger):
    """The demo's ledger, counting look-ups; ``delay`` makes each one slow."""

    def __init__(self, delay: float = 0.0) -> None:
        super().__init__(
            [Payment(payment_id="pay_1", customer="c", amount_cents=45000, currency="USD")]
        )
        self.lookups = 0
        self.delay = delay

    async def payment(self, payment_id: str) -> Payment | None:
        self.lookups += 1
        await asyncio.sleep(self.delay)
        return await super().payment(payment_id)


class _NoNetwork:
    async def post(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("no network here")


def refund_proposal(refundable: int, **changes: Any) -> Proposal:
    arguments = {
        "payment_id": "pay_1",
        "amount_cents": 12000,
        "currency": "USD",
        "customer": "c",
        "reason": "duplicate",
        "refundable_cents_at_preview": refundable,
    }
    return make_proposal(arguments=arguments, **changes)


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> datetime:
        return self.now


def checker(
    ledger: InMemoryLedger, clock: Clock, checked: list[str], **options: Any
) -> CurrentState:
    no_check = webhook_from_config(
        {
            "name": "crm.note",
            "description": "Add a note",
            "url": "https://crm.example.com/note",
            "request_schema": {"type": "object", "properties": {"text": {"type": "string"}}},
            "preview": {"title": "Note"},
        },
        secret="s" * 32,
    )
    return CurrentState(
        Registry([Refund(ledger), no_check]),
        lambda now: Context(now=now, http=_NoNetwork(), correlation_id="home.1"),
        clock,
        lambda proposal: checked.append(proposal.id),
        **options,
    )


async def settled() -> None:
    for _ in range(20):
        await asyncio.sleep(0.01)


async def test_a_proposal_is_checked_once_while_its_check_is_fresh() -> None:
    ledger, clock, checked = CountingLedger(), Clock(), []
    current = checker(ledger, clock, checked)
    proposal = refund_proposal(45000)

    assert current.request([proposal]) == {proposal.id}
    assert current.known([proposal]) == {}  # the tab does not wait for it
    await settled()

    assert checked == [proposal.id]
    assert current.known([proposal]) == {proposal.id: StateCheck(at=NOW)}
    for _ in range(5):  # opened again and again: nothing more is asked of the ledger
        assert current.request([proposal]) == set()
    assert ledger.lookups == 1

    clock.now = NOW + timedelta(minutes=3)  # stale: not shown, checked again
    assert current.known([proposal]) == {}
    assert current.request([proposal]) == {proposal.id}
    await settled()
    assert ledger.lookups == 2
    await current.close()


async def test_a_changed_state_is_kept_with_the_operations_reason() -> None:
    current = checker(CountingLedger(), Clock(), [])
    proposal = refund_proposal(50000)  # the payment has 45000 refundable now

    current.request([proposal])
    await settled()

    [check] = current.known([proposal]).values()
    assert check.reason == (
        "refundable amount on pay_1 changed since the preview: was 500.00 USD, now 450.00 USD"
    )
    assert not check.failed
    await current.close()


async def test_a_slow_check_gives_up_after_the_timeout() -> None:
    current = checker(CountingLedger(delay=5), Clock(), [], timeout=0.05)
    proposal = refund_proposal(45000)

    current.request([proposal])
    await asyncio.sleep(0.2)

    assert current.known([proposal]) == {
        proposal.id: StateCheck(at=NOW, reason="no answer within 0.05 s", failed=True)
    }
    await current.close()


async def test_an_operation_that_checks_nothing_is_never_run() -> None:
    checked: list[str] = []
    current = checker(CountingLedger(), Clock(), checked)
    note = make_proposal(operation="crm.note", arguments={"text": "hi"})

    assert current.request([note]) == set()
    await settled()
    assert checked == [] and current.known([note]) == {}
    await current.close()


async def test_show_waits_a_moment_for_a_check_and_shares_it_with_the_tab() -> None:
    ledger, checked = CountingLedger(delay=0.05), []
    current = checker(ledger, Clock(), checked)
    proposal = refund_proposal(45000)

    assert current.request([proposal]) == {proposal.id}  # the tab started it
    found = await current.check(proposal, within=1)  # show joins it: one look-up

    assert found == StateCheck(at=NOW)
    assert ledger.lookups == 1
    assert await current.check(proposal, within=1) == found  # fresh: not asked again
    assert ledger.lookups == 1
    assert current.known([proposal]) == {proposal.id: found}
    await current.close()


async def test_show_says_when_the_check_did_not_answer_in_time_and_it_goes_on() -> None:
    ledger, checked = CountingLedger(delay=0.2), []
    current = checker(ledger, Clock(), checked)
    proposal = refund_proposal(50000)

    late = await current.check(proposal, within=0.01)
    await asyncio.sleep(0.4)

    assert late == StateCheck(at=NOW, reason="no answer within 0.01 s", failed=True)
    [done] = current.known([proposal]).values()  # finished in the background, for the next
    assert done.reason is not None and "was 500.00 USD, now 450.00 USD" in done.reason
    assert checked == [proposal.id]
    await current.close()


async def test_show_asks_nothing_of_an_operation_that_checks_nothing() -> None:
    current = checker(CountingLedger(), Clock(), [])
    note = make_proposal(operation="crm.note", arguments={"text": "hi"})

    assert await current.check(note, within=1) is None
    await current.close()


def test_show_gives_the_current_state_in_its_verdict() -> None:
    proposal = make_proposal(quorum=2)
    check = StateCheck(at=NOW, reason="refundable amount changed")

    blocks = proposal_detail_blocks(proposal, [], now=NOW, current=check)
    without = proposal_detail_blocks(proposal, [], now=NOW)

    lines = blocks[0]["text"]["text"].split("\n")
    assert lines[:2] == without[0]["text"]["text"].split("\n")[:2]  # risk, why asked
    assert lines[-1].startswith(":warning: *Current state has changed:* refundable amount changed")
    assert blocks[1:] == without[1:]  # then the title and the values, as before
    assert "Current state" not in json.dumps(without)


def test_the_home_tab_shows_what_the_check_found_inert() -> None:
    proposals = [make_proposal(id=f"cs_{n:012d}") for n in range(3)]
    current = {
        proposals[0].id: StateCheck(at=NOW - timedelta(minutes=1)),
        proposals[1].id: StateCheck(at=NOW, reason="payment <!channel> is now *refunded*"),
        proposals[2].id: StateCheck(at=NOW, reason="no answer within 3 s", failed=True),
    }

    view = home_view(waiting=proposals, owned=[], decisions=[], now=NOW, current=current)
    text = "\n".join(mrkdwn_texts(view))

    assert ":mag: *Current state:* unchanged since the preview (checked <!date^" in text
    assert ":warning: *Current state has changed:* payment " in text
    assert "<!channel>" not in text and "*refunded*" not in text
    assert "stop before executing" in text
    assert ":grey_question: *Current state:* could not be checked (no answer within 3 s;" in text
    assert "Current state" not in "\n".join(
        mrkdwn_texts(home_view(waiting=proposals, owned=[], decisions=[], now=NOW))
    )
