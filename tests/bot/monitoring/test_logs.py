"""Log lines: JSON with the event's fields off a terminal, readable on one, and a failed Slack
call as one line naming the method and Slack's error instead of a traceback."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.slack_response import SlackResponse

from bot.monitoring.logs import (
    REQUEST_ID,
    JsonFormatter,
    TextFormatter,
    configure_logging,
    log_level,
)


def slack_error(method: str, error: str) -> SlackApiError:
    response = SlackResponse(
        client=None,
        http_verb="POST",
        api_url=f"https://slack.com/api/{method}",
        req_args={},
        data={"ok": False, "error": error},
        headers={},
        status_code=200,
    )
    return SlackApiError(f"The request to the Slack API failed. (url: {method})\n...", response)


def record(
    message: str, *args: Any, exc: BaseException | None = None, **extra: Any
) -> logging.LogRecord:
    logger = logging.getLogger("countersign.test")
    exc_info = (type(exc), exc, exc.__traceback__) if exc is not None else None
    made = logger.makeRecord(
        logger.name, logging.INFO, __file__, 1, message, args, exc_info, extra=extra
    )
    return made


def as_json(made: logging.LogRecord) -> dict[str, Any]:
    line = JsonFormatter().format(made)
    assert "\n" not in line
    parsed: dict[str, Any] = json.loads(line)
    return parsed


def test_a_json_line_carries_the_events_fields_and_the_request_id() -> None:
    token = REQUEST_ID.set("req-1")
    try:
        line = as_json(
            record("%s approved", "cs_1", proposal_id="cs_1", agent="bot", operation="x.y")
        )
    finally:
        REQUEST_ID.reset(token)
    assert line["message"] == "cs_1 approved"
    assert line["level"] == "info"
    assert line["logger"] == "countersign.test"
    assert line["time"].endswith("+00:00")
    assert {k: line[k] for k in ("proposal_id", "agent", "operation", "request_id")} == {
        "proposal_id": "cs_1",
        "agent": "bot",
        "operation": "x.y",
        "request_id": "req-1",
    }


@pytest.mark.parametrize(
    "created",
    [1_764_849_600.0, 1_764_849_600.0005, 1_764_849_600.9994999, 1_764_849_600.9999996, 0.25],
)
def test_a_lines_time_is_its_records_in_utc_to_the_millisecond(created: float) -> None:
    formatter = JsonFormatter()
    for at in (created, created + 0.0001, created + 1.5):  # the second written once, then again
        made = record("swept")
        made.created = at
        expected = datetime.fromtimestamp(at, UTC).isoformat(timespec="milliseconds")
        assert json.loads(formatter.format(made))["time"] == expected


def test_a_value_json_cannot_write_natively_is_written_as_its_text() -> None:
    line = as_json(record("swept", big=2**70, at=datetime(2026, 1, 2, tzinfo=UTC), ids={"a"}))
    assert line["big"] == 2**70
    assert line["at"] == "2026-01-02 00:00:00+00:00"
    assert line["ids"] == "{'a'}"


def test_outside_a_request_there_is_no_request_id() -> None:
    assert "request_id" not in as_json(record("swept"))


def test_a_failed_slack_call_is_one_line_with_the_method_and_slacks_error() -> None:
    try:
        try:
            raise slack_error("chat.postMessage", "channel_not_found")
        except SlackApiError as error:
            raise RuntimeError("listener failed") from error
    except RuntimeError as error:
        line = as_json(record("Failed to run listener function", exc=error))
    assert "traceback" not in line
    assert line["slack_method"] == "chat.postMessage"
    assert line["slack_error"] == "channel_not_found"
    assert line["message"] == (
        "Failed to run listener function: Slack chat.postMessage answered channel_not_found"
    )


def test_a_slack_error_given_as_an_argument_is_shortened_to_one_line() -> None:
    line = as_json(record("posting failed: %s", slack_error("chat.update", "message_not_found")))
    assert line["message"] == "posting failed: Slack chat.update answered message_not_found"


def test_our_own_bug_keeps_its_traceback_inside_the_one_line() -> None:
    try:
        {}["missing"]
    except KeyError as error:
        line = as_json(record("sweep failed", exc=error))
    assert line["traceback"].startswith("Traceback (most recent call last)")
    assert "KeyError: 'missing'" in line["traceback"]


def test_the_readable_line_shows_fields_as_key_value() -> None:
    text = TextFormatter().format(record("%s expired", "cs_2", proposal_id="cs_2", agent="bot"))
    assert "INFO    countersign.test: cs_2 expired proposal_id=cs_2 agent=bot" in text


def test_the_level_comes_from_the_option_then_the_environment() -> None:
    assert log_level("debug", {"COUNTERSIGN_LOG_LEVEL": "error"}) == logging.DEBUG
    assert log_level(None, {"COUNTERSIGN_LOG_LEVEL": "WARNING"}) == logging.WARNING
    assert log_level(None, {}) == logging.INFO
    with pytest.raises(ValueError, match="COUNTERSIGN_LOG_LEVEL: expected one of"):
        log_level(None, {"COUNTERSIGN_LOG_LEVEL": "loud"})


@contextmanager
def bare_root() -> Iterator[logging.Logger]:
    """The root logger without the test runner's handlers, restored afterwards."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    for handler in handlers:
        root.removeHandler(handler)
    yield root
    for handler in list(root.handlers):
        root.removeHandler(handler)
    for handler in handlers:
        root.addHandler(handler)
    root.setLevel(level)


def test_off_a_terminal_every_line_is_json() -> None:
    out = io.StringIO()
    with bare_root() as root:
        configure_logging(logging.WARNING, out)
        configure_logging(logging.WARNING, out)  # a second call replaces the first handler
        logging.getLogger("countersign.test").info("not shown")
        logging.getLogger("countersign.test").warning("shown", extra={"agent": "bot"})
        assert len(root.handlers) == 1
    lines = out.getvalue().splitlines()
    assert [json.loads(line)["message"] for line in lines] == ["shown"]
