# Two commands do all set-up: `make demo` and `make test` (each creates .venv on first use).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test bench lint clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[test]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/floe demo

test: $(STAMP)
	$(BIN)/python -m pytest -n 2 --dist loadfile -q tests

lint: $(STAMP)
	$(BIN)/pip install --quiet -e ".[test,lint]"
	$(BIN)/python -m ruff check floe tests bench
	$(BIN)/python -m mypy floe

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
