"""A database URL's password never shows in a command's output, an error or a log line."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from bot.bench.runner import _redacted
from bot.cli import main
from contracts.redaction import shown_store_url
from store.base import StoreError
from store.open import open_store
from tests.e2e.harness import ENV, config_text

SECRET = "hunter2-s3cret"
STORE_URLS = [
    f"postgresql://countersign:{SECRET}@127.0.0.1:1/test",
    f"postgresql://countersign@127.0.0.1:1/test?password={SECRET}&sslmode=disable",
]


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in ENV.items():
        if not name.startswith("SLACK_"):
            monkeypatch.setenv(name, value)


def config_with_store(tmp_path: Path, url: str) -> Path:
    config = tmp_path / "countersign.toml"
    config.write_text(f'{config_text("http://127.0.0.1:9")}\n[store]\nurl = "{url}"\n')
    return config


@pytest.mark.usefixtures("environment")
@pytest.mark.parametrize("url", STORE_URLS)
@pytest.mark.parametrize(
    "command",
    [["audit", "verify"], ["audit", "export", "--since", "2026-11-30"], ["policy", "review-stats"]],
)
def test_a_command_that_cannot_open_the_store_never_prints_its_password(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    url: str,
    command: list[str],
) -> None:
    caplog.set_level(logging.DEBUG)
    config = config_with_store(tmp_path, url)

    code = main(["--config", str(config), *command])

    out, err = capsys.readouterr()
    assert code == 2
    assert "cannot open the store postgresql://countersign" in err
    assert "127.0.0.1:1" in err  # the operator can still tell which database it was
    for text in (out, err, caplog.text):
        assert SECRET not in text


@pytest.mark.parametrize(
    "url",
    [f"mysql://countersign:{SECRET}@db.example/countersign", f"sqlite://x:{SECRET}@"],
)
async def test_an_unusable_store_url_is_named_without_its_password(url: str) -> None:
    with pytest.raises(StoreError) as raised:
        await open_store(url)

    assert SECRET not in str(raised.value)


def test_store_urls_are_shown_by_one_helper_everywhere() -> None:
    for url in STORE_URLS:
        assert SECRET not in shown_store_url(url)
        assert _redacted(url) == shown_store_url(url)  # the bench's report
    assert shown_store_url(STORE_URLS[0]) == "postgresql://countersign:***@127.0.0.1:1/test"
    assert shown_store_url("sqlite:///data/countersign.sqlite") == (
        "sqlite:///data/countersign.sqlite"
    )
