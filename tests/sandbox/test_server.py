"""The sandbox server over HTTP: demo proposals, forwarded clicks and modals, the page's state."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final
from urllib.parse import parse_qs

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from slack_sdk.signature import SignatureVerifier

from bot.sandbox import Sandbox, running_sandbox
from bot.sandbox.demo import DEMO_PROPOSALS, PEOPLE, REQUESTER, SCENARIOS
from bot.sandbox.forwarder import Refused, SlackForwarder
from bot.sandbox.origin import own_origin_only
from bot.sandbox.payloads import input_state
from bot.slack.local import LocalSlack, LocalUser
from tests.e2e.harness import eventually

APPROVER = "U0PRIYA"  #: finance
REJECTER = "U0MARCUS"  #: finance
MARKETING = "U0SAM"  #: marketing-leads
FINANCE = "C0FINANCE"
MARKETING_CHANNEL = "C0MARKETING"


@pytest.fixture
async def sandbox(tmp_path: Path) -> AsyncIterator[Sandbox]:
    async with running_sandbox(data_dir=tmp_path / "data") as running:
        yield running


async def post(sandbox: Sandbox, path: str, body: dict[str, Any]) -> tuple[int, Any]:
    async with sandbox.session.post(f"{sandbox.url}{path}", json=body) as response:
        return response.status, await response.json()


async def state(sandbox: Sandbox, user: str) -> dict[str, Any]:
    async with sandbox.session.get(f"{sandbox.url}/sandbox/state", params={"user": user}) as r:
        assert r.status == 200
        loaded: dict[str, Any] = await r.json()
        return loaded


async def demo(sandbox: Sandbox) -> dict[str, dict[str, Any]]:
    status, answer = await post(sandbox, "/sandbox/demo", {})
    assert status == 201, answer
    return {p["label"]: p for p in answer["proposals"]}


def channel(view: dict[str, Any], channel_id: str) -> dict[str, Any]:
    found: dict[str, Any] = next(c for c in view["channels"] if c["id"] == channel_id)
    return found


async def message_of(sandbox: Sandbox, channel_id: str, title: str) -> dict[str, Any]:
    """The top-level message whose header (after the verdict) is ``title``, once posted."""

    async def posted() -> dict[str, Any] | None:
        for message in channel(await state(sandbox, APPROVER), channel_id)["messages"]:
            headers = [b for b in message["blocks"] if b["type"] == "header"]
            if headers and headers[0]["text"]["text"] == title:
                found: dict[str, Any] = message
                return found
        return None

    found: dict[str, Any] = await eventually(posted)
    return found


def button_at(message: dict[str, Any], action_id: str) -> int:
    return next(
        index
        for index, block in enumerate(message["blocks"])
        if block["type"] == "actions"
        and any(e.get("action_id") == action_id for e in block["elements"])
    )


async def click(
    sandbox: Sandbox, user: str, channel_id: str, message: dict[str, Any], action_id: str
) -> tuple[int, Any]:
    return await post(
        sandbox,
        "/sandbox/click",
        {
            "user": user,
            "channel": channel_id,
            "ts": message["ts"],
            "block_index": button_at(message, action_id),
            "action_id": action_id,
        },
    )


def texts(message: dict[str, Any]) -> str:
    """Every text of a message's blocks, joined: what a reader of the message sees."""
    return json.dumps(message["blocks"], ensure_ascii=False)


# --- the demo -------------------------------------------------------------------------------------


async def test_demo_submits_one_proposal_for_every_path_through_the_agent_api(
    sandbox: Sandbox,
) -> None:
    made = await demo(sandbox)

    assert set(made) == {d.label for d in DEMO_PROPOSALS}
    assert made["auto-approved"]["decision"] == "auto"
    assert made["auto-approved"]["status"] == "succeeded"
    assert made["needs approval"]["status"] == "pending"
    assert made["denied"]["status"] == "denied"
    assert made["needs approval (webhook)"]["status"] == "pending"
    # nothing a new user starts with expires while they try the rest: 30 minutes or more
    for label in ("needs approval", "needs approval (webhook)"):
        expires_in = datetime.fromisoformat(made[label]["expires_at"]) - datetime.now(UTC)
        assert expires_in > timedelta(minutes=29), label
    # the ones that ask appear in their channels; the others only in the agent's view
    await message_of(sandbox, FINANCE, made["needs approval"]["title"])
    await message_of(sandbox, MARKETING_CHANNEL, made["needs approval (webhook)"]["title"])
    view = await state(sandbox, APPROVER)
    assert len(channel(view, FINANCE)["messages"]) == 1
    assert {p["status"] for p in view["agent"]["proposals"]} == {"succeeded", "pending", "denied"}


