"""What an operation is: request -> frozen arguments + preview -> revalidate -> execute.

An operation contract defines, together, the small model-facing request, the defaults and derived
values it resolves, the frozen arguments execution uses, the preview a person sees (built by code
from the same facts), revalidation against current state, and the executor.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar, Generic, Literal, NewType, Protocol, TypeVar

from pydantic import BaseModel, JsonValue, ValidationError

from contracts.formats import Formats
from contracts.outcomes import (
    NeedsReconciliation,
    Outcome,
    RevisionRequired,
    Succeeded,
    TerminalFailure,
)
from contracts.problems import problems_from_validation_error

# the preview and the field at fault are on the wire too: one definition, the agent's side's
from countersign.wire.base import FieldProblem, Preview, PreviewField

__all__ = [
    "RISK_CLASSES",
    "ArgType",
    "Context",
    "ContractViolation",
    "EffectFailed",
    "EffectUncertain",
    "FieldProblem",
    "HttpClient",
    "HttpResponse",
    "HttpTransportError",
    "IdempotencyKey",
    "ModelOperation",
    "Operation",
    "Preview",
    "PreviewField",
    "Resolved",
    "RevisionNeeded",
    "Risk",
]

#: The types the policy table can put conditions on.
ArgType = Literal["integer", "number", "string", "boolean"]

#: What an operation can do, riskiest last: ``read`` may run unattended; ``reversible`` writes
#: may run automatically within limits; ``irreversible`` effects (money, messages to outsiders,
#: deletions) are asked for or denied, never run by a policy rule alone.
Risk = Literal["read", "reversible", "irreversible"]
RISK_CLASSES: tuple[Risk, ...] = ("read", "reversible", "irreversible")

#: Sent to the executor; identical on every attempt for the same proposal.
IdempotencyKey = NewType("IdempotencyKey", str)


ArgsT = TypeVar("ArgsT")
ReqT = TypeVar("ReqT")


@dataclass(frozen=True, slots=True)
class Resolved(Generic[ArgsT]):
    arguments: ArgsT
    preview: Preview


class ContractViolation(Exception):
    """The request does not satisfy the operation's contract."""

    def __init__(self, problems: list[FieldProblem] | tuple[FieldProblem, ...]) -> None:
        self.problems = tuple(problems)
        super().__init__("; ".join(f"{p.field}: {p.message}" for p in self.problems))


class RevisionNeeded(Exception):
    """Raised by an executor: current state no longer matches the preview; nothing happened."""


class EffectFailed(Exception):
    """Raised by an executor: the effect certainly did not happen and retrying will not help."""


class EffectUncertain(Exception):
    """Raised by an executor: the effect may or may not have happened."""


# --- what an operation may use from the outside world -------------------------------------------


@dataclass(frozen=True, slots=True)
class HttpResponse:
    status: int
    body: bytes
    headers: Mapping[str, str]


class HttpTransportError(Exception):
    """No HTTP response. ``maybe_received``: the request may have reached the server."""

    def __init__(self, detail: str, *, maybe_received: bool) -> None:
        super().__init__(detail)
        self.maybe_received = maybe_received


class HttpClient(Protocol):
    async def post(
        self, url: str, *, body: bytes, headers: Mapping[str, str], timeout: float
    ) -> HttpResponse: ...


@dataclass(frozen=True, slots=True)
class Context:
    """What resolution, revalidation and execution may look at: the clock and the network."""

    now: datetime
    http: HttpClient
    correlation_id: str


# --- the contract ---------------------------------------------------------------------------------


