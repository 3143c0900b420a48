"""``check-config`` warns loudly when a webhook target may still be answering when its
execution lease ends (its answer would then come too late to count)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.cli import main
from tests.bot.test_cli import environment, write_config  # noqa: F401 (fixture)
from tests.e2e.harness import config_text

pytestmark = pytest.mark.usefixtures("environment")


def _check(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str) -> list[str]:
    config, _ = write_config(tmp_path, text)
    assert main(["--config", str(config), "check-config"]) == 0
    out = capsys.readouterr().out
    warnings = [line.removeprefix("  warning: ") for line in out.splitlines() if "warning:" in line]
    return [warning for warning in warnings if "execution_lease_seconds" in warning]


def test_a_target_timeout_not_below_the_lease_is_a_warning_naming_both(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = config_text("http://127.0.0.1:9").replace(
        "[server]\n", "[server]\nexecution_lease_seconds = 90\n", 1
    )
    text = text.replace("\ntimeout_seconds = 2\n", "\ntimeout_seconds = 120\n", 1)

    [warning] = _check(tmp_path, capsys, text)

    assert warning.startswith("operations.crm.send_campaign: an execution may wait 2 minutes")
    assert "(timeout_seconds = 120), not less than server.execution_lease_seconds = 90" in warning
    assert "Lower timeout_seconds below the lease, or raise the lease." in warning


def test_timeouts_below_the_lease_draw_no_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _check(tmp_path, capsys, config_text("http://127.0.0.1:9")) == []
