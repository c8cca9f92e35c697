# Two commands set everything up on a fresh machine: `make run` and `make test`.
# `make test` also installs what the suite needs outside Python (scripts/test-deps.sh: Chromium, PostgreSQL, Redis).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install run test bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/tda demo
	$(BIN)/tda serve

test: $(STAMP)
	BIN=$(BIN) scripts/test-deps.sh
	$(BIN)/python -m pytest

bench: $(STAMP)
	$(BIN)/python bench/assembly_bench.py
	$(BIN)/python bench/distillation_bench.py
	$(BIN)/python bench/knowledge_bench.py
	$(BIN)/python bench/service_bench.py

clean:
	rm -rf $(VENV) var .pytest_cache .hypothesis
