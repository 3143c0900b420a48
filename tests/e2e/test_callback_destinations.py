"""An agent's callback_url is data, never a destination Countersign trusts: attacks over HTTP.

The agent plays the attacker: it names internal addresses, metadata endpoints, names that resolve
inside, userinfo and prefix-boundary tricks, and a name that rebinds between submission and
delivery. Each is refused (422 naming ``callback_url``, nothing stored) or, at delivery, never
connected to. The app's DNS answers come from a fake resolver, so no test touches the network.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiosqlite
import pytest
from aiohttp import web

from tests.e2e.harness import (
    AGENT_TOKEN,
    APPROVER,
    REQUESTER,
    Answer,
    Countersign,
    eventually,
    running_countersign,
)

CAMPAIGN: dict[str, Any] = {
    "operation": "crm.send_campaign",
    "request": {"segment": "churn-risk", "template": "tmpl_winback", "recipients": 1200},
    "requested_by": REQUESTER,
}
#: runs at once (the 'small-tags' rule), so its callback is sent at once
AUTO_TAG: dict[str, Any] = {
    "operation": "crm.tag_customers",
    "request": {"segment": "churn-risk", "tag": "winback", "customers": 40},
    "requested_by": REQUESTER,
}
ESCALATION: dict[str, Any] = {
    "conversation_id": "conv-1",
    "requested_by": REQUESTER,
    "team": "billing",
    "summary": {
        "goal": "Refund the second charge of order 7",
        "steps_done": ["Looked up the order"],
        "tool_results": [],
        "blocked_on": "The refund tool keeps failing",
    },
    "trigger": {
        "kind": "repeated_failure",
        "signals": {"failed_turns": 4, "error_codes": ["E500", "E500", "E500"]},
    },
}
PUBLIC = "93.184.216.34"  #: what the fake DNS says public names resolve to


class FakeDns:
    """The app's DNS: a fixed answer per name; unknown names do not resolve."""

    def __init__(self, answers: Mapping[str, list[str]] | None = None) -> None:
        self.answers = dict(answers or {})
        self.asked: list[str] = []

    async def __call__(self, host: str, port: int) -> list[str]:
        self.asked.append(host)
        if host not in self.answers:
            raise OSError(f"{host}: no such name (fake DNS)")
        return list(self.answers[host])


def strict(*prefixes: str, allow_private: bool = False) -> dict[str, dict[str, Any]]:
    """support-bot with these prefixes, internal addresses refused unless ``allow_private``."""
    return {
        "support-bot": {
            "callback_url_prefixes": list(prefixes),
            "callback_allow_private": allow_private,
        }
    }


async def submit(cs: Countersign, body: Mapping[str, Any], path: str = "/v1/proposals") -> Answer:
    headers = {"Authorization": f"Bearer {AGENT_TOKEN}", "Content-Type": "application/json"}
    return await cs.request("POST", path, data=json.dumps(body).encode(), headers=headers)


async def assert_refused(cs: Countersign, answer: Answer, *words: str) -> str:
    """422 naming callback_url, and nothing stored, posted or sent."""
    assert answer.status == 422, answer.body
    assert answer.headers["Content-Type"].startswith("application/problem+json")
    document = answer.json()
    [error] = [e for e in document["errors"] if e["field"] == "callback_url"]
    for word in words:
        assert word in error["message"], error["message"]
    await cs.settled()
    assert await cs.proposal_count() == 0
    assert await escalation_count(cs) == 0
    assert await cs.store.audit_log() == []
    assert cs.slack.calls("chat.postMessage") == []
    assert cs.target.requests == []
    return str(error["message"])


async def escalation_count(cs: Countersign) -> int:
    async with (
        aiosqlite.connect(f"file:{cs.db_path}?mode=ro", uri=True) as db,
        db.execute("SELECT count(*) FROM escalations") as cursor,
    ):
        row = await cursor.fetchone()
    assert row is not None
    return int(row[0])


def origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


# --- no prefixes, no callbacks -------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/v1/proposals", "/v1/escalations"])
async def test_an_agent_without_callback_prefixes_may_name_no_callback_url(
    tmp_path: Path, path: str
) -> None:
    # Before, an empty list of prefixes allowed any URL at all.
    dns = FakeDns({"agents.example.com": [PUBLIC]})
    async with running_countersign(tmp_path, agent_settings=strict(), resolve=dns) as cs:
        body = CAMPAIGN if path == "/v1/proposals" else ESCALATION
        answer = await submit(cs, {**body, "callback_url": "https://agents.example.com/hook"}, path)

        await assert_refused(cs, answer, "callback_url_prefixes", "support-bot")


# --- internal destinations -----------------------------------------------------------------------


