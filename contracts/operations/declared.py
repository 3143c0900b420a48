"""Operations declared in configuration: a JSON Schema request, defaults, preview templates.

Both kinds of operation a deployment can declare without Python share this part: webhook
operations (contracts/operations/webhook.py), whose effect is a signed POST to a target, and
decision operations (contracts/operations/decision.py), whose effect the agent carries out itself.
Countersign checks the model's request against the schema, fills in the configured defaults to get
the frozen arguments, and renders the preview from those arguments. Every problem in the
configuration is found at load and named by operation and field.
"""

from __future__ import annotations

import copy
import json
import re
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from functools import lru_cache
from string import Formatter
from types import MappingProxyType
from typing import Any, ClassVar, Final, TypeVar

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from jsonschema.exceptions import ValidationError as SchemaValidationError
from pydantic import Field, JsonValue, ValidationError, model_validator

from contracts.base import (
    ArgType,
    Context,
    ContractViolation,
    FieldProblem,
    Operation,
    Preview,
    PreviewField,
    Resolved,
    Risk,
)
from contracts.formats import FieldFormat, Formats, show_value
from contracts.frozen import Frozen
from contracts.problems import (
    bound_message,
    clip,
    field_path,
    json_type,
    length_message,
    pattern_message,
    show,
    types,
)

__all__ = [
    "DeclaredArguments",
    "DeclaredOperation",
    "DeclaredSpec",
    "FieldTemplate",
    "PreviewTemplate",
    "SpecProblems",
    "spec_from_config",
]

#: The validated request and the frozen arguments: read-only mappings of JSON values.
DeclaredArguments = Mapping[str, JsonValue]

#: how many accepted requests (and arguments) an operation remembers, and up to what size
_PASSED_KEPT: Final = 2048
_PASSED_TEXT_MAX: Final = 4096
_SORTED_JSON: Final = json.JSONEncoder(sort_keys=True, ensure_ascii=False, allow_nan=False).encode

_SCALAR_TYPES: Final[Mapping[str, ArgType]] = {
    "integer": "integer",
    "number": "number",
    "string": "string",
    "boolean": "boolean",
}
_FIELD_NAME: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class SpecProblems(ValueError):
    """What is wrong with a declared operation's configuration, field by field."""

    def __init__(self, label: str, problems: tuple[str, ...]) -> None:
        super().__init__(f"{label}: " + "; ".join(problems))
        self.problems = problems


class FieldTemplate(Frozen):
    label: str = Field(min_length=1)
    value: str  #: a template: text with ``{field}`` placeholders


class PreviewTemplate(Frozen):
    title: str = Field(min_length=1)  #: e.g. "Email {count} customers in segment {segment}"
    fields: tuple[FieldTemplate, ...] = ()


