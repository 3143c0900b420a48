"""The values every wire document is built of: immutable, strict, no unknown fields."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["FieldProblem", "Frozen", "Preview", "PreviewField"]


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


class PreviewField(Frozen):
    label: str
    value: str


class Preview(Frozen):
    """What a person sees before deciding, built by code from the frozen arguments."""

    title: str
    fields: tuple[PreviewField, ...] = ()


class FieldProblem(Frozen):
    """One thing wrong with one field: ``field`` is a dotted path such as ``request.amount``."""

    field: str
    message: str
