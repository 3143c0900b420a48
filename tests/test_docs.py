"""The README is a guide and docs/ the manual: links resolve, the configuration reference lists
exactly what Countersign accepts, and the README's first commands and minimal configuration work.
"""

from __future__ import annotations

import re
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Union, get_args, get_origin

import pytest
from pydantic import BaseModel

from bot.settings import load_settings, setting_keys
from contracts.batching import BATCH_KEYS, THEN_KEYS
from contracts.operations.refund import Payment
from contracts.operations.webhook import WebhookSpec
from contracts.policy import COMPARISONS, AskRule, AutoRule, DenyRule
from contracts.standing import STANDING_KEYS

REPO = Path(__file__).parents[1]
README = REPO / "README.md"
DOCS = REPO / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]
#: "About 300 lines": room to breathe, not room for the manual to move back in. (350 grew to 380
#: for the agents' set-ups shown end to end: the Python client's three lines and Claude Code's two.)
README_MAX_LINES = 380

FENCE = re.compile(r"^(```|~~~)")
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
INLINE_CODE = re.compile(r"`[^`]*`")


def prose_lines(text: str) -> Iterator[str]:
    """The lines outside fenced code blocks."""
    fenced = False
    for line in text.splitlines():
        if FENCE.match(line.lstrip()):
            fenced = not fenced
            continue
        if not fenced:
            yield line


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text, lowercased, punctuation but '-' and '_' dropped,
    spaces turned into '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link counts by its text
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found: set[str] = set()
    for line in prose_lines(page.read_text(encoding="utf-8")):
        heading = re.match(r"#{1,6} (.+)", line)
        if heading is None:
            continue
        base = slug(heading.group(1))
        anchor, n = base, 0
        while anchor in found:  # GitHub numbers repeated headings: name, name-1, name-2
            n += 1
            anchor = f"{base}-{n}"
        found.add(anchor)
    return found


def links(text: str) -> list[str]:
    """Every link's target outside code, also of a link whose text runs over several lines."""
    return LINK.findall(INLINE_CODE.sub("", "\n".join(prose_lines(text))))


def relative_links(page: Path) -> Iterator[str]:
    for target in links(page.read_text(encoding="utf-8")):
        if not re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto: ...
            yield target


def test_the_slug_rules_are_githubs() -> None:
    assert slug("The approver's workspace in Slack") == "the-approvers-workspace-in-slack"
    assert slug("Digests: many similar proposals in one message") == (
        "digests-many-similar-proposals-in-one-message"
    )
    assert slug("Defining `operations.<name>` and snake_case") == (
        "defining-operationsname-and-snake_case"
    )
    assert slug("See [the policy](policy.md)") == "see-the-policy"


def test_the_link_finder_sees_links_and_skips_code() -> None:
    text = "[a](x.md#b) and `[c](not-a-link.md)` and <https://e.com> [d](https://f.example)\n"
    fenced = "```\n[g](in-a-fence.md)\n```\n![h over\ntwo lines](i.png)\n"
    assert links(text + fenced) == ["x.md#b", "https://f.example", "i.png"]
    assert "docs/sandbox.png" in links(README.read_text(encoding="utf-8"))


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(REPO)))
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for target in relative_links(page):
        path_part, _, fragment = target.partition("#")
        path = (page.parent / path_part).resolve() if path_part else page
        if not path.exists():
            broken.append(f"{target}: no file {path.relative_to(REPO.resolve())}")
        elif fragment and path.suffix == ".md" and fragment not in anchors(path):
            broken.append(f"{target}: no heading with the anchor #{fragment} in {path.name}")
    assert not broken, f"{page.relative_to(REPO)} has broken links:\n" + "\n".join(broken)


def test_every_docs_page_is_linked_from_the_readme() -> None:
    linked = {
        (README.parent / target.partition("#")[0]).resolve() for target in relative_links(README)
    }
    unlinked = [page.name for page in DOCS.glob("*.md") if page.resolve() not in linked]
    assert not unlinked, f"docs pages the README does not link to: {unlinked}"


# --- the configuration reference ---------------------------------------------------------------


def model_keys(model: type[BaseModel], prefix: str) -> Iterator[str]:
    """The dotted keys of a model's fields, its nested models' too (arrays of tables as ``[]``)."""
    for name, info in model.model_fields.items():
        yield from _keys_of(info.annotation, f"{prefix}{name}")


def _keys_of(annotation: Any, key: str) -> Iterator[str]:
    origin, args = get_origin(annotation), get_args(annotation)
    present = [arg for arg in args if arg is not type(None)]
    yield key
    if origin in (Union, types.UnionType) and len(present) == 1:
        yield from _keys_of(present[0], key)
    elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield from model_keys(annotation, f"{key}.")
    elif origin in (tuple, list) and isinstance(args[0], type) and issubclass(args[0], BaseModel):
        yield from model_keys(args[0], f"{key}[].")