async def test_demo_can_run_again_and_makes_new_proposals(sandbox: Sandbox) -> None:
    first = await demo(sandbox)
    second = await demo(sandbox)

    assert {p["id"] for p in first.values()}.isdisjoint(p["id"] for p in second.values())
    assert second["auto-approved"]["status"] == "succeeded"


# --- clicks and modals through the page's endpoints -----------------------------------------------


async def test_requester_approving_is_refused_with_an_explanation_only_she_sees(
    sandbox: Sandbox,
) -> None:
    made = await demo(sandbox)
    message = await message_of(sandbox, FINANCE, made["needs approval"]["title"])

    status, answer = await click(sandbox, REQUESTER, FINANCE, message, "approve")

    assert (status, answer["status"]) == (200, 200)

    async def refusal() -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = channel(await state(sandbox, REQUESTER), FINANCE)["ephemeral"]
        return found

    [ephemeral] = await eventually(refusal)
    assert "you are the person accountable for this request" in ephemeral["text"]
    assert channel(await state(sandbox, APPROVER), FINANCE)["ephemeral"] == []
    assert "approve" in texts(await message_of(sandbox, FINANCE, made["needs approval"]["title"]))


async def test_marketing_lead_approves_the_campaign_and_the_demo_target_receives_it(
    sandbox: Sandbox,
) -> None:
    made = await demo(sandbox)
    title = made["needs approval (webhook)"]["title"]
    message = await message_of(sandbox, MARKETING_CHANNEL, title)

    await click(sandbox, MARKETING, MARKETING_CHANNEL, message, "approve")

    async def replied() -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = (await message_of(sandbox, MARKETING_CHANNEL, title))[
            "replies"
        ]
        return found

    [reply] = await eventually(replied)
    assert "Succeeded" in reply["text"]
    [delivery] = sandbox.target.deliveries  # the target verified Countersign's signature
    assert delivery.arguments["segment"] == "lapsed-customers"
    assert sandbox.target.refused == 0
    assert "cmp_0001" in texts(reply)


async def test_reject_opens_a_modal_for_the_clicker_that_needs_a_reason(sandbox: Sandbox) -> None:
    made = await demo(sandbox)
    title = made["needs approval"]["title"]
    message = await message_of(sandbox, FINANCE, title)

    await click(sandbox, REJECTER, FINANCE, message, "reject")

    async def modal() -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = (await state(sandbox, REJECTER))["views"]
        return found

    [opened] = await eventually(modal)
    assert (await state(sandbox, APPROVER))["views"] == []
    empty = {"user": REJECTER, "view_id": opened["id"], "values": {"reason": {"reason": " "}}}
    status, answer = await post(sandbox, "/sandbox/submit", empty)
    assert (status, answer["errors"], answer["closed"]) == (
        200,
        {"reason": "Say why you reject it."},
        False,
    )
    assert len((await state(sandbox, REJECTER))["views"]) == 1

    reason = {**empty, "values": {"reason": {"reason": "Ask the customer for photos first."}}}
    status, answer = await post(sandbox, "/sandbox/submit", reason)

    assert (status, answer["closed"]) == (200, True)
    assert (await state(sandbox, REJECTER))["views"] == []

    async def replied() -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = (await message_of(sandbox, FINANCE, title))["replies"]
        return found

    [reply] = await eventually(replied)
    assert "Rejected" in reply["text"]
    assert "Ask the customer for photos first." in texts(reply)


async def test_cancelling_a_modal_closes_it_and_rejects_nothing(sandbox: Sandbox) -> None:
    made = await demo(sandbox)
    message = await message_of(sandbox, FINANCE, made["needs approval"]["title"])
    await click(sandbox, REJECTER, FINANCE, message, "reject")

    async def modal() -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = (await state(sandbox, REJECTER))["views"]
        return found

    [opened] = await eventually(modal)
    status, _ = await post(sandbox, "/sandbox/cancel", {"user": REJECTER, "view_id": opened["id"]})

    assert status == 200
    assert (await state(sandbox, REJECTER))["views"] == []
    status, again = await post(
        sandbox, "/sandbox/cancel", {"user": REJECTER, "view_id": opened["id"]}
    )
    assert status == 409
    assert opened["id"] in again["error"]
    proposals = (await state(sandbox, APPROVER))["agent"]["proposals"]
    [refund] = [p for p in proposals if p["id"] == made["needs approval"]["id"]]
    assert refund["status"] == "pending"


