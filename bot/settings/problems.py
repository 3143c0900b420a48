"""Each configuration problem with the line of the file it is about.

Problems are written ``key.path: what is wrong`` (``server.port: ...``,
``operations.crm.send_campaign.secret_env: ...``, ``escalation.routes[1].channel: ...``) or, for
the policy, ``policy rule 'refunds': field 'batch.window' ...`` / ``policy rule #2: ...``. The key
path is read back against the parsed document (an operation's name may hold dots), and its line
found with :func:`bot.settings.lines.key_lines`. A problem whose key is not written in the file (a
missing key) is placed at the nearest table around it that is; one that cannot be placed keeps no
line rather than a wrong one.
"""

from __future__ import annotations

import ast
import re
import tomllib
from collections.abc import Mapping, Sequence
from copy import deepcopy
from pathlib import Path
from typing import Any

from bot.settings.keys import keys_allowed_at
from bot.settings.lines import KeyLines, KeyPath
from contracts.toml_text import as_toml

__all__ = [
    "line_of_problem",
    "problem_key_path",
    "skippable_path",
    "syntax_problem",
    "validation_problem",
    "without_paths",
]

_POLICY = re.compile(r"policy rule (#\d+|'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")")
_FIELD = re.compile(r"field '([^']+)'")
_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def line_of_problem(problem: str, raw: Mapping[str, Any], lines: KeyLines) -> int | None:
    """The line ``problem`` (without the file's name) is about, or None."""
    path = problem_key_path(problem, raw)
    while path:
        line = lines.line_of(path)
        if line is not None:
            return line
        path = path[:-1]
    return None


def problem_key_path(problem: str, raw: Mapping[str, Any]) -> KeyPath:
    """The key path ``problem`` names, as far as it is found in ``raw``; () for none."""
    policy = _POLICY.match(problem)
    if policy is not None:
        return _policy_path(policy.group(1), problem[policy.end() :], raw)
    written = problem.split(": ", 1)[0]
    if " " in written:
        return ()
    return _resolved(_parts(written), raw)


def _policy_path(rule: str, rest: str, raw: Mapping[str, Any]) -> KeyPath:
    rules = raw.get("policy")
    if not isinstance(rules, list):
        return ()
    if rule.startswith("#"):
        index = int(rule[1:]) - 1
    else:
        wanted = ast.literal_eval(rule)
        ids = [r.get("id") if isinstance(r, Mapping) else None for r in rules]
        if wanted not in ids:
            return ()
        index = ids.index(wanted)
    if not 0 <= index < len(rules):
        return ()
    path: KeyPath = ("policy", index)
    field = _FIELD.match(rest.removeprefix(": "))
    if field is None:
        return path
    rule = rules[index]
    if isinstance(rule, Mapping) and field.group(1) not in rule:
        # a condition's argument (when = [{ field = "amount", ... }]): the condition naming it
        when = rule.get("when")
        for position, condition in enumerate(when if isinstance(when, list) else []):
            if isinstance(condition, Mapping) and condition.get("field") == field.group(1):
                return (*path, "when", position, "field")
    return (*path, *_resolved(_parts(field.group(1)), rule))


def _parts(written: str) -> list[str | int]:
    parts: list[str | int] = []
    for name, index in _PART.findall(written):
        parts.append(int(index) if index else name)
    return parts


def _resolved(parts: Sequence[str | int], node: Any) -> KeyPath:
    """``parts`` read as keys of ``node``, joining names with dots where a key holds them."""
    path: list[str | int] = []
    at = 0
    while at < len(parts):
        part = parts[at]
        if isinstance(part, int):
            if not isinstance(node, list) or part >= len(node):
                break
            node = node[part]
            path.append(part)
            at += 1
            continue
        if not isinstance(node, Mapping):
            break
        for end in range(len(parts), at, -1):
            names = parts[at:end]
            if all(isinstance(name, str) for name in names):
                key = ".".join(str(name) for name in names)
                if key in node:
                    node = node[key]
                    path.append(key)
                    at = end
                    break
        else:
            path.append(part)  # not in the file (a missing key): the nearest table is placed
            break
    return tuple(path)


#: tables whose entries are named elsewhere (a rule's approvers, agents and operation)
_NAMED = frozenset({"roles", "agents", "operations"})


def skippable_path(item: Any) -> tuple[int | str, ...] | None:
    """Where a key the file may be checked without is (pydantic's error ``item``), or None."""
    loc: tuple[int | str, ...] = tuple(item["loc"])
    if item["type"] == "extra_forbidden":
        return loc
    if item["type"] == "missing":
        return None
    cut = next((at for at, part in enumerate(loc) if isinstance(part, int)), len(loc))
    loc = loc[:cut]  # a bad element of a list: the list is left out
    if len(loc) < 2 or (loc[0] in _NAMED and len(loc) < 3):
        return None
    if loc[0] == "agents" and loc[2] != "limits":  # its owners and acts_for are read together
        return None
    return loc


