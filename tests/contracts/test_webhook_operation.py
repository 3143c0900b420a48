"""Webhook operations: configuration checks, request checks, preview, and a real scripted target."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from pydantic import JsonValue, ValidationError

from bot.outbound.http import AiohttpClient
from contracts.base import (
    Context,
    ContractViolation,
    HttpResponse,
    IdempotencyKey,
)
from contracts.canonical import canonical_json
from contracts.operations.webhook import WebhookOperation, WebhookSpec, from_config
from contracts.outcomes import (
    NeedsReconciliation,
    RevisionRequired,
    Succeeded,
    TerminalFailure,
)
from contracts.signing import (
    CALLBACK,
    EXECUTION,
    REVALIDATION,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    verify,
)

SECRET = "target-shared-secret"
NOW = datetime(2025, 3, 14, 9, 26, 53, tzinfo=UTC)
KEY = IdempotencyKey("prop_7Qx2-exec")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def config(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "name": "crm.email_segment",
        "description": "Email a campaign to a customer segment",
        "request_schema": {
            "type": "object",
            "required": ["segment", "count"],
            "properties": {
                "segment": {"type": "string", "pattern": "^seg_[a-z]+$"},
                "count": {"type": "integer", "minimum": 1, "maximum": 5000},
                "template": {"type": "string", "enum": ["welcome", "winback"]},
                "dry_run": {"type": "boolean"},
                "note": {"type": "string"},
            },
        },
        "defaults": {"template": "welcome", "dry_run": False},
        "preview": {
            "title": "Email {count} customers in segment {segment}",
            "fields": [
                {"label": "Template", "value": "{template}"},
                {"label": "Dry run", "value": "{dry_run}"},
            ],
        },
        "url": "http://127.0.0.1:9/send",
        "timeout_seconds": 5,
    }
    return {**base, **changes}


def operation(**changes: Any) -> WebhookOperation:
    return from_config(config(**changes), secret=SECRET)


# --- a scripted target ----------------------------------------------------------------------------


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Target:
    server: TestServer
    received: list[Received] = field(default_factory=list)

    def url(self, path: str) -> str:
        return str(self.server.make_url(path))


def _answers(release: asyncio.Event) -> dict[str, Handler]:
    def fixed(status: int, body: bytes = b"", content_type: str = "text/plain") -> Handler:
        async def answer(request: web.Request) -> web.StreamResponse:
            return web.Response(status=status, body=body, content_type=content_type)

        return answer

    def as_json(status: int, value: JsonValue) -> Handler:
        return fixed(status, json.dumps(value).encode(), "application/json")

    async def slow(request: web.Request) -> web.StreamResponse:
        await asyncio.wait_for(release.wait(), timeout=10)
        return web.Response(text="too late")

    async def hang_up(request: web.Request) -> web.StreamResponse:
        assert request.transport is not None
        request.transport.close()
        await asyncio.wait_for(release.wait(), timeout=10)
        return web.Response()

    return {
        "/ok-json": as_json(200, {"campaign_id": "cmp_1", "queued": 120}),
        "/created-empty": fixed(201),
        "/ok-text": fixed(200, b"queued for sending"),
        "/ok-huge-number": fixed(200, b'{"sent": 1e999, "id": "m_1"}'),
        "/conflict": as_json(409, {"reason": "segment seg_vip was archived"}),
        "/precondition": fixed(412, b"list version changed"),
        "/unprocessable": as_json(422, {"error": {"message": "count exceeds the daily quota"}}),
        "/long-reason": as_json(409, {"detail": "x" * 2000}),
        "/bad-request": as_json(400, {"error": "template not found"}),
        "/not-found": fixed(404, b"no such route"),
        "/server-error": fixed(500, b"database exploded"),
        "/unavailable": fixed(503),
        "/see-other": fixed(303),
        "/slow": slow,
        "/hang-up": hang_up,
    }


@pytest.fixture
async def target() -> AsyncIterator[Target]:
    release = asyncio.Event()
    holder: list[Target] = []

    def recording(behaviour: Handler) -> Handler:
        async def handle(request: web.Request) -> web.StreamResponse:
            body = await request.read()
            holder[0].received.append(Received(request.path, dict(request.headers), body))
            return await behaviour(request)

        return handle

    app = web.Application()
    for path, behaviour in _answers(release).items():
        app.router.add_post(path, recording(behaviour))
    server = TestServer(app, host="127.0.0.1", port=0)
    await server.start_server()
    holder.append(Target(server))
    try:
        yield holder[0]
    finally:
        release.set()
        await server.close()


@pytest.fixture
async def ctx() -> AsyncIterator[Context]:
    http = AiohttpClient()
    try:
        yield Context(now=NOW, http=http, correlation_id="corr-42")
    finally:
        await http.close()


def closed_port_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/send"


ARGUMENTS: Mapping[str, JsonValue] = {
    "segment": "seg_vip",
    "count": 120,
    "template": "welcome",
    "dry_run": False,
}


def problems(error: pytest.ExceptionInfo[ContractViolation]) -> list[tuple[str, str]]:
    return [(p.field, p.message) for p in error.value.problems]


# --- configuration ----------------------------------------------------------------------------


def test_preview_referring_to_an_unknown_property_names_operation_and_field() -> None:
    bad = config(preview={"title": "Email {cnt} customers"})

    with pytest.raises(ValueError) as caught:
        from_config(bad, secret=SECRET)

    message = str(caught.value)
    assert "webhook operation 'crm.email_segment'" in message
    assert "preview.title: {cnt} is not a property of request_schema" in message
    assert "count, dry_run, note, segment, template" in message


def test_spec_constructor_rejects_a_bad_template_naming_operation_and_field() -> None:
    data = config(preview={"title": "ok", "fields": [{"label": "Who", "value": "{owner}"}]})

    with pytest.raises(ValidationError) as caught:
        WebhookSpec.model_validate_json(json.dumps(data))

    assert "webhook operation 'crm.email_segment': preview.fields[0].value: {owner}" in str(
        caught.value
    )


def test_template_on_an_optional_field_without_default_is_refused_at_load() -> None:
    with pytest.raises(ValueError, match=r"preview.title: \{note\} is optional and has no default"):
        operation(preview={"title": "Note: {note}"})


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("Email {count:>5}", "has a format or conversion"),
        ("Email {count!r}", "has a format or conversion"),
        ("Email {count.real}", "{count.real} is not a property"),
        ("Email {", "invalid template"),
    ],
)
def test_templates_only_allow_plain_placeholders(template: str, expected: str) -> None:
    with pytest.raises(ValueError, match=r"preview\.title") as caught:
        operation(preview={"title": template})

    assert expected in str(caught.value)


def test_invalid_json_schema_is_refused_naming_the_schema_path() -> None:
    schema = {"type": "object", "properties": {"count": {"type": "int"}}}

    with pytest.raises(ValueError, match=r"request_schema\.properties\.count\.type"):
        operation(request_schema=schema, defaults={}, preview={"title": "x"})


def test_request_schema_must_be_an_object_with_properties() -> None:
    with pytest.raises(ValueError) as caught:
        operation(request_schema={"type": "array"}, defaults={}, preview={"title": "x"})

    assert 'request_schema.type: expected "object", got "array"' in str(caught.value)
    assert "request_schema.properties: expected an object" in str(caught.value)


def test_defaults_must_be_optional_properties_that_fit_the_schema() -> None:
    with pytest.raises(ValueError) as caught:
        operation(defaults={"count": 3, "colour": "red", "template": "promo", "dry_run": False})

    message = str(caught.value)
    assert "defaults.count: the field is required" in message
    assert "defaults.colour: not a property of request_schema" in message
    assert 'defaults.template: "promo" does not fit the schema' in message


@pytest.mark.parametrize("field_name", ["url", "revalidate_url"])
def test_target_urls_must_be_http(field_name: str) -> None:
    with pytest.raises(ValueError, match=f"{field_name}: expected an http:// or https:// URL"):
        operation(**{field_name: "ftp://files.example/drop"})


def test_unknown_and_mistyped_config_keys_are_named() -> None:
    with pytest.raises(ValueError) as caught:
        operation(timeout_seconds="soon", retries=3)

    message = str(caught.value)
    assert message.startswith("webhook operation 'crm.email_segment': ")
    assert 'timeout_seconds: Input should be a valid number (got "soon")' in message
    assert "retries: unknown field (expected: name, description" in message


def test_missing_config_keys_are_named() -> None:
    data = config()
    del data["url"]

    with pytest.raises(ValueError, match=r"webhook operation 'crm\.email_segment': url: Field req"):
        from_config(data, secret=SECRET)


def test_an_empty_secret_is_refused() -> None:
    with pytest.raises(ValueError, match=r"'crm\.email_segment': secret is empty"):
        from_config(config(), secret="")


# --- the request ------------------------------------------------------------------------------


def test_extra_request_fields_are_rejected_each_by_name() -> None:
    with pytest.raises(ContractViolation) as caught:
        operation().parse_request({"segment": "seg_vip", "count": 5, "cc": "x", "bcc": "y"})

    allowed = "(allowed: count, dry_run, note, segment, template)"
    assert problems(caught) == [
        ("request.bcc", f"unexpected field {allowed}"),
        ("request.cc", f"unexpected field {allowed}"),
    ]


def test_missing_required_fields_are_named_with_their_type() -> None:
    with pytest.raises(ContractViolation) as caught:
        operation().parse_request({})

    assert problems(caught) == [
        ("request.count", "required field is missing; expected integer"),
        ("request.segment", "required field is missing; expected string"),
    ]


def test_every_problem_is_reported_sorted_by_field() -> None:
    request: JsonValue = {"segment": "VIP", "count": "120", "template": "promo", "dry_run": "no"}

    with pytest.raises(ContractViolation) as caught:
        operation().parse_request(request)

    assert problems(caught) == [
        ("request.count", 'expected integer, got string "120"'),
        ("request.dry_run", 'expected boolean, got string "no"'),
        ("request.segment", 'expected a string matching "^seg_[a-z]+$", got "VIP"'),
        ("request.template", 'expected one of "welcome", "winback", got "promo"'),
    ]


def test_a_request_accepted_before_lets_no_lookalike_through() -> None:
    """An accepted request is remembered so its arguments are not checked twice at execution;
    what is remembered is the exact JSON, so a value equal to it in Python (True == 1,
    1.0 == 1) or the same fields in another order with another value is checked afresh."""
    op = operation()
    accepted: dict[str, JsonValue] = {"segment": "seg_vip", "count": 1, "dry_run": False}
    assert dict(op.parse_request(accepted)) == accepted
    assert dict(op.load_arguments(accepted)) == accepted  # the same arguments, again accepted

    lookalikes: list[tuple[dict[str, JsonValue], str, str]] = [
        ({"segment": "seg_vip", "count": True, "dry_run": False}, "count", "expected integer"),
        ({"segment": "seg_vip", "count": 1, "dry_run": 0}, "dry_run", "expected boolean"),
        ({"dry_run": False, "count": 1, "segment": "seg_VIP"}, "segment", "expected a string"),
    ]
    for lookalike, field_name, expected in lookalikes:
        with pytest.raises(ContractViolation) as caught:
            op.load_arguments(lookalike)
        [(field, message)] = problems(caught)
        assert field == f"arguments.{field_name}"
        assert message.startswith(expected)


def test_a_refused_request_is_refused_again() -> None:
    op = operation()
    for _ in range(2):
        with pytest.raises(ContractViolation) as caught:
            op.parse_request({"segment": "seg_vip", "count": 9000})
        assert problems(caught) == [("request.count", "expected at most 5000, got 9000")]


def test_out_of_range_values_say_the_limit() -> None:
    with pytest.raises(ContractViolation) as caught:
        operation().parse_request({"segment": "seg_vip", "count": 9000})

    assert problems(caught) == [("request.count", "expected at most 5000, got 9000")]


def test_a_request_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(ContractViolation) as caught:
        operation().parse_request(["seg_vip", 5])

    assert problems(caught) == [
        (
            "request",
            "expected a JSON object (fields: count, dry_run, note, segment, template), got array",
        )
    ]


def test_schema_allowing_extra_fields_explicitly_is_respected() -> None:
    schema = {**config()["request_schema"], "additionalProperties": True}

    parsed = operation(request_schema=schema).parse_request(
        {"segment": "seg_vip", "count": 1, "cc": "x"}
    )

    assert parsed["cc"] == "x"


def test_request_schema_refuses_extra_fields_by_default() -> None:
    assert operation().request_schema()["additionalProperties"] is False


def test_argument_types_come_from_scalar_properties() -> None:
    assert operation().argument_types() == {
        "segment": "string",
        "count": "integer",
        "template": "string",
        "dry_run": "boolean",
        "note": "string",
    }


# --- resolve and preview ----------------------------------------------------------------------


async def test_resolve_fills_in_defaults_for_absent_optional_fields(ctx: Context) -> None:
    op = operation()

    resolved = await op.resolve(op.parse_request({"segment": "seg_vip", "count": 120}), ctx)

    assert dict(resolved.arguments) == ARGUMENTS


async def test_given_values_win_over_defaults(ctx: Context) -> None:
    op = operation()
    request = op.parse_request({"segment": "seg_vip", "count": 3, "template": "winback"})

    resolved = await op.resolve(request, ctx)

    assert resolved.arguments["template"] == "winback"
    assert resolved.arguments["dry_run"] is False


async def test_preview_is_rendered_from_the_arguments(ctx: Context) -> None:
    op = operation()

    resolved = await op.resolve(op.parse_request({"segment": "seg_vip", "count": 120}), ctx)

    assert resolved.preview.title == "Email 120 customers in segment seg_vip"
    assert [(f.label, f.value) for f in resolved.preview.fields] == [
        ("Template", "welcome"),
        ("Dry run", "false"),
    ]


async def test_preview_keeps_literal_braces_and_shows_values_verbatim(ctx: Context) -> None:
    op = operation(preview={"title": "{{bulk}} {segment} x{count}"})

    resolved = await op.resolve(op.parse_request({"segment": "seg_vip", "count": 2}), ctx)

    assert resolved.preview.title == "{bulk} seg_vip x2"


async def test_interpolated_values_read_in_their_declared_terms(ctx: Context) -> None:
    op = operation(
        request_schema={
            "type": "object",
            "required": ["amount_cents", "customer", "count", "delay", "month", "order"],
            "properties": {
                "amount_cents": {"type": "integer"},
                "customer": {"type": "string"},
                "count": {"type": "integer"},
                "delay": {"type": "integer"},
                "month": {"type": "string"},
                "order": {"type": "integer"},
            },
        },
        defaults={},
        preview={
            "title": "Refund {amount_cents} to {customer}",
            "fields": [
                {"label": "Who", "value": "{count} customers, {count} in all"},
                {"label": "When", "value": "in {delay}, for {month}"},
                {"label": "Order", "value": "{order}"},
            ],
        },
        fields={
            "amount_cents": {"label": "Amount", "kind": "money", "currency": "USD"},
            "count": {"label": "Customers", "kind": "count", "unit": "customers"},
            "delay": {"label": "Delay", "kind": "duration", "unit": "minutes"},
            "month": {"label": "Month", "kind": "date"},
        },
    )
    request = {
        "amount_cents": 5000,
        "customer": "cus_90000",
        "count": 1200,
        "delay": 90,
        "month": "2025-05",
        "order": 100234,
    }

    resolved = await op.resolve(op.parse_request(request), ctx)

    assert resolved.preview.title == "Refund 50.00 USD to cus_90000"  # never "Refund 5000"
    assert [(f.label, f.value) for f in resolved.preview.fields] == [
        ("Who", "1,200 customers, 1,200 customers in all"),  # the unit once
        ("When", "in 90 minutes, for May 2025"),
        ("Order", "100234"),  # no declared kind: as it is (an id is no count)
    ]


async def test_arguments_are_read_only_and_survive_a_round_trip(ctx: Context) -> None:
    op = operation()
    resolved = await op.resolve(op.parse_request({"segment": "seg_vip", "count": 120}), ctx)

    with pytest.raises(TypeError):
        resolved.arguments["count"] = 1  # type: ignore[index]
    dumped = op.dump_arguments(resolved.arguments)
    assert dict(op.load_arguments(dumped)) == dumped == dict(ARGUMENTS)


def test_loading_tampered_arguments_is_refused() -> None:
    with pytest.raises(ContractViolation) as caught:
        operation().load_arguments({**ARGUMENTS, "count": -1})

    assert problems(caught) == [("arguments.count", "expected at least 1, got -1")]


# --- execute against the target -----------------------------------------------------------


async def test_execute_posts_canonical_signed_json_with_the_idempotency_key(
    target: Target, ctx: Context
) -> None:
    op = operation(url=target.url("/ok-json"))

    outcome = await op.execute(ARGUMENTS, ctx, KEY)

    assert outcome == Succeeded(result={"campaign_id": "cmp_1", "queued": 120})
    [received] = target.received
    expected = {"proposal_key": KEY, "operation": "crm.email_segment", "arguments": ARGUMENTS}
    assert received.body == canonical_json(expected)
    assert received.headers["Content-Type"] == "application/json"
    assert received.headers["Idempotency-Key"] == KEY
    assert received.headers["X-Countersign-Correlation-Id"] == "corr-42"
    assert received.headers[TIMESTAMP_HEADER] == str(int(NOW.timestamp()))


async def test_the_same_idempotency_key_is_sent_on_every_attempt(
    target: Target, ctx: Context
) -> None:
    op = operation(url=target.url("/ok-json"))
    later = Context(now=NOW + timedelta(minutes=3), http=ctx.http, correlation_id="corr-43")

    await op.execute(ARGUMENTS, ctx, KEY)
    await op.execute(ARGUMENTS, later, KEY)

    first, second = target.received
    assert first.headers["Idempotency-Key"] == second.headers["Idempotency-Key"] == KEY
    assert first.body == second.body
    assert first.headers[TIMESTAMP_HEADER] != second.headers[TIMESTAMP_HEADER]


async def test_the_signature_verifies_only_with_the_right_secret_and_body(
    target: Target, ctx: Context
) -> None:
    await operation(url=target.url("/ok-json")).execute(ARGUMENTS, ctx, KEY)
    [received] = target.received
    timestamp = received.headers[TIMESTAMP_HEADER]
    signature = received.headers[SIGNATURE_HEADER]
    altered = received.body.replace(b"120", b"9999")

    assert signature.startswith("v1=")
    assert verify(SECRET, timestamp, received.body, signature, now=NOW, purpose=EXECUTION)
    assert not verify(
        "another-secret", timestamp, received.body, signature, now=NOW, purpose=EXECUTION
    )
    assert not verify(SECRET, timestamp, altered, signature, now=NOW, purpose=EXECUTION)
    assert not verify(
        SECRET, str(int(timestamp) + 1), received.body, signature, now=NOW, purpose=EXECUTION
    )
    later = NOW + timedelta(hours=1)
    assert not verify(SECRET, timestamp, received.body, signature, now=later, purpose=EXECUTION)
    # an execution is neither a revalidation nor a callback, even under the same secret
    for other in (REVALIDATION, CALLBACK):
        assert not verify(SECRET, timestamp, received.body, signature, now=NOW, purpose=other)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/created-empty", Succeeded(result=None)),
        ("/ok-text", Succeeded(result={"body": "queued for sending"})),
        # valid JSON, but its number reads as infinity, which no outcome or audit entry can
        # hold: the target's words are kept as its text
        ("/ok-huge-number", Succeeded(result={"body": '{"sent": 1e999, "id": "m_1"}'})),
        ("/conflict", RevisionRequired(reason="segment seg_vip was archived")),
        ("/precondition", RevisionRequired(reason="list version changed")),
        ("/unprocessable", RevisionRequired(reason="count exceeds the daily quota")),
        (
            "/bad-request",
            TerminalFailure(
                detail="target refused the request with 400: template not found",
                correlation_id="corr-42",
            ),
        ),
        (
            "/not-found",
            TerminalFailure(
                detail="target refused the request with 404: no such route",
                correlation_id="corr-42",
            ),
        ),
        (
            "/server-error",
            NeedsReconciliation(
                detail="target answered 500: database exploded; it may have acted",
                correlation_id="corr-42",
            ),
        ),
        (
            "/unavailable",
            NeedsReconciliation(
                detail="target answered 503: the target answered 503 with no reason; "
                "it may have acted",
                correlation_id="corr-42",
            ),
        ),
    ],
)
async def test_the_targets_answer_becomes_an_outcome(
    target: Target, ctx: Context, path: str, expected: object
) -> None:
    outcome = await operation(url=target.url(path)).execute(ARGUMENTS, ctx, KEY)

    assert outcome == expected
    assert [r.path for r in target.received] == [path]


async def test_a_long_reason_is_clipped_to_500_characters(target: Target, ctx: Context) -> None:
    outcome = await operation(url=target.url("/long-reason")).execute(ARGUMENTS, ctx, KEY)

    assert isinstance(outcome, RevisionRequired)
    assert len(outcome.reason) == 500
    assert outcome.reason.endswith("…")


async def test_a_redirect_is_not_followed_and_needs_reconciliation(
    target: Target, ctx: Context
) -> None:
    outcome = await operation(url=target.url("/see-other")).execute(ARGUMENTS, ctx, KEY)

    assert isinstance(outcome, NeedsReconciliation)
    assert "303" in outcome.detail


async def test_a_timeout_needs_reconciliation_and_the_target_did_receive_it(
    target: Target, ctx: Context
) -> None:
    op = operation(url=target.url("/slow"), timeout_seconds=0.3)

    outcome = await op.execute(ARGUMENTS, ctx, KEY)

    assert isinstance(outcome, NeedsReconciliation)
    assert outcome.correlation_id == "corr-42"
    assert outcome.detail == (
        "the target did not answer in full within 0.3 seconds; it may have acted"
    )
    assert [r.path for r in target.received] == ["/slow"]


async def test_a_connection_dropped_after_sending_needs_reconciliation(
    target: Target, ctx: Context
) -> None:
    outcome = await operation(url=target.url("/hang-up")).execute(ARGUMENTS, ctx, KEY)

    assert isinstance(outcome, NeedsReconciliation)
    assert [r.path for r in target.received] == ["/hang-up"]


async def test_a_refused_connection_is_a_terminal_failure(ctx: Context) -> None:
    outcome = await operation(url=closed_port_url()).execute(ARGUMENTS, ctx, KEY)

    assert isinstance(outcome, TerminalFailure)
    assert outcome.correlation_id == "corr-42"
    assert outcome.detail.endswith("; the request was not sent")  # the message says the rest


class ExplodingHttp:
    """An HTTP client that fails in a way no transport error describes."""

    async def post(
        self,
        url: str,
        *,
        body: bytes,
        headers: Mapping[str, str],
        timeout: float,
    ) -> HttpResponse:
        raise RuntimeError("event loop is shutting down")


async def test_an_unexpected_client_error_needs_reconciliation() -> None:
    ctx = Context(now=NOW, http=ExplodingHttp(), correlation_id="corr-9")

    outcome = await operation().execute(ARGUMENTS, ctx, KEY)

    assert outcome == NeedsReconciliation(
        detail="RuntimeError: event loop is shutting down", correlation_id="corr-9"
    )


# --- revalidation -------------------------------------------------------------------------


async def test_without_revalidate_url_nothing_is_asked(target: Target, ctx: Context) -> None:
    assert await operation(url=target.url("/ok-json")).revalidate(ARGUMENTS, ctx) is None
    assert target.received == []


async def test_revalidation_posts_the_signed_arguments_and_2xx_means_still_valid(
    target: Target, ctx: Context
) -> None:
    op = operation(revalidate_url=target.url("/created-empty"))

    assert await op.revalidate(ARGUMENTS, ctx) is None
    [received] = target.received
    assert received.body == canonical_json(
        {"operation": "crm.email_segment", "arguments": ARGUMENTS}
    )
    assert verify(
        SECRET,
        received.headers[TIMESTAMP_HEADER],
        received.body,
        received.headers[SIGNATURE_HEADER],
        now=NOW,
        purpose=REVALIDATION,
    )
    # a captured revalidation does not verify as an execution at the target
    assert not verify(
        SECRET,
        received.headers[TIMESTAMP_HEADER],
        received.body,
        received.headers[SIGNATURE_HEADER],
        now=NOW,
        purpose=EXECUTION,
    )


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/conflict", "segment seg_vip was archived"),
        ("/precondition", "list version changed"),
        ("/unprocessable", "count exceeds the daily quota"),
    ],
)
async def test_revalidation_conflict_gives_the_targets_reason(
    target: Target, ctx: Context, path: str, reason: str
) -> None:
    op = operation(revalidate_url=target.url(path))

    assert await op.revalidate(ARGUMENTS, ctx) == RevisionRequired(reason=reason)


@pytest.mark.parametrize("path", ["/server-error", "/bad-request", "/see-other", "/slow"])
async def test_revalidation_fails_closed(target: Target, ctx: Context, path: str) -> None:
    op = operation(revalidate_url=target.url(path), timeout_seconds=0.3)

    outcome = await op.revalidate(ARGUMENTS, ctx)

    assert isinstance(outcome, RevisionRequired)
    # the target is named by scheme://host:port only: its path may hold a credential
    assert outcome.reason.startswith(f"could not revalidate at {target.url('/')}…")
    assert path not in outcome.reason


async def test_revalidation_fails_closed_when_the_target_is_down(ctx: Context) -> None:
    outcome = await operation(revalidate_url=closed_port_url()).revalidate(ARGUMENTS, ctx)

    assert isinstance(outcome, RevisionRequired)
    assert outcome.reason.startswith("could not revalidate")
    assert "could not connect" in outcome.reason


async def test_frozen_arguments_share_nothing_with_the_request(ctx: Context) -> None:
    """The request, its frozen arguments and their dump are copies all the way down: changing
    what the agent sent (or a dump) afterwards changes nothing frozen."""
    op = operation(
        request_schema={
            "type": "object",
            "required": ["segment"],
            "properties": {"segment": {"type": "string"}, "tags": {"type": "array"}},
        },
        defaults={},
        preview={"title": "Email segment {segment}", "fields": []},
    )
    sent: dict[str, JsonValue] = {"segment": "seg_vip", "tags": [{"name": "a"}, ["b"]]}
    request = op.parse_request(sent)
    sent["tags"][0]["name"] = "changed"  # type: ignore[index,call-overload]
    sent["tags"][1].append("c")  # type: ignore[index,union-attr]
    assert request["tags"] == [{"name": "a"}, ["b"]]

    resolved = await op.resolve(request, ctx)
    dumped = op.dump_arguments(resolved.arguments)
    dumped["tags"][0]["name"] = "dumped"  # type: ignore[index,call-overload]
    assert resolved.arguments["tags"] == [{"name": "a"}, ["b"]]
    assert op.load_arguments(dumped)["tags"] == [{"name": "dumped"}, ["b"]]
