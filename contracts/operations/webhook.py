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

import copy
import json
import re
from collections.abc import Iterator, Mapping
from string import Formatter
from types import MappingProxyType
from typing import Any, Final
from urllib.parse import urlsplit

from jsonschema import Draft202012Validator
from jsonschema.exceptions import (
    SchemaError,
)
from jsonschema.exceptions import (
    ValidationError as SchemaValidationError,
)
from pydantic import Field, JsonValue, ValidationError, model_validator

from contracts.base import (
    ArgType,
    Context,
    ContractViolation,
    FieldProblem,
    HttpResponse,
    HttpTransportError,
    IdempotencyKey,
    Operation,
    Preview,
    PreviewField,
    Resolved,
    Risk,
)
from contracts.canonical import canonical_json
from contracts.frozen import Frozen
from contracts.outcomes import (
    NeedsReconciliation,
    Outcome,
    RevisionRequired,
    Succeeded,
    TerminalFailure,
)
from contracts.redaction import scrub, shown_url
from contracts.signing import EXECUTION, REVALIDATION, Purpose, signed_headers

__all__ = [
    "FieldTemplate",
    "PreviewTemplate",
    "WebhookArguments",
    "WebhookOperation",
    "WebhookSpec",
    "from_config",
]

#: The validated request and the frozen arguments: read-only mappings of JSON values.
WebhookArguments = Mapping[str, JsonValue]

_SCALAR_TYPES: Final[Mapping[str, ArgType]] = {
    "integer": "integer",
    "number": "number",
    "string": "string",
    "boolean": "boolean",
}
_FIELD_NAME: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_REVISION_STATUSES: Final = frozenset({409, 412, 422})
_REASON_KEYS: Final = ("reason", "detail", "message", "error")
_MAX_REASON: Final = 500
_MAX_TEXT_RESULT: Final = 4000


class _SpecProblems(ValueError):
    """What is wrong with a webhook operation's configuration, field by field."""

    def __init__(self, name: str, problems: tuple[str, ...]) -> None:
        super().__init__(f"webhook operation {name!r}: " + "; ".join(problems))
        self.problems = problems


class FieldTemplate(Frozen):
    label: str = Field(min_length=1)
    value: str  #: a template: text with ``{field}`` placeholders


class PreviewTemplate(Frozen):
    title: str = Field(min_length=1)  #: e.g. "Email {count} customers in segment {segment}"
    fields: tuple[FieldTemplate, ...] = ()