class DeclaredSpec(Frozen):
    """An operation as configured: its request schema, defaults, preview and risk class."""

    #: how errors name the operation: "<noun> operation 'crm.send_campaign'"
    noun: ClassVar[str] = "declared"

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$")
    description: str = Field(min_length=1)
    request_schema: dict[str, JsonValue]  #: JSON Schema (draft 2020-12) of the request
    #: values for optional fields the request leaves out (the "resolved defaults")
    defaults: dict[str, JsonValue] = Field(default_factory=dict)
    preview: PreviewTemplate
    #: what the effect is: "read", "reversible" or "irreversible" (unknown effects count as
    #: irreversible); bounds what the policy may run without asking (contracts/risk.py)
    risk: Risk = "irreversible"
    #: how each request field is shown to a person (contracts/formats.py), by field name
    fields: dict[str, FieldFormat] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _consistent(self) -> DeclaredSpec:
        problems = tuple(self.spec_problems())
        if problems:
            raise SpecProblems(f"{self.noun} operation {self.name!r}", problems)
        return self

    def spec_problems(self) -> Iterator[str]:
        """Everything inconsistent in this configuration, each naming its field."""
        try:
            Draft202012Validator.check_schema(self.request_schema)
        except SchemaError as error:
            yield f"request_schema{error.json_path[1:]}: {error.message}"
            return
        schema = self.request_schema
        if schema.get("type") != "object":
            yield f'request_schema.type: expected "object", got {show(schema.get("type"))}'
        if not isinstance(schema.get("properties"), dict):
            yield "request_schema.properties: expected an object giving each request field's schema"
            return
        properties, required = self.properties(), self.required()
        known = ", ".join(sorted(properties)) or "none"
        for name in properties:
            if not _FIELD_NAME.match(name):
                yield (
                    f"request_schema.properties: field name {name!r} must be letters, digits and "
                    "underscores, not starting with a digit"
                )
        for name in sorted(required - set(properties)):
            yield f"request_schema.required: {name!r} is not a property (properties: {known})"
        yield from self._default_problems(properties, required, known)
        templates = [("preview.title", self.preview.title)] + [
            (f"preview.fields[{i}].value", field.value)
            for i, field in enumerate(self.preview.fields)
        ]
        always_present = required | set(self.defaults)
        for where, template in templates:
            yield from _template_problems(where, template, properties, always_present, known)
        for name, shown in self.fields.items():
            if name not in properties:
                yield f"fields.{name}: not a property of request_schema (properties: {known})"
            elif shown.currency_field is not None and shown.currency_field not in properties:
                yield (
                    f"fields.{name}.currency_field: {shown.currency_field!r} is not a property "
                    f"of request_schema (properties: {known})"
                )

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

    def _default_problems(
        self, properties: Mapping[str, Any], required: frozenset[str], known: str
    ) -> Iterator[str]:
        check_one = Draft202012Validator({**self.effective_schema(), "required": []})
        for name, value in self.defaults.items():
            if name not in properties:
                yield f"defaults.{name}: not a property of request_schema (properties: {known})"
            elif name in required:
                yield f"defaults.{name}: the field is required, so a default would never apply"
            else:
                for error in check_one.iter_errors({name: value}):
                    yield f"defaults.{name}: {show(value)} does not fit the schema: {error.message}"


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


SpecT = TypeVar("SpecT", bound=DeclaredSpec)


def spec_from_config(model: type[SpecT], data: Mapping[str, Any]) -> SpecT:
    """``model`` read from configuration (one TOML table); ValueError names what is wrong."""
    name = data.get("name")
    label = f"{model.noun} operation"
    if isinstance(name, str):
        label = f"{label} {name!r}"
    try:
        text = json.dumps(dict(data), allow_nan=False)
    except (TypeError, ValueError) as error:
        raise ValueError(
            f"{label}: expected plain strings, numbers, tables and arrays: {error}"
        ) from None
    try:
        return model.model_validate_json(text)
    except ValidationError as error:
        raise ValueError(_describe_spec_errors(model, label, error)) from None


def _describe_spec_errors(model: type[DeclaredSpec], label: str, error: ValidationError) -> str:
    messages: list[str] = []
    for item in error.errors(include_url=False):
        cause = item.get("ctx", {}).get("error")
        if isinstance(cause, SpecProblems):
            messages.extend(cause.problems)
            continue
        where = ".".join(str(part) for part in item["loc"]) or "(table)"
        message = item["msg"]
        if item["type"] == "extra_forbidden":
            message = f"unknown field (expected: {', '.join(model.model_fields)})"
        elif item["loc"] == ("risk",):
            message = (
                "expected 'read', 'reversible' or 'irreversible' (what the effect is; "
                f"default 'irreversible'), got {show(item.get('input'))}"
            )
        elif item["type"] != "missing":
            message += f" (got {show(item.get('input'))})"
        messages.append(f"{where}: {message}")
    return f"{label}: " + "; ".join(messages)