INTERNAL = [
    ("http://127.0.0.1:8080/hooks/done", "a loopback address"),
    ("http://[::1]:8080/hooks/done", "a loopback address"),
    ("http://[::ffff:127.0.0.1]:8080/hooks/done", "a loopback address"),
    ("http://localhost:8080/hooks/done", "a loopback name"),
    ("http://internal.example:8080/hooks/done", "resolves to a loopback address"),
    ("http://decimal.example:8080/hooks/done", "resolves to a private address"),
    ("http://10.1.2.3/hooks/done", "a private address"),
    ("http://192.168.1.10/hooks/done", "a private address"),
    ("http://[fd12:3456::1]/hooks/done", "a private address"),
    ("http://100.64.0.7/hooks/done", "carrier-grade NAT"),
    ("http://169.254.10.1/hooks/done", "a link-local address"),
    ("http://169.254.169.254/hooks/done", "a cloud metadata address"),
    ("http://[fd00:ec2::254]/hooks/done", "a cloud metadata address"),
    ("http://metadata.google.internal/hooks/done", "a cloud metadata service"),
    ("http://0.0.0.0:8080/hooks/done", "an unspecified address"),
    ("http://224.0.0.1/hooks/done", "a multicast address"),
    ("http://mixed.example/hooks/done", "resolves to a private address"),
]
DNS = {
    "internal.example": ["127.0.0.1"],
    "decimal.example": ["10.0.0.1"],
    "mixed.example": [PUBLIC, "192.168.0.1"],  # one bad address refuses the name
}


@pytest.mark.parametrize(("url", "kind"), INTERNAL, ids=[u for u, _ in INTERNAL])
async def test_an_internal_callback_destination_is_refused_at_submission(
    tmp_path: Path, url: str, kind: str
) -> None:
    # The prefix covers the URL: only the address check stands between the agent and it.
    prefixes = strict(origin_of(url) + "/hooks")
    async with running_countersign(tmp_path, agent_settings=prefixes, resolve=FakeDns(DNS)) as cs:
        answer = await submit(cs, {**CAMPAIGN, "callback_url": url})

        await assert_refused(cs, answer, kind)


async def test_an_internal_callback_destination_is_refused_for_escalations_too(
    tmp_path: Path,
) -> None:
    url = "http://169.254.169.254/hooks/latest"
    async with running_countersign(tmp_path, agent_settings=strict(origin_of(url))) as cs:
        answer = await submit(cs, {**ESCALATION, "callback_url": url}, "/v1/escalations")

        await assert_refused(cs, answer, "a cloud metadata address")


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("http://169.254.169.254/hooks/x", "a cloud metadata address"),
        ("http://metadata.google.internal/hooks/x", "a cloud metadata service"),
        ("http://0.0.0.0:8080/hooks/x", "an unspecified address"),
    ],
)
async def test_metadata_and_unspecified_addresses_stay_refused_with_allow_private(
    tmp_path: Path, url: str, kind: str
) -> None:
    prefixes = strict(origin_of(url) + "/hooks", allow_private=True)
    async with running_countersign(tmp_path, agent_settings=prefixes) as cs:
        answer = await submit(cs, {**CAMPAIGN, "callback_url": url})

        await assert_refused(cs, answer, kind)


async def test_an_operator_may_allow_internal_callbacks_per_agent(tmp_path: Path) -> None:
    url = "http://127.0.0.1:8080/hooks/done"
    allowed = strict("http://127.0.0.1:8080/hooks", allow_private=True)
    async with running_countersign(tmp_path, agent_settings=allowed) as cs:
        answer = await submit(cs, {**CAMPAIGN, "callback_url": url})

        assert answer.status == 201, answer.body


# --- the prefix is matched on the parsed URL ---------------------------------------------------


ALLOWED_PREFIX = "https://allowed.example/hooks"
TRICKS = [
    ("https://allowed.example@evil.example/hooks/x", "userinfo"),
    ("https://allowed.example:secret@allowed.example/hooks/x", "userinfo"),
    ("https://allowed.example/hooksevil", "prefixes configured"),
    ("https://allowed.example.evil.example/hooks/x", "prefixes configured"),
    ("http://allowed.example/hooks/x", "prefixes configured"),
    ("https://allowed.example:8443/hooks/x", "prefixes configured"),
    ("https://allowed.example/hooks/../admin", "prefixes configured"),
    ("https://allowed.example/hooks/%2e%2e/admin", "prefixes configured"),
    ("https://allowed.example/hooks/x%2f..%2f..%2fadmin", "percent-encode"),
    ("https://allowed.example/hooks/x#fragment", "fragment"),
    ("https://allowed.example\\@evil.example/hooks/x", "backslashes"),
]