def without_paths(raw: dict[str, Any], paths: list[tuple[int | str, ...]]) -> dict[str, Any]:
    """A copy of ``raw`` without the keys at ``paths`` (pydantic's error locations)."""
    copy = deepcopy(raw)
    for path in paths:
        table: Any = copy
        for part in path[:-1]:
            if isinstance(table, dict):
                table = table.get(part)
            elif isinstance(table, list) and isinstance(part, int) and part < len(table):
                table = table[part]
            else:
                table = None
        if isinstance(table, dict):
            table.pop(path[-1], None)
    return copy


def syntax_problem(error: tomllib.TOMLDecodeError, path: Path) -> str:
    """``file:line: not valid TOML: ...``, with the line and column where tomllib says only
    "at end of document"."""
    message = str(error)
    try:
        lines = path.read_text(encoding="utf-8").rstrip("\n").split("\n")
    except (OSError, UnicodeDecodeError):
        return f"{path}: not valid TOML: {message}"
    line = len(lines)
    if "(at end of document)" in message:
        where = f"(at line {line}, column {len(lines[-1]) + 1}, the end of the document)"
        message = message.replace("(at end of document)", where)
    else:
        given = re.search(r"\(at line (\d+), column \d+\)", message)
        if given is None:
            return f"{path}: not valid TOML: {message}"
        line = int(given.group(1))
    return f"{path}:{line}: not valid TOML: {message}"


def validation_problem(path: Path, item: Any) -> str:
    """``file: section.key: what was expected, got what was written`` for one of pydantic's
    error ``item``s, in the file's terms (a whole number, true or false, a table), not
    pydantic's ("Input should be a valid integer")."""
    loc = tuple(str(part) for part in item["loc"])
    location = _written_path(item["loc"])
    if item["type"] == "extra_forbidden":
        allowed = keys_allowed_at(loc[:-1])
        expected = f" (expected one of: {', '.join(allowed)})" if allowed else ""
        return f"{path}: {location}: unknown key{expected}"
    if item["type"] == "missing":
        return f"{path}: {location}: required key is missing"
    return f"{path}: {location}: {_expected(item)}"


def _written_path(loc: Sequence[int | str]) -> str:
    """A key path as the file's reference writes it: ``escalation.routes[0].channel``."""
    written = ""
    for part in loc:
        written += f"[{part}]" if isinstance(part, int) else f".{part}" if written else part
    return written


#: what a value of pydantic's error type was expected to be, in a TOML file's terms
_EXPECTED = {
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
    "finite_number": "a finite number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "string_type": "text in quotes",
    "list_type": "a list",
    "tuple_type": "a list",
    "dict_type": "a table",
    "model_type": "a table",
    "model_attributes_type": "a table",
}

#: a bound of pydantic's error type: its context key and how it reads
_BOUNDS = {
    "greater_than": ("gt", "a number greater than {}"),
    "greater_than_equal": ("ge", "a number of at least {}"),
    "less_than": ("lt", "a number less than {}"),
    "less_than_equal": ("le", "a number of at most {}"),
    "string_too_short": ("min_length", "text of at least {} characters"),
    "string_too_long": ("max_length", "text of at most {} characters"),
    "too_short": ("min_length", "a list of at least {} entries"),
    "too_long": ("max_length", "a list of at most {} entries"),
}


def _expected(item: Any) -> str:
    """``expected ..., got ...`` for a value pydantic refused."""
    kind = item["type"]
    context = item.get("ctx") or {}
    given = as_toml(item.get("input"))
    if kind in ("value_error", "assertion_error") and "error" in context:
        # our own validators' words, which say what was expected already
        said = str(context["error"])
        if "got " in said or isinstance(item.get("input"), dict):
            return said  # a table's own check names the values it compared
        return f"{said} (got {given})"
    if kind == "string_too_short" and context.get("min_length") == 1:
        expected = "text that is not empty"
    elif kind in _BOUNDS and _BOUNDS[kind][0] in context:
        key, words = _BOUNDS[kind]
        bound = context[key]  # a number field's bound reads 0, not 0.0
        expected = words.format(int(bound) if bound == int(bound) else bound)
    elif kind in ("literal_error", "enum") and "expected" in context:
        expected = str(context["expected"])
    elif kind in _EXPECTED:
        expected = _EXPECTED[kind]
    else:
        message = str(item["msg"])
        expected = message.removeprefix("Input should be ")
        if expected == message:
            return f"{message} (got {given})"
    return f"expected {expected}, got {given}"
