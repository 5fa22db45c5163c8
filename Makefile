# Two commands on a fresh machine with only python3 and make: `make run` and `make test`.
# Each bootstraps .venv (uv installed into it with pip, then `uv sync` from uv.lock) and does nothing more
# on a second call: the stamp files record that the venv matches the lock.

SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
UV := $(VENV)/bin/uv
UV_VERSION := 0.13.8
STORE ?= data/store
PORT ?= 8501
HOST ?= 127.0.0.1
DEFAULT_PRESET ?= llama3-405b
PYTEST_ARGS ?=

export UV_PYTHON_DOWNLOADS := never
export UV_PROJECT_ENVIRONMENT := $(VENV)
# Packages installed with their bytecode: where PYTHONDONTWRITEBYTECODE is set, Python never writes it, and every
# `goodput` command and server start compiled streamlit, polars and plotly again (import 0.8 s instead of 0.35 s,
# the dashboard's 1.6 s instead of 0.6 s, on 2 cores: issue 28). The project's own modules are compiled by `run`.
export UV_COMPILE_BYTECODE := 1

.PHONY: run test lint bench clean-store help

help:
	@echo "make run    install what is missing, build the default store if absent, serve http://localhost:$(PORT)"
	@echo "make test   install what is missing (every extra), lint, run every test"
	@echo "make bench  run the speed budgets in bench/"

$(PY):
	python3 -m venv $(VENV)

$(UV): | $(PY)
	$(PY) -m pip install --quiet --disable-pip-version-check "uv==$(UV_VERSION)"

$(VENV)/.synced-run: uv.lock pyproject.toml | $(UV)
	$(UV) sync --frozen --inexact --no-dev --quiet
	@touch $@

$(VENV)/.synced-test: uv.lock pyproject.toml | $(UV)
	$(UV) sync --frozen --inexact --all-extras --quiet
	@touch $@ $(VENV)/.synced-run

run: $(VENV)/.synced-run
	@$(PY) -m compileall -q engine dashboard >/dev/null
	@if ! ls $(STORE)/runs/*.duckdb >/dev/null 2>&1; then \
		echo "building the default store ($(DEFAULT_PRESET)) in $(STORE)"; \
		$(VENV)/bin/goodput simulate --preset $(DEFAULT_PRESET) --name "$(DEFAULT_PRESET) (default)" --store $(STORE); \
	fi
	$(VENV)/bin/goodput dashboard --store $(STORE) --port $(PORT) --host $(HOST)

lint: $(VENV)/.synced-test
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/hadolint Dockerfile

# The load test (marker `load`: 20 Chromium sessions against one server, health within 2 s) runs alone after
# the rest, so the other tests' work on this 2-core machine is not what it measures.
test: lint
	$(PY) -m pytest -n 2 --dist loadgroup -m "not load" $(PYTEST_ARGS)  # loadgroup: one Slurm at a time
	$(PY) -m pytest -m load $(PYTEST_ARGS) || [ $$? -eq 5 ]  # 5: PYTEST_ARGS chose no load test

bench: $(VENV)/.synced-test
	$(PY) bench/run_all.py

clean-store:
	rm -rf $(STORE)
