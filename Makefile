# Thin targets: each one command. `make demo` and `make test` are the README's quickstart.
PYTHON ?= python3
VENV ?= .venv
BIN = $(VENV)/bin

.PHONY: install vllm-env demo test test-unit lint stack-up stack-down benchmark

install: $(VENV)/.installed

# Re-installs when pyproject.toml changes. torch==2.13.0 is the CPU wheel (see docs/design/versions.md).
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV) && $(BIN)/pip install -q -e ".[dev]" && touch $@

# vLLM in its own environment (its fastapi pin conflicts with Prefect's): ~3.4 GB, CPU build.
vllm-env: install
	bash scripts/install_vllm_env.sh

demo: install
	$(BIN)/breadth run

test: install
	$(BIN)/pytest -q

test-unit: install
	$(BIN)/pytest -q -m "not integration"

lint: install
	$(BIN)/ruff check src tasks flows tests benchmarks

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
