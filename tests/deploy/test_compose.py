"""deploy/compose.yaml runs two instances on one PostgreSQL behind Caddy, which terminates TLS;
deploy/Caddyfile sends Slack's requests to both instances' Slack port and the agents' to both
instances' main port; no secret is written down."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from bot.settings import Settings, load_settings

DEPLOY = Path(__file__).parents[2] / "deploy"
COMPOSE = DEPLOY / "compose.yaml"
CADDYFILE = DEPLOY / "Caddyfile"
INSTANCES = ("countersign-1", "countersign-2")
#: What compose reads from deploy/.env in a real deployment; made up here.
COMPOSE_ENV = {"POSTGRES_PASSWORD": "made-up-for-the-test", "COUNTERSIGN_DOMAIN": "cs.example.com"}
SECRET_NAME = re.compile(r"PASSWORD|SECRET|TOKEN|KEY", re.IGNORECASE)
INTERPOLATED = re.compile(r"^\$\{[A-Z_]+:\?[^}]+\}$")
#: what the operator's countersign.env holds for the variables deploy/countersign.toml names
TOML_SECRETS = {
    "COUNTERSIGN_TOKEN_SUPPORT_BOT": "t" * 20,
    "COUNTERSIGN_WEBHOOK_SECRET_TICKETS": "s",
}


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    return loaded


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = compose["services"]
    return found


@pytest.fixture(scope="module")
def settings() -> Settings:
    """deploy/countersign.toml, as both instances load it."""
    return load_settings(DEPLOY / "countersign.toml", TOML_SECRETS)


def routes(services: dict[str, Any], settings: Settings) -> dict[str, list[str]]:
    """What the Caddyfile should send where: Slack's requests to every instance's Slack port
    (server.slack_port), the agent API to every instance's main port (compose's --port)."""
    assert settings.server.slack_port is not None, "countersign.toml sets server.slack_port"
    return {
        "/slack/events": [f"{name}:{settings.server.slack_port}" for name in INSTANCES],
        "/v1/*": [f"{name}:{port_of(services[name])}" for name in INSTANCES],
    }


def port_of(service: dict[str, Any]) -> int:
    command = service["command"]
    return int(command[command.index("--port") + 1])


def environment(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment", {})
    assert isinstance(env, dict), "environment is written as a mapping"
    return {name: str(value) for name, value in env.items()}


def test_a_database_two_instances_and_a_proxy(services: dict[str, Any]) -> None:
    assert set(services) == {"db", *INSTANCES, "proxy"}
    for name in INSTANCES:
        assert services[name]["command"][0] == "serve"
        assert services[name]["build"]["dockerfile"] == "deploy/Dockerfile"


def test_each_service_waits_for_what_it_needs_to_be_healthy(services: dict[str, Any]) -> None:
    for name in ("db", *INSTANCES):
        assert services[name]["healthcheck"]["test"], f"{name} has no health check"
    for name in INSTANCES:
        assert services[name]["depends_on"] == {"db": {"condition": "service_healthy"}}
        assert services[name]["restart"] == "unless-stopped"
    assert services["proxy"]["depends_on"] == {
        name: {"condition": "service_healthy"} for name in INSTANCES
    }


def test_instance_health_check_asks_healthz_on_the_port_it_serves(
    services: dict[str, Any],
) -> None:
    for name in INSTANCES:
        check = " ".join(services[name]["healthcheck"]["test"])
        assert f"http://127.0.0.1:{port_of(services[name])}/healthz" in check


def test_no_secret_is_written_in_the_compose_file(services: dict[str, Any]) -> None:
    text = COMPOSE.read_text(encoding="utf-8")
    assert not re.search(r"xox[abp]-|xapp-", text)
    for name, service in services.items():
        for key, value in environment(service).items():
            if SECRET_NAME.search(key):
                assert INTERPOLATED.match(value), f"{name}: {key} is written down: {value!r}"
    for name in INSTANCES:
        assert services[name]["env_file"] == "countersign.env"
    ignored = (DEPLOY / ".gitignore").read_text(encoding="utf-8").split()
    assert {".env", "countersign.env"} <= set(ignored)


def test_the_example_secret_files_hold_no_values() -> None:
    for example in (DEPLOY / "countersign.env.example", DEPLOY / ".env.example"):
        for line in example.read_text(encoding="utf-8").splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.partition("=")
                if SECRET_NAME.search(name):
                    assert value == "", f"{example.name}: {name} has a value"


def test_both_instances_read_one_configuration_naming_the_one_database(
    services: dict[str, Any],
) -> None:
    first, second = (services[name] for name in INSTANCES)
    assert first == second  # the same service, twice
    [mount] = first["volumes"]
    source, target, mode = mount.split(":")
    assert (target, mode) == (environment(first)["COUNTERSIGN_CONFIG"], "ro")
    settings = load_settings(DEPLOY / source, TOML_SECRETS)

    url = urlsplit(settings.store.url)
    db = services["db"]
    assert url.scheme == "postgresql"
    assert url.password is None  # PGPASSWORD carries it
    assert url.hostname == "db"
    assert url.username == environment(db)["POSTGRES_USER"]
    assert url.path == f"/{environment(db)['POSTGRES_DB']}"
    assert environment(first)["PGPASSWORD"] == environment(db)["POSTGRES_PASSWORD"]
    assert settings.server.host == "0.0.0.0"


def test_only_the_proxy_is_published_and_the_database_stays_inside(
    compose: dict[str, Any], services: dict[str, Any]
) -> None:
    assert "ports" not in services["db"]
    for name in INSTANCES:
        assert "ports" not in services[name]
        assert set(services[name]["networks"]) == {"edge", "data"}
    assert services["db"]["networks"] == ["data"]
    assert compose["networks"]["data"]["internal"] is True
    assert services["proxy"]["networks"] == ["edge"]
    assert "443:443" in services["proxy"]["ports"]


def caddy_upstreams() -> dict[str, list[str]]:
    """Each ``handle PATH { reverse_proxy UPSTREAMS {`` of the Caddyfile: path -> upstreams."""
    text = CADDYFILE.read_text(encoding="utf-8")
    handled = re.findall(r"^\s*handle (\S+) \{\s*reverse_proxy ([^{\n]+)\{", text, re.MULTILINE)
    return {path: upstreams.split() for path, upstreams in handled}


def test_caddy_sends_slack_to_the_slack_port_and_agents_to_the_main_port(
    services: dict[str, Any], settings: Settings
) -> None:
    assert caddy_upstreams() == routes(services, settings)
    assert settings.server.slack_port != settings.server.port == port_of(services[INSTANCES[0]])
    text = CADDYFILE.read_text(encoding="utf-8")
    # readiness is asked on the main port: the Slack port answers /slack/events alone
    assert "health_uri /readyz" in text
    assert f"health_port {port_of(services[INSTANCES[0]])}" in text
    assert "{$COUNTERSIGN_DOMAIN} {" in text  # a name, so Caddy obtains a certificate for it
    mounts = services["proxy"]["volumes"]
    assert "./Caddyfile:/etc/caddy/Caddyfile:ro" in mounts


def deploy_copy(tmp_path: Path) -> Path:
    """deploy/ as an operator fills it in: the secret files made from their examples."""
    folder = tmp_path / "deploy"
    shutil.copytree(DEPLOY, folder)
    shutil.copy(folder / "countersign.env.example", folder / "countersign.env")
    return folder


def compose_command() -> list[str] | None:
    if shutil.which("docker"):
        probe = subprocess.run(
            ["docker", "compose", "version"], capture_output=True, text=True, check=False
        )
        if probe.returncode == 0:
            return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    return None


def test_compose_accepts_the_file(tmp_path: Path) -> None:
    command = compose_command()
    if command is None:
        pytest.skip("neither `docker compose` nor `docker-compose` is installed")
    folder = deploy_copy(tmp_path)
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), **COMPOSE_ENV}

    result = subprocess.run(
        [*command, "-f", "compose.yaml", "config"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )

    assert result.returncode == 0, result.stderr
    resolved = yaml.safe_load(result.stdout)
    assert set(resolved["services"]) == {"db", *INSTANCES, "proxy"}
    assert (
        resolved["services"]["db"]["environment"]["POSTGRES_PASSWORD"]
        == (COMPOSE_ENV["POSTGRES_PASSWORD"])
    )


def test_compose_refuses_to_start_without_the_database_password(tmp_path: Path) -> None:
    command = compose_command()
    if command is None:
        pytest.skip("neither `docker compose` nor `docker-compose` is installed")
    folder = deploy_copy(tmp_path)
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "COUNTERSIGN_DOMAIN": "x.example"}

    result = subprocess.run(
        [*command, "-f", "compose.yaml", "config"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )

    assert result.returncode != 0
    assert "set POSTGRES_PASSWORD in deploy/.env" in result.stderr


def proxied(routes: list[dict[str, Any]], paths: tuple[str, ...] = ()) -> dict[str, Any]:
    """What ``caddy adapt`` made of the routes: path -> the reverse_proxy handler of that path."""
    found = {}
    for route in routes:
        here = tuple(p for m in route.get("match", []) for p in m.get("path", [])) or paths
        for handler in route["handle"]:
            if handler["handler"] == "reverse_proxy":
                found.update(dict.fromkeys(here, handler))
            elif handler["handler"] == "subroute":
                found.update(proxied(handler["routes"], here))
    return found


def test_caddy_accepts_the_caddyfile_and_routes_slack_and_agents_to_their_ports(
    tmp_path: Path, services: dict[str, Any], settings: Settings
) -> None:
    if shutil.which("caddy") is None:
        pytest.skip("caddy is not installed")
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "COUNTERSIGN_DOMAIN": COMPOSE_ENV["COUNTERSIGN_DOMAIN"],
    }
    validate = subprocess.run(
        ["caddy", "validate", "--config", str(CADDYFILE), "--adapter", "caddyfile"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert validate.returncode == 0, validate.stderr

    adapted = subprocess.run(
        ["caddy", "adapt", "--config", str(CADDYFILE), "--adapter", "caddyfile"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    [server] = json.loads(adapted.stdout)["apps"]["http"]["servers"].values()
    assert server["listen"] == [":443"]
    handlers = proxied(server["routes"])
    dialled = {path: [u["dial"] for u in proxy["upstreams"]] for path, proxy in handlers.items()}
    assert dialled == routes(services, settings)
    for proxy in handlers.values():  # ready instances only, asked on the main port
        checked = proxy["health_checks"]["active"]
        assert (checked["uri"], checked["port"]) == ("/readyz", port_of(services[INSTANCES[0]]))
    assert COMPOSE_ENV["COUNTERSIGN_DOMAIN"] in json.dumps(server["routes"])