async def test_a_click_on_a_button_the_message_does_not_have_is_refused(sandbox: Sandbox) -> None:
    made = await demo(sandbox)
    message = await message_of(sandbox, FINANCE, made["needs approval"]["title"])
    header_block = {
        "user": APPROVER,
        "channel": FINANCE,
        "ts": message["ts"],
        "block_index": 0,
        "action_id": "approve",
    }

    status, answer = await post(sandbox, "/sandbox/click", header_block)

    assert status == 409
    assert answer["error"] == f"block 0 of message {message['ts']} has no button 'approve'"
    status, answer = await post(sandbox, "/sandbox/click", {**header_block, "block_index": "0"})
    assert status == 400
    assert answer["error"] == "block_index: expected an integer, got '0'"


async def test_the_page_and_its_assets_are_served(sandbox: Sandbox) -> None:
    for path, expected in [
        ("/", "Who am I"),
        ("/static/app.js", "/sandbox/click"),
        ("/static/app.css", ".b-actions"),
    ]:
        async with sandbox.session.get(f"{sandbox.url}{path}") as response:
            assert response.status == 200, path
            assert expected in await response.text(), path


async def test_countersign_posts_to_the_local_slack_mounted_in_the_sandbox(
    sandbox: Sandbox,
) -> None:
    assert sandbox.settings.slack.api_url == f"{sandbox.url}/slack/api/"
    async with sandbox.session.post(
        f"{sandbox.url}/slack/api/auth.test",
        headers={"Authorization": f"Bearer {sandbox.secrets.bot_token}"},
    ) as response:
        assert (await response.json())["ok"] is True


async def test_the_demo_target_refuses_requests_countersign_did_not_sign(
    sandbox: Sandbox,
) -> None:
    async with sandbox.session.post(
        f"{sandbox.url}/demo-target/campaigns/send", json={"arguments": {"recipients": 5}}
    ) as response:
        assert response.status == 401
    assert sandbox.target.deliveries == []


# --- the sandbox answers only its own page --------------------------------------------------------

#: Every endpoint the page's script calls, with a body it accepts.
PAGE_POSTS: Final = ("/sandbox/click", "/sandbox/submit", "/sandbox/cancel", "/sandbox/home")
#: the page's buttons for the demo's other stories, one path each (its prefix in the script)
SCENARIO_POSTS: Final = tuple(f"/sandbox/scenario/{name}" for name in SCENARIOS)


def page_endpoints() -> set[str]:
    """The /sandbox/ paths the page's script calls (read from the script itself)."""
    script = (Path(__file__).parents[2] / "bot/sandbox/static/app.js").read_text(encoding="utf-8")
    return set(re.findall(r"[\"'`](/sandbox/[a-z]+)", script))


def netloc(url: str) -> str:
    return url.split("://", 1)[1]


async def test_a_request_naming_another_host_is_refused_on_every_route(sandbox: Sandbox) -> None:
    """DNS rebinding: a site that points its own name at 127.0.0.1 sends that name as Host."""
    port = netloc(sandbox.url).rsplit(":", 1)[1]
    requests: list[tuple[str, str, dict[str, Any] | None]] = [
        ("GET", "/", None),
        ("GET", "/static/app.js", None),
        ("GET", f"/sandbox/state?user={APPROVER}", None),
        ("POST", "/sandbox/demo", {}),
        *(("POST", path, {}) for path in SCENARIO_POSTS),
        ("POST", "/slack/api/auth.test", None),
    ]
    for host in ("evil.example", f"evil.example:{port}", f"localhost:{port}", f"127.0.0.2:{port}"):
        for method, path, body in requests:
            async with sandbox.session.request(
                method,
                f"{sandbox.url}{path}",
                json=body,
                headers={"Host": host, "Authorization": f"Bearer {sandbox.secrets.bot_token}"},
            ) as response:
                assert response.status == 403, (host, path)
                answer = await response.json()
            assert answer["error"] == (
                f"this sandbox answers only requests addressed to {netloc(sandbox.url)} "
                f"(this one named {host!r}): open {sandbox.url}"
            )
    assert sandbox.submissions == []