class DeclaredOperation(Operation[DeclaredArguments, DeclaredArguments]):
    """An operation whose request, arguments and preview come from a :class:`DeclaredSpec`;
    subclasses say what execution does."""

    def __init__(self, spec: DeclaredSpec) -> None:
        self.name = spec.name
        self.description = spec.description
        self.risk = spec.risk
        self._declared = spec
        self._schema = spec.effective_schema()
        self._validator = Draft202012Validator(
            self._schema, format_checker=Draft202012Validator.FORMAT_CHECKER
        )
        self._formats = MappingProxyType(self._field_formats())
        #: the JSON text of requests and arguments the schema accepted lately: a value checked
        #: again (its arguments when it is executed) is known to pass without a second walk
        self._passed: OrderedDict[str, None] = OrderedDict()

    # --- the request and the arguments ---------------------------------------------------------

    def field_formats(self) -> Formats:
        """The configured ``fields``; a money field whose currency field the schema limits to
        an ``enum`` (or a ``const``) knows the currencies it can be in."""
        return self._formats

    def _field_formats(self) -> dict[str, FieldFormat]:
        properties = self._declared.properties()
        formats = {}
        for name, shown in self._declared.fields.items():
            held = properties.get(shown.currency_field or "", {})
            listed = held.get("enum", [held["const"]] if "const" in held else [])
            if shown.currency_field and not shown.currencies and listed:
                codes = tuple(code for code in listed if isinstance(code, str))
                shown = shown.model_copy(update={"currencies": codes})
            formats[name] = shown
        return formats

    def parse_request(self, data: JsonValue) -> DeclaredArguments:
        return MappingProxyType(_json_copy(self._checked("request", data)))

    def request_schema(self) -> dict[str, Any]:
        return copy.deepcopy(self._schema)

    def argument_types(self) -> Mapping[str, ArgType]:
        return {
            name: _SCALAR_TYPES[spec["type"]]
            for name, spec in self._declared.properties().items()
            if isinstance(spec, dict) and spec.get("type") in _SCALAR_TYPES
        }

    def dump_arguments(self, arguments: DeclaredArguments) -> dict[str, JsonValue]:
        copied: dict[str, JsonValue] = _json_copy(dict(arguments))
        return copied

    def load_arguments(self, data: Mapping[str, JsonValue]) -> DeclaredArguments:
        return MappingProxyType(_json_copy(self._checked("arguments", dict(data))))

    def _checked(self, prefix: str, data: JsonValue) -> dict[str, JsonValue]:
        """``data`` if it satisfies the schema; otherwise every problem, sorted by field."""
        if not isinstance(data, dict):
            fields = ", ".join(sorted(self._declared.properties())) or "none"
            raise ContractViolation(
                [
                    FieldProblem(
                        field=prefix,
                        message=f"expected a JSON object (fields: {fields}), got {json_type(data)}",
                    )
                ]
            )
        text = _json_text(data)
        if text is not None and text in self._passed:
            self._passed.move_to_end(text)
            return data
        found: dict[tuple[str, str], FieldProblem] = {}
        for error in self._validator.iter_errors(data):
            for problem in _problems(prefix, error):
                found.setdefault((problem.field, problem.message), problem)
        if found:
            raise ContractViolation([found[key] for key in sorted(found)])
        if text is not None:
            self._passed[text] = None
            if len(self._passed) > _PASSED_KEPT:
                self._passed.popitem(last=False)
        return data

    # --- resolve and preview -----------------------------------------------------------------

    async def resolve(
        self, request: DeclaredArguments, ctx: Context
    ) -> Resolved[DeclaredArguments]:
        arguments = _json_copy(dict(request))
        for name, value in self._declared.defaults.items():
            arguments.setdefault(name, _json_copy(value))
        frozen = MappingProxyType(arguments)
        return Resolved(arguments=frozen, preview=self.preview(frozen))

    def preview(self, arguments: DeclaredArguments) -> Preview:
        """The preview the templates give for ``arguments``, each value in its declared terms
        (``fields``): money in major units with its currency, counts with thousands separators,
        dates and durations as people read them."""
        template = self._declared.preview
        formats = self.field_formats()
        return Preview(
            title=_render(template.title, arguments, formats),
            fields=tuple(
                PreviewField(label=field.label, value=_render(field.value, arguments, formats))
                for field in template.fields
            ),
        )


# --- small helpers -----------------------------------------------------------------------------


