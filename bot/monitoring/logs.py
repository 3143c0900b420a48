"""Logs: one line per event, JSON when stderr is not a terminal and readable when it is.

A line carries what is known of its event as fields: ``proposal_id``, ``agent``, ``operation``
(passed with ``extra=``) and the ``request_id`` of the HTTP request it happened in (set by the
app's middleware, bot/monitoring/http.py). A Slack call that failed is one line naming the
method and Slack's error, whoever logged it and however: tracebacks are kept for our own bugs.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Mapping
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any, TextIO

import orjson
from slack_sdk.errors import SlackApiError

__all__ = [
    "LEVELS",
    "REQUEST_ID",
    "JsonFormatter",
    "TextFormatter",
    "configure_logging",
    "log_level",
    "slack_failure",
]

#: the request the current code runs for (HTTP middleware), or None outside any request
REQUEST_ID: ContextVar[str | None] = ContextVar("countersign_request_id", default=None)

LEVELS = ("debug", "info", "warning", "error")
LEVEL_ENV = "COUNTERSIGN_LOG_LEVEL"

#: one line's JSON when orjson cannot write it (an integer past 64 bits): what
#: json.dumps(line, default=str, ensure_ascii=False) writes, the encoder made once
_ENCODE = json.JSONEncoder(default=str, ensure_ascii=False).encode
#: orjson hands times and dataclasses to ``default=str`` too, as the standard encoder does
_ORJSON_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS

#: what every LogRecord has; anything else on a record came with ``extra=`` and is a field
_STANDARD = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {
    "message",
    "asctime",
    "taskName",
}


def log_level(given: str | None, env: Mapping[str, str] | None = None) -> int:
    """The level from ``--log-level``, else ``COUNTERSIGN_LOG_LEVEL``, else info. ValueError,
    naming where the bad value came from, for anything but debug, info, warning or error."""
    env = os.environ if env is None else env
    source, value = ("--log-level", given) if given else (LEVEL_ENV, env.get(LEVEL_ENV) or "info")
    name = value.strip().lower()
    if name not in LEVELS:
        raise ValueError(f"{source}: expected one of {', '.join(LEVELS)} (got {value!r})")
    return logging.getLevelNamesMapping()[name.upper()]


def configure_logging(level: int, stream: TextIO | None = None) -> None:
    """Send every log record to ``stream`` (stderr), one line each, at ``level`` and above.

    Like ``logging.basicConfig``, it leaves logging alone when someone else (a test runner)
    already set it up; a second call replaces what the first installed.
    """
    stream = sys.stderr if stream is None else stream
    root = logging.getLogger()
    if any(not isinstance(handler, _OurHandler) for handler in root.handlers):
        return
    for ours in list(root.handlers):
        root.removeHandler(ours)
    handler = _OurHandler(stream)
    handler.setFormatter(TextFormatter() if _is_terminal(stream) else JsonFormatter())
    root.addHandler(handler)
    root.setLevel(level)
    # Neither formatter writes the thread, the process or the process's name: a record need
    # not look them up (the logging HOWTO's "Optimization"; about a sixth of a line's cost).
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False


class _OurHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """The handler configure_logging installs (told apart from anyone else's)."""


def slack_failure(error: BaseException | None) -> SlackApiError | None:
    """The Slack API error behind ``error`` (itself, its cause or its context), if any."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, SlackApiError):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None


def _slack_fields(error: SlackApiError) -> dict[str, str]:
    response = error.response
    url = str(getattr(response, "api_url", "") or "")
    data = getattr(response, "data", None)
    code = data.get("error") if isinstance(data, dict) else None
    return {
        "slack_method": url.rstrip("/").rsplit("/", 1)[-1] or "unknown",
        "slack_error": str(code or f"HTTP {getattr(response, 'status_code', '?')}"),
    }


def _short(value: Any) -> Any:
    """A Slack error as an argument of a message: its method and error, on one line."""
    if isinstance(value, SlackApiError):
        fields = _slack_fields(value)
        return f"Slack {fields['slack_method']} answered {fields['slack_error']}"
    return value


class _Event:
    """What both formatters take from a record: the message, the fields, the traceback."""

    def __init__(self, record: logging.LogRecord, formatter: logging.Formatter) -> None:
        args = record.args
        if isinstance(args, tuple):
            args = tuple(_short(arg) for arg in args)
        try:
            message = str(record.msg) % args if args else str(record.msg)
        except (TypeError, ValueError, KeyError):
            message = record.getMessage()
        self.fields: dict[str, Any] = {
            key: value for key, value in record.__dict__.items() if key not in _STANDARD
        }
        request_id = REQUEST_ID.get()
        if request_id is not None:
            self.fields.setdefault("request_id", request_id)
        self.traceback: str | None = None
        if record.exc_info and record.exc_info[1] is not None:
            slack = slack_failure(record.exc_info[1])
            if slack is not None:  # Slack said no: what and why, never a traceback
                self.fields.update(_slack_fields(slack))
                message = f"{message}: Slack {_short(slack).removeprefix('Slack ')}"
            else:
                self.traceback = formatter.formatException(record.exc_info)
        if record.stack_info:
            self.traceback = (self.traceback or "") + formatter.formatStack(record.stack_info)
        self.message = message


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, then the event's fields."""

    def __init__(self) -> None:
        super().__init__()
        self._second = -1  #: the Unix second whose date and time ``_stamp`` holds
        self._stamp = ""

    def _time(self, created: float) -> str:
        """``created`` in UTC to the millisecond, as ``isoformat(timespec="milliseconds")``
        writes it; the date and time to the second are written once a second, not each line."""
        second = int(created)
        millisecond = round((created - second) * 1_000_000) // 1000  # microseconds, as datetime
        if millisecond >= 1000:  # rounded up into the next second: not worth a shortcut
            return datetime.fromtimestamp(created, UTC).isoformat(timespec="milliseconds")
        if second != self._second:
            self._stamp = datetime.fromtimestamp(second, UTC).isoformat()[: -len("+00:00")]
            self._second = second
        return f"{self._stamp}.{millisecond:03d}+00:00"

    def format(self, record: logging.LogRecord) -> str:
        event = _Event(record, self)
        line: dict[str, Any] = {
            "time": self._time(record.created),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": event.message,
            **event.fields,
        }
        if event.traceback is not None:
            line["traceback"] = event.traceback
        try:  # a tenth of the standard encoder's cost
            return orjson.dumps(line, default=str, option=_ORJSON_OPTIONS).decode()
        except orjson.JSONEncodeError:
            return _ENCODE(line)


class TextFormatter(logging.Formatter):
    """For people at a terminal: time, level, logger and message, then ``key=value`` fields."""

    def format(self, record: logging.LogRecord) -> str:
        event = _Event(record, self)
        at = datetime.fromtimestamp(record.created).astimezone().strftime("%H:%M:%S")
        fields = "".join(f" {key}={value}" for key, value in event.fields.items())
        line = f"{at} {record.levelname:<7} {record.name}: {event.message}{fields}"
        return line if event.traceback is None else f"{line}\n{event.traceback}"


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