async def test_a_cross_site_form_post_is_refused_and_changes_nothing(sandbox: Sandbox) -> None:
    made = await demo(sandbox)
    message = await message_of(sandbox, FINANCE, made["needs approval"]["title"])
    approve = {
        "user": APPROVER,
        "channel": FINANCE,
        "ts": message["ts"],
        "block_index": button_at(message, "approve"),
        "action_id": "approve",
    }
    bodies: list[tuple[str, bytes | aiohttp.FormData]] = [
        ("application/x-www-form-urlencoded", b"user=U0PRIYA"),
        ("text/plain", json.dumps(approve).encode()),
        (
            "multipart/form-data; boundary=x",
            b'--x\r\nContent-Disposition: form-data; name="a"\r\n\r\nb\r\n--x--\r\n',
        ),
        ("", json.dumps(approve).encode()),
    ]
    for path in ("/sandbox/demo", *SCENARIO_POSTS, *PAGE_POSTS):
        for content_type, body in bodies:
            headers = {"Content-Type": content_type} if content_type else {}
            async with sandbox.session.post(
                f"{sandbox.url}{path}", data=body, headers=headers
            ) as response:
                assert response.status == 415, (path, content_type)
                answer = await response.json()
            assert answer["error"].startswith("Content-Type: expected application/json, got ")

    assert len(sandbox.submissions) == len(made)
    assert sandbox.forwarder is not None
    assert "approve" in texts(await message_of(sandbox, FINANCE, made["needs approval"]["title"]))
    assert [c for c in sandbox.slack.calls() if c.method == "chat.update"] == []


async def test_a_json_post_from_another_page_is_refused(sandbox: Sandbox) -> None:
    for origin, status in (("http://evil.example", 403), ("null", 403), (sandbox.url, 201)):
        async with sandbox.session.post(
            f"{sandbox.url}/sandbox/demo", json={}, headers={"Origin": origin}
        ) as response:
            assert response.status == status, origin
    assert len(sandbox.submissions) == len(DEMO_PROPOSALS)


