"""examples/callmix for tests: its generator (loaded from its file, as a user runs it) and its
configuration, read with the environment it names."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from bot.settings import Settings, load_settings

EXAMPLE = Path(__file__).parents[1] / "examples" / "callmix"
CONFIG = EXAMPLE / "countersign.toml"
ENV = {
    "CALLMIX_TOKEN_SUPPORT_BOT": "callmix-support-bot-token-0123456789",
    "CALLMIX_TOKEN_BILLING_BOT": "callmix-billing-bot-token-0123456789",
    "CALLMIX_TOKEN_OPS_BOT": "callmix-ops-bot-token-0123456789abc",
    "CALLMIX_TOKEN_REPORTS_BOT": "callmix-reports-bot-token-012345678",
    "CALLMIX_WEBHOOK_SECRET": "callmix-webhook-secret",
}


def load_script(name: str) -> ModuleType:
    """The example's script ``name``.py, loaded from its file as a user runs it."""
    spec = importlib.util.spec_from_file_location(name, EXAMPLE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return module


callmix = load_script("callmix")


def settings(tmp_path: Path, text: str | None = None) -> Settings:
    """The example's configuration (or ``text``), its store in ``tmp_path``."""
    config = tmp_path / "callmix.toml"
    source = CONFIG.read_text(encoding="utf-8") if text is None else text
    store = f'url = "sqlite:///{tmp_path / "callmix.sqlite"}"'
    config.write_text(source.replace('url = "sqlite:///callmix.sqlite"', store), encoding="utf-8")
    return load_settings(config, ENV)
