"""Decision operations: declared in configuration, checked like any request, executed by nobody."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from contracts.base import Context, ContractViolation, HttpResponse, IdempotencyKey
from contracts.operations.decision import DecisionOperation, from_config
from contracts.outcomes import Decided, Succeeded

TOOL_USE: dict[str, Any] = {
    "name": "coding.tool_use",
    "description": "A coding agent's tool call",
    "risk": "reversible",
    "request_schema": {
        "type": "object",
        "required": ["tool_name", "input"],
        "properties": {"tool_name": {"type": "string"}, "input": {"type": "object"}},
    },
    "preview": {
        "title": "Use {tool_name}",
        "fields": [{"label": "Input", "value": "{input}"}],
    },
}


class NoNetwork:
    async def post(self, url: str, **_: Any) -> HttpResponse:
        raise AssertionError(f"a decision operation must not reach the network (posted {url})")


def context() -> Context:
    return Context(now=datetime.now(UTC), http=NoNetwork(), correlation_id="c0ffee")


async def test_the_generic_question_is_title_and_detail_labelled_as_the_agents() -> None:
    operation = from_config({"name": "decision"})

    request = operation.parse_request({"title": "Deploy v2", "detail": "All checks passed."})
    resolved = await operation.resolve(request, context())

    assert resolved.preview.title == "The agent asks: Deploy v2"
    assert [(f.label, f.value) for f in resolved.preview.fields] == [
        ("Detail (the agent's words)", "All checks passed.")
    ]
    assert operation.risk == "irreversible"


def test_the_generic_question_refuses_other_fields_and_a_missing_detail() -> None:
    operation = from_config({"name": "decision"})

    with pytest.raises(ContractViolation) as caught:
        operation.parse_request({"title": "Deploy v2", "command": "rm -rf /"})

    fields = {p.field for p in caught.value.problems}
    assert fields == {"request.detail", "request.command"}


async def test_approval_records_the_decision_and_executes_nothing() -> None:
    operation = from_config(TOOL_USE)
    request = operation.parse_request({"tool_name": "Bash", "input": {"command": "ls"}})
    resolved = await operation.resolve(request, context())

    outcome = await operation.execute(resolved.arguments, context(), IdempotencyKey("k"))

    assert isinstance(outcome, Succeeded)
    decided = Decided.model_validate(outcome.result)
    assert decided.decision == "approved"
    assert decided.executed_by == "agent"
    assert decided.arguments == {"tool_name": "Bash", "input": {"command": "ls"}}


def test_policy_conditions_can_name_a_declared_decisions_fields() -> None:
    operation = from_config(TOOL_USE)

    assert isinstance(operation, DecisionOperation)
    assert operation.argument_types() == {"tool_name": "string"}
    assert operation.risk == "reversible"


def test_a_schema_of_its_own_needs_a_preview_of_its_own() -> None:
    without_preview = {k: v for k, v in TOOL_USE.items() if k != "preview"}

    with pytest.raises(ValueError) as caught:
        from_config(without_preview)

    assert str(caught.value).startswith(
        "decision operation 'coding.tool_use': preview: required with a request_schema"
    )


def test_a_target_url_is_not_a_decision_key() -> None:
    with pytest.raises(ValueError, match=r"decision operation 'decision': url: unknown field"):
        from_config({"name": "decision", "url": "https://example.com/"})
