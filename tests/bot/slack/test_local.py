"""The local Slack behaves like Slack's Web API as slack_sdk's real AsyncWebClient sees it."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.http_retry.builtin_interval_calculators import FixedValueRetryIntervalCalculator
from slack_sdk.web.async_client import AsyncWebClient

from bot.render import proposal as render
from bot.slack.local import LocalSlack, LocalUser, running_local_slack
from tests.bot.render.test_proposal import NOW, make_proposal

TOKEN = "xoxb-test-token"
CHANNEL = "C0APPROVALS"
SECTION = {"type": "section", "text": {"type": "mrkdwn", "text": "Approve the refund?"}}
MODAL = {
    "type": "modal",
    "callback_id": "reject_reason",
    "private_metadata": "cs_1",
    "title": {"type": "plain_text", "text": "Reject"},
    "submit": {"type": "plain_text", "text": "Reject"},
    "blocks": [
        {
            "type": "input",
            "block_id": "reason",
            "label": {"type": "plain_text", "text": "Why?"},
            "element": {"type": "plain_text_input", "action_id": "reason", "multiline": True},
        }
    ],
}


class ManualClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def served() -> AsyncIterator[tuple[LocalSlack, str]]:
    async with running_local_slack(token=TOKEN) as running:
        yield running


@pytest.fixture
def slack(served: tuple[LocalSlack, str]) -> LocalSlack:
    return served[0]


@pytest.fixture
def client(served: tuple[LocalSlack, str]) -> AsyncWebClient:
    return AsyncWebClient(token=TOKEN, base_url=served[1])


async def slack_error(call: Any) -> SlackApiError:
    with pytest.raises(SlackApiError) as raised:
        await call
    return raised.value


# --- serving --------------------------------------------------------------------------------------


async def test_base_url_is_a_loopback_api_root(served: tuple[LocalSlack, str]) -> None:
    slack, base_url = served
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/api/", base_url)
    assert slack.base_url == base_url


async def test_stops_serving_when_the_context_ends() -> None:
    async with running_local_slack(token=TOKEN) as (slack, base_url):
        assert (await AsyncWebClient(token=TOKEN, base_url=base_url).auth_test())["ok"]
    assert slack.base_url is None
    with pytest.raises(OSError):
        await AsyncWebClient(token=TOKEN, base_url=base_url, timeout=2).auth_test()


async def test_auth_test_names_the_bot(client: AsyncWebClient, slack: LocalSlack) -> None:
    response = await client.auth_test()
    assert response["user_id"] == slack.bot_user_id
    assert response["bot_id"] == slack.bot_id
    assert response["team_id"] == "T0001"


async def test_wrong_token_is_invalid_auth(served: tuple[LocalSlack, str]) -> None:
    wrong = AsyncWebClient(token="xoxb-wrong", base_url=served[1])
    error = await slack_error(wrong.chat_postMessage(channel=CHANNEL, text="hi"))
    assert error.response["error"] == "invalid_auth"
    assert served[0].messages(CHANNEL) == []


async def test_missing_token_is_not_authed(served: tuple[LocalSlack, str]) -> None:
    anonymous = AsyncWebClient(token=None, base_url=served[1])
    error = await slack_error(anonymous.auth_test())
    assert error.response["error"] == "not_authed"


async def test_unknown_method_is_refused(client: AsyncWebClient) -> None:
    error = await slack_error(client.api_call("chat.fly", json={"channel": CHANNEL}))
    assert error.response["error"] == "unknown_method"


# --- messages -------------------------------------------------------------------------------------


async def test_post_message_stores_it_and_returns_increasing_unique_ts(
    client: AsyncWebClient, slack: LocalSlack
) -> None:
    stamps = []
    for n in range(3):
        response = await client.chat_postMessage(
            channel=CHANNEL, text=f"message {n}", blocks=[SECTION]
        )
        assert response["channel"] == CHANNEL
        assert response["message"]["text"] == f"message {n}"
        stamps.append(response["ts"])
    assert all(re.fullmatch(r"\d{10}\.\d{6}", ts) for ts in stamps)
    assert stamps == sorted(stamps, key=float)
    assert len(set(stamps)) == 3
    stored = slack.message(CHANNEL, stamps[0])
    assert (stored.text, stored.blocks, stored.user) == ("message 0", [SECTION], slack.bot_user_id)


async def test_post_message_keeps_metadata(client: AsyncWebClient, slack: LocalSlack) -> None:
    metadata = {"event_type": "countersign_proposal", "event_payload": {"proposal_id": "cs_1"}}
    response = await client.api_call(
        "chat.postMessage", json={"channel": CHANNEL, "text": "x", "metadata": metadata}
    )
    assert slack.message(CHANNEL, response["ts"]).metadata == metadata


async def test_form_encoded_arguments_are_understood(
    client: AsyncWebClient, slack: LocalSlack
) -> None:
    response = await client.api_call(
        "chat.postMessage",
        data={"channel": CHANNEL, "text": "form", "blocks": json.dumps([SECTION])},
    )
    assert slack.message(CHANNEL, response["ts"]).blocks == [SECTION]


async def test_message_needs_text_or_blocks(client: AsyncWebClient) -> None:
    error = await slack_error(client.api_call("chat.postMessage", json={"channel": CHANNEL}))
    assert error.response["error"] == "no_text"


@pytest.mark.parametrize(
    "blocks",
    [
        ["not a block"],
        [{"type": "no_such_block"}],
        [{"type": "header", "text": {"type": "plain_text", "text": "x" * 151}}],
        [SECTION] * 51,
    ],
    ids=["not-a-dict", "unknown-type", "header-too-long", "too-many"],
)
async def test_blocks_slack_would_refuse_are_invalid_blocks(
    client: AsyncWebClient, slack: LocalSlack, blocks: list[Any]
) -> None:
    error = await slack_error(
        client.api_call(
            "chat.postMessage", json={"channel": CHANNEL, "text": "x", "blocks": blocks}
        )
    )
    assert error.response["error"] == "invalid_blocks"
    assert error.response["response_metadata"]["messages"]
    assert slack.messages(CHANNEL) == []


@pytest.mark.parametrize("blocks", [{"type": "section"}, "[not json"])
async def test_blocks_that_are_not_an_array_are_invalid_blocks_format(
    client: AsyncWebClient, blocks: Any
) -> None:
    error = await slack_error(
        client.api_call(
            "chat.postMessage",
            data={"channel": CHANNEL, "text": "x", "blocks": json.dumps(blocks)}
            if isinstance(blocks, dict)
            else {"channel": CHANNEL, "text": "x", "blocks": blocks},
        )
    )
    assert error.response["error"] == "invalid_blocks_format"


async def test_update_replaces_text_and_blocks(client: AsyncWebClient, slack: LocalSlack) -> None:
    posted = await client.chat_postMessage(channel=CHANNEL, text="pending", blocks=[SECTION])
    done = {"type": "section", "text": {"type": "mrkdwn", "text": "Approved"}}
    updated = await client.chat_update(
        channel=CHANNEL, ts=posted["ts"], text="approved", blocks=[done]
    )
    assert updated["ts"] == posted["ts"]
    stored = slack.message(CHANNEL, posted["ts"])
    assert (stored.text, stored.blocks) == ("approved", [done])
    assert stored.edited_ts is not None and float(stored.edited_ts) > float(posted["ts"])


async def test_update_of_an_unknown_ts_is_message_not_found(client: AsyncWebClient) -> None:
    await client.chat_postMessage(channel=CHANNEL, text="x")
    error = await slack_error(client.chat_update(channel=CHANNEL, ts="1.000001", text="y"))
    assert error.response["error"] == "message_not_found"


async def test_thread_replies_can_be_read_back(client: AsyncWebClient, slack: LocalSlack) -> None:
    parent = await client.chat_postMessage(channel=CHANNEL, text="proposal")
    await client.chat_postMessage(channel=CHANNEL, text="other")
    await client.chat_postMessage(channel=CHANNEL, thread_ts=parent["ts"], text="outcome 1")
    await client.chat_postMessage(channel=CHANNEL, thread_ts=parent["ts"], text="outcome 2")

    replies = await client.conversations_replies(channel=CHANNEL, ts=parent["ts"])
    assert [m["text"] for m in replies["messages"]] == ["proposal", "outcome 1", "outcome 2"]
    history = await client.conversations_history(channel=CHANNEL)
    assert [m["text"] for m in history["messages"]] == ["other", "proposal"]
    assert history["messages"][1]["reply_count"] == 2
    assert [m.text for m in slack.replies(CHANNEL, parent["ts"])] == ["outcome 1", "outcome 2"]


async def test_history_comes_a_page_at_a_time_newest_first(client: AsyncWebClient) -> None:
    for n in range(5):
        await client.chat_postMessage(channel=CHANNEL, text=f"message {n}")

    first = await client.conversations_history(channel=CHANNEL, limit=2)
    cursor = first["response_metadata"]["next_cursor"]
    second = await client.conversations_history(channel=CHANNEL, limit=2, cursor=cursor)
    cursor = second["response_metadata"]["next_cursor"]
    last = await client.conversations_history(channel=CHANNEL, limit=2, cursor=cursor)

    pages = [[m["text"] for m in page["messages"]] for page in (first, second, last)]
    assert pages == [["message 4", "message 3"], ["message 2", "message 1"], ["message 0"]]
    assert (first["has_more"], second["has_more"], last["has_more"]) == (True, True, False)
    assert "response_metadata" not in last.data


async def test_history_on_the_wall_clock_keeps_to_oldest_and_latest() -> None:
    now = [1_800_000_000.0]
    local = LocalSlack(token=TOKEN, wall_clock=lambda: now[0])
    async with running_local_slack(slack=local) as (_, url):
        client = AsyncWebClient(token=TOKEN, base_url=url)
        for n in range(4):
            await client.chat_postMessage(channel=CHANNEL, text=f"at {n}")
            now[0] += 10

        history = await client.conversations_history(
            channel=CHANNEL, oldest="1800000005", latest="1800000025"
        )

    assert [m["text"] for m in history["messages"]] == ["at 2", "at 1"]


async def test_history_with_a_cursor_it_never_gave_is_invalid_cursor(
    client: AsyncWebClient,
) -> None:
    error = await slack_error(client.conversations_history(channel=CHANNEL, cursor="bogus"))
    assert error.response["error"] == "invalid_cursor"


async def test_replies_of_an_unknown_thread_are_thread_not_found(client: AsyncWebClient) -> None:
    error = await slack_error(client.conversations_replies(channel=CHANNEL, ts="1.000001"))
    assert error.response["error"] == "thread_not_found"


async def test_ephemeral_message_is_kept_for_its_user(
    client: AsyncWebClient, slack: LocalSlack
) -> None:
    response = await client.chat_postEphemeral(channel=CHANNEL, user="U0CLICKER", text="not you")
    assert re.fullmatch(r"\d{10}\.\d{6}", response["message_ts"])
    [shown] = slack.ephemeral("U0CLICKER")
    assert (shown.channel, shown.text, shown.ts) == (CHANNEL, "not you", response["message_ts"])
    assert slack.ephemeral("U0OTHER") == []
    assert slack.messages(CHANNEL) == []


async def test_permalink_points_at_the_message(client: AsyncWebClient) -> None:
    posted = await client.chat_postMessage(channel=CHANNEL, text="x")
    response = await client.chat_getPermalink(channel=CHANNEL, message_ts=posted["ts"])
    assert response["permalink"].endswith(f"/archives/{CHANNEL}/p{posted['ts'].replace('.', '')}")


# --- channels and users ---------------------------------------------------------------------------


async def test_unknown_channels_are_created_unless_strict(client: AsyncWebClient) -> None:
    response = await client.conversations_info(channel="C0NEW")
    assert response["channel"]["id"] == "C0NEW"
    assert response["channel"]["is_channel"] is True


async def test_strict_channels_refuse_unknown_ids() -> None:
    slack = LocalSlack(token=TOKEN, channels=[CHANNEL], strict_channels=True)
    async with running_local_slack(slack=slack) as (_, base_url):
        client = AsyncWebClient(token=TOKEN, base_url=base_url)
        assert (await client.chat_postMessage(channel=CHANNEL, text="ok"))["ok"]
        error = await slack_error(client.chat_postMessage(channel="C0ELSEWHERE", text="x"))
        assert error.response["error"] == "channel_not_found"
        error = await slack_error(client.conversations_info(channel="C0ELSEWHERE"))
        assert error.response["error"] == "channel_not_found"


async def test_users_info_reports_configured_flags() -> None:
    users = [
        LocalUser(id="U0GONE", deleted=True),
        LocalUser(id="U0GUEST", is_restricted=True),
        LocalUser(id="U0ROBOT", is_bot=True),
    ]
    slack = LocalSlack(token=TOKEN, users=users, strict_users=True)
    async with running_local_slack(slack=slack) as (_, base_url):
        client = AsyncWebClient(token=TOKEN, base_url=base_url)
        gone = (await client.users_info(user="U0GONE"))["user"]
        guest = (await client.users_info(user="U0GUEST"))["user"]
        robot = (await client.users_info(user="U0ROBOT"))["user"]
        assert (gone["deleted"], gone["is_bot"], gone["is_restricted"]) == (True, False, False)
        assert (guest["deleted"], guest["is_restricted"]) == (False, True)
        assert robot["is_bot"] is True
        error = await slack_error(client.users_info(user="U0STRANGER"))
        assert error.response["error"] == "user_not_found"


async def test_unknown_users_are_active_members_unless_strict(client: AsyncWebClient) -> None:
    user = (await client.users_info(user="U0ANYONE"))["user"]
    assert (user["id"], user["deleted"], user["is_bot"], user["is_restricted"]) == (
        "U0ANYONE",
        False,
        False,
        False,
    )


# --- views ----------------------------------------------------------------------------------------


async def test_views_open_keeps_the_modal_for_the_triggering_user(
    client: AsyncWebClient, slack: LocalSlack
) -> None:
    trigger = slack.issue_trigger("U0APPROVER")
    response = await client.views_open(trigger_id=trigger, view=MODAL)
    view = response["view"]
    assert view["id"].startswith("V")
    assert (view["callback_id"], view["private_metadata"]) == ("reject_reason", "cs_1")
    [opened] = slack.views("U0APPROVER")
    assert opened.id == view["id"]
    assert opened.view["blocks"] == MODAL["blocks"]


async def test_views_update_needs_the_current_hash(
    client: AsyncWebClient, slack: LocalSlack
) -> None:
    view = (await client.views_open(trigger_id="1.2.3", view=MODAL))["view"]
    changed = {**MODAL, "private_metadata": "cs_2"}
    updated = (await client.views_update(view_id=view["id"], hash=view["hash"], view=changed))[
        "view"
    ]
    assert updated["private_metadata"] == "cs_2"
    assert updated["hash"] != view["hash"]
    error = await slack_error(
        client.views_update(view_id=view["id"], hash=view["hash"], view=MODAL)
    )
    assert error.response["error"] == "hash_conflict"
    error = await slack_error(client.views_update(view_id="V0NOPE", view=MODAL))
    assert error.response["error"] == "not_found"
    [opened] = slack.views()
    assert opened.user is None  # "1.2.3" was not issued for anyone


async def test_views_open_refuses_an_invalid_view(client: AsyncWebClient) -> None:
    untitled = {**MODAL, "title": {"type": "plain_text", "text": "x" * 25}}
    error = await slack_error(client.views_open(trigger_id="1.2.3", view=untitled))
    assert error.response["error"] == "invalid_arguments"


async def test_views_publish_sets_the_users_home(client: AsyncWebClient, slack: LocalSlack) -> None:
    home = {"type": "home", "blocks": [SECTION]}
    response = await client.views_publish(user_id="U0APPROVER", view=home)
    assert response["view"]["type"] == "home"
    published = slack.home_view("U0APPROVER")
    assert published is not None and published["blocks"] == [SECTION]
    assert slack.home_view("U0OTHER") is None


# --- recorded calls -------------------------------------------------------------------------------


async def test_every_call_is_recorded_with_its_arguments(
    client: AsyncWebClient, slack: LocalSlack
) -> None:
    posted = await client.chat_postMessage(channel=CHANNEL, text="one")
    await client.chat_update(channel=CHANNEL, ts=posted["ts"], text="two")
    await client.users_info(user="U0SOMEONE")
    assert [call.method for call in slack.calls()] == [
        "chat.postMessage",
        "chat.update",
        "users.info",
    ]
    [update] = slack.calls("chat.update")
    assert update.args == {"channel": CHANNEL, "ts": posted["ts"], "text": "two"}
    assert update.status == 200
    assert update.response["ok"] is True
    assert update.at.tzinfo is not None
    assert slack.calls()[0].at <= update.at


# --- faults ---------------------------------------------------------------------------------------


async def test_injected_429_surfaces_as_slack_api_error_with_retry_after(
    client: AsyncWebClient, slack: LocalSlack
) -> None:
    slack.fail_next("chat.postMessage", status=429, retry_after=7)
    error = await slack_error(client.chat_postMessage(channel=CHANNEL, text="x"))
    assert error.response.status_code == 429
    assert error.response.headers["Retry-After"] == "7"
    assert error.response["error"] == "ratelimited"
    assert slack.messages(CHANNEL) == []
    assert (await client.chat_postMessage(channel=CHANNEL, text="x"))["ok"]


async def test_rate_limit_retry_handler_retries_through_an_injected_429(
    served: tuple[LocalSlack, str],
) -> None:
    slack, base_url = served
    client = AsyncWebClient(
        token=TOKEN,
        base_url=base_url,
        retry_handlers=[AsyncRateLimitErrorRetryHandler(max_retry_count=1)],
    )
    slack.fail_next("chat.update", status=429, retry_after=0)
    posted = await client.chat_postMessage(channel=CHANNEL, text="pending")
    await client.chat_update(channel=CHANNEL, ts=posted["ts"], text="approved")
    assert [call.status for call in slack.calls("chat.update")] == [429, 200]
    assert slack.message(CHANNEL, posted["ts"]).text == "approved"


@pytest.mark.parametrize("status", [500, 503])
async def test_injected_server_errors_fail_the_next_calls_only(
    client: AsyncWebClient, slack: LocalSlack, status: int
) -> None:
    slack.fail_next("chat.postMessage", status=status, times=2)
    for _ in range(2):
        error = await slack_error(client.chat_postMessage(channel=CHANNEL, text="x"))
        assert error.response.status_code == status
    assert (await client.chat_postMessage(channel=CHANNEL, text="x"))["ok"]
    assert [call.status for call in slack.calls()] == [status, status, 200]


async def test_server_error_retry_handler_retries_through_a_503(
    served: tuple[LocalSlack, str],
) -> None:
    slack, base_url = served
    client = AsyncWebClient(
        token=TOKEN,
        base_url=base_url,
        retry_handlers=[
            AsyncServerErrorRetryHandler(
                max_retry_count=2,
                interval_calculator=FixedValueRetryIntervalCalculator(fixed_internal=0.01),
            )
        ],
    )
    slack.fail_next("chat.postMessage", status=503, times=2)
    assert (await client.chat_postMessage(channel=CHANNEL, text="x"))["ok"]
    assert len(slack.messages(CHANNEL)) == 1


async def test_injected_api_error_comes_with_http_200(
    client: AsyncWebClient, slack: LocalSlack
) -> None:
    slack.fail_next("chat.postEphemeral", status=200, error="user_not_in_channel")
    error = await slack_error(client.chat_postEphemeral(channel=CHANNEL, user="U0X", text="x"))
    assert error.response.status_code == 200
    assert error.response["error"] == "user_not_in_channel"


def test_an_api_error_fault_needs_an_error_code() -> None:
    with pytest.raises(ValueError, match="needs error="):
        LocalSlack().fail_next("chat.update", status=200)


async def test_per_channel_rate_limit_answers_429_until_a_second_has_passed() -> None:
    clock = ManualClock()
    slack = LocalSlack(token=TOKEN, messages_per_second=2, clock=clock)
    async with running_local_slack(slack=slack) as (_, base_url):
        client = AsyncWebClient(token=TOKEN, base_url=base_url)
        for _ in range(2):
            await client.chat_postMessage(channel=CHANNEL, text="x")
        error = await slack_error(client.chat_postMessage(channel=CHANNEL, text="x"))
        assert error.response.status_code == 429
        assert error.response.headers["Retry-After"] == "1"
        assert (await client.chat_postMessage(channel="C0OTHER", text="x"))["ok"]
        clock.now += 1.0
        assert (await client.chat_postMessage(channel=CHANNEL, text="x"))["ok"]
    assert len(slack.messages(CHANNEL)) == 3


# --- with the real renderer -----------------------------------------------------------------------


async def test_rendered_proposal_and_reject_modal_are_accepted(
    client: AsyncWebClient, slack: LocalSlack
) -> None:
    proposal = make_proposal()
    message = render.proposal_message(proposal, now=NOW)
    posted = await client.chat_postMessage(
        channel=CHANNEL, text=message["text"], blocks=message["blocks"]
    )
    assert slack.message(CHANNEL, posted["ts"]).blocks == message["blocks"]
    trigger = slack.issue_trigger("U0APPROVER")
    await client.views_open(trigger_id=trigger, view=render.reject_modal(proposal))
    [opened] = slack.views("U0APPROVER")
    assert opened.view["private_metadata"] == proposal.id
