# Thin targets: each one command. `make demo` and `make test` are the README's quickstart.
PYTHON ?= python3
VENV ?= .venv
BIN = $(VENV)/bin

.PHONY: install install-run vllm-env demo test test-unit lint stack-up stack-down benchmark

# install-run: what running needs (`make demo`); install: that plus the dev tools (tests, lint).
# scripts/install.sh uses uv when it can be had, else pip, and takes torch==2.13.0 as the file
# pip picks (the local CPU wheel, see docs/guide/install.md). Each re-runs when
# pyproject.toml changes.
install-run: $(VENV)/.installed-run
install: $(VENV)/.installed

$(VENV)/.installed-run: pyproject.toml scripts/install.sh
	PYTHON=$(PYTHON) bash scripts/install.sh $(VENV) && touch $@

$(VENV)/.installed: $(VENV)/.installed-run
	PYTHON=$(PYTHON) bash scripts/install.sh $(VENV) dev && touch $@

# vLLM in its own environment (its fastapi pin conflicts with Prefect's): ~3.4 GB, CPU build.
vllm-env: install
	bash scripts/install_vllm_env.sh

demo: install-run
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
