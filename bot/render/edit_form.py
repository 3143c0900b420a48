"""The edit form: an operation's request schema as typed inputs, and a submitted form read back.

Pure: no Slack calls, clock or store. :func:`edit_form` turns the request's JSON Schema and the
stored request into one :class:`EditField` per top-level field (strings, whole and decimal
numbers, money, booleans, choices from an ``enum``, and JSON text for anything else);
:func:`read_request` turns the submitted values back into a request, naming the field by its
label and saying what was expected for each value that cannot be read; :func:`problem_errors` puts
the contract's problems next to the inputs they are about. Fields the form does not show keep their
stored values.

Money the operation holds in minor units (contracts/formats.py) is typed in major units of its
currency, as a person reads it: a refund of 450.00 USD is edited as "450.00" under "Amount (USD)"
and read back exactly (decimal arithmetic) as 45000; an amount with more decimals than the
currency has, a negative one or one that is not a number is refused under its input.
:func:`currency_errors` refuses an edit whose amounts were typed in a currency other than the one
the edit turns out to be in.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from pydantic import JsonValue

from bot.render.actions import EDIT_FIELD_INPUT
from contracts.base import FieldProblem
from contracts.canonical import finite_json
from contracts.formats import (
    Formats,
    field_label,
    format_money,
    money_currency,
    parse_major_units,
)

__all__ = [
    "MAX_INPUTS",
    "EditField",
    "EditForm",
    "FieldKind",
    "currency_errors",
    "edit_form",
    "input_label",
    "problem_errors",
    "read_request",
]

FieldKind = Literal["string", "choice", "integer", "number", "money", "boolean", "json"]

#: The most fields a form shows (a modal has at most 100 blocks); the rest keep their values.
MAX_INPUTS: Final = 90
#: Slack's limits: a block id, a select's options and an option's value.
_BLOCK_ID_MAX: Final = 255
_OPTIONS_MAX: Final = 100
_OPTION_VALUE_MAX: Final = 150
#: The longest error shown under one input.
_ERROR_MAX: Final = 500

#: The JSON Schema types with an input of their own.
_SCALARS: Final[Mapping[str, FieldKind]] = {
    "string": "string",
    "integer": "integer",
    "number": "number",
    "boolean": "boolean",
}

_WHOLE = re.compile(r"[+-]?\d{1,300}")
_DECIMAL = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


@dataclass(frozen=True, slots=True)
class EditField:
    """One top-level request field as an input."""

    name: str
    kind: FieldKind
    required: bool
    block_id: str
    value: JsonValue = None  #: the stored value (None: not set)
    description: str | None = None
    choices: tuple[str, ...] = ()  #: for "choice": the schema's enum
    #: for money the operation declares, its currency when known: a "money" input is typed in
    #: its major units (the value is in minor units)
    currency: str | None = None
    #: how the operation shows the field (contracts/formats.py): its label, a choice's labels
    label: str = ""
    choice_labels: Mapping[str, str] = dataclasses.field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class EditForm:
    fields: tuple[EditField, ...]
    kept: tuple[str, ...] = ()  #: fields beyond MAX_INPUTS, carried over unchanged


def edit_form(
    schema: Mapping[str, Any],
    request: JsonValue,
    formats: Formats | None = None,
    arguments: Mapping[str, JsonValue] | None = None,
) -> EditForm:
    """The form for ``request`` under ``schema`` (an object schema, as ``request_schema()``),
    each field under its label in ``formats``. A whole-number field the operation declares as
    money in minor units becomes a money input when its currency is known from the proposal's
    frozen ``arguments`` (or the request)."""
    shown = formats or {}
    stored = request if isinstance(request, dict) else {}
    among = {**stored, **(arguments or {})}
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    required = schema.get("required")
    required_names = set(required) if isinstance(required, list) else set()
    names = [*properties, *(name for name in stored if name not in properties)]
    fields = []
    for index, name in enumerate(names[:MAX_INPUTS]):
        raw = properties.get(name)
        spec, nullable = _unwrap(raw if isinstance(raw, dict) else {}, schema)
        value = stored.get(name)
        kind = _kind(spec)
        if name in stored and not _fits(kind, spec, value, nullable):
            kind = "json"  # shown exactly as stored, whatever the schema says
        fmt = shown.get(name)
        currency = None
        if fmt is not None and fmt.kind == "money" and kind in ("integer", "number"):
            currency = money_currency(fmt, among)
            if currency is not None and kind == "integer" and fmt.minor_units:
                kind = "money"  # typed in major units
        description = spec.get("description")
        block_id = f"request.{name}"
        fields.append(
            EditField(
                name=name,
                kind=kind,
                required=name in required_names,
                block_id=block_id if len(block_id) <= _BLOCK_ID_MAX else f"request#{index}",
                value=value,
                description=description if isinstance(description, str) else None,
                choices=tuple(spec["enum"]) if kind == "choice" else (),
                currency=currency,
                label=field_label(shown, name) if name else "(unnamed)",
                choice_labels=dict(fmt.labels) if fmt is not None and kind == "choice" else {},
            )
        )
    return EditForm(fields=tuple(fields), kept=tuple(names[MAX_INPUTS:]))


def input_label(field: EditField) -> str:
    """The label of ``field``'s input: the operation's label, with the currency money is typed
    in ("Amount (USD)")."""
    return f"{field.label} ({field.currency})" if field.currency else field.label


def read_request(
    form: EditForm, stored: JsonValue, values: Mapping[str, Mapping[str, Any]]
) -> tuple[dict[str, JsonValue], dict[str, str]]:
    """The edited request, and an error per input (block id) whose value cannot be read, each
    naming the field by its input's label and saying what was expected.

    ``values`` is the view's ``state.values``. A field whose input is absent keeps its stored
    value; an input left empty removes the field (the operation's default applies), unless it
    was stored empty already (null or "").
    """
    request: dict[str, JsonValue] = dict(stored) if isinstance(stored, dict) else {}
    errors: dict[str, str] = {}
    for field in form.fields:
        block = values.get(field.block_id)
        state = block.get(EDIT_FIELD_INPUT) if isinstance(block, Mapping) else None
        if not isinstance(state, Mapping):
            continue
        try:
            empty, value = _read(field, state)
        except ValueError as problem:
            errors[field.block_id] = _clip(f"{input_label(field)}: {problem}")
            continue
        if empty:
            if field.value not in (None, ""):  # emptied: the operation's default applies
                request.pop(field.name, None)
        else:
            request[field.name] = value
    return request, errors


def problem_errors(form: EditForm, problems: Sequence[FieldProblem]) -> dict[str, str]:
    """The contract's ``problems`` as modal errors: each under the input of the field it names
    (``request.<field>...``, named by its input's label; a money value it quotes in minor units,
    "(got 45000)", is shown as money), the others under the first input. Empty when there is no
    input."""
    if not form.fields:
        return {}
    by_name = {field.name: field for field in form.fields}
    errors: dict[str, str] = {}
    for problem in problems:
        path = problem.field.removeprefix("request.")
        name = path.split(".", 1)[0]
        named = by_name.get(name)
        field = named or form.fields[0]
        shown = input_label(named) + path[len(name) :] if named is not None else path
        message = _money_quoted(named, problem.message) if named is not None else problem.message
        text = f"{shown}: {message}"
        earlier = errors.get(field.block_id)
        errors[field.block_id] = _clip(f"{earlier}; {text}" if earlier else text)
    return errors


def currency_errors(
    form: EditForm,
    request: Mapping[str, JsonValue],
    arguments: Mapping[str, JsonValue],
    formats: Formats,
) -> dict[str, str]:
    """An error under each money input typed in one currency when the edit, resolved into
    ``arguments``, is in another (its payment, say, was changed too): the amount would not
    mean what was typed."""
    errors = {}
    for field in form.fields:
        fmt = formats.get(field.name)
        if field.kind != "money" or fmt is None or request.get(field.name) is None:
            continue
        now = money_currency(fmt, {**request, **arguments})
        if now != field.currency:
            errors[field.block_id] = _clip(
                f"{input_label(field)}: the amount was typed in {field.currency}, but the edit "
                f"is in {now or 'an unknown currency'}; change one at a time (cancel, and edit "
                "again)"
            )
    return errors


_QUOTED_WHOLE = re.compile(r"\(got (-?[0-9]{1,30})\)$")
#: a bound as contracts/problems.py words it: "expected at most 100000, got 450000"
_BOUND = re.compile(
    r"expected (more than|at least|less than|at most) (-?[0-9]{1,30}), got (-?[0-9]{1,30})$"
)


def _money_quoted(field: EditField, message: str) -> str:
    """``message`` with the amounts it quotes (contracts/problems.py writes "expected at most
    100000, got 450000"; an operation's own check may end "(got 45000)") shown as money when
    ``field`` is a money input ("expected at most 1,000.00 USD, got 4,500.00 USD")."""
    if field.kind != "money" or field.currency is None:
        return message
    currency = field.currency
    bound = _BOUND.search(message)
    if bound is not None:
        words, limit, got = bound.groups()
        shown = f"{format_money(int(limit), currency)}, got {format_money(int(got), currency)}"
        return f"{message[: bound.start()]}expected {words} {shown}"
    found = _QUOTED_WHOLE.search(message)
    if found is None:
        return message
    amount = format_money(int(found.group(1)), currency)
    return f"{message[: found.start()]}(got {amount})"


# --- the schema -----------------------------------------------------------------------------------


def _deref(spec: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    """A local ``$ref`` (``#/$defs/X``, ``#/definitions/X``) replaced by what it names, once."""
    ref = spec.get("$ref")
    if not isinstance(ref, str):
        return spec
    for prefix in ("#/$defs/", "#/definitions/"):
        if ref.startswith(prefix):
            defs = root.get(prefix[2:-1])
            target = defs.get(ref[len(prefix) :]) if isinstance(defs, dict) else None
            if isinstance(target, dict):
                return {**target, **{k: v for k, v in spec.items() if k != "$ref"}}
    return spec


def _unwrap(spec: Mapping[str, Any], root: Mapping[str, Any]) -> tuple[Mapping[str, Any], bool]:
    """The schema of the field's value, and whether null is allowed too (``X | None``)."""
    spec = _deref(spec, root)
    for key in ("anyOf", "oneOf"):
        variants = spec.get(key)
        if isinstance(variants, list):
            real = [_deref(v, root) for v in variants if isinstance(v, dict) and not _null(v)]
            if len(real) == 1 and len(variants) == 2:
                rest = {k: v for k, v in spec.items() if k != key}
                return {**real[0], **rest}, True
    kinds = spec.get("type")
    if isinstance(kinds, list):
        others = [kind for kind in kinds if kind != "null"]
        if len(others) == 1:
            return {**spec, "type": others[0]}, len(others) < len(kinds)
    return spec, False


def _null(spec: Mapping[str, Any]) -> bool:
    return spec.get("type") == "null"


def _kind(spec: Mapping[str, Any]) -> FieldKind:
    enum = spec.get("enum")
    if isinstance(enum, list) and enum:
        if (
            len(enum) <= _OPTIONS_MAX
            and all(isinstance(item, str) and 0 < len(item) <= _OPTION_VALUE_MAX for item in enum)
            and len(set(enum)) == len(enum)
        ):
            return "choice"
        return "json"
    kind = spec.get("type")
    if "const" in spec or not isinstance(kind, str):
        return "json"
    return _SCALARS.get(kind, "json")


def _fits(kind: FieldKind, spec: Mapping[str, Any], value: JsonValue, nullable: bool) -> bool:
    """Whether the input of ``kind`` can show ``value`` as it is."""
    if value is None:
        return nullable
    if kind == "string":
        return isinstance(value, str)
    if kind == "choice":
        return isinstance(value, str) and value in spec["enum"]
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "boolean":
        return isinstance(value, bool)
    return True


# --- reading values back --------------------------------------------------------------------------


def _read(field: EditField, state: Mapping[str, Any]) -> tuple[bool, JsonValue]:
    """(empty, value) of one input; ValueError says what was expected."""
    if field.kind in ("choice", "boolean"):
        option = state.get("selected_option")
        if not option:
            return True, None
        chosen = option.get("value") if isinstance(option, Mapping) else None
        if field.kind == "boolean":
            if chosen not in ("true", "false"):
                raise ValueError(f"expected true or false, got {chosen!r}")
            return False, chosen == "true"
        if chosen not in field.choices:
            shown = ", ".join(field.choice_labels.get(choice, choice) for choice in field.choices)
            raise ValueError(f"expected one of {shown}, got {chosen!r}")
        return False, chosen
    text = state.get("value")
    if text is None or text == "":
        return True, None
    if not isinstance(text, str):
        raise ValueError(f"expected text, got {type(text).__name__}")
    if field.kind == "string":
        return False, text
    if field.kind == "money" and field.currency is not None:
        return False, parse_major_units(text, field.currency)
    if field.kind == "integer":
        if not _WHOLE.fullmatch(text.strip()):
            raise ValueError(f"expected a whole number, got {text!r}")
        return False, int(text.strip())
    if field.kind == "number":
        if not _DECIMAL.fullmatch(text.strip()):
            raise ValueError(f"expected a number, got {text!r}")
        number = float(text)
        if not math.isfinite(number):
            raise ValueError(f"expected a finite number, got {text!r}")
        return False, int(text) if _WHOLE.fullmatch(text.strip()) else number
    try:
        return False, finite_json(text)
    except json.JSONDecodeError as error:
        raise ValueError(
            f"expected JSON ({error.msg} at line {error.lineno} column {error.colno})"
        ) from None
    except ValueError as error:  # NaN, Infinity, a number past a float's range
        raise ValueError(f"expected JSON ({error})") from None


def _clip(text: str) -> str:
    return text if len(text) <= _ERROR_MAX else text[: _ERROR_MAX - 1] + "…"
