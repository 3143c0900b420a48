"""No module of bot, contracts, store or countersign imports itself in a circle, not even for
annotations (tests/import_graph.py says what counts as an import and how each is read).

The reader is tested first on small packages written for the test, so that a clean project is
known to be clean because the reader finds cycles, not because it reads nothing.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.import_graph import ImportGraph, cycles, describe, read_graph


def _write(root: Path, files: dict[str, str]) -> ImportGraph:
    for name, source in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source), encoding="utf-8")
    return read_graph(root, sorted({name.split("/")[0] for name in files}))


def _cycles(graph: ImportGraph) -> list[list[str]]:
    return [cycle for _, cycle in cycles(graph)]


def test_a_plain_cycle_is_found_and_named_by_its_imports(tmp_path: Path) -> None:
    graph = _write(
        tmp_path,
        {
            "app/__init__.py": "",
            "app/a.py": "from app.b import run\n",
            "app/b.py": "import os\n\nfrom app.c import x\n",
            "app/c.py": "from app import a\n",
        },
    )
    assert _cycles(graph) == [["app.a", "app.b", "app.c", "app.a"]]
    assert describe(graph, _cycles(graph)[0]).splitlines() == [
        "  app.a:1 imports app.b",
        "  app.b:3 imports app.c",
        "  app.c:1 imports app.a",
    ]


def test_a_cycle_made_only_for_annotations_is_a_cycle(tmp_path: Path) -> None:
    graph = _write(
        tmp_path,
        {
            "app/__init__.py": "",
            "app/centre.py": """\
                from typing import TYPE_CHECKING

                if TYPE_CHECKING:
                    from app.edge import Edge
            """,
            "app/edge.py": "from app.centre import Centre\n",
        },
    )
    assert _cycles(graph) == [["app.centre", "app.edge", "app.centre"]]
    assert "app.centre:4 imports app.edge (for annotations)" in describe(graph, _cycles(graph)[0])


def test_typing_type_checking_spelled_through_the_module_counts_too(tmp_path: Path) -> None:
    graph = _write(
        tmp_path,
        {
            "app/__init__.py": "",
            "app/a.py": "import typing\n\nif typing.TYPE_CHECKING:\n    import app.b\n",
            "app/b.py": "from . import a\n",
        },
    )
    assert _cycles(graph) == [["app.a", "app.b", "app.a"]]


def test_an_import_inside_a_function_is_a_cycle(tmp_path: Path) -> None:
    graph = _write(
        tmp_path,
        {
            "app/__init__.py": "",
            "app/a.py": "def later():\n    from app.b import b\n    return b\n",
            "app/b.py": "from app.a import later\n",
        },
    )
    ((members, cycle),) = cycles(graph)
    assert members == {"app.a", "app.b"}
    assert "(inside a function)" in describe(graph, cycle)


def test_cycles_across_packages_and_relative_imports_are_found(tmp_path: Path) -> None:
    graph = _write(
        tmp_path,
        {
            "core/__init__.py": "",
            "core/rules.py": "from ..edge.http import answer\n",
            "edge/__init__.py": "",
            "edge/http.py": "from .parse import body\n",
            "edge/parse.py": "from core import rules\n",
        },
    )
    assert _cycles(graph) == [["core.rules", "edge.http", "edge.parse", "core.rules"]]


def test_a_name_a_package_exports_is_read_as_an_import_of_the_module_defining_it(
    tmp_path: Path,
) -> None:
    # the package's __init__ imports all its modules for annotations; importing one name of it
    # depends on the module defining that name, not on all of them, so there is no cycle here
    graph = _write(
        tmp_path,
        {
            "app/__init__.py": "",
            "app/feature/__init__.py": """\
                from typing import TYPE_CHECKING

                if TYPE_CHECKING:
                    from app.feature.one import One
                    from app.feature.two import Two as Two
            """,
            "app/feature/one.py": "from app.user import used\n",
            "app/feature/two.py": "class Two: ...\n",
            "app/user.py": "from app.feature import Two\n",
        },
    )
    assert _cycles(graph) == []
    assert {i.target for i in graph.imports["app.user"]} == {"app.feature.two"}


def test_a_name_the_package_itself_defines_is_an_import_of_the_package(tmp_path: Path) -> None:
    graph = _write(
        tmp_path,
        {
            "app/__init__.py": "from app.a import A\n\nVERSION = 1\n",
            "app/a.py": "from app import VERSION\n",
        },
    )
    assert _cycles(graph) == [["app", "app.a", "app"]]


def test_third_party_and_standard_library_imports_are_no_nodes(tmp_path: Path) -> None:
    graph = _write(
        tmp_path,
        {
            "app/__init__.py": "",
            "app/a.py": "import json\nfrom pydantic import BaseModel\nimport app.b\n",
            "app/b.py": "",
        },
    )
    assert graph.edges() == {"app": set(), "app.a": {"app.b"}, "app.b": set()}
    assert _cycles(graph) == []


def test_two_separate_cycles_are_two_groups(tmp_path: Path) -> None:
    graph = _write(
        tmp_path,
        {
            "app/__init__.py": "",
            "app/a.py": "import app.b\n",
            "app/b.py": "import app.a\n",
            "app/c.py": "import app.d\nimport app.a\n",
            "app/d.py": "import app.c\n",
        },
    )
    assert sorted(sorted(members) for members, _ in cycles(graph)) == [
        ["app.a", "app.b"],
        ["app.c", "app.d"],
    ]


@pytest.mark.parametrize("package", ["bot", "contracts", "store", "client/countersign"])
def test_the_reader_reads_every_module_of_the_project(package: str) -> None:
    root = Path(__file__).parents[1]
    graph = read_graph(root, [package])
    assert len(graph.files) == len(list((root / package).rglob("*.py")))
    assert any(graph.imports.values())


# --- the project ---------------------------------------------------------------------------------

ROOT = Path(__file__).parents[1]
#: every package of ours, read together: a cycle may run through more than one of them
PACKAGES = ("bot", "contracts", "store", "client/countersign")


def test_no_module_imports_itself_in_a_circle_not_even_for_annotations() -> None:
    # bot's last cycles (service, the agent API, delegations, standing rules and reminders) went
    # with the move of the proposal's flow into bot/flow/; store's with its cut by table family
    # (store/base.py no longer imports the families' stores, they import it)
    graph = read_graph(ROOT, PACKAGES)
    assert len(graph.files) > 200, "the reader reads the whole project"
    found = [" -> ".join(cycle) + "\n" + describe(graph, cycle) for _, cycle in cycles(graph)]
    assert not found, "\n\n".join(found)