class WebhookSpec(Frozen):
    """A webhook operation as configured. Every problem found names the operation and field."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$")
    description: str = Field(min_length=1)
    request_schema: dict[str, JsonValue]  #: JSON Schema (draft 2020-12) of the request
    #: values for optional fields the request leaves out (the "resolved defaults")
    defaults: dict[str, JsonValue] = Field(default_factory=dict)
    preview: PreviewTemplate
    url: str
    revalidate_url: str | None = None
    timeout_seconds: float = Field(default=10.0, gt=0, le=300)
    #: what the target does: "read", "reversible" or "irreversible" (unknown effects count as
    #: irreversible); bounds what the policy may run without asking (contracts/risk.py)
    risk: Risk = "irreversible"

    @model_validator(mode="after")
    def _consistent(self) -> WebhookSpec:
        problems = tuple(_spec_problems(self))
        if problems:
            raise _SpecProblems(self.name, problems)
        return self

    def effective_schema(self) -> dict[str, Any]:
        """The request schema as enforced: extra fields are refused unless it says otherwise."""
        schema = copy.deepcopy(self.request_schema)
        schema.setdefault("additionalProperties", False)
        return schema

    def properties(self) -> Mapping[str, Any]:
        properties = self.request_schema.get("properties")
        return properties if isinstance(properties, dict) else {}

    def required(self) -> frozenset[str]:
        required = self.request_schema.get("required")
        if not isinstance(required, list):
            return frozenset()
        return frozenset(name for name in required if isinstance(name, str))


def _spec_problems(spec: WebhookSpec) -> Iterator[str]:
    for where, url in (("url", spec.url), ("revalidate_url", spec.revalidate_url)):
        if url is not None and not _is_http_url(url):
            yield f"{where}: expected an http:// or https:// URL with a host, got {url!r}"
    try:
        Draft202012Validator.check_schema(spec.request_schema)
    except SchemaError as error:
        yield f"request_schema{error.json_path[1:]}: {error.message}"
        return
    schema = spec.request_schema
    if schema.get("type") != "object":
        yield f'request_schema.type: expected "object", got {_show(schema.get("type"))}'
    if not isinstance(schema.get("properties"), dict):
        yield "request_schema.properties: expected an object giving each request field's schema"
        return
    properties, required = spec.properties(), spec.required()
    known = ", ".join(sorted(properties)) or "none"
    for name in properties:
        if not _FIELD_NAME.match(name):
            yield (
                f"request_schema.properties: field name {name!r} must be letters, digits and "
                "underscores, not starting with a digit"
            )
    for name in sorted(required - set(properties)):
        yield f"request_schema.required: {name!r} is not a property (properties: {known})"
    yield from _default_problems(spec, properties, required, known)
    templates = [("preview.title", spec.preview.title)] + [
        (f"preview.fields[{i}].value", field.value) for i, field in enumerate(spec.preview.fields)
    ]
    always_present = required | set(spec.defaults)
    for where, template in templates:
        yield from _template_problems(where, template, properties, always_present, known)


def _is_http_url(url: str) -> bool:
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises on a port that is not a number in range
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


def _default_problems(
    spec: WebhookSpec, properties: Mapping[str, Any], required: frozenset[str], known: str
) -> Iterator[str]:
    check_one = Draft202012Validator({**spec.effective_schema(), "required": []})
    for name, value in spec.defaults.items():
        if name not in properties:
            yield f"defaults.{name}: not a property of request_schema (properties: {known})"
        elif name in required:
            yield f"defaults.{name}: the field is required, so a default would never apply"
        else:
            for error in check_one.iter_errors({name: value}):
                yield f"defaults.{name}: {_show(value)} does not fit the schema: {error.message}"


def _template_problems(
    where: str,
    template: str,
    properties: Mapping[str, Any],
    always_present: set[str] | frozenset[str],
    known: str,
) -> Iterator[str]:
    try:
        parts = list(Formatter().parse(template))
    except ValueError as error:
        yield f"{where}: invalid template {template!r}: {error} (write {{{{ and }}}} for braces)"
        return
    for _, field, spec, conversion in parts:
        if field is None:
            continue
        if spec or conversion:
            yield f"{where}: placeholder {{{field}}} has a format or conversion; use {{name}} only"
        elif field not in properties:
            yield f"{where}: {{{field}}} is not a property of request_schema (properties: {known})"
        elif field not in always_present:
            yield (
                f"{where}: {{{field}}} is optional and has no default, so it may be absent; "
                "make it required or give it a default"
            )


class WebhookOperation(Operation[WebhookArguments, WebhookArguments]):
    """An operation whose effect is a signed POST to a configured target."""

    def __init__(self, spec: WebhookSpec, secret: str) -> None:
        if not secret:
            raise ValueError(
                f"webhook operation {spec.name!r}: secret is empty; expected the shared secret "
                "the target uses to verify signatures"
            )
        self.spec = spec
        self.name = spec.name
        self.description = spec.description
        self.risk = spec.risk
        self._secret = secret
        self._schema = spec.effective_schema()
        self._validator = Draft202012Validator(
            self._schema, format_checker=Draft202012Validator.FORMAT_CHECKER
        )

    # --- the request and the arguments ---------------------------------------------------------

    def parse_request(self, data: JsonValue) -> WebhookArguments:
        return MappingProxyType(copy.deepcopy(self._checked("request", data)))

    def request_schema(self) -> dict[str, Any]:
        return copy.deepcopy(self._schema)

    def argument_types(self) -> Mapping[str, ArgType]:
        return {
            name: _SCALAR_TYPES[spec["type"]]
            for name, spec in self.spec.properties().items()
            if isinstance(spec, dict) and spec.get("type") in _SCALAR_TYPES
        }

    def dump_arguments(self, arguments: WebhookArguments) -> dict[str, JsonValue]:
        return copy.deepcopy(dict(arguments))

    def load_arguments(self, data: Mapping[str, JsonValue]) -> WebhookArguments:
        return MappingProxyType(copy.deepcopy(self._checked("arguments", dict(data))))

    def _checked(self, prefix: str, data: JsonValue) -> dict[str, JsonValue]:
        """``data`` if it satisfies the schema; otherwise every problem, sorted by field."""
        if not isinstance(data, dict):
            fields = ", ".join(sorted(self.spec.properties())) or "none"
            raise ContractViolation(
                [
                    FieldProblem(
                        field=prefix,
                        message=f"expected a JSON object (fields: {fields}), "
                        f"got {_json_type(data)}",
                    )
                ]
            )
        found: dict[tuple[str, str], FieldProblem] = {}
        for error in self._validator.iter_errors(data):
            for problem in _problems(prefix, error):
                found.setdefault((problem.field, problem.message), problem)
        if found:
            raise ContractViolation([found[key] for key in sorted(found)])
        return data

    # --- resolve and preview -----------------------------------------------------------------

    async def resolve(self, request: WebhookArguments, ctx: Context) -> Resolved[WebhookArguments]:
        arguments = copy.deepcopy(dict(request))
        for name, value in self.spec.defaults.items():
            arguments.setdefault(name, copy.deepcopy(value))
        frozen = MappingProxyType(arguments)
        return Resolved(arguments=frozen, preview=self.preview(frozen))

    def preview(self, arguments: WebhookArguments) -> Preview:
        """The preview the templates give for ``arguments``."""
        template = self.spec.preview
        return Preview(
            title=_render(template.title, arguments),
            fields=tuple(
                PreviewField(label=field.label, value=_render(field.value, arguments))
                for field in template.fields
            ),
        )

    # --- revalidate and execute --------------------------------------------------------------

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
                    "request was not sent, so the effect did not happen",
                    correlation_id=ctx.correlation_id,
                )
            return NeedsReconciliation(
                detail=f"{scrub(str(error), url)}; the target may have acted",
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
    name = data.get("name")
    label = f"webhook operation {name!r}" if isinstance(name, str) else "webhook operation"
    try:
        text = json.dumps(dict(data), allow_nan=False)
    except (TypeError, ValueError) as error:
        raise ValueError(
            f"{label}: expected plain strings, numbers, tables and arrays: {error}"
        ) from None
    try:
        spec = WebhookSpec.model_validate_json(text)
    except ValidationError as error:
        raise ValueError(_describe_spec_errors(label, error)) from None
    return WebhookOperation(spec, secret)


def _describe_spec_errors(label: str, error: ValidationError) -> str:
    messages: list[str] = []
    for item in error.errors(include_url=False):
        cause = item.get("ctx", {}).get("error")
        if isinstance(cause, _SpecProblems):
            messages.extend(cause.problems)
            continue
        where = ".".join(str(part) for part in item["loc"]) or "(table)"
        message = item["msg"]
        if item["type"] == "extra_forbidden":
            message = f"unknown field (expected: {', '.join(WebhookSpec.model_fields)})"
        elif item["loc"] == ("risk",):
            message = (
                "expected 'read', 'reversible' or 'irreversible' (what the target's effect is; "
                f"default 'irreversible'), got {_show(item.get('input'))}"
            )
        elif item["type"] != "missing":
            message += f" (got {_show(item.get('input'))})"
        messages.append(f"{where}: {message}")
    return f"{label}: " + "; ".join(messages)


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
    def refuse(constant: str) -> None:
        raise ValueError(f"{constant} is not JSON")

    try:
        return True, json.loads(body, parse_constant=refuse)
    except ValueError:  # also UnicodeDecodeError and JSONDecodeError
        return False, None


def _result(body: bytes) -> JsonValue:
    if not body.strip():
        return None
    ok, value = _parse_json(body)
    if ok:
        return value
    return {"body": _clip(body.decode("utf-8", errors="replace"), _MAX_TEXT_RESULT)}


def _reason(response: HttpResponse) -> str:
    """The target's own words: a JSON reason field, a JSON string, or the body's text."""
    ok, value = _parse_json(response.body)
    reason = _reason_in(value) if ok else None
    if reason is None:
        reason = response.body.decode("utf-8", errors="replace").strip()
    return _clip(reason, _MAX_REASON) or f"the target answered {response.status} with no reason"


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


# --- small helpers -----------------------------------------------------------------------------


def _problems(prefix: str, error: SchemaValidationError) -> Iterator[FieldProblem]:
    path = ".".join([prefix, *(str(part) for part in error.absolute_path)])
    instance, schema, keyword = error.instance, error.schema, error.validator
    if keyword == "required" and isinstance(instance, dict):
        properties = schema.get("properties", {})
        for name in error.validator_value:
            if name not in instance:
                expected = properties.get(name, {}).get("type")
                hint = f"; expected {_types(expected)}" if expected else ""
                yield FieldProblem(
                    field=f"{path}.{name}", message=f"required field is missing{hint}"
                )
    elif keyword == "additionalProperties" and isinstance(instance, dict):
        allowed = schema.get("properties", {})
        patterns = list(schema.get("patternProperties", {}))
        listed = ", ".join(sorted(allowed)) or "none"
        for name in instance:
            if name not in allowed and not any(re.search(p, name) for p in patterns):
                yield FieldProblem(
                    field=f"{path}.{name}", message=f"unexpected field (allowed: {listed})"
                )
    else:
        yield FieldProblem(field=path, message=_message(error))


def _message(error: SchemaValidationError) -> str:
    keyword, expected, got = error.validator, error.validator_value, error.instance
    if keyword == "type":
        return f"expected {_types(expected)}, got {_json_type(got)} {_show(got)}"
    if keyword == "enum":
        return f"expected one of {', '.join(_show(v) for v in expected)}, got {_show(got)}"
    if keyword == "const":
        return f"expected {_show(expected)}, got {_show(got)}"
    if keyword == "pattern":
        return f"expected a string matching {expected!r}, got {_show(got)}"
    if keyword == "format":
        return f"expected a valid {expected}, got {_show(got)}"
    if keyword in ("minLength", "maxLength") and isinstance(got, str):
        bound = "at least" if keyword == "minLength" else "at most"
        return f"expected {bound} {expected} characters, got {len(got)}"
    if keyword in ("minItems", "maxItems") and isinstance(got, list):
        bound = "at least" if keyword == "minItems" else "at most"
        return f"expected {bound} {expected} items, got {len(got)}"
    return _clip(str(error.message), 300)


def _render(template: str, arguments: WebhookArguments) -> str:
    out = []
    for literal, field, _, _ in Formatter().parse(template):
        out.append(literal)
        if field is not None:
            value = arguments[field]
            out.append(value if isinstance(value, str) else _show(value, limit=None))
    return "".join(out)


def _types(expected: Any) -> str:
    return " or ".join(expected) if isinstance(expected, list) else str(expected)


def _json_type(value: object) -> str:
    for kind, name in (
        (bool, "boolean"),
        (int, "integer"),
        (float, "number"),
        (str, "string"),
        (list, "array"),
        (dict, "object"),
    ):
        if isinstance(value, kind):
            return name
    return "null" if value is None else type(value).__name__


def _show(value: object, *, limit: int | None = 60) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        text = repr(value)
    return text if limit is None else _clip(text, limit)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
