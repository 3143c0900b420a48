"""docs/architecture.md draws the rooms of the code and walks one proposal through them: every
module, package and file it names exists, so the page cannot drift from the layout unnoticed."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parents[1]
PAGE = ROOT / "docs" / "architecture.md"
#: a path of ours: a top-level folder of the project, then folders and perhaps a file
NAMED = re.compile(
    r"(?<![\w./-])((?:bot|store|contracts|client|tests|docs)/(?:[\w-]+/)*(?:[\w-]+\.\w+)?)"
)


def named_paths(text: str) -> list[str]:
    """Every path of the project ``text`` names, in the picture and in the prose alike."""
    return sorted(set(NAMED.findall(text)))


def missing(text: str, root: Path) -> list[str]:
    return [
        name
        for name in named_paths(text)
        if not ((root / name).is_dir() if name.endswith("/") else (root / name).is_file())
    ]


def test_the_reading_finds_folders_and_files_in_prose_and_pictures(tmp_path: Path) -> None:
    (tmp_path / "bot" / "flow").mkdir(parents=True)
    (tmp_path / "bot" / "flow" / "submit.py").write_text("")
    text = (
        "The flow (`bot/flow/`) submits in `bot/flow/submit.py`, see bot/flow/decide.py;\n"
        "    store/   bot/edge/  and the sentence ends in bot/flow/.\n"
    )
    assert named_paths(text) == [
        "bot/edge/",
        "bot/flow/",
        "bot/flow/decide.py",
        "bot/flow/submit.py",
        "store/",
    ]
    assert missing(text, tmp_path) == ["bot/edge/", "bot/flow/decide.py", "store/"]


def test_every_module_and_folder_the_architecture_page_names_exists() -> None:
    text = PAGE.read_text(encoding="utf-8")
    assert len(named_paths(text)) >= 30, "the page names the rooms and the modules of the path"
    assert missing(text, ROOT) == []


def test_the_page_names_every_package_of_bot() -> None:
    text = PAGE.read_text(encoding="utf-8")
    packages = sorted(p.parent.name for p in (ROOT / "bot").glob("*/__init__.py"))
    assert [p for p in packages if f"bot/{p}/" not in text] == []
