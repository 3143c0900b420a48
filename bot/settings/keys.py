"""Every key the configuration file accepts, as ``docs/configuration.md`` lists them, and the keys
allowed under each table (named in a problem about an unknown key).
"""

from __future__ import annotations

import types
from collections.abc import Iterator
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel

from bot.settings.limits import AgentLimitsSection
from bot.settings.model import AgentSection, FileModel

__all__ = ["keys_allowed_at", "setting_keys"]


def keys_allowed_at(parent: tuple[str, ...]) -> tuple[str, ...]:
    """The keys a table of the file may hold, for naming them when an unknown one appears."""
    if not parent:
        return tuple(FileModel.model_fields)
    if len(parent) == 1 and parent[0] in FileModel.model_fields:
        # a section that is a table of settings ([server], [approvals], ...)
        annotation = FileModel.model_fields[parent[0]].annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            return tuple(annotation.model_fields)
    if len(parent) == 2 and parent[0] == "agents":
        return tuple(AgentSection.model_fields)
    if len(parent) == 3 and parent[0] == "agents" and parent[2] == "limits":
        return tuple(AgentLimitsSection.model_fields)
    return ()


def setting_keys() -> list[str]:
    """Every key the file accepts, dotted as the configuration reference lists them.

    ``server.port``; a table of names of your choosing as ``<name>`` (``agents.<name>.acts_for``);
    an array of tables as ``[]`` (``escalation.routes[].channel``). ``operations.<name>`` and
    ``policy`` end here: their keys are checked by the operations and the policy table.
    """
    return sorted(_keys_under(FileModel, ""))


def _keys_under(model: type[BaseModel], prefix: str) -> Iterator[str]:
    for name, info in model.model_fields.items():
        yield from _keys_of(info.annotation, f"{prefix}{name}")


def _keys_of(annotation: Any, key: str) -> Iterator[str]:
    origin, args = get_origin(annotation), get_args(annotation)
    present = [arg for arg in args if arg is not type(None)]
    if origin in (Union, types.UnionType) and len(present) == 1:
        yield from _keys_of(present[0], key)
    elif _is_model(annotation):
        yield from _keys_under(annotation, f"{key}.")
    elif origin is dict and _is_model(args[1]):
        yield from _keys_under(args[1], f"{key}.<name>.")
    elif origin is dict:
        yield f"{key}.<name>"
    elif origin in (tuple, list) and _is_model(args[0]):
        yield from _keys_under(args[0], f"{key}[].")
    else:
        yield key


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)
