# `make sandbox` tries it in a browser; `make serve` runs Countersign; `make test` runs the tests.
# Each sets everything up first.
PYTHON ?= python3
VENV := .venv
CONFIG ?= $(if $(wildcard countersign.toml),countersign.toml,examples/countersign.toml)

.PHONY: sandbox sandbox-screenshot serve test check-config lint

# both distributions, editable: the agent's side (client/, with its integrations) and the server
$(VENV)/.installed: pyproject.toml client/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e './client[mcp,langgraph,openai-agents]' -e '.[test,postgres,dev]'
	touch $@

sandbox: $(VENV)/.installed
	$(VENV)/bin/countersign sandbox --demo

# docs/sandbox.png, photographed from a real run in the Chromium the browser tests use
sandbox-screenshot: $(VENV)/.installed
	$(VENV)/bin/python -m tests.sandbox.screenshot docs/sandbox.png

serve: $(VENV)/.installed
	$(VENV)/bin/countersign --config $(CONFIG) serve

check-config: $(VENV)/.installed
	$(VENV)/bin/countersign --config $(CONFIG) check-config

test: $(VENV)/.installed
	$(VENV)/bin/pytest

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check bot contracts store client tests
	$(VENV)/bin/mypy bot contracts store client/countersign
