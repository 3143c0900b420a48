"""deploy/Dockerfile: two stages, a slim runtime with only the server installed, an unprivileged
user, a health check that fails when the server does, and no secret.

No Docker engine runs on the machines these tests run on, so the image itself is not built here
(docs/deployment.md says how to build and try it)."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import threading
import tomllib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

REPO = Path(__file__).parents[2]
DOCKERFILE = REPO / "deploy" / "Dockerfile"
IGNORE = REPO / "deploy" / "Dockerfile.dockerignore"

Instruction = tuple[str, str]


def instructions() -> list[Instruction]:
    """(INSTRUCTION, arguments) in order, continuation lines joined, comments left out."""
    found: list[Instruction] = []
    pending = ""
    for line in DOCKERFILE.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("#") or not line.strip():
            continue
        pending += line.rstrip().removesuffix("\\") + (" " if line.rstrip().endswith("\\") else "")
        if not line.rstrip().endswith("\\"):
            word, _, rest = pending.strip().partition(" ")
            found.append((word.upper(), " ".join(rest.split())))
            pending = ""
    return found


def final_stage() -> list[Instruction]:
    steps = instructions()
    last_from = max(i for i, (word, _) in enumerate(steps) if word == "FROM")
    return steps[last_from:]


def exec_form(arguments: str) -> list[str]:
    parsed = ast.literal_eval(arguments)
    assert isinstance(parsed, list), f"not in exec form: {arguments}"
    return [str(item) for item in parsed]


def one(stage: list[Instruction], word: str) -> str:
    [arguments] = [rest for name, rest in stage if name == word]
    return arguments


def test_two_stages_on_a_slim_python() -> None:
    steps = instructions()
    froms = [rest for word, rest in steps if word == "FROM"]
    assert len(froms) == 2
    base = one(steps, "ARG").split("=", 1)[1]
    assert re.fullmatch(r"python:3\.1[1-9]-slim(-\w+)?", base), base
    assert froms == ["${PYTHON_IMAGE} AS build", "${PYTHON_IMAGE} AS runtime"]
    # the runtime stage takes the virtualenv and nothing of the source
    copies = [rest for word, rest in final_stage() if word == "COPY"]
    assert copies == ["--from=build /opt/countersign /opt/countersign"]


def test_the_build_installs_every_package_and_no_extras() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    found = project["tool"]["setuptools"]["packages"]["find"]["include"]
    packages = [name.rstrip("*") for name in found]
    copies = [rest for word, rest in instructions() if word == "COPY" and "--from" not in rest]
    copied = {rest.split()[0] for rest in copies}
    assert set(packages) <= copied, f"not copied into the build: {set(packages) - copied}"
    # the server's own dependency on the agent's side is installed from this source, in the same
    # command: never a package of that name from an index
    assert "client" in copied
    installs = [
        rest for word, rest in instructions() if word == "RUN" and "pip install ./client ." in rest
    ]
    assert installs, "both distributions are installed with `pip install ./client .`"
    assert not re.search(r"pip install [^&]*\[", installs[0]), "extras are not installed"


def test_it_runs_as_an_unprivileged_user() -> None:
    stage = final_stage()
    user = one(stage, "USER").split(":")[0]
    assert user not in {"root", "0"}
    created = one(stage, "RUN")
    assert f"useradd --system --uid 10001 --gid {user}" in created
    assert "--shell /usr/sbin/nologin" in created


def test_it_serves_on_all_addresses_of_its_container_on_the_exposed_port() -> None:
    stage = final_stage()
    assert exec_form(one(stage, "ENTRYPOINT")) == ["countersign"]
    command = exec_form(one(stage, "CMD"))
    assert command[:3] == ["serve", "--host", "0.0.0.0"]
    assert one(stage, "EXPOSE") == command[command.index("--port") + 1] == "8080"


def test_no_secret_is_baked_into_the_image() -> None:
    text = DOCKERFILE.read_text(encoding="utf-8")
    assert not re.search(r"xox[abp]-|xapp-", text)
    for word, rest in instructions():
        if word in {"ENV", "ARG"}:
            names = re.findall(r"([A-Z_][A-Z0-9_]*)=", rest)
            assert not [n for n in names if re.search(r"PASSWORD|SECRET|TOKEN|KEY", n)], rest
    ignored = IGNORE.read_text(encoding="utf-8").split()
    expected = {".git", ".venv", "**/*.sqlite*", "deploy/.env", "deploy/countersign.env"}
    assert expected <= set(ignored)


class _Answers(BaseHTTPRequestHandler):
    status = 200

    def do_GET(self) -> None:
        self.send_response(self.status if self.path == "/healthz" else 404)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[HTTPServer]:
    httpd = HTTPServer(("127.0.0.1", 0), _Answers)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def health_check_on(port: int) -> int:
    """Run the image's HEALTHCHECK command against ``port``; its exit code."""
    stage = final_stage()
    check = one(stage, "HEALTHCHECK")
    assert "--start-period=" in check and "--interval=" in check
    command = exec_form(check[check.index("CMD ") + 4 :])
    assert command[:2] == ["python", "-c"]
    code = command[2].replace("127.0.0.1:8080", f"127.0.0.1:{port}")
    assert code != command[2], "the check asks the port the server listens on"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=30).returncode


def test_health_check_passes_while_healthz_answers_200(server: HTTPServer) -> None:
    _Answers.status = 200
    assert health_check_on(server.server_address[1]) == 0


def test_health_check_fails_when_the_server_errs_or_is_gone(server: HTTPServer) -> None:
    _Answers.status = 503
    assert health_check_on(server.server_address[1]) != 0
    port = server.server_address[1]
    server.shutdown()
    server.server_close()
    assert health_check_on(port) != 0
