"""``countersign-mcp`` without the ``mcp`` extra says, in one line, which extra to install: no
traceback. Run as a person would, in a process where the extra is not importable."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from countersign.mcp_server import MISSING_EXTRA

REPO = Path(__file__).parents[2]
SCRIPT = Path(sys.executable).parent / "countersign-mcp"


def commands() -> list[list[str]]:
    found = [
        [sys.executable, "-m", "countersign.mcp_server"],
        [sys.executable, "-m", "bot.cli", "mcp"],  # `countersign mcp`, which runs the same
    ]
    if SCRIPT.exists():
        found.append([str(SCRIPT)])
    return found


@pytest.mark.parametrize("command", commands(), ids=lambda c: " ".join([Path(c[0]).name, *c[1:]]))
def test_without_the_mcp_extra_it_says_which_extra_to_install_in_one_line(
    command: list[str], tmp_path: Path
) -> None:
    # the interpreter finds no mcp package: as if `pip install countersign` left the extra out
    (tmp_path / "sitecustomize.py").write_text(
        "import sys\nsys.modules['mcp'] = None  # the mcp extra is not installed\n",
        encoding="utf-8",
    )
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO / "client"), str(REPO)]),
        "COUNTERSIGN_URL": "http://127.0.0.1:9",
        "COUNTERSIGN_TOKEN": "t",
    }

    done = subprocess.run(
        command, env=env, cwd=REPO, capture_output=True, text=True, timeout=60, check=False
    )

    assert done.returncode == 2
    assert done.stderr.splitlines() == [MISSING_EXTRA]
    assert "pip install 'countersign-client[mcp]'" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
