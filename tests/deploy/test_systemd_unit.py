"""deploy/countersign.service: a hardened unit that systemd accepts, with secrets read from a
file outside it."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

UNIT = Path(__file__).parents[2] / "deploy" / "countersign.service"
EXEC = "/opt/countersign/bin/countersign"


def entries() -> list[tuple[str, str, str]]:
    """(section, key, value) in order; a key may appear more than once, as systemd allows."""
    found: list[tuple[str, str, str]] = []
    section = ""
    for line in UNIT.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            section = line.strip("[]")
            continue
        key, _, value = line.partition("=")
        found.append((section, key, value))
    return found


def service() -> dict[str, str]:
    values: dict[str, str] = {}
    for section, key, value in entries():
        if section == "Service":
            values[key] = f"{values[key]} {value}" if key in values else value
    return values


def test_it_runs_serve_with_the_configuration_and_secrets_from_etc() -> None:
    unit = service()
    assert unit["ExecStart"] == f"{EXEC} --config /etc/countersign/countersign.toml serve"
    assert unit["EnvironmentFile"] == "/etc/countersign/countersign.env"
    assert unit["Restart"] == "on-failure"
    # never given up on: Slack or the network may be out of reach only for a while
    assert ("Unit", "StartLimitIntervalSec", "0") in entries()


def test_it_runs_as_its_own_user_who_may_write_only_its_state() -> None:
    unit = service()
    assert unit["DynamicUser"] == "yes"
    assert "User" not in unit
    assert unit["StateDirectory"] == "countersign"
    assert unit["WorkingDirectory"] == "/var/lib/countersign"
    for key, value in {
        "NoNewPrivileges": "yes",
        "ProtectSystem": "strict",
        "ProtectHome": "yes",
        "PrivateTmp": "yes",
        "PrivateDevices": "yes",
        "CapabilityBoundingSet": "",
        "RestrictSUIDSGID": "yes",
        "UMask": "0077",
    }.items():
        assert unit[key] == value, key
    assert unit["RestrictAddressFamilies"] == "AF_INET AF_INET6 AF_UNIX"


def test_no_secret_is_written_in_the_unit() -> None:
    for _, key, value in entries():
        if key == "Environment":
            assert not re.search(r"PASSWORD|SECRET|TOKEN|KEY", value), value
    assert not re.search(r"xox[abp]-|xapp-", UNIT.read_text(encoding="utf-8"))


@pytest.fixture
def runnable_copy(tmp_path: Path) -> Path:
    """The unit with ExecStart naming a program that exists here (systemd checks it)."""
    copy = tmp_path / "countersign.service"
    program = shutil.which("true") or "/bin/true"
    copy.write_text(UNIT.read_text(encoding="utf-8").replace(EXEC, program), encoding="utf-8")
    return copy


def test_systemd_accepts_the_unit_without_a_warning(runnable_copy: Path) -> None:
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed")
    result = subprocess.run(
        ["systemd-analyze", "verify", str(runnable_copy)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    # systemd ignores an unknown or misspelt setting with a warning and exit code 0
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_systemds_exposure_score_is_low(runnable_copy: Path) -> None:
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed")
    result = subprocess.run(
        ["systemd-analyze", "security", "--offline=true", str(runnable_copy)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    found = re.search(r"Overall exposure level for \S+: ([0-9.]+)", result.stdout)
    if found is None:
        pytest.skip(f"systemd-analyze security --offline is not supported here: {result.stderr}")
    assert float(found.group(1)) <= 2.0, result.stdout
