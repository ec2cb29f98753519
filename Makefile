# debate-sweep: `make run` runs the quickstart sweep, `make test` runs the tests. Both build .venv first.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup run test test-fast lint clean

setup: $(STAMP)

# Idempotent: reinstalls only when pyproject.toml changes. uv resolves and links in seconds.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check uv
	$(BIN)/python -m uv pip install -q --python $(BIN)/python -e '.[dev]'
	touch $(STAMP)

run: setup
	$(BIN)/sweep run examples/quickstart.yaml

test: setup
	$(BIN)/python -m pytest -q

test-fast: setup
	$(BIN)/python -m pytest -q -m "not ray and not slow"

lint: setup
	$(BIN)/ruff check .
	$(BIN)/mypy

clean:
	rm -rf $(VENV) runs .pytest_cache .mypy_cache .ruff_cache