def accepted_keys() -> set[str]:
    """Every key countersign.toml accepts: the settings model's, the policy rules' and the
    operations'. A table's own key (``policy[].standing``) is in it along with its keys."""
    keys = set(setting_keys()) - {"policy", "operations.<name>"}
    for rule in (AutoRule, AskRule, DenyRule):
        keys |= {f"policy[].{field}" for field in rule.model_fields}
    keys |= {f"policy[].when[].{key}" for key in ("field", *COMPARISONS)}
    keys |= {f"policy[].batch.{key}" for key in BATCH_KEYS}
    keys |= {f"policy[].then.{key}" for key in THEN_KEYS}
    keys |= {f"policy[].standing.{key}" for key in STANDING_KEYS}
    operation = "operations.<name>."
    # kind picks the operation; a webhook's secret_env is read by bot/settings/agents.py itself
    keys |= {f"{operation}kind", f"{operation}secret_env"}
    keys |= set(model_keys(WebhookSpec, operation)) - {f"{operation}name"}  # the table's name
    keys |= {f"{operation}payments", *model_keys(Payment, f"{operation}payments[].")}
    return keys | {table for key in keys for table in tables_of(key)}


def tables_of(key: str) -> Iterator[str]:
    """The tables a key is in: ``escalation.routes[].channel`` is in ``escalation.routes`` and
    ``escalation``."""
    for end in (match.start() for match in re.finditer(r"\.|\[\]", key)):
        yield key[:end]


def documented_keys() -> list[str]:
    """The first column of every table of docs/configuration.md whose first header is 'key'."""
    keys = []
    in_key_table = False
    for line in prose_lines((DOCS / "configuration.md").read_text(encoding="utf-8")):
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if not line.startswith("|"):
            in_key_table = False
        elif cells[0] == "key":
            in_key_table = True
        elif in_key_table and not set(cells[0]) <= {"-", ":"}:
            keys += re.findall(r"`([^`]+)`", cells[0])
    return keys


def test_the_settings_walk_reaches_every_shape_of_table() -> None:
    keys = set(setting_keys())
    assert {
        "server.port",  # a section
        "roles.<name>",  # a table of names of your choosing
        "agents.<name>.acts_for",  # ... holding tables
        "agents.<name>.limits.max_pending_proposals",  # an optional table inside those
        "escalation.routes[].channel",  # an array of tables
    } <= keys
    assert not [key for key in keys if key.endswith(("]", "."))]


def test_the_configuration_reference_documents_every_accepted_key() -> None:
    accepted = accepted_keys()
    tables = {table for key in accepted for table in tables_of(key)}
    missing = sorted(accepted - tables - set(documented_keys()))
    assert not missing, f"docs/configuration.md does not document: {missing}"


def test_the_configuration_reference_documents_nothing_else() -> None:
    documented = documented_keys()
    unknown = sorted(set(documented) - accepted_keys())
    assert not unknown, f"docs/configuration.md documents keys nothing accepts: {unknown}"
    twice = sorted({key for key in documented if documented.count(key) > 1})
    assert not twice, f"docs/configuration.md documents these twice: {twice}"


# --- the README as a guide ----------------------------------------------------------------------


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """Every fenced block: (its info string, its text)."""
    return re.findall(r"^```(\w*)\n(.*?)^```", text, re.S | re.M)


def section(text: str, heading: str) -> str:
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def test_the_readme_stays_a_guide() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, (
        f"README.md has {len(lines)} lines (at most {README_MAX_LINES}): move reference "
        "material to a page of docs/ and link it"
    )


def test_the_readmes_first_two_commands_are_make_sandbox_and_make_test() -> None:
    text = README.read_text(encoding="utf-8")
    info, first = fenced_blocks(text)[0]
    commands = [line.split("#", 1)[0].strip() for line in first.splitlines() if line.strip()]
    assert (info, commands[:2]) == ("sh", ["make sandbox", "make test"])
    # CI runs the README's test command
    ci = [line for line in (REPO / ".ci/run").read_text(encoding="utf-8").splitlines() if line]
    assert ci[-1] == "make test"


def test_the_lifecycle_diagram_is_in_how_a_proposal_moves() -> None:
    text = README.read_text(encoding="utf-8")
    assert "```mermaid\nstateDiagram-v2\n" in section(text, "How a proposal moves")
    assert text.count("```mermaid") == 1


def test_the_readmes_minimal_configuration_loads(tmp_path: Path) -> None:
    text = section(README.read_text(encoding="utf-8"), "A minimal configuration")
    (toml,) = [body for info, body in fenced_blocks(text.lstrip("\n")) if info == "toml"]
    path = tmp_path / "countersign.toml"
    path.write_text(toml, encoding="utf-8")
    env = {name: "s3cret-" + "x" * 24 for name in re.findall(r'_env = "([A-Z0-9_]+)"', toml)}
    settings = load_settings(path, env=env)
    assert list(settings.agents) and settings.registry.names()
