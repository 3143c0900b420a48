"""Operations defined in configuration: a JSON Schema request, preview templates, a signed POST.

A deployment describes the operation (``WebhookSpec``) and Countersign does the rest: it checks
the model's request against the schema, fills in the configured defaults to get the frozen
arguments, renders the preview from those arguments, and on approval POSTs them, signed, to the
target with the proposal's idempotency key. The target's answer becomes an outcome:

=============================================  =========================================
target's answer                                outcome
=============================================  =========================================
2xx                                            succeeded (result: the JSON body)
409, 412, 422                                  revision_required (the target's reason)
5xx, timeout, connection lost after sending    needs_reconciliation
other 4xx                                      terminal_failure
connection refused / nothing sent              terminal_failure (see below)
3xx or anything else                           needs_reconciliation
=============================================  =========================================

When the connection could not even be made, the request never left Countersign, so the effect
certainly did not happen: that is reported as a terminal failure rather than as something to
reconcile. Nothing is retried automatically; a person may resubmit once the target is back.
A 3xx is not followed, and since a target may act and then redirect (POST/redirect/GET), it is
treated as uncertain.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, ClassVar, Final
from urllib.parse import urlsplit

from pydantic import Field, JsonValue

from contracts.base import (
    Context,
    HttpResponse,
    HttpTransportError,
    IdempotencyKey,
)
from contracts.canonical import canonical_json, finite_json
from contracts.operations.declared import (
    DeclaredArguments,
    DeclaredOperation,
    DeclaredSpec,
    spec_from_config,
)
from contracts.outcomes import (
    NeedsReconciliation,
    Outcome,
    RevisionRequired,
    Succeeded,
    TerminalFailure,
)
from contracts.problems import clip
from contracts.redaction import scrub, shown_url
from contracts.signing import EXECUTION, REVALIDATION, Purpose, signed_headers

__all__ = [
    "WebhookArguments",
    "WebhookOperation",
    "WebhookSpec",
    "from_config",
]

#: The validated request and the frozen arguments: read-only mappings of JSON values.
WebhookArguments = DeclaredArguments

_REVISION_STATUSES: Final = frozenset({409, 412, 422})
_REASON_KEYS: Final = ("reason", "detail", "message", "error")
_MAX_REASON: Final = 500
_MAX_TEXT_RESULT: Final = 4000


class WebhookSpec(DeclaredSpec):
    """A webhook operation as configured. Every problem found names the operation and field."""

    noun: ClassVar[str] = "webhook"

    url: str
    revalidate_url: str | None = None
    timeout_seconds: float = Field(default=10.0, gt=0, le=300)

    def spec_problems(self) -> Iterator[str]:
        for where, url in (("url", self.url), ("revalidate_url", self.revalidate_url)):
            if url is not None and not _is_http_url(url):
                yield f"{where}: expected an http:// or https:// URL with a host, got {url!r}"
        yield from super().spec_problems()


def _is_http_url(url: str) -> bool:
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises on a port that is not a number in range
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


class WebhookOperation(DeclaredOperation):
    """An operation whose effect is a signed POST to a configured target."""

    def __init__(self, spec: WebhookSpec, secret: str) -> None:
        if not secret:
            raise ValueError(
                f"webhook operation {spec.name!r}: secret is empty; expected the shared secret "
                "the target uses to verify signatures"
            )
        super().__init__(spec)
        self.spec = spec
        self._secret = secret

    # --- revalidate and execute --------------------------------------------------------------

    @property
    def revalidates(self) -> bool:
        """Only with a ``revalidate_url``: without one, nothing is checked."""
        return self.spec.revalidate_url is not None

    async def revalidate(
        self, arguments: WebhookArguments, ctx: Context
    ) -> RevisionRequired | None:
        url = self.spec.revalidate_url
        if url is None:
            return None
        # The contract gives revalidation no idempotency key, so the body carries none.
        body = canonical_json({"operation": self.name, "arguments": dict(arguments)})
        try:
            response = await ctx.http.post(
                url,
                body=body,
                headers=self._headers(body, ctx, REVALIDATION),
                timeout=self.spec.timeout_seconds,
            )
        except Exception as error:  # fail closed: nothing executes unchecked
            return RevisionRequired(
                reason=f"could not revalidate at {shown_url(url)}: {scrub(str(error), url)}"
            )
        if 200 <= response.status < 300:
            return None
        if response.status in _REVISION_STATUSES:
            return RevisionRequired(reason=_reason(response))
        return RevisionRequired(
            reason=f"could not revalidate at {shown_url(url)}: target answered "
            f"{response.status}: {_reason(response)}"
        )

    async def execute(
        self, arguments: WebhookArguments, ctx: Context, key: IdempotencyKey
    ) -> Outcome:
        url = self.spec.url
        body = canonical_json(
            {"proposal_key": key, "operation": self.name, "arguments": dict(arguments)}
        )
        headers = {**self._headers(body, ctx, EXECUTION), "Idempotency-Key": key}
        try:
            response = await ctx.http.post(
                url, body=body, headers=headers, timeout=self.spec.timeout_seconds
            )
        except HttpTransportError as error:
            if not error.maybe_received:
                return TerminalFailure(
                    detail=f"could not reach {shown_url(url)}: {scrub(str(error), url)}; the "
                    "request was not sent",
                    correlation_id=ctx.correlation_id,
                )
            return NeedsReconciliation(
                detail=f"{scrub(str(error), url)}; it may have acted",
                correlation_id=ctx.correlation_id,
            )
        except Exception as error:  # unknown means uncertain, never "failed"
            return NeedsReconciliation(
                detail=f"{type(error).__name__}: {scrub(str(error), url)}",
                correlation_id=ctx.correlation_id,
            )
        return _outcome(response, ctx.correlation_id)

    def _headers(self, body: bytes, ctx: Context, purpose: Purpose) -> dict[str, str]:
        return {
            "Content-Type": "application/json",
            "X-Countersign-Correlation-Id": ctx.correlation_id,
            **signed_headers(self._secret, body, now=ctx.now, purpose=purpose),
        }


def from_config(data: Mapping[str, Any], *, secret: str) -> WebhookOperation:
    """A webhook operation from configuration (one TOML table); ValueError names what is wrong."""
    return WebhookOperation(spec_from_config(WebhookSpec, data), secret)


# --- turning the target's answer into an outcome -------------------------------------------------


def _outcome(response: HttpResponse, correlation_id: str) -> Outcome:
    status = response.status
    if 200 <= status < 300:
        return Succeeded(result=_result(response.body))
    if status in _REVISION_STATUSES:
        return RevisionRequired(reason=_reason(response))
    if 400 <= status < 500:
        return TerminalFailure(
            detail=f"target refused the request with {status}: {_reason(response)}",
            correlation_id=correlation_id,
        )
    if 500 <= status < 600:
        return NeedsReconciliation(
            detail=f"target answered {status}: {_reason(response)}; it may have acted",
            correlation_id=correlation_id,
        )
    return NeedsReconciliation(
        detail=f"target answered {status}, which Countersign does not follow or expect; "
        "it may have acted",
        correlation_id=correlation_id,
    )


def _parse_json(body: bytes) -> tuple[bool, JsonValue]:
    """The body as JSON, when it is JSON Countersign can store: a number past a float's range
    (``1e999``) would be read as infinity, which no outcome or audit entry can hold, so such a
    body is kept as the target's text instead."""
    try:
        return True, finite_json(body)
    except ValueError:  # also UnicodeDecodeError and JSONDecodeError
        return False, None


def _result(body: bytes) -> JsonValue:
    if not body.strip():
        return None
    ok, value = _parse_json(body)
    if ok:
        return value
    return {"body": clip(body.decode("utf-8", errors="replace"), _MAX_TEXT_RESULT)}


def _reason(response: HttpResponse) -> str:
    """The target's own words: a JSON reason field, a JSON string, or the body's text."""
    ok, value = _parse_json(response.body)
    reason = _reason_in(value) if ok else None
    if reason is None:
        reason = response.body.decode("utf-8", errors="replace").strip()
    return clip(reason, _MAX_REASON) or f"the target answered {response.status} with no reason"


def _reason_in(value: JsonValue) -> str | None:
    if isinstance(value, str) and value.strip():
        return value.strip()
    if isinstance(value, dict):
        for key in _REASON_KEYS:
            found = value.get(key)
            if isinstance(found, dict):  # {"error": {"message": "..."}}
                found = next(
                    (found[k] for k in _REASON_KEYS if isinstance(found.get(k), str)), None
                )
            if isinstance(found, str) and found.strip():
                return found.strip()
    return None