@pytest.mark.parametrize(("url", "why"), TRICKS, ids=[u for u, _ in TRICKS])
async def test_a_callback_url_outside_the_prefix_is_refused_however_it_is_spelled(
    tmp_path: Path, url: str, why: str
) -> None:
    dns = FakeDns({"allowed.example": [PUBLIC], "evil.example": [PUBLIC]})
    async with running_countersign(
        tmp_path, agent_settings=strict(ALLOWED_PREFIX), resolve=dns
    ) as cs:
        answer = await submit(cs, {**CAMPAIGN, "callback_url": url})

        message = await assert_refused(cs, answer, why)
        assert "secret" not in message  # a userinfo password is not echoed


@pytest.mark.parametrize(
    "url",
    [
        "https://allowed.example/hooks",
        "https://allowed.example/hooks/run-1?attempt=2",
        "https://ALLOWED.Example:443/hooks/run-1",
        "https://allowed.example./hooks/run-1",
    ],
)
async def test_a_callback_url_under_the_prefix_is_accepted(tmp_path: Path, url: str) -> None:
    dns = FakeDns({"allowed.example": [PUBLIC], "allowed.example.": [PUBLIC]})
    async with running_countersign(
        tmp_path, agent_settings=strict(ALLOWED_PREFIX), resolve=dns
    ) as cs:
        answer = await submit(cs, {**CAMPAIGN, "callback_url": url})

        assert answer.status == 201, answer.body


# --- at delivery: the address connected to is the address checked ---------------------------------


class Rebinding(FakeDns):
    """Answers a public address at submission, then loopback (a DNS rebinding attack)."""

    def __init__(self, name: str) -> None:
        super().__init__({name: [PUBLIC]})
        self.name = name

    def rebind(self) -> None:
        self.answers[self.name] = ["127.0.0.1"]


async def _delivery_events(cs: Countersign, proposal_id: str) -> list[Any]:
    return [
        e
        for e in await cs.store.audit_log(proposal_id)
        if e.event in ("callback_delivered", "delivery_abandoned")
    ]


def prefixes_on(name: str) -> Callable[[str], str]:
    """A config_edit: the agents' callback prefix names the hooks' server as ``name``."""

    def edit(text: str) -> str:
        return re.sub(
            r'callback_url_prefixes = \["http://127\.0\.0\.1:',
            f'callback_url_prefixes = ["http://{name}:',
            text,
        )

    return edit


@pytest.mark.parametrize("allow_private", [False, True])
async def test_a_name_that_rebinds_to_loopback_after_submission_is_not_called(
    tmp_path: Path, allow_private: bool
) -> None:
    dns = Rebinding("agent.example")
    received: list[bytes] = []

    async def hook(request: web.Request) -> web.Response:
        received.append(await request.read())
        return web.json_response({"ok": True})

    async with running_countersign(
        tmp_path,
        agent_settings={"support-bot": {"callback_allow_private": allow_private}},
        config_edit=prefixes_on("agent.example"),
        resolve=dns,
    ) as cs:
        # The hook listens on loopback: reached only if Countersign connects where DNS points
        # at delivery time.
        hook_url = cs.agent_hook("rebound", hook).replace("127.0.0.1", "agent.example")
        answer = await submit(cs, {**CAMPAIGN, "callback_url": hook_url})
        assert answer.status == 201, answer.body
        proposal_id = answer.json()["id"]
        await cs.posted(proposal_id)

        dns.rebind()
        await cs.click(APPROVER, "approve", proposal_id)
        [event] = await eventually(lambda: _delivery_events(cs, proposal_id))
        await cs.settled()

    if allow_private:  # the operator allowed loopback: the same name is called there
        assert event.event == "callback_delivered"
        assert len(received) == 1
    else:
        assert event.event == "delivery_abandoned"
        assert "resolves to a loopback address" in str(event.detail["error"])
        assert received == []
        assert dns.asked.count("agent.example") >= 2  # resolved again at delivery


# --- IPv4 addresses written as the system reads them, not as a resolver would ---------------------

#: Each means 127.0.0.1 to the system (inet_aton, getaddrinfo); a DNS-only resolver knows none.
LOOPBACK_SPELLINGS = ["127.1", "2130706433", "0177.0.0.1", "0x7f.1"]


@pytest.mark.parametrize("spelling", LOOPBACK_SPELLINGS)
async def test_loopback_written_as_the_system_reads_it_is_refused_at_submission(
    tmp_path: Path, spelling: str
) -> None:
    # the operator's prefix and the app's DNS both take the spelling for a public name
    async with running_countersign(
        tmp_path,
        agent_settings={"support-bot": {"callback_allow_private": False}},
        config_edit=prefixes_on(spelling),
        resolve=FakeDns({spelling: [PUBLIC]}),
    ) as cs:
        url = cs.agent_hook("numeric", _never_called).replace("127.0.0.1", spelling)
        answer = await submit(cs, {**CAMPAIGN, "callback_url": url})
        await assert_refused(cs, answer, "a loopback address")


async def _never_called(request: web.Request) -> web.Response:
    raise AssertionError(f"the hook was called: {request.url}")
