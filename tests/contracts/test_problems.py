"""What was wrong with a value, in one wording for the API's bodies, operations written in Python
and declared operations (contracts/problems.py)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from contracts.base import ContractViolation
from contracts.operations.webhook import from_config
from contracts.problems import field_path, problems_from_validation_error, show


class Line(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    sku: Annotated[str, StringConstraints(pattern=r"^sku-[0-9]+$")] = Field(examples=["sku-42"])
    quantity: int = Field(gt=0, le=100)


class Order(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    note: str = Field(min_length=1, max_length=20)
    lines: list[Line] = Field(min_length=1, max_length=2)
    code: Annotated[str, StringConstraints(pattern=r"^[A-Z]{2}[0-9]$")] = "AB1"
    speed: Literal["slow", "fast"] = "slow"
    gift: bool = False


def said(data: Any) -> dict[str, str]:
    with pytest.raises(ValidationError) as caught:
        Order.model_validate(data)
    problems = problems_from_validation_error("request", caught.value, Order)
    return {p.field: p.message for p in problems}


def test_each_pydantic_problem_says_what_was_expected_and_what_came() -> None:
    assert said(
        {
            "note": "x" * 500,
            "lines": [{"sku": "box", "quantity": 0}, {"sku": "sku-1", "quantity": 101, "x": 1}],
            "code": "abc",
            "speed": "warp",
            "gift": "yes",
            "colour": "red",
        }
    ) == {
        "request.note": "expected at most 20 characters, got 500",
        "request.lines.0.sku": 'expected a value like sku-42, got "box"',
        "request.lines.0.quantity": "expected more than 0, got 0",
        "request.lines.1.quantity": "expected at most 100, got 101",
        "request.lines.1.x": "unexpected field (allowed: quantity, sku)",
        "request.code": 'expected a string matching "^[A-Z]{2}[0-9]$", got "abc"',
        "request.speed": "expected one of 'slow' or 'fast', got \"warp\"",
        "request.gift": 'expected boolean, got string "yes"',
        "request.colour": "unexpected field (allowed: code, gift, lines, note, speed)",
    }
    assert said({"note": "", "lines": []}) == {
        "request.note": 'expected a non-empty string, got ""',
        "request.lines": "expected at least 1 item, got 0",
    }
    assert said({"lines": "none"}) == {
        "request.note": "required field is missing",
        "request.lines": 'expected array, got string "none"',
    }


def test_a_long_value_is_quoted_clipped() -> None:
    message = said({"note": 12, "lines": [{"sku": "s" * 10_000, "quantity": 1}]})
    assert message["request.note"] == "expected string, got integer 12"
    quoted = message["request.lines.0.sku"]
    assert quoted.startswith('expected a value like sku-42, got "sss')
    assert quoted.endswith("…")
    assert len(quoted) < 120


def test_a_declared_operation_words_its_bounds_and_patterns_the_same_way() -> None:
    operation = from_config(
        {
            "name": "shop.order",
            "description": "Order stock",
            "request_schema": {
                "type": "object",
                "required": ["quantity"],
                "properties": {
                    "quantity": {"type": "integer", "minimum": 1, "exclusiveMaximum": 100},
                    "price": {"type": "number", "exclusiveMinimum": 0, "maximum": 5000},
                    "sku": {"type": "string", "pattern": "^sku-[0-9]+$", "examples": ["sku-42"]},
                    "code": {"type": "string", "minLength": 1},
                },
            },
            "preview": {"title": "Order {quantity}", "fields": []},
            "url": "http://127.0.0.1:9/order",
            "timeout_seconds": 5,
        },
        secret="shop-shared-secret",
    )
    with pytest.raises(ContractViolation) as caught:
        operation.parse_request({"quantity": 100, "price": 0, "sku": "box", "code": ""})
    assert {p.field: p.message for p in caught.value.problems} == {
        "request.quantity": "expected less than 100, got 100",
        "request.price": "expected more than 0, got 0",
        "request.sku": 'expected a value like sku-42, got "box"',
        "request.code": 'expected a non-empty string, got ""',
    }


def test_a_field_path_names_a_plain_key_as_is_and_quotes_any_other_clipped() -> None:
    assert (
        field_path("request", ["customers", 3, "customer id"]) == "request.customers.3.customer id"
    )
    assert field_path("", ["agent"]) == "agent"
    assert field_path("request", [""]) == 'request.""'
    assert field_path("request", ["a\u202eb\nc"]) == 'request."a\\u202eb\\nc"'
    long = field_path("request", ["k" * 5000])
    assert long == 'request."' + "k" * 58 + "…"


def test_a_value_shown_writes_what_a_reader_would_not_see_as_its_code() -> None:
    assert show("Zürich €5") == '"Zürich €5"'  # printable text as written
    assert show("a\u202eb\u200bc\u2028d\x7f") == '"a\\u202eb\\u200bc\\u2028d\\u007f"'
    assert show({"k": "\U000e0041"}) == '{"k": "\\U000e0041"}'
