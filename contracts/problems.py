"""What was wrong with a value, in the words of the one who sent it: a field and what was expected
("expected at most 2000 characters, got 5000", "expected a Slack user id such as U012AB3CD, got
"U1""), one wording whether pydantic (the API's bodies, operations written in Python) or a JSON
Schema (declared operations, contracts/operations/declared.py) found it.

A value is quoted as compact JSON, clipped: what an agent sent is never echoed back whole, and
neither is a name it sent (a key of its own, in a field's path: :func:`field_path`). A bound
is written "expected at least 1, got 0", so that a reader who knows the field is money can show
both numbers as money (bot/render/edit_form.py).
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterable
from typing import Any, Final, get_args

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from countersign.wire.api import SLACK_USER_ID
from countersign.wire.base import FieldProblem

__all__ = [
    "BOUND_WORDS",
    "NAME_MAX",
    "bound_message",
    "clip",
    "field_path",
    "json_type",
    "length_message",
    "pattern_message",
    "problems_from_validation_error",
    "show",
    "types",
]

#: How each kind of bound is said, by its pydantic error type and by its JSON Schema keyword.
BOUND_WORDS: Final = {
    "greater_than": "more than",
    "greater_than_equal": "at least",
    "less_than": "less than",
    "less_than_equal": "at most",
    "exclusiveMinimum": "more than",
    "minimum": "at least",
    "exclusiveMaximum": "less than",
    "maximum": "at most",
}
_BOUND_CTX: Final = {
    "greater_than": "gt",
    "greater_than_equal": "ge",
    "less_than": "lt",
    "less_than_equal": "le",
}

#: The patterns of the API's own fields, as their sender knows them.
_PATTERNS: Final = {
    SLACK_USER_ID: "a Slack user id such as U012AB3CD",
    r"^https?://[^\s]+$": "an http:// or https:// URL without spaces",
    r"^[A-Z]{3}$": "a three-letter currency code such as USD",
}

#: pydantic's type errors: the JSON type that was expected.
_TYPES: Final = {
    "string_type": "string",
    "int_type": "integer",
    "int_parsing": "integer",
    "int_from_float": "integer",
    "float_type": "number",
    "float_parsing": "number",
    "finite_number": "a finite number",
    "bool_type": "boolean",
    "bool_parsing": "boolean",
    "dict_type": "object",
    "model_type": "object",
    "model_attributes_type": "object",
    "mapping_type": "object",
    "list_type": "array",
    "tuple_type": "array",
    "none_required": "null",
}


def clip(text: str, limit: int) -> str:
    """``text``, cut to ``limit`` characters with an ellipsis when longer."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


#: The longest name of a field that a problem's path quotes as it was sent.
NAME_MAX: Final = 60


def field_path(prefix: str, parts: Iterable[int | str]) -> str:
    """The dotted path of a field at fault ("request.recipients"): ``prefix``, then ``parts``,
    the keys and list positions leading to it as the sender wrote them. A key that is longer
    than :data:`NAME_MAX` or holds what is not printable (a line break, a bidirectional or
    zero-width character) is quoted as an escaped JSON string, clipped: a name an agent sent
    is never echoed back whole, nor what would hide or reorder the rest."""
    names = [_name(str(part)) for part in parts]
    return ".".join([prefix, *names] if prefix else names)


def _name(key: str) -> str:
    if 0 < len(key) <= NAME_MAX and key.isprintable():
        return key
    return clip(json.dumps(key), NAME_MAX)


def show(value: object, *, limit: int | None = 60) -> str:
    """``value`` as compact JSON for a message, clipped to ``limit`` characters, each character
    a reader would not see (a bidirectional override, a zero-width space) written as its code."""
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        text = repr(value)
    text = _hidden_escaped(text)
    return text if limit is None else clip(text, limit)


#: Characters a reader would not see, shown by their code: control, format (bidirectional,
#: zero-width), line and paragraph separators, surrogates, private use, unassigned.
_HIDDEN: Final = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def _hidden_escaped(text: str) -> str:
    """``text`` with every character a reader would not see written as its code (``\\u202e``):
    a value quoted back cannot reorder or hide the words around it where it is shown (a
    coding agent's hook, an operator's terminal)."""
    if text.isascii() and text.isprintable():
        return text
    return "".join(
        (f"\\u{ord(c):04x}" if ord(c) <= 0xFFFF else f"\\U{ord(c):08x}")
        if unicodedata.category(c) in _HIDDEN
        else c
        for c in text
    )


def types(expected: Any) -> str:
    """A JSON Schema ``type`` (a name or a list of them) as a reader says it."""
    return " or ".join(expected) if isinstance(expected, list) else str(expected)


