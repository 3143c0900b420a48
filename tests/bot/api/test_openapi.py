"""The OpenAPI document: valid OpenAPI 3.1, generated from the models, served without a token."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate
from pydantic.json_schema import models_json_schema

from bot.api import proposals as proposals_api
from bot.api.openapi import PROPOSAL_ID_PATTERN, openapi_document
from bot.api.problems import Problem
from bot.api.schemas import ProblemOut, ProposalOut, SubmitBody
from bot.flow.submit import new_proposal_id
from contracts.base import FieldProblem, Operation
from contracts.operations.refund import from_config as refund_from_config
from contracts.operations.webhook import WebhookOperation, WebhookSpec
from tests.e2e.harness import AGENT_TOKEN, REQUESTER, running_countersign

#: A webhook operation whose request schema has local definitions and references to them.
SPEC = WebhookSpec(
    name="crm.tag_contact",
    description="Tag a contact",
    request_schema={
        "type": "object",
        "required": ["contact", "tag"],
        "properties": {"contact": {"$ref": "#/$defs/contact"}, "tag": {"$ref": "#/$defs/tag"}},
        "$defs": {
            "contact": {"type": "string", "pattern": "^ct_[0-9]+$"},
            "tag": {"type": "string", "enum": ["vip", "churn-risk"]},
        },
    },
    preview={"title": "Tag {contact} as {tag}"},
    url="http://127.0.0.1:9/tag",
)


def operations() -> list[Operation[Any, Any]]:
    payment = {"payment_id": "pay_1", "customer": "cus_1", "amount_cents": 100, "currency": "USD"}
    refund = refund_from_config("payments.refund", {"payments": [payment]})
    return [WebhookOperation(SPEC, "secret-for-the-tagging-target"), refund]


def document() -> dict[str, Any]:
    return openapi_document(operations(), long_poll_max_seconds=45, max_body_bytes=1234)


def validator(doc: dict[str, Any], component: str) -> Draft202012Validator:
    """Validates against one schema of ``doc``, resolving references within the document."""
    return Draft202012Validator({**doc, "$ref": f"#/components/schemas/{component}"})


def test_the_document_is_valid_openapi_3_1() -> None:
    doc = document()

    validate(doc)

    assert doc["openapi"] == "3.1.0"


def test_the_response_and_envelope_schemas_are_the_models_schemas() -> None:
    _, expected = models_json_schema(
        [(SubmitBody, "validation"), (ProposalOut, "serialization"), (ProblemOut, "serialization")],
        ref_template="#/components/schemas/{model}",
    )

    schemas = document()["components"]["schemas"]

    for name, schema in expected["$defs"].items():
        assert schemas[name] == schema, name


def test_each_operation_request_is_its_contract_schema_and_the_body_is_discriminated_by_it() -> (
    None
):
    doc = document()
    body = doc["paths"]["/v1/proposals"]["post"]["requestBody"]["content"]["application/json"]
    mapping = body["schema"]["discriminator"]["mapping"]

    assert body["schema"]["discriminator"]["propertyName"] == "operation"
    assert set(mapping) == {"crm.tag_contact", "payments.refund"}
    refund_schema = doc["components"]["schemas"]["Request.payments.refund"]
    assert refund_schema == operations()[1].request_schema()


def test_local_definitions_of_a_request_schema_become_components_and_still_validate() -> None:
    doc = document()
    submit = validator(doc, "Submit.crm.tag_contact")
    good = {"operation": "crm.tag_contact", "request": {"contact": "ct_7", "tag": "vip"}}

    assert "$defs" not in doc["components"]["schemas"]["Request.crm.tag_contact"]
    assert "Request.crm.tag_contact.contact" in doc["components"]["schemas"]
    assert submit.is_valid({**good, "requested_by": REQUESTER})
    assert not submit.is_valid({**good, "requested_by": REQUESTER, "request": {"contact": "x"}})
    assert not submit.is_valid({**good, "requested_by": REQUESTER, "operation": "payments.refund"})


def test_every_response_is_documented_with_its_headers() -> None:
    doc = document()
    submit = doc["paths"]["/v1/proposals"]["post"]
    read = doc["paths"]["/v1/proposals/{id}"]["get"]

    assert set(submit["responses"]) >= {"201", "200", "400", "401", "413", "422"}
    assert set(read["responses"]) >= {"200", "400", "401", "404"}
    assert set(submit["responses"]["201"]["headers"]) == {"Location"}
    assert set(submit["responses"]["200"]["headers"]) == {"Location", "Idempotent-Replayed"}
    unauthorized = doc["components"]["responses"]["Unauthorized"]
    assert set(unauthorized["headers"]) == {"WWW-Authenticate"}
    assert [p["name"] for p in submit["parameters"]] == ["Idempotency-Key"]
    wait = next(p for p in read["parameters"] if p["name"] == "wait")
    assert wait["schema"]["maximum"] == 45


def test_the_cancel_endpoint_is_documented_with_its_answers() -> None:
    doc = document()
    cancel = doc["paths"]["/v1/proposals/{id}/cancel"]["post"]
    statuses = doc["components"]["schemas"]["ProposalOut"]["properties"]["status"]

    assert set(cancel["responses"]) == {"200", "401", "404", "409", "429", "503"}
    assert cancel["responses"]["409"] == {"$ref": "#/components/responses/AlreadyDecided"}
    assert "cancelled" in statuses["enum"]
    assert [p["name"] for p in cancel["parameters"]] == ["id"]


@pytest.mark.parametrize(
    "problem",
    [
        Problem(400, "Malformed JSON", "the body is not valid JSON"),
        Problem(
            422,
            "Invalid proposal",
            "1 field(s) are invalid",
            problems=[FieldProblem(field="request.amount", message="expected a number")],
        ),
        Problem(503, "Store unavailable", "retry later", headers={"Retry-After": "5"}),
    ],
)
def test_the_problem_schema_matches_what_problem_responses_send(problem: Problem) -> None:
    response = problem.response()
    assert isinstance(response.body, bytes)

    ProblemOut.model_validate_json(response.body)
    errors = list(validator(document(), "ProblemOut").iter_errors(json.loads(response.body)))
    assert errors == []


def test_the_edit_lineage_is_documented_on_every_proposal() -> None:
    schema = document()["components"]["schemas"]["ProposalOut"]

    for name in ("supersedes", "edited_by", "superseded_by"):
        assert name in schema["required"]
        assert schema["properties"][name]["anyOf"] == [{"type": "string"}, {"type": "null"}]
        assert schema["properties"][name]["description"]
    assert "superseded" in schema["properties"]["superseded_by"]["description"]


def test_shown_at_is_documented_as_an_answer_only_time_that_older_servers_leave_out() -> None:
    doc = document()
    schemas = doc["components"]["schemas"]
    shown_at = schemas["ProposalOut"]["properties"]["shown_at"]
    read = doc["paths"]["/v1/proposals/{id}"]["get"]["responses"]["200"]["description"]

    assert shown_at["anyOf"] == [{"type": "string", "format": "date-time"}, {"type": "null"}]
    assert "shown_at" not in schemas["ProposalOut"].get("required", [])  # older servers: absent
    assert "first shown" in shown_at["description"] and "shown_after" in shown_at["description"]
    assert "shown_at" in read
    # the agent cannot send it: the submission body names its fields and allows no others
    assert "shown_at" not in schemas["SubmitBody"]["properties"]
    assert schemas["SubmitBody"]["additionalProperties"] is False


def test_proposal_ids_match_the_documented_pattern() -> None:
    assert all(
        Draft202012Validator({"pattern": PROPOSAL_ID_PATTERN}).is_valid(new_proposal_id())
        for _ in range(200)
    )


async def test_the_running_app_serves_its_document_without_a_token_and_answers_by_it(
    tmp_path: Path,
) -> None:
    async with running_countersign(tmp_path) as cs:
        served = await cs.request("GET", "/v1/openapi.json")
        doc = served.json()
        status, proposal = await cs.submit(
            {
                "operation": "payments.refund",
                "request": {"payment_id": "pay_1002"},
                "requested_by": REQUESTER,
            },
            token=AGENT_TOKEN,
        )
        refused = await cs.request("POST", "/v1/proposals", data=b"{}")

    assert served.status == 200
    validate(doc)
    assert set(doc["components"]["schemas"]) >= {
        "Request.payments.refund",
        "Request.crm.send_campaign",
    }
    assert status == 201
    assert list(validator(doc, "ProposalOut").iter_errors(proposal)) == []
    assert refused.status == 401
    assert list(validator(doc, "ProblemOut").iter_errors(refused.json())) == []


async def test_the_document_is_made_once_however_often_it_is_asked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Anyone who reaches the port may ask for the document, without a token, and making it
    takes the loop some milliseconds (about 4 ms for the example configuration): made at every
    request, a flood of them took the loop from people's clicks. It is made on the first."""
    made: list[dict[str, Any]] = []

    def counted(*args: Any, **kwargs: Any) -> dict[str, Any]:
        made.append(openapi_document(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(proposals_api, "openapi_document", counted)
    async with running_countersign(tmp_path) as cs:
        served = [await cs.request("GET", "/v1/openapi.json") for _ in range(5)]

    assert len(made) == 1
    assert {answer.status for answer in served} == {200}
    assert all(answer.json() == made[0] for answer in served)
    assert served[0].headers["Content-Type"].startswith("application/json")
