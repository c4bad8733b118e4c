# Two commands do all set-up: `make demo` and `make test` (each creates .venv on first use).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-fast test-slow test-parity-java test-install bench lint clean

$(STAMP): pyproject.toml setup.py floe/serde/_avro_native.c floe/serde/_entries_native.c floe/serde/_inflate_native.c floe/spec/_slots_native.c
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[test]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/floe demo

# Everything but the slow tests (Iceberg Java interop, crash and cluster runs) and the README's Spark blocks (in
# fresh processes, run by test-slow and test-install): under 15 minutes on 2 cores.
test: $(STAMP)
	$(BIN)/python -m pytest -n 2 --dist loadfile -q -m "not slow and not smoke and not smoke_extras" tests

# No Spark or Java at all: spec, metadata, commits, scans, catalogs, SQL parsing (under two minutes on 2 cores).
# A test that starts Spark or Java (also in a subprocess) is marked spark; one that runs for long, slow.
test-fast: $(STAMP)
	$(BIN)/python -m pytest -n 2 -q -m "not spark and not slow" tests

# Iceberg Java (jsql) interop and parity records, crash safety, local-cluster runs, `make demo` as the README
# runs it.
# The README's other blocks run in test-install, from a user's clean install (CI runs both targets).
test-slow: $(STAMP)
	$(BIN)/python -m pytest -n 2 --dist loadfile -q -m "slow and not java_record" -k "not (test_readme and not quick_start)" tests

# Re-runs Iceberg Java on every SQL scenario (tests/spark/parity) and checks its results are the recorded ones
# (about 10 minutes on 2 cores; `make test` checks each record holds its scenario's statements). The jsql fixture
# marks these slow too, so test-slow leaves them out by name.
test-parity-java: $(STAMP)
	$(BIN)/python -m pytest -n 2 -q -m java_record tests/spark/test_sql_parity.py

# A user's install, in a venv of its own: `pip install .` alone (no test extra; pytest is the only other
# package), then the README's blocks and the smoke set (every path running in Spark's Python workers); then
# the extras the README names, and what each makes work. moto's S3 server runs from .venv as a separate
# process; pytest runs from outside the checkout so `import floe` finds the installed copy, not the source.
INSTALL_VENV := .venv-install
IBIN := $(CURDIR)/$(INSTALL_VENV)/bin
INSTALL_ENV := env -u PYTHONPATH FLOE_EXPECT_INSTALLED=1 FLOE_MOTO_PYTHON=$(abspath $(BIN))/python
test-install: $(STAMP)
	rm -rf $(INSTALL_VENV)
	$(PYTHON) -m venv $(INSTALL_VENV)
	$(IBIN)/pip install --quiet --upgrade pip
	$(IBIN)/pip install --progress-bar off .
	$(IBIN)/pip install --quiet pytest
	@! $(IBIN)/python -c "import boto3" 2>/dev/null || { echo "test-install: an extra leaked into pip install ." >&2; exit 1; }
	cd /tmp && $(INSTALL_ENV) $(IBIN)/pytest -q -p no:cacheprovider -k "not quick_start" \
		$(CURDIR)/tests/spark/test_install_smoke.py $(CURDIR)/tests/test_readme.py
	$(IBIN)/pip install --progress-bar off ".[postgres,mysql,s3]"
	cd /tmp && $(INSTALL_ENV) $(IBIN)/pytest -q -p no:cacheprovider $(CURDIR)/tests/spark/test_install_extras.py

lint: $(STAMP)
	$(BIN)/pip install --quiet -e ".[test,lint]"
	$(BIN)/python -m ruff check floe tests bench
	$(BIN)/python -m mypy floe

clean:
	rm -rf $(VENV) $(INSTALL_VENV) .pytest_cache .hypothesis