def json_type(value: object) -> str:
    """The JSON type of ``value`` ("integer", "object", ...)."""
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


def bound_message(kind: str, bound: object, got: object) -> str:
    """``got`` past a bound: ``kind`` is a key of :data:`BOUND_WORDS`."""
    return f"expected {BOUND_WORDS[kind]} {show(bound)}, got {show(got)}"


def length_message(least: bool, bound: int, got: int, unit: str = "character") -> str:
    """A text (or list, ``unit`` "item") of ``got`` characters past its length bound."""
    if least and bound == 1 and got == 0 and unit == "character":
        return 'expected a non-empty string, got ""'
    units = unit if bound == 1 else unit + "s"
    return f"expected {'at least' if least else 'at most'} {bound} {units}, got {got}"


def pattern_message(pattern: str, got: object, example: str | None = None) -> str:
    """``got`` not of the form ``pattern`` asks for: said as the API's own fields are known, or
    by the field's ``example``, or else by the pattern itself."""
    wanted = _PATTERNS.get(pattern) or (
        f"a value like {example}" if example else f"a string matching {show(pattern, limit=None)}"
    )
    return f"expected {wanted}, got {show(got)}"


def problems_from_validation_error(
    prefix: str, error: ValidationError, model: type[BaseModel] | None = None
) -> list[FieldProblem]:
    """Each field ``error`` names, with what was wrong: a missing field, an unexpected one (with
    the fields ``model`` has there), or what was expected and what was given (clipped)."""
    problems = []
    for item in error.errors(include_url=False):
        problems.append(
            FieldProblem(field=field_path(prefix, item["loc"]), message=_message(item, model))
        )
    return problems


def _message(item: Any, model: type[BaseModel] | None) -> str:
    kind, given, ctx = item["type"], item.get("input"), item.get("ctx") or {}
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        allowed = _fields_at(model, item["loc"][:-1])
        return "unexpected field" + (f" (allowed: {', '.join(allowed)})" if allowed else "")
    if kind in _TYPES:
        return f"expected {_TYPES[kind]}, got {json_type(given)} {show(given)}"
    if kind in _BOUND_CTX and _BOUND_CTX[kind] in ctx:
        return bound_message(kind, ctx[_BOUND_CTX[kind]], given)
    if kind in ("string_too_short", "string_too_long") and isinstance(given, str):
        key = "min_length" if kind == "string_too_short" else "max_length"
        return length_message(kind == "string_too_short", ctx[key], len(given))
    if kind in ("too_short", "too_long") and isinstance(given, list | dict):
        key = "min_length" if kind == "too_short" else "max_length"
        return length_message(kind == "too_short", ctx[key], len(given), "item")
    if kind == "string_pattern_mismatch" and "pattern" in ctx:
        return pattern_message(str(ctx["pattern"]), given, _example_at(model, item["loc"]))
    if kind in ("literal_error", "enum") and "expected" in ctx:
        return f"expected one of {ctx['expected']}, got {show(given)}"
    if kind == "multiple_of" and "multiple_of" in ctx:
        return f"expected a multiple of {show(ctx['multiple_of'])}, got {show(given)}"
    if kind == "value_error" and "error" in ctx:
        return clip(str(ctx["error"]), 300)
    message = clip(str(item["msg"]), 300)
    return (
        f"{message}, got {show(given)}" if isinstance(given, str | int | float | bool) else message
    )


def _fields_at(model: type[BaseModel] | None, loc: tuple[int | str, ...]) -> list[str]:
    """The fields of the model found at ``loc`` inside ``model`` (none when it cannot be told)."""
    for part in loc:
        if isinstance(part, int):  # an item of a list: the list's model goes on
            continue
        field = _field(model, part)
        model = None if field is None else _model_of(field)
    return [] if model is None else sorted(model.model_fields)


def _example_at(model: type[BaseModel] | None, loc: tuple[int | str, ...]) -> str | None:
    """The first example the field at ``loc`` inside ``model`` declares, if any."""
    field = None
    for part in loc:
        if isinstance(part, int):  # an item of a list: the list's model goes on
            continue
        if field is not None:
            model = _model_of(field)
        field = _field(model, part)
        if field is None:
            return None
    examples = None if field is None else field.examples
    return str(examples[0]) if examples else None


def _field(model: type[BaseModel] | None, part: str) -> FieldInfo | None:
    return None if model is None else model.model_fields.get(part)


def _model_of(field: FieldInfo) -> type[BaseModel] | None:
    annotation = field.annotation
    return next(
        (
            t
            for t in (annotation, *get_args(annotation))
            if isinstance(t, type) and issubclass(t, BaseModel)
        ),
        None,
    )
