"""The agent API as an OpenAPI 3.1 document, generated from the models that parse and answer it.

The envelope (:class:`~bot.api.schemas.SubmitBody`), the answer
(:class:`~bot.api.schemas.ProposalOut`)
and the error shape (:class:`~bot.api.schemas.ProblemOut`) come from their pydantic models; the
``request`` of each configured operation comes from that operation's own ``request_schema()``,
so the document describes exactly what this deployment accepts. Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from pydantic.json_schema import models_json_schema

from bot.api.schemas import ProblemOut, ProposalOut, SubmitBody
from contracts.base import Operation

__all__ = ["API_VERSION", "PROPOSAL_ID_PATTERN", "openapi_document"]

#: The version of the API the document describes (the ``/v1`` of its paths).
API_VERSION: Final = "1.0.0"

#: What bot.flow.submit.new_proposal_id makes: ``cs_`` and 128 bits in lowercase base32.
PROPOSAL_ID_PATTERN: Final = r"^cs_[a-z2-7]{26}$"

_REF: Final = "#/components/schemas/{model}"
_JSON: Final = "application/json"
_PROBLEM: Final = "application/problem+json"

#: The path parameter naming one proposal.
_PROPOSAL_ID: Final[dict[str, Any]] = {
    "name": "id",
    "in": "path",
    "required": True,
    "description": "The proposal's id, as the submission answered it.",
    "schema": {"type": "string", "pattern": PROPOSAL_ID_PATTERN},
}
#: The status of each shared error answer (components/responses, _problem_responses).
_ANSWER_STATUS: Final = {
    "MalformedRequest": 400,
    "Unauthorized": 401,
    "RequesterRefused": 403,
    "NotFound": 404,
    "RequestTimeout": 408,
    "AlreadyDecided": 409,
    "BodyTooLarge": 413,
    "ContractViolation": 422,
    "TooManyRequests": 429,
    "Unavailable": 503,
}


def _answers(*names: str) -> dict[str, Any]:
    """The shared error answers named, each under its status."""
    return {str(_ANSWER_STATUS[name]): {"$ref": f"#/components/responses/{name}"} for name in names}


def openapi_document(
    operations: Iterable[Operation[Any, Any]],
    *,
    long_poll_max_seconds: float,
    max_body_bytes: int,
) -> dict[str, Any]:
    """The OpenAPI 3.1 document of the agent API for these configured ``operations``."""
    operations = sorted(operations, key=lambda op: op.name)
    _, defs = models_json_schema(
        [(SubmitBody, "validation"), (ProposalOut, "serialization"), (ProblemOut, "serialization")],
        ref_template=_REF,
    )
    schemas: dict[str, Any] = dict(defs["$defs"])
    for operation in operations:
        schemas.update(_operation_schemas(operation))
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Countersign agent API",
            "version": API_VERSION,
            "description": _description(operations),
        },
        "security": [{"agentToken": []}],
        "paths": {
            "/v1/proposals": {"post": _submit_operation(operations, max_body_bytes)},
            "/v1/proposals/{id}": {"get": _read_operation(long_poll_max_seconds)},
            "/v1/proposals/{id}/cancel": {"post": _cancel_operation()},
            "/v1/openapi.json": {"get": _self_operation()},
            "/healthz": {"get": _health_operation()},
        },
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "agentToken": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "The agent's token: the agent is whoever holds it.",
                }
            },
            "headers": _HEADERS,
            "responses": _problem_responses(max_body_bytes),
        },
    }


# --- the operations' request schemas --------------------------------------------------------------


def _operation_schemas(operation: Operation[Any, Any]) -> dict[str, Any]:
    """``Request.<name>`` (the operation's request) and ``Submit.<name>`` (the whole body).

    Local definitions (``$defs``, ``definitions``) become components of their own, and every
    local ``$ref`` is rewritten to point into the document, where the request now lives.
    """
    request_name, submit_name = f"Request.{operation.name}", f"Submit.{operation.name}"
    schema = operation.request_schema()
    schema.pop("$schema", None)  # the document's dialect applies
    schema.setdefault("description", operation.description)
    hoisted: dict[str, Any] = {}
    moved: dict[str, str] = {}  # old pointer prefix -> new one
    for key in ("$defs", "definitions"):
        for def_name, definition in (schema.pop(key, None) or {}).items():
            component = f"{request_name}.{def_name}"
            hoisted[component] = definition
            moved[f"#/{key}/{def_name}"] = _REF.format(model=component)
    moved["#"] = _REF.format(model=request_name)  # anything else pointed into the request itself
    result = {name: _rewrite_refs(definition, moved) for name, definition in hoisted.items()}
    result[request_name] = _rewrite_refs(schema, moved)
    result[submit_name] = {
        "description": f"A proposal of operation {operation.name!r}.",
        "allOf": [
            {"$ref": _REF.format(model="SubmitBody")},
            {
                "type": "object",
                "properties": {
                    "operation": {"const": operation.name},
                    "request": {"$ref": _REF.format(model=request_name)},
                },
            },
        ],
    }
    return result


def _rewrite_refs(node: Any, moved: dict[str, str]) -> Any:
    """A copy of ``node`` whose local ``$ref``s point where their targets were moved."""
    if isinstance(node, dict):
        return {
            key: _moved_ref(value, moved)
            if key == "$ref" and isinstance(value, str)
            else _rewrite_refs(value, moved)
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_rewrite_refs(item, moved) for item in node]
    return node


def _moved_ref(ref: str, moved: dict[str, str]) -> str:
    """The longest moved prefix of ``ref``, replaced (``#/$defs/a/x`` -> ``.../Request.op.a/x``)."""
    for old in sorted(moved, key=len, reverse=True):
        if ref == old or ref.startswith(old + "/"):
            return moved[old] + ref[len(old) :]
    return ref  # not local: left as it is


def _submit_body_schema(operations: list[Operation[Any, Any]]) -> dict[str, Any]:
    if not operations:
        return {"$ref": _REF.format(model="SubmitBody")}
    return {
        "oneOf": [{"$ref": _REF.format(model=f"Submit.{op.name}")} for op in operations],
        "discriminator": {
            "propertyName": "operation",
            "mapping": {op.name: _REF.format(model=f"Submit.{op.name}") for op in operations},
        },
    }


def _description(operations: list[Operation[Any, Any]]) -> str:
    lines = [
        "Agents propose operations; Countersign freezes them into contracts, asks the policy "
        "table, asks a person in Slack when it must, and executes approved proposals itself.",
        "",
        "Errors are `application/problem+json`, naming each field at fault. Invalid input "
        "stores, posts and executes nothing.",
        "",
        "Configured operations (the `request` of each is the schema `Request.<operation>`):",
        "",
    ]
    lines += [f"- `{op.name}`: {op.description}" for op in operations] or ["- none"]
    return "\n".join(lines)


# --- paths ----------------------------------------------------------------------------------------


def _submit_operation(operations: list[Operation[Any, Any]], max_body_bytes: int) -> dict[str, Any]:
    proposal = {_JSON: {"schema": {"$ref": _REF.format(model="ProposalOut")}}}
    location = {"Location": {"$ref": "#/components/headers/Location"}}
    return {
        "operationId": "submitProposal",
        "summary": "Submit a proposal",
        "description": (
            "Validates the request against the operation's contract, resolves it into frozen "
            "arguments and a preview, and applies the policy: `ask` answers `pending`, `deny` "
            "answers `denied`, `auto` runs it at once and answers with its outcome."
        ),
        "parameters": [
            {
                "name": "Idempotency-Key",
                "in": "header",
                "required": False,
                "description": (
                    "The same key with the same body returns the original proposal (200); with "
                    "another body it is refused (422). Without it, a key is derived from the "
                    "agent, `run_id`, operation and request."
                ),
                "schema": {"type": "string", "minLength": 1, "maxLength": 200},
            }
        ],
        "requestBody": {
            "required": True,
            "description": f"At most {max_body_bytes} bytes of JSON.",
            "content": {_JSON: {"schema": _submit_body_schema(operations)}},
        },
        "responses": {
            "201": {
                "description": "The proposal, created.",
                "headers": location,
                "content": proposal,
            },
            "200": {
                "description": "A replay: this key and body were submitted before; the "
                "original proposal as it is now.",
                "headers": {
                    **location,
                    "Idempotent-Replayed": {"$ref": "#/components/headers/Idempotent-Replayed"},
                },
                "content": proposal,
            },
            **_answers(
                "MalformedRequest",
                "Unauthorized",
                "RequesterRefused",
                "RequestTimeout",
                "BodyTooLarge",
                "ContractViolation",
                "TooManyRequests",
                "Unavailable",
            ),
        },
    }


def _read_operation(long_poll_max_seconds: float) -> dict[str, Any]:
    return {
        "operationId": "readProposal",
        "summary": "Read, or wait for, a proposal",
        "parameters": [
            _PROPOSAL_ID,
            {
                "name": "wait",
                "in": "query",
                "required": False,
                "description": (
                    "Hold the request up to this many seconds until the proposal is decided."
                ),
                "schema": {"type": "number", "minimum": 0, "maximum": long_poll_max_seconds},
            },
        ],
        "responses": {
            "200": {
                "description": (
                    "The proposal as it is now; while it is undecided, `shown_at` says whether "
                    "people have been shown it yet."
                ),
                "content": {_JSON: {"schema": {"$ref": _REF.format(model="ProposalOut")}}},
            },
            **_answers(
                "MalformedRequest", "Unauthorized", "NotFound", "TooManyRequests", "Unavailable"
            ),
        },
    }


def _cancel_operation() -> dict[str, Any]:
    return {
        "operationId": "cancelProposal",
        "summary": "Withdraw a proposal nobody has decided",
        "description": (
            "The proposing agent withdraws its pending proposal: its status becomes `cancelled`, "
            "its Slack message says so in place of its buttons, and later clicks change nothing. "
            "Withdrawing a cancelled proposal again answers the same. A proposal in any other "
            "status stays as it is (409, naming its status)."
        ),
        "parameters": [
            _PROPOSAL_ID,
        ],
        "responses": {
            "200": {
                "description": "The proposal, withdrawn (status `cancelled`).",
                "content": {_JSON: {"schema": {"$ref": _REF.format(model="ProposalOut")}}},
            },
            **_answers(
                "Unauthorized", "NotFound", "AlreadyDecided", "TooManyRequests", "Unavailable"
            ),
        },
    }


def _self_operation() -> dict[str, Any]:
    return {
        "operationId": "openapiDocument",
        "summary": "This document",
        "security": [],
        "responses": {
            "200": {
                "description": "The OpenAPI document of this deployment's agent API.",
                "content": {_JSON: {"schema": {"type": "object"}}},
            }
        },
    }


def _health_operation() -> dict[str, Any]:
    return {
        "operationId": "health",
        "summary": "Liveness",
        "security": [],
        "responses": {
            "200": {
                "description": "The server is up.",
                "content": {
                    _JSON: {
                        "schema": {
                            "type": "object",
                            "properties": {"ok": {"const": True}},
                            "required": ["ok"],
                        }
                    }
                },
            }
        },
    }


# --- shared components ----------------------------------------------------------------------------

_HEADERS: Final[dict[str, Any]] = {
    "Location": {
        "description": "The proposal's URL: `/v1/proposals/{id}`.",
        "required": True,
        "schema": {"type": "string", "pattern": "^/v1/proposals/cs_[a-z2-7]{26}$"},
    },
    "Idempotent-Replayed": {
        "description": "Present, `true`, when the answer replays an earlier submission.",
        "required": True,
        "schema": {"type": "string", "enum": ["true"]},
    },
    "WWW-Authenticate": {
        "description": "The bearer challenge.",
        "required": True,
        "schema": {"type": "string", "pattern": "^Bearer "},
    },
    "Retry-After": {
        "description": "Seconds to wait before trying again.",
        "required": True,
        "schema": {"type": "string", "pattern": "^[0-9]+$"},
    },
}


def _problem_responses(max_body_bytes: int) -> dict[str, Any]:
    def problem(description: str, **headers: str) -> dict[str, Any]:
        response: dict[str, Any] = {
            "description": description,
            "content": {_PROBLEM: {"schema": {"$ref": _REF.format(model="ProblemOut")}}},
        }
        if headers:
            response["headers"] = {
                name: {"$ref": f"#/components/headers/{ref}"} for name, ref in headers.items()
            }
        return response

    return {
        "MalformedRequest": problem(
            "The body is not a JSON object, or a query parameter is out of range."
        ),
        "Unauthorized": problem(
            "No bearer token, or one no agent holds.", **{"WWW-Authenticate": "WWW-Authenticate"}
        ),
        "BodyTooLarge": problem(f"The body is over {max_body_bytes} bytes."),
        "ContractViolation": problem(
            "The body, the operation's request or the Idempotency-Key is invalid; `errors` "
            "names each field and what was expected."
        ),
        "NotFound": problem("No proposal with that id belongs to this agent."),
        "AlreadyDecided": problem(
            "The proposal is no longer pending (decided, expired, edited or executed), so it "
            "cannot be withdrawn; `detail` and `errors` (field `status`) name its status."
        ),
        "RequesterRefused": problem(
            "`requested_by` names someone this agent may not act for (its `acts_for`, or the "
            "person of the delegation it calls with); `errors` names the field. Nothing was "
            "stored."
        ),
        "RequestTimeout": problem(
            "The body did not arrive whole within the agent's `body_timeout_seconds`: nothing "
            "was stored. Send the body at once."
        ),
        "TooManyRequests": problem(
            "The agent is at one of its limits (submissions per second, reads per second, "
            "proposals waiting for a decision, long-polls held at once), or lookups of unknown "
            "delegation tokens are; `errors` names the limit (`limits.<key>`, "
            "`delegation.unknown_tokens_per_second`). Nothing was stored or changed; retry "
            "after `Retry-After` seconds.",
            **{"Retry-After": "Retry-After"},
        ),
        "Unavailable": problem(
            "At capacity, the event loop behind (people's clicks come first), or the store "
            "not available: nothing was stored or changed; retry after `Retry-After` seconds.",
            **{"Retry-After": "Retry-After"},
        ),
    }