def _problems(prefix: str, error: SchemaValidationError) -> Iterator[FieldProblem]:
    at = list(error.absolute_path)
    path = field_path(prefix, at)
    instance, schema, keyword = error.instance, error.schema, error.validator
    if keyword == "required" and isinstance(instance, dict):
        properties = schema.get("properties", {})
        for name in error.validator_value:
            if name not in instance:
                expected = properties.get(name, {}).get("type")
                hint = f"; expected {types(expected)}" if expected else ""
                yield FieldProblem(
                    field=field_path(prefix, [*at, name]),
                    message=f"required field is missing{hint}",
                )
    elif keyword == "additionalProperties" and isinstance(instance, dict):
        allowed = schema.get("properties", {})
        patterns = list(schema.get("patternProperties", {}))
        listed = ", ".join(sorted(allowed)) or "none"
        for name in instance:
            if name not in allowed and not any(re.search(p, name) for p in patterns):
                yield FieldProblem(
                    field=field_path(prefix, [*at, name]),
                    message=f"unexpected field (allowed: {listed})",
                )
    else:
        yield FieldProblem(field=path, message=_message(error))


def _message(error: SchemaValidationError) -> str:
    keyword, expected, got = error.validator, error.validator_value, error.instance
    if keyword == "type":
        return f"expected {types(expected)}, got {json_type(got)} {show(got)}"
    if keyword == "enum":
        return f"expected one of {', '.join(show(v) for v in expected)}, got {show(got)}"
    if keyword == "const":
        return f"expected {show(expected)}, got {show(got)}"
    if keyword == "pattern":
        examples = error.schema.get("examples") if isinstance(error.schema, dict) else None
        example = str(examples[0]) if isinstance(examples, list) and examples else None
        return pattern_message(str(expected), got, example)
    if keyword == "format":
        return f"expected a valid {expected}, got {show(got)}"
    if keyword in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        return bound_message(keyword, expected, got)
    if keyword == "multipleOf":
        return f"expected a multiple of {show(expected)}, got {show(got)}"
    if keyword in ("minLength", "maxLength") and isinstance(got, str):
        return length_message(keyword == "minLength", int(expected), len(got))
    if keyword in ("minItems", "maxItems") and isinstance(got, list):
        return length_message(keyword == "minItems", int(expected), len(got), "item")
    return clip(str(error.message), 300)


def _render(template: str, arguments: DeclaredArguments, formats: Formats) -> str:
    """``template`` with each ``{field}`` replaced by its value as a person reads it: through
    the field's declared format, or as is. A count's unit is left out where the template
    already says it ("Email {recipients} customers")."""
    out = []
    parts = _parsed(template)
    for n, (literal, field, _, _) in enumerate(parts):
        out.append(literal)
        if field is None:
            continue
        value = arguments[field]
        fmt = formats.get(field)
        if fmt is not None and fmt.kind == "count" and fmt.unit is not None:
            after = parts[n + 1][0] if n + 1 < len(parts) else ""
            if re.match(rf"\s+{re.escape(fmt.unit)}\b", after):
                fmt = fmt.model_copy(update={"unit": None})
        if fmt is not None:
            out.append(show_value(fmt, value, arguments))
        else:
            # as compact JSON, as written: the preview is made inert where it is shown
            shown = json.dumps(value, ensure_ascii=False, sort_keys=True)
            out.append(value if isinstance(value, str) else shown)
    return "".join(out)


@lru_cache(maxsize=256)
def _parsed(template: str) -> tuple[tuple[str, str | None, str | None, str | None], ...]:
    """``template`` split into its literal text and ``{field}`` parts, parsed once."""
    return tuple(Formatter().parse(template))


def _json_copy(value: Any) -> Any:
    """A deep copy of a JSON value (what copy.deepcopy gives, without its bookkeeping: objects
    and arrays are new, the scalars they hold are immutable); anything else by copy.deepcopy."""
    if type(value) is dict:
        return {key: _json_copy(item) for key, item in value.items()}
    if type(value) is list:
        return [_json_copy(item) for item in value]
    if value is None or type(value) in (str, int, float, bool):
        return value
    return copy.deepcopy(value)


def _json_text(data: dict[str, JsonValue]) -> str | None:
    """``data`` as JSON text that tells apart every value the schema could judge differently
    (keys sorted; ``true`` is not ``1``, nor ``1.0`` ``1``), or None when it is too long to be
    worth remembering."""
    try:
        text = _SORTED_JSON(data)
    except (TypeError, ValueError):
        return None
    return text if len(text) <= _PASSED_TEXT_MAX else None
