"""The client against a Countersign older than the cancel endpoint: when the caller's deadline
passes, ``approve`` cannot withdraw the proposal and says so (CancelUnavailable), never that it
was withdrawn. A document older than ``shown_at`` still reads, and claims nothing about whether
anyone was shown the proposal."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from aiohttp import web

import countersign
from contracts.api import ProposalOut
from countersign.answers import TimedOut
from countersign.errors import ProblemError, when_to_retry
from countersign.reading import ending_of, shown_of
from countersign.tool_answers import refusal
from countersign.tool_permission import ToolCallShape, verdict_of

#: a proposal document as servers before shown_at, shown_after and backup_after wrote it
OLD_DOCUMENT: dict[str, Any] = {
    "id": "cs_aaaaaaaaaaaaaaaaaaaaaaaaaa",
    "status": "pending",
    "final": False,
    "operation": "decision",
    "agent": "old-agent",
    "requested_by": "U0REQUESTER",
    "run_id": None,
    "preview": {"title": "The agent asks: Restart", "fields": []},
    "arguments": {"title": "Restart", "detail": "Now."},
    "policy": {"decision": "ask", "rule_id": "decisions", "note": "asked"},
    "created_at": datetime.now(UTC).isoformat(),
    "expires_at": (datetime.now(UTC) + timedelta(hours=1)).isoformat(),
    "decision": None,
    "outcome": None,
    "supersedes": None,
    "edited_by": None,
    "superseded_by": None,
}
PENDING = ProposalOut.model_validate_json(json.dumps(OLD_DOCUMENT))


@pytest.fixture(params=[404, 405])
async def old_server(request: pytest.FixtureRequest) -> AsyncIterator[str]:
    """A server that takes proposals and reads them back, and has no cancel endpoint."""
    refused: int = request.param

    async def proposal(_: web.Request) -> web.Response:
        body = PENDING.model_dump_json(exclude_unset=True)  # the fields such a server wrote
        return web.Response(body=body, content_type="application/json")

    async def no_cancel(_: web.Request) -> web.Response:
        body = f'{{"type": "about:blank", "title": "No", "status": {refused}, "detail": "no"}}'
        return web.Response(status=refused, body=body, content_type="application/problem+json")

    app = web.Application()
    app.router.add_post("/v1/proposals", proposal)
    app.router.add_get("/v1/proposals/{id}", proposal)
    app.router.add_post("/v1/proposals/{id}/cancel", no_cancel)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


async def test_a_deadline_on_a_server_without_cancel_raises_cancel_unavailable(
    old_server: str,
) -> None:
    async with countersign.AsyncClient(old_server, "token", requested_by="U0REQUESTER") as client:
        with pytest.raises(countersign.CancelUnavailable) as unavailable:
            await client.approve("Restart", "Now.", timeout=0.2)

    assert unavailable.value.status in (404, 405)
    assert unavailable.value.proposal.id == PENDING.id
    assert "still pending on the server" in str(unavailable.value)


def test_a_refusal_whose_words_do_not_say_when_gets_the_retry_after_said() -> None:
    """A server whose 503 says only "retry later" (older ones) still has its Retry-After told
    to the model, which never sees the header; one whose words say when is not told twice."""
    older = ProblemError(status=503, title="Store unavailable", detail="retry later", retry_after=5)
    newer = ProblemError(
        status=503, title="Store unavailable", detail="retry after 5 s", retry_after=5
    )
    silent = ProblemError(status=503, title="Busy", detail="retry later")

    assert when_to_retry(older) == ". Countersign asked to try again in 5 s"
    assert when_to_retry(newer) == ""
    assert when_to_retry(silent) == ""


def test_a_document_without_shown_at_reads_and_claims_nothing_about_who_saw_it() -> None:
    """Nobody is told that people were asked, nor that nobody was shown it: such a server does
    not say which, so the words are the ones that claim neither."""
    assert "shown_at" not in OLD_DOCUMENT
    expired = {**OLD_DOCUMENT, "status": "expired", "final": True}
    proposal = ProposalOut.model_validate_json(json.dumps(expired))

    timed_out = TimedOut(proposal=proposal, by="deadline")
    verdict = verdict_of(ToolCallShape(), "Bash", timed_out, wait=5)
    ending = ending_of(expired)

    assert proposal.shown_at is None and "shown_at" not in proposal.model_fields_set
    assert shown_of(OLD_DOCUMENT) is None
    assert ending is not None and ending.kind == "expired" and ending.shown is None
    assert verdict.message.startswith("Nobody decided on Bash in Countersign within 5 s;")
    assert refusal(timed_out) == "nobody decided in time, so it was not run"
