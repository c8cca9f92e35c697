# Two commands set everything up on a fresh machine: `make run` and `make test`.
# `make test` also installs what the suite needs outside Python (scripts/test-deps.sh: Chromium, PostgreSQL, Redis).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

# `make lint`: ruff (style, imports, formatting) and mypy (types), configured in pyproject.toml.
.PHONY: install run lint test bench bench-properties clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

# `make run` keeps its data in the checkout's var/ (the CLI's default is the user's data directory).
run: $(STAMP)
	TDA_DATA_DIR=$${TDA_DATA_DIR:-var} $(BIN)/tda demo
	TDA_DATA_DIR=$${TDA_DATA_DIR:-var} $(BIN)/tda serve

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

test: $(STAMP)
	BIN=$(BIN) scripts/test-deps.sh
	$(BIN)/python -m pytest

bench: $(STAMP)
	BIN=$(BIN) scripts/test-deps.sh bench
	$(BIN)/python bench/assembly_bench.py
	$(BIN)/python bench/distillation_bench.py
	$(BIN)/python bench/knowledge_bench.py
	$(BIN)/python bench/service_bench.py
	$(BIN)/python bench/gateway_bench.py
	$(BIN)/python bench/cost_bench.py
	$(BIN)/python bench/footprint.py
	$(BIN)/python bench/recall_bench.py
	$(BIN)/python bench/recall_bench.py --speed
	$(BIN)/python bench/conversation_bench.py

bench-properties: $(STAMP)
	$(BIN)/python bench/property_bench.py --cases 100000

clean:
	rm -rf $(VENV) var .pytest_cache .hypothesis