class Operation(ABC, Generic[ReqT, ArgsT]):
    """One kind of effect an agent may propose."""

    name: str
    description: str
    #: the operation's risk class; unknown effects count as irreversible
    risk: Risk = "irreversible"
    #: whether the agent carries out the approved arguments itself (a decision operation,
    #: contracts/operations/decision.py) rather than Countersign executing them
    agent_acts: bool = False

    @abstractmethod
    def parse_request(self, data: JsonValue) -> ReqT:
        """Validate the model-facing request; raise ContractViolation naming each bad field."""

    @abstractmethod
    def request_schema(self) -> dict[str, Any]:
        """JSON Schema of the model-facing request."""

    @abstractmethod
    def argument_types(self) -> Mapping[str, ArgType]:
        """The frozen arguments' scalar fields, which policy conditions may name."""

    def field_formats(self) -> Formats:
        """How each argument and result field is shown to a person (contracts/formats.py);
        a field left out is shown under its name as words, its value as is."""
        return {}

    @abstractmethod
    def dump_arguments(self, arguments: ArgsT) -> dict[str, JsonValue]:
        """The frozen arguments as JSON, for storage and hashing."""

    @abstractmethod
    def load_arguments(self, data: Mapping[str, JsonValue]) -> ArgsT:
        """The inverse of dump_arguments."""

    @abstractmethod
    async def resolve(self, request: ReqT, ctx: Context) -> Resolved[ArgsT]:
        """Resolve defaults and derived values; build the preview from the same facts."""

    async def revalidate(self, arguments: ArgsT, ctx: Context) -> RevisionRequired | None:
        """Check current state just before execution; a RevisionRequired stops it."""
        return None

    @property
    def revalidates(self) -> bool:
        """Whether :meth:`revalidate` checks anything (an operation that overrides it does), so
        that the current state can be shown to a person before they decide."""
        return type(self).revalidate is not Operation.revalidate

    @abstractmethod
    async def execute(self, arguments: ArgsT, ctx: Context, key: IdempotencyKey) -> Outcome:
        """Carry out the effect exactly as frozen, passing ``key`` on to whatever performs it."""


_JSON_TYPES: dict[str, ArgType] = {
    "integer": "integer",
    "number": "number",
    "string": "string",
    "boolean": "boolean",
}


RequestModelT = TypeVar("RequestModelT", bound=BaseModel)
ArgumentsModelT = TypeVar("ArgumentsModelT", bound=BaseModel)
ResultModelT = TypeVar("ResultModelT", bound=BaseModel)


class ModelOperation(
    Operation[RequestModelT, ArgumentsModelT], Generic[RequestModelT, ArgumentsModelT, ResultModelT]
):
    """An operation written in Python with pydantic models for request, arguments and result.

    Subclasses implement ``resolve``, optionally ``revalidate``, and ``perform``, which returns the
    typed result or raises RevisionNeeded / EffectFailed / EffectUncertain.
    """

    request_model: ClassVar[type[BaseModel]]
    arguments_model: ClassVar[type[BaseModel]]
    result_model: ClassVar[type[BaseModel]]

    def parse_request(self, data: JsonValue) -> RequestModelT:
        try:
            # JSON mode: strict about types, but a JSON string may still become a date, an enum...
            parsed = self.request_model.model_validate_json(json.dumps(data), strict=True)
        except ValidationError as error:
            raise ContractViolation(
                problems_from_validation_error("request", error, self.request_model)
            ) from None
        return parsed  # type: ignore[return-value]

    def request_schema(self) -> dict[str, Any]:
        return self.request_model.model_json_schema()

    def argument_types(self) -> Mapping[str, ArgType]:
        properties = self.arguments_model.model_json_schema().get("properties", {})
        return {
            name: _JSON_TYPES[spec["type"]]
            for name, spec in properties.items()
            if spec.get("type") in _JSON_TYPES
        }

    def dump_arguments(self, arguments: ArgumentsModelT) -> dict[str, JsonValue]:
        return arguments.model_dump(mode="json")

    def load_arguments(self, data: Mapping[str, JsonValue]) -> ArgumentsModelT:
        return self.arguments_model.model_validate_json(json.dumps(data))  # type: ignore[return-value]

    @abstractmethod
    async def perform(
        self, arguments: ArgumentsModelT, ctx: Context, key: IdempotencyKey
    ) -> ResultModelT: ...

    async def execute(
        self, arguments: ArgumentsModelT, ctx: Context, key: IdempotencyKey
    ) -> Outcome:
        try:
            result = await self.perform(arguments, ctx, key)
        except RevisionNeeded as error:
            return RevisionRequired(reason=str(error))
        except EffectFailed as error:
            return TerminalFailure(detail=str(error), correlation_id=ctx.correlation_id)
        except Exception as error:
            return NeedsReconciliation(
                detail=f"{type(error).__name__}: {error}", correlation_id=ctx.correlation_id
            )
        return Succeeded(result=result.model_dump(mode="json"))
