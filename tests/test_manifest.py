"""manifest.yml is a valid Slack app manifest that asks for no more than the app uses."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft7Validator

from bot.slack.directory import DIRECTORY_EVENTS
from bot.slack.home import SUBSCRIBED_EVENTS
from bot.slack.slash import COMMAND

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = Path(__file__).parent / "fixtures" / "slack" / "manifest.schema.1.0.0.json"

#: Every bot scope must be justified by a call the app makes; see the comments in manifest.yml.
#: chat:write to post and update; *:history only to find a message after an uncertain post
#: users:read for the click-time profile checks (bots, guests, other workspaces)
#: commands for /countersign
EXPECTED_BOT_SCOPES = {
    "commands",
    "chat:write",
    "channels:history",
    "groups:history",
    "users:read",
    "usergroups:read",  # roles may name user groups
}


@pytest.fixture(scope="module")
def manifest() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "manifest.yml").read_text(encoding="utf-8"))
    return loaded


def test_manifest_validates_against_slacks_official_schema(manifest: dict[str, Any]) -> None:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    Draft7Validator.check_schema(schema)
    problems = [
        f"{'/'.join(map(str, error.absolute_path)) or '(root)'}: {error.message}"
        for error in Draft7Validator(schema).iter_errors(manifest)
    ]
    assert problems == []


def test_schema_rejects_what_slack_rejects() -> None:
    # guards the guard: the copied schema must really constrain a manifest
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    broken = {"display_information": {"name": "Countersign"}, "settings": {"unknown": True}}
    assert not Draft7Validator(schema).is_valid(broken)


def test_bot_scopes_are_exactly_the_least_privilege_set(manifest: dict[str, Any]) -> None:
    scopes = manifest["oauth_config"]["scopes"]
    assert set(scopes) == {"bot"}, "Countersign needs no user scopes"
    assert sorted(scopes["bot"]) == sorted(EXPECTED_BOT_SCOPES)


def test_the_one_slash_command_is_the_one_the_app_answers_at_slack_events(
    manifest: dict[str, Any],
) -> None:
    [command] = manifest["features"]["slash_commands"]
    assert command["command"] == COMMAND
    assert command["url"].endswith("/slack/events")
    assert "commands" in manifest["oauth_config"]["scopes"]["bot"]


def test_slack_posts_interactions_to_slack_events_and_no_unhandled_events(
    manifest: dict[str, Any],
) -> None:
    settings = manifest["settings"]
    assert settings["interactivity"]["is_enabled"] is True
    assert settings["interactivity"]["request_url"].endswith("/slack/events")
    # every subscribed event needs a listener: exactly the ones bot/slack/home.py and
    # bot/slack/directory.py register
    events = settings["event_subscriptions"]
    assert events["request_url"].endswith("/slack/events")
    assert sorted(events["bot_events"]) == sorted((*SUBSCRIBED_EVENTS, *DIRECTORY_EVENTS))
    assert "user_events" not in events


def test_app_is_an_http_app_with_a_named_bot_user(manifest: dict[str, Any]) -> None:
    settings = manifest["settings"]
    assert settings["socket_mode_enabled"] is False
    assert settings["org_deploy_enabled"] is False
    assert settings["token_rotation_enabled"] is False
    assert manifest["display_information"]["name"] == "Countersign"
    assert manifest["features"]["bot_user"]["display_name"] == "Countersign"
    assert manifest["features"]["app_home"]["home_tab_enabled"] is True