async def test_no_page_response_carries_the_agent_token(sandbox: Sandbox) -> None:
    token = sandbox.secrets.agent_token
    assert page_endpoints() == {"/sandbox/state", "/sandbox/demo", "/sandbox/scenario", *PAGE_POSTS}
    seen: list[str] = []

    async def fetch(method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        async with sandbox.session.request(method, f"{sandbox.url}{path}", json=body) as r:
            seen.append(await r.text())
            seen.append(json.dumps(dict(r.headers)))
            return json.loads(seen[-2]) if r.content_type == "application/json" else None

    for path in ("/", "/static/app.js", "/static/app.css", "/static/index.html"):
        await fetch("GET", path)
    made = {p["label"]: p for p in (await fetch("POST", "/sandbox/demo", {}))["proposals"]}
    message = await message_of(sandbox, FINANCE, made["needs approval"]["title"])
    await fetch(
        "POST",
        "/sandbox/click",
        {
            "user": REJECTER,
            "channel": FINANCE,
            "ts": message["ts"],
            "block_index": button_at(message, "reject"),
            "action_id": "reject",
        },
    )
    [opened] = await eventually(lambda: _views(sandbox, REJECTER))
    reason = {"reason": {"reason": "no"}}
    await fetch(
        "POST", "/sandbox/submit", {"user": REJECTER, "view_id": opened["id"], "values": reason}
    )
    await fetch("POST", "/sandbox/cancel", {"user": REJECTER, "view_id": opened["id"]})
    await fetch("POST", "/sandbox/home", {"user": APPROVER})
    for path in SCENARIO_POSTS:
        await fetch("POST", path, {})
    for person in PEOPLE:
        view = await fetch("GET", f"/sandbox/state?user={person.id}")

    assert all(token not in text for text in seen)
    agent = view["agent"]
    assert "Authorization: Bearer $COUNTERSIGN_TOKEN" in agent["curl"]
    assert agent["token_variable"] == "COUNTERSIGN_TOKEN"
    assert token in sandbox.banner()


async def _views(sandbox: Sandbox, user: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = (await state(sandbox, user))["views"]
    return found


@pytest.mark.parametrize(
    ("served", "host", "allowed"),
    [
        ("http://127.0.0.1:8800", "127.0.0.1:8800", True),
        ("http://127.0.0.1:8800", "localhost:8800", False),
        ("http://localhost:8800", "localhost:8800", True),
        ("http://localhost:8800", "127.0.0.1:8800", False),
        ("http://[::1]:8800", "[::1]:8800", True),
        ("http://127.0.0.1:80", "127.0.0.1", True),
        ("http://0.0.0.0:8800", "192.168.1.20:8800", True),
        ("http://0.0.0.0:8800", "[fe80::1]:8800", True),
        ("http://0.0.0.0:8800", "192.168.1.20:8801", False),
        ("http://0.0.0.0:8800", "rebound.example:8800", False),
        ("http://0.0.0.0:8800", "", False),
    ],
)
async def test_the_host_must_be_the_address_the_sandbox_was_started_on(
    served: str, host: str, allowed: bool
) -> None:
    app = web.Application(middlewares=[own_origin_only(served)])

    async def page(request: web.Request) -> web.Response:
        return web.Response(text="page")

    app.router.add_get("/", page)
    async with (
        TestServer(app, host="127.0.0.1") as server,
        aiohttp.ClientSession() as http,
        http.get(server.make_url("/"), headers={"Host": host}) as response,
    ):
        assert (response.status == 200) is allowed


# --- the forwarder on its own: what reaches the request URL ---------------------------------------


class Receiver:
    """A stand-in for an app's request URL: records what arrives, answers as told."""

    def __init__(self) -> None:
        self.requests: list[tuple[dict[str, str], bytes]] = []
        self.answer: dict[str, Any] | None = None

    async def handle(self, request: web.Request) -> web.Response:
        self.requests.append((dict(request.headers), await request.read()))
        if self.answer is None:
            return web.Response(status=200)
        return web.json_response(self.answer)


SECRET = "forwarder-test-signing-secret"


@pytest.fixture
async def forwarding() -> AsyncIterator[tuple[SlackForwarder, Receiver, LocalSlack]]:
    receiver = Receiver()
    app = web.Application()
    app.router.add_post("/slack/events", receiver.handle)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    slack = LocalSlack(users=[LocalUser("U0PRIYA", name="priya", real_name="Priya Shah")])
    slack.add_channel("C0FINANCE", name="finance-approvals")
    try:
        async with aiohttp.ClientSession() as session:
            yield (
                SlackForwarder(
                    slack=slack,
                    signing_secret=SECRET,
                    events_url=str(server.make_url("/slack/events")),
                    session=session,
                ),
                receiver,
                slack,
            )
    finally:
        await server.close()


def post_message(slack: LocalSlack) -> str:
    status, body, _ = slack.answer(
        "chat.postMessage",
        {
            "channel": "C0FINANCE",
            "text": "Approve?",
            "blocks": [
                {"type": "section", "text": {"type": "mrkdwn", "text": "Refund?"}},
                {
                    "type": "actions",
                    "block_id": "decision",
                    "elements": [
                        {
                            "type": "button",
                            "action_id": "approve",
                            "text": {"type": "plain_text", "text": "Approve"},
                            "style": "primary",
                            "value": "cs_opaque_id",
                        }
                    ],
                },
            ],
        },
        f"Bearer {slack.token}",
    )
    assert status == 200 and body["ok"], body
    return str(body["ts"])


def payload_of(body: bytes) -> dict[str, Any]:
    [encoded] = parse_qs(body.decode())["payload"]
    loaded: dict[str, Any] = json.loads(encoded)
    return loaded


async def test_a_forwarded_click_is_signed_with_the_signing_secret_as_slack_signs(
    forwarding: tuple[SlackForwarder, Receiver, LocalSlack],
) -> None:
    forwarder, receiver, slack = forwarding
    ts = post_message(slack)

    answer = await forwarder.click(
        "U0PRIYA", channel="C0FINANCE", ts=ts, block_index=1, action_id="approve"
    )

    assert answer.status == 200
    [(headers, body)] = receiver.requests
    assert headers["Content-Type"] == "application/x-www-form-urlencoded"
    assert SignatureVerifier(SECRET).is_valid_request(body, headers)
    assert not SignatureVerifier("another-secret").is_valid_request(body, headers)
    payload = payload_of(body)
    assert payload["type"] == "block_actions"
    assert payload["user"]["id"] == "U0PRIYA"
    assert payload["container"] == {
        "type": "message",
        "message_ts": ts,
        "channel_id": "C0FINANCE",
        "is_ephemeral": False,
    }
    assert payload["channel"] == {"id": "C0FINANCE", "name": "finance-approvals"}
    [action] = payload["actions"]
    # the value is the stored button's, never something the page sent
    assert (action["action_id"], action["block_id"], action["value"]) == (
        "approve",
        "decision",
        "cs_opaque_id",
    )
    assert payload["message"]["ts"] == ts
    assert slack.views() == []  # a trigger id was issued for U0PRIYA, nothing opened yet
    assert payload["trigger_id"].endswith("U0PRIYA")


async def test_a_forwarded_modal_submission_is_signed_and_carries_the_typed_values(
    forwarding: tuple[SlackForwarder, Receiver, LocalSlack],
) -> None:
    forwarder, receiver, slack = forwarding
    modal = {
        "type": "modal",
        "callback_id": "reject_reason",
        "private_metadata": "cs_opaque_id",
        "title": {"type": "plain_text", "text": "Reject proposal"},
        "submit": {"type": "plain_text", "text": "Reject"},
        "blocks": [
            {
                "type": "input",
                "block_id": "reason",
                "label": {"type": "plain_text", "text": "Why?"},
                "element": {"type": "plain_text_input", "action_id": "reason"},
            }
        ],
    }
    trigger = slack.issue_trigger("U0PRIYA")
    slack.answer("views.open", {"trigger_id": trigger, "view": modal}, f"Bearer {slack.token}")
    [opened] = slack.views("U0PRIYA")
    receiver.answer = {"response_action": "errors", "errors": {"reason": "Too short."}}

    refused = await forwarder.submit(
        "U0PRIYA", view_id=opened.id, values={"reason": {"reason": "no"}}
    )

    assert (refused.errors, refused.closed) == ({"reason": "Too short."}, False)
    assert slack.views("U0PRIYA") == [opened]
    receiver.answer = None
    accepted = await forwarder.submit(
        "U0PRIYA", view_id=opened.id, values={"reason": {"reason": "Ask for photos."}}
    )
    assert accepted.closed
    assert slack.views("U0PRIYA") == []
    (_, first), (headers, body) = receiver.requests
    assert SignatureVerifier(SECRET).is_valid_request(body, headers)
    payload = payload_of(body)
    assert payload["type"] == "view_submission"
    assert payload["view"]["private_metadata"] == "cs_opaque_id"
    assert payload["view"]["state"]["values"] == {
        "reason": {"reason": {"type": "plain_text_input", "value": "Ask for photos."}}
    }
    assert payload_of(first)["view"]["state"]["values"]["reason"]["reason"]["value"] == "no"


async def test_someone_elses_modal_cannot_be_submitted(
    forwarding: tuple[SlackForwarder, Receiver, LocalSlack],
) -> None:
    forwarder, receiver, slack = forwarding
    slack.add_user(LocalUser("U0ALEX", name="alex"))

    with pytest.raises(Refused, match="U0ALEX has no open modal 'V00000001'"):
        await forwarder.submit("U0ALEX", view_id="V00000001", values={})
    with pytest.raises(Refused, match="user 'U0NOBODY' is not in this workspace"):
        await forwarder.click(
            "U0NOBODY", channel="C0FINANCE", ts="1.0", block_index=0, action_id="approve"
        )
    assert receiver.requests == []


async def test_opening_the_home_tab_sends_a_signed_app_home_opened_event(
    forwarding: tuple[SlackForwarder, Receiver, LocalSlack],
) -> None:
    forwarder, receiver, _ = forwarding

    await forwarder.open_home("U0PRIYA")

    [(headers, body)] = receiver.requests
    assert headers["Content-Type"] == "application/json"
    assert SignatureVerifier(SECRET).is_valid_request(body, headers)
    envelope = json.loads(body)
    assert envelope["type"] == "event_callback"
    assert envelope["event"]["type"] == "app_home_opened"
    assert envelope["event"]["user"] == "U0PRIYA"


# --- the Python client's first approval -----------------------------------------------------------


async def test_the_banners_client_example_runs_and_a_click_answers_it(sandbox: Sandbox) -> None:
    example = sandbox.client_example()
    assert example in sandbox.banner().replace("\n  ", "\n")
    printed: list[object] = []
    namespace: dict[str, Any] = {"print": printed.append}
    asked = asyncio.create_task(asyncio.to_thread(exec, example, namespace))
    try:
        message = await message_of(sandbox, FINANCE, "The agent asks: Restart the checkout service")
        status, _ = await click(sandbox, APPROVER, FINANCE, message, "approve")
        assert status == 200
        await asked
    finally:
        if "client" in namespace:
            await asyncio.to_thread(namespace["client"].close)

    [answer] = printed  # one short line, not the answer's repr
    assert isinstance(answer, str) and "\n" not in answer and len(answer) < 100
    assert answer.startswith(f"approved by {APPROVER} (proposal cs_")


# --- what a modal's Submit carries ---------------------------------------------------------------


def test_each_input_is_submitted_in_the_state_slack_gives_its_type() -> None:
    options = [
        {"text": {"type": "plain_text", "text": name}, "value": name.lower()} for name in "AB"
    ]
    assert input_state({"type": "number_input"}, "30000") == {
        "type": "number_input",
        "value": "30000",
    }
    assert input_state({"type": "plain_text_input"}, "") == {
        "type": "plain_text_input",
        "value": None,
    }
    assert input_state({"type": "static_select", "options": options}, "b") == {
        "type": "static_select",
        "selected_option": options[1],
    }
    assert input_state({"type": "radio_buttons", "options": options}, "") == {
        "type": "radio_buttons",
        "selected_option": None,
    }
    # an option the element does not offer is never sent
    assert input_state({"type": "checkboxes", "options": options}, ["a", "forged"]) == {
        "type": "checkboxes",
        "selected_options": [options[0]],
    }
    grouped = {"type": "multi_static_select", "option_groups": [{"options": options}]}
    assert input_state(grouped, ["b"]) == {
        "type": "multi_static_select",
        "selected_options": [options[1]],
    }
    assert input_state({"type": "datepicker"}, "2025-05-01") == {
        "type": "datepicker",
        "selected_date": "2025-05-01",
    }
    assert input_state({"type": "datetimepicker"}, "1746100000") == {
        "type": "datetimepicker",
        "selected_date_time": 1746100000,
    }


async def test_the_batch_scenario_holds_three_newsletters_then_shows_one_digest(
    sandbox: Sandbox,
) -> None:
    status, answer = await post(sandbox, "/sandbox/scenario/batch", {})
    assert status == 201, answer
    made = answer["proposals"]
    assert [p["rule"] for p in made] == ["newsletters"] * 3
    for proposal in made:  # the agent is told when they are shown: the window's end
        created = datetime.fromisoformat(proposal["created_at"])
        shown = datetime.fromisoformat(proposal["shown_after"])
        assert created < shown <= created + timedelta(seconds=20)
    held = [await sandbox.store.get_proposal(p["id"]) for p in made]
    assert all(p.slack_ts is None for p in held) and len({p.batch_id for p in held}) == 1

    async def shown_together() -> set[str | None] | None:
        found = [await sandbox.store.get_proposal(p["id"]) for p in made]
        return {p.digest_id for p in found} if all(p.slack_ts for p in found) else None

    # the demo's window is 20 seconds of real time
    digests = await eventually(shown_together, timeout=60)
    assert len(digests) == 1 and None not in digests
    messages = channel(await state(sandbox, MARKETING), MARKETING_CHANNEL)["messages"]
    assert len([m for m in messages if "newsletter" in json.dumps(m["blocks"])]) == 1


async def test_the_flash_sale_that_expires_in_2_minutes_is_a_button_of_its_own(
    sandbox: Sandbox,
) -> None:
    [soon] = await sandbox.submit_scenario("expiry")

    answer = soon.answer
    assert answer["status"] == "pending"
    assert answer["policy"]["rule_id"] == "flash-sale-emails"
    expires_in = datetime.fromisoformat(answer["expires_at"]) - datetime.now(UTC)
    assert timedelta(seconds=60) < expires_in <= timedelta(minutes=2)
    await message_of(sandbox, MARKETING_CHANNEL, "Email 800 customers in segment flash-sale")
