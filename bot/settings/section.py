"""What every table of the configuration file is built on: immutable, no unknown keys, and strict
about TOML's types.

TOML has real booleans, integers and floats, so a value is taken only in its own type: ``"yes"``
or ``"off"`` is never a boolean, ``"25"`` never a whole number, ``"0.3"`` never a number. A whole
number may stand for a number (``digest_window_seconds = 1``). Values whose documented form is
text that means something else (durations such as ``"30m"``, percentages such as ``"80%"``) are
read by their fields' own validators, before the type is checked.

TOML's arrays are read as tuples (:data:`Array`), the one conversion kept.
"""

from __future__ import annotations

from typing import Annotated, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict

__all__ = ["Array", "Section"]

T = TypeVar("T")


class Section(BaseModel):
    """A table of the file."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


def _tuple_of_array(value: object) -> object:
    return tuple(value) if isinstance(value, list) else value


#: An array of the file, kept as a tuple (anything else is refused as "expected a list")
Array = Annotated[tuple[T, ...], BeforeValidator(_tuple_of_array)]
