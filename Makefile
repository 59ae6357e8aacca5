# The two commands of the README: `make run` and `make test`. Both create .venv on first use.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# PyTorch's CPU build goes in first so that the project's `torch` requirement is already met
# and pip never pulls a multi-gigabyte CUDA build onto a machine with no GPU. Elsewhere, point
# TORCH_INDEX at PyTorch's CPU wheel index (pip's --index-url) if PyPI offers only CUDA builds.
TORCH_SPEC ?= torch==2.13.0
TORCH_INDEX ?=
RUN_STAMP := $(shell date -u +%Y%m%d-%H%M%S)
RUN_OUT ?= runs/$(RUN_STAMP)
PYTEST_ARGS ?=

.PHONY: run test lint manual clean ray

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX)) "$(TORCH_SPEC)"
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $@

# The `standard` suite's tasks (every task but the tile platform's, save four; tasks/suites.toml)
# that the devices here can run, with the built-in agents that need no model or key. autotune
# at 5 judge calls a task: every 5-point knob grid whole, and on the two decoder blocks the
# choice its default 8 calls make, 3 judgments sooner (docs/agents.md says what it adds).
run: $(VENV)/.installed
	$(VENV)/bin/gauntlet run --suite standard --out $(RUN_OUT) --parallel 2 \
		--agent baseline --agent expert --agent autotune:calls=5
	$(VENV)/bin/gauntlet report $(RUN_OUT)

# --dist loadgroup: the Ray engine's tests (xdist_group "ray") share one pytest worker, so the
# session starts one local Ray.
test: $(VENV)/.installed
	bash scripts/test_setup.sh
	$(VENV)/bin/ruff check src tests
	$(VENV)/bin/mypy
	$(PY) -m pytest -n 2 --dist loadgroup $(PYTEST_ARGS)

# The Ray engine (`gauntlet run --engine ray`) into .venv; `make test` installs it too (dev extra).
ray: $(VENV)/.installed
	$(PY) -m pip install --quiet -e ".[ray]"

manual: $(VENV)/.installed
	$(PY) -m gauntlet.accel --write

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check src tests
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

# The real CLI agents, for the tests that drive them (tests/agents/test_real_clients.py) and
# for `--agent claude-code|codex|aider` without a global install: Claude Code and Codex CLI from
# npm under .clients/node_modules, aider in its own virtual environment .clients/aider.
CLIENTS ?= .clients
.PHONY: clients
clients:
	npm install --prefix $(CLIENTS) --no-fund --no-audit --loglevel error \
		@anthropic-ai/claude-code @openai/codex
	$(PYTHON) -m venv $(CLIENTS)/aider
	$(CLIENTS)/aider/bin/python -m pip install --quiet --upgrade pip
	$(CLIENTS)/aider/bin/python -m pip install --quiet aider-chat
