# Two commands set everything up on a fresh machine: `make run` and `make test`.
# `make test` also installs what the suite needs outside Python (scripts/test-deps.sh: Chromium, PostgreSQL, Redis).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/pip install --quiet --disable-pip-version-check
# uv (installed with pip) installs the pinned set from the same sources as pip in ~20 s (pip: ~550 s on a clean
# clone): scripts/uv_install.py hands it pip's configuration (index, extra indexes, find-links, constraints).
UV := $(BIN)/uv
INSTALL := $(BIN)/python scripts/uv_install.py
# uv does not compile the libraries' bytecode (27,500 files: 200-350 s on two cores); Python compiles what is imported,
# on first import, and keeps it here for the next process, even where PYTHONDONTWRITEBYTECODE is set (as on this
# project's machines, where nothing would ever be written and every process would compile torch again). .ci/run keeps
# them outside the clone, as it keeps mypy's cache (docs/operations.md, "CI time").
export PYTHONDONTWRITEBYTECODE :=
PYTHONPYCACHEPREFIX ?= $(abspath $(VENV))/pycache
export PYTHONPYCACHEPREFIX
RUNTIME := $(VENV)/.installed-runtime
STAMP := $(VENV)/.installed
# Two stamps, each newer than pyproject.toml and setup.py once its install is done: RUNTIME for the product alone
# (`make run`: no test extra, no torch), STAMP for the product with the test extra (`make test`, lint, bench).
# The test install holds the runtime, so it stamps both: `make run` after `make test` installs nothing more.

# `make lint`: ruff (style, imports, formatting) and mypy (types), configured in pyproject.toml.
.PHONY: install run lint test test-fast bench bench-properties clean

$(UV):
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) uv==0.13.8

$(RUNTIME): pyproject.toml setup.py | $(UV)
	$(INSTALL) -e .
	touch $(RUNTIME)

$(STAMP): pyproject.toml setup.py | $(UV)
	$(INSTALL) -e '.[test]'
	touch $(RUNTIME) $(STAMP)

install: $(STAMP)

# `make run` keeps its data in the checkout's var/ (the CLI's default is the user's data directory).
run: $(RUNTIME)
	TDA_DATA_DIR=$${TDA_DATA_DIR:-var} $(BIN)/tda demo
	TDA_DATA_DIR=$${TDA_DATA_DIR:-var} $(BIN)/tda serve

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy --num-workers 2  # both cores: a cold check 116 -> 96 s (.ci/run keeps a warm cache: MYPY_CACHE_DIR)

# `make test` runs on three workers, a test file per worker at a time (its module fixtures stay with it), or a folder
# whose tests share servers (tests/conftest.py, SHARED_SERVERS), the longest first (LONGEST_FIRST). Three on CI's two
# cores: a worker spends a quarter to a third of its time waiting (on the servers, browser and interpreters its tests
# start, and their sleeps), which the third fills (docs/operations.md, "CI time", session 51). Both targets keep the
# tests' temporary files in memory when the machine has room (scripts/in-memory-tmp.sh: no test waits on fsyncs).
test: $(STAMP)
	BIN=$(BIN) scripts/test-deps.sh
	scripts/in-memory-tmp.sh $(BIN)/python -m pytest -n 3 --dist loadfile --no-loadscope-reorder --durations=30

# `make test-fast`: the component and the built-in modules alone (no server, database server or browser; ~1 min).
test-fast: $(STAMP)
	scripts/in-memory-tmp.sh $(BIN)/python -m pytest -q tests/test_*.py tests/modules_builtin

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
	$(BIN)/python bench/projects_bench.py
	$(BIN)/python bench/conversation_bench.py
	BENCH_IN_TURNS=1 BENCH_TYPES=conversation_first,balanced $(BIN)/python bench/conversation_bench.py
	BENCH_DATA=varied BENCH_TYPES=conversation_first,balanced $(BIN)/python bench/conversation_bench.py
	BENCH_DATA=varied BENCH_IN_TURNS=1 BENCH_TYPES=conversation_first,balanced $(BIN)/python bench/conversation_bench.py
	BENCH_DATA=fresh BENCH_TYPES=conversation_first,balanced $(BIN)/python bench/conversation_bench.py
	BENCH_DATA=fresh2 BENCH_TYPES=conversation_first,balanced $(BIN)/python bench/conversation_bench.py
	BENCH_DATA=assistant BENCH_TYPES=conversation_first,balanced $(BIN)/python bench/conversation_bench.py
	BENCH_DATA=fresh4 BENCH_TYPES=conversation_first,balanced $(BIN)/python bench/conversation_bench.py
	BENCH_DATA=fresh5 BENCH_TYPES=conversation_first,balanced $(BIN)/python bench/conversation_bench.py
	BENCH_DATA=fresh6 BENCH_TYPES=conversation_first,balanced $(BIN)/python bench/conversation_bench.py
	BENCH_DATA=fresh7 BENCH_TYPES=conversation_first,balanced $(BIN)/python bench/conversation_bench.py
	BENCH_DATA=fresh8 BENCH_TYPES=conversation_first,balanced $(BIN)/python bench/conversation_bench.py
	$(BIN)/python bench/abstention_bench.py
	$(BIN)/python bench/demo_turn_bench.py
	$(BIN)/python bench/long_session_bench.py
	$(BIN)/python bench/agent_shapes_bench.py
	$(BIN)/python bench/launch_bench.py
	$(BIN)/python bench/launch_bench.py --mock
	$(BIN)/python bench/in_process_bench.py
	$(BIN)/python bench/unsent_bench.py
	$(BIN)/python bench/big_request_bench.py
	$(BIN)/python bench/experiment_bench.py

bench-properties: $(STAMP)
	$(BIN)/python bench/property_bench.py --cases 100000

clean:
	rm -rf $(VENV) var .pytest_cache .hypothesis
