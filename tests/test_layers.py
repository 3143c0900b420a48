"""Imports run one way: bot -> contracts, store; store -> contracts; contracts -> the wire models
only (countersign.wire, one definition with the agents' side); the agents' side (countersign, in
client/) -> none of the server's, so agents install no server.

Inside bot, the proposal's flow (bot/flow/) is the centre: the edges (the agent API, Slack, what
leaves the process, the sandbox, the operators' and bench commands, monitoring, the app factory and
the command line) call into it, and it imports none of them, not even for an annotation or inside a
function (where it needs something of an edge, it defines a small Protocol, a port, that the edge
satisfies), nor through the modules it does import: of bot, it reaches only itself, the settings
(every section of the configuration file is in bot/settings/) and the pure vocabulary of
bot/render/. Its modules stay readable in one sitting (at most FLOW_MAX_LINES lines)."""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.import_graph import Import, ImportGraph, reached, read_graph

ROOT = Path(__file__).parents[1]
#: each package of ours and where its source is
FOLDERS = {
    "contracts": ROOT / "contracts",
    "store": ROOT / "store",
    "bot": ROOT / "bot",
    "countersign": ROOT / "client" / "countersign",
}
ALLOWED = {
    "contracts": {"contracts", "countersign"},
    "store": {"store", "contracts"},
    "bot": {"bot", "store", "contracts"},
    "countersign": {"countersign"},
}
#: the proposal's flow: the centre of bot
FLOW = "bot.flow"
#: bot's edges: what the flow must never import. bot/render/ is not one: it is pure (no clock,
#: I/O or Slack client, tests/bot/render/test_purity.py), the vocabulary the flow writes its
#: messages in
EDGES = (
    "bot.api",
    "bot.slack",
    "bot.outbound",
    "bot.sandbox",
    "bot.operators",
    "bot.bench",
    "bot.monitoring",
    "bot.app",
    "bot.cli",
)
#: what of bot the flow may reach, directly or through the modules it imports: itself, the
#: settings and the pure vocabulary of bot/render/ (and bot's own ``__init__``, the packages'
#: lazy exports, which imports nothing)
FLOW_REACHES = (FLOW, "bot.settings", "bot.render")
#: the most lines a module of the flow may have
FLOW_MAX_LINES = 400
#: contracts may use only the standard library and these
CONTRACT_THIRD_PARTY = {"pydantic", "jsonschema"}
STDLIB = set(sys.stdlib_module_names) | {"__future__"}


