"""Agent text is a type: Block Kit's mrkdwn builders take :class:`~bot.render.inert.Mrkdwn`,
which only the inert renderer (for an agent's text) and ``own()`` (for Countersign's words)
make, so ``mypy --strict`` rejects a renderer that hands an agent's ``str`` to Slack."""

from __future__ import annotations

import textwrap
from pathlib import Path

from mypy import api

import bot.render

ROOT = Path(bot.render.__path__[0]).parents[1]


def mypy_errors(tmp_path: Path, source: str) -> list[str]:
    module = tmp_path / "renderer_under_test.py"
    module.write_text(textwrap.dedent(source), encoding="utf-8")
    stdout, _, _ = api.run(
        [
            "--strict",
            "--no-error-summary",
            "--cache-dir",
            str(tmp_path / "cache"),
            "--config-file",
            str(ROOT / "pyproject.toml"),
            str(module),
        ]
    )
    return [line for line in stdout.splitlines() if ": error:" in line]


def test_mypy_rejects_agent_text_where_slack_text_is_expected(tmp_path: Path) -> None:
    errors = mypy_errors(
        tmp_path,
        """
        from bot.render.inert import inert, own
        from bot.render.blocks import context, section
        from store.proposals import Proposal

        def leaky(proposal: Proposal) -> None:
            section(proposal.preview.title)
            context(f"*{proposal.agent_reason}*")

        def inert_and_own(proposal: Proposal) -> None:
            section(inert(proposal.preview.title))
            context(own("Countersign's own words"), inert(proposal.agent_reason or ""))
        """,
    )
    assert len(errors) == 2, errors
    assert all('expected "Mrkdwn"' in error for error in errors), errors
    assert [int(error.split(":")[1]) for error in errors] == [7, 8]  # the leaky lines only
