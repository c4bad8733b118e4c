# Two commands do all set-up: `make demo` and `make test` (each creates .venv on first use).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-fast test-slow bench lint clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[test]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/floe demo

# Everything but the slow tests (Iceberg Java interop, crash and cluster runs, the README's Spark blocks in
# fresh processes): under 15 minutes on 2 cores.
test: $(STAMP)
	$(BIN)/python -m pytest -n 2 --dist loadfile -q -m "not slow" tests

# No Spark or Java at all: spec, metadata, commits, scans, catalogs, SQL parsing (under two minutes on 2 cores).
# A test that starts Spark or Java (also in a subprocess) is marked spark; one that runs for long, slow.
test-fast: $(STAMP)
	$(BIN)/python -m pytest -n 2 -q -m "not spark and not slow" tests

# Iceberg Java (jsql) interop and parity records, crash safety, local-cluster runs, the README's Spark blocks.
test-slow: $(STAMP)
	$(BIN)/python -m pytest -n 2 --dist loadfile -q -m slow tests

lint: $(STAMP)
	$(BIN)/pip install --quiet -e ".[test,lint]"
	$(BIN)/python -m ruff check floe tests bench
	$(BIN)/python -m mypy floe

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