def _modules(path: Path) -> set[str]:
    """Every module ``path`` imports, by its full name."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _imports(path: Path) -> set[str]:
    return {name.split(".")[0] for name in _modules(path)}


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_package_imports_only_the_layers_below_it(package: str) -> None:
    ours = set(ALLOWED)
    wrong = {
        f"{path.relative_to(ROOT)} imports {name}"
        for path in FOLDERS[package].rglob("*.py")
        for name in _imports(path) & ours
        if name not in ALLOWED[package]
    }
    assert not wrong, sorted(wrong)


def test_contracts_use_only_the_standard_library_pydantic_jsonschema_and_the_wire() -> None:
    foreign = {
        f"{path.relative_to(ROOT)} imports {name}"
        for path in FOLDERS["contracts"].rglob("*.py")
        for name in _modules(path)
        if name.split(".")[0] not in STDLIB | CONTRACT_THIRD_PARTY | {"contracts"}
        and not name.startswith("countersign.wire.")
    }
    assert not foreign, sorted(foreign)


def test_the_wire_models_use_only_the_standard_library_and_pydantic() -> None:
    # the server's contracts import them: anything more here would be installed with the server's
    # domain, and the rest of the client (aiohttp, the hook) would be loaded by the server
    foreign = {
        f"{path.relative_to(ROOT)} imports {name}"
        for path in (FOLDERS["countersign"] / "wire").rglob("*.py")
        for name in _modules(path)
        if name.split(".")[0] not in STDLIB | {"pydantic"}
        and not name.startswith("countersign.wire")
    }
    assert not foreign, sorted(foreign)


def test_every_folder_checked_holds_its_package() -> None:
    # a folder that moved would leave the checks above nothing to read, and passing
    for package, folder in FOLDERS.items():
        assert (folder / "__init__.py").is_file(), (package, folder)
    assert (FOLDERS["countersign"] / "wire" / "api.py").is_file()


def edge_imports(graph: ImportGraph, centre: str, edges: tuple[str, ...]) -> list[Import]:
    """Every import by which a module of ``centre`` depends on a module of one of ``edges``."""

    def within(module: str, package: str) -> bool:
        return module == package or module.startswith(f"{package}.")

    return [
        found
        for module, imports in sorted(graph.imports.items())
        if within(module, centre)
        for found in imports
        if any(within(found.target, edge) for edge in edges)
    ]


def test_the_flow_imports_no_edge_not_even_for_annotations() -> None:
    if not (ROOT / "bot" / "flow").is_dir():
        pytest.skip("bot/flow/ does not exist yet")
    graph = read_graph(ROOT, ["bot"])
    assert [m for m in graph.files if m.startswith(f"{FLOW}.")], "bot/flow/ holds no module"
    wrong = edge_imports(graph, FLOW, EDGES)
    assert not wrong, "\n".join(map(str, wrong))


def test_an_edge_imported_only_for_annotations_or_in_a_function_is_found(tmp_path: Path) -> None:
    files = {
        "bot/__init__.py": "",
        "bot/flow/__init__.py": "",
        "bot/flow/ports.py": "from typing import Protocol\n\nclass Publish(Protocol): ...\n",
        "bot/flow/submit.py": (
            "from typing import TYPE_CHECKING\n\n"
            "from bot.flow.ports import Publish\n"
            "from bot.render import blocks\n\n"
            "if TYPE_CHECKING:\n    from bot.slack.publish import SlackPublisher\n\n"
            "def later():\n    import bot.api.waiters\n"
        ),
        "bot/render/__init__.py": "",
        "bot/render/blocks.py": "",
        "bot/slack/__init__.py": "",
        "bot/slack/publish.py": "from bot.flow.submit import later\n",
        "bot/api/__init__.py": "",
        "bot/api/waiters.py": "",
    }
    for name, source in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(source, encoding="utf-8")
    wrong = edge_imports(read_graph(tmp_path, ["bot"]), FLOW, EDGES)
    assert list(map(str, wrong)) == [
        "bot.flow.submit:7 imports bot.slack.publish (for annotations)",
        "bot.flow.submit:10 imports bot.api.waiters (inside a function)",
    ]


def test_bot_holds_no_loose_module_but_the_app_factory() -> None:
    """Every module of bot belongs to the flow, an edge or a feature package; beside them stand
    only the app factory that wires them (the command line is bot/cli/)."""
    loose = sorted(path.name for path in (ROOT / "bot").glob("*.py"))
    assert loose == ["__init__.py", "app.py"]


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(f"{package}.")


def reached_from(graph: ImportGraph, package: str, wanted: Callable[[str], bool]) -> list[str]:
    """Every module ``wanted`` picks that a module of ``package`` imports, directly or through
    other modules (the settings, a feature, ...), each with the chain of imports leading to it."""
    sources = [module for module in graph.files if _within(module, package)]
    return [
        f"{module}: " + " -> ".join(map(str, chain))
        for module, chain in sorted(reached(graph, sources).items())
        if wanted(module)
    ]


def edges_reached(graph: ImportGraph, centre: str, edges: tuple[str, ...]) -> list[str]:
    return reached_from(graph, centre, lambda module: any(_within(module, e) for e in edges))


def _project() -> ImportGraph:
    return read_graph(ROOT, ["bot", "store", "contracts", "client/countersign"])


def test_the_flow_reaches_no_edge_not_even_through_the_modules_it_imports() -> None:
    wrong = edges_reached(_project(), FLOW, EDGES)
    assert not wrong, "\n".join(wrong)


def test_of_bot_the_flow_reaches_only_itself_the_settings_and_the_render_vocabulary() -> None:
    # a feature (digests, escalations, standing rules, ...) is above the flow as an edge is
    wrong = reached_from(
        _project(),
        FLOW,
        lambda module: (
            _within(module, "bot")
            and module != "bot"
            and not any(_within(module, allowed) for allowed in FLOW_REACHES)
        ),
    )
    assert not wrong, "\n".join(wrong)


def test_the_settings_reach_nothing_of_bot_but_themselves() -> None:
    # the flow reads them: a section or a check kept with a feature, an edge or the flow itself
    # would have the flow import what is above it
    wrong = reached_from(
        _project(), "bot.settings", lambda module: _within(module, "bot") and module != "bot"
    )
    assert not wrong, "\n".join(wrong)


def test_an_edge_reached_through_the_settings_is_found_with_its_chain(tmp_path: Path) -> None:
    files = {
        "bot/__init__.py": "",
        "bot/flow/__init__.py": "",
        "bot/flow/submit.py": "from bot.settings.model import Settings\n",
        "bot/settings/__init__.py": "",
        "bot/settings/model.py": (
            "from typing import TYPE_CHECKING\n\n"
            "if TYPE_CHECKING:\n    from bot.api.limits import Limits\n"
        ),
        "bot/api/__init__.py": "",
        "bot/api/limits.py": "",
    }
    for name, source in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(source, encoding="utf-8")
    graph = read_graph(tmp_path, ["bot"])
    assert edge_imports(graph, FLOW, EDGES) == []  # no import of the flow names an edge itself
    assert edges_reached(graph, FLOW, EDGES) == [
        "bot.api.limits: bot.flow.submit:1 imports bot.settings.model -> "
        "bot.settings.model:4 imports bot.api.limits (for annotations)"
    ]


def test_no_module_of_the_flow_is_longer_than_can_be_read_in_one_sitting() -> None:
    lengths = {
        str(path.relative_to(ROOT)): len(path.read_text(encoding="utf-8").splitlines())
        for path in (ROOT / "bot" / "flow").rglob("*.py")
    }
    assert len(lengths) > 10, "bot/flow/ holds the flow's modules"
    long = {path: lines for path, lines in sorted(lengths.items()) if lines > FLOW_MAX_LINES}
    assert not long, f"over {FLOW_MAX_LINES} lines: {long}"
