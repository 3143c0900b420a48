"""Decision operations: the agent asks permission for something it will carry out itself.

A decision operation goes the whole contract path of any operation (request schema, preview built
by code, policy, risk class, quorum, expiry, separation of duties, audit), but Countersign executes
nothing: once approved, the stored outcome is ``succeeded`` with a
:class:`~contracts.outcomes.Decided` result holding the approved arguments, and the agent reads it
and acts. A rejection, an expiry or a denial reaches the agent as the proposal's status, as for
any operation.

Two forms, both declared in configuration with ``kind = "decision"``:

- the generic question: no ``request_schema``; the request is ``title`` and ``detail`` (what the
  client's ``approve(title, detail)`` sends);
- a decision with its own request schema and preview, such as a coding agent's tool call
  (``tool_name`` and ``input``), so that policy conditions can name its fields.

Server-side execution is the safer of the two: there the approved arguments are exactly what runs.
With a decision, Countersign records what was approved and the agent is trusted to do that and
nothing else.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, ClassVar, Final

from pydantic import Field, JsonValue

from contracts.base import Context, IdempotencyKey
from contracts.operations.declared import (
    DeclaredArguments,
    DeclaredOperation,
    DeclaredSpec,
    FieldTemplate,
    PreviewTemplate,
    spec_from_config,
)
from contracts.outcomes import Decided, Outcome, Succeeded

__all__ = ["GENERIC_PREVIEW", "GENERIC_SCHEMA", "DecisionOperation", "DecisionSpec", "from_config"]

#: The generic question's request: what is to be done, and the facts a person needs to decide.
GENERIC_SCHEMA: Final[dict[str, JsonValue]] = {
    "type": "object",
    "required": ["title", "detail"],
    "properties": {
        "title": {"type": "string", "minLength": 1, "maxLength": 200},
        "detail": {"type": "string", "minLength": 1, "maxLength": 3000},
    },
}
#: The generic question's preview: the agent's words, labelled as its question and its words.
GENERIC_PREVIEW: Final = PreviewTemplate(
    title="The agent asks: {title}",
    fields=(FieldTemplate(label="Detail (the agent's words)", value="{detail}"),),
)
_GENERIC_DESCRIPTION: Final = "A decision the agent asks for and carries out itself"


class DecisionSpec(DeclaredSpec):
    """A decision operation as configured; without a request schema, the generic question."""

    noun: ClassVar[str] = "decision"

    description: str = Field(default=_GENERIC_DESCRIPTION, min_length=1)
    request_schema: dict[str, JsonValue] = Field(default_factory=lambda: dict(GENERIC_SCHEMA))
    preview: PreviewTemplate = GENERIC_PREVIEW

    def spec_problems(self) -> Iterator[str]:
        given = self.model_fields_set
        if "request_schema" in given and "preview" not in given:
            yield (
                "preview: required with a request_schema of its own (the preview is built from "
                'its fields, e.g. preview = { title = "Run {tool_name}" }); leave both out for '
                "the generic question (title, detail)"
            )
            return
        yield from super().spec_problems()


class DecisionOperation(DeclaredOperation):
    """An operation whose approval is the outcome: nothing is executed server-side."""

    agent_acts = True

    def __init__(self, spec: DecisionSpec) -> None:
        super().__init__(spec)
        self.spec = spec

    async def execute(
        self, arguments: DeclaredArguments, ctx: Context, key: IdempotencyKey
    ) -> Outcome:
        decided = Decided(arguments=self.dump_arguments(arguments))
        return Succeeded(result=decided.model_dump(mode="json"))


def from_config(data: Mapping[str, Any]) -> DecisionOperation:
    """A decision operation from configuration (one TOML table); ValueError names what is wrong."""
    return DecisionOperation(spec_from_config(DecisionSpec, data))
