# lkm — common tasks. `make demo` and `make test` are the README's two set-up commands.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
LKM    := $(BIN)/lkm
# The read-only dataset mirror used by tests and reproductions.
export LKM_DATA_DIR ?= $(abspath ../shared/datasets)
# `make reproduce-* LOCKED=1`: install the exact package versions of requirements.lock first.
LOCK   := requirements.lock
ENV    := $(if $(LOCKED),install-locked,install)

.PHONY: help install install-locked lock docs docs-figures docs-check demo test test-slow typecheck check-shipped lint benchmark benchmark-smoke bench bench-large bench-scaling bench-cost bench-cluster bench-cli reproduce reproduce-smoke report report-snapshot reproduce-lpl reproduce-lpl-smoke reproduce-npps reproduce-npps-smoke reproduce-npps-mnist-large reproduce-lrr reproduce-lrr-smoke reproduce-cevikalp reproduce-cevikalp-smoke reproduce-prls reproduce-prls-smoke clean

help:  ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

$(BIN)/activate:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/activate
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

install: $(VENV)/.installed  ## create .venv and install lkm with test tools

$(VENV)/.locked: $(LOCK) pyproject.toml | $(BIN)/activate
	$(BIN)/python -m pip install --quiet -r $(LOCK)
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $@ $(VENV)/.installed

install-locked: $(VENV)/.locked  ## install the pinned versions of requirements.lock (what LOCKED=1 does)

lock: install  ## rewrite requirements.lock from .venv (pip freeze --exclude-editable)
	{ echo "# Package versions for the reproductions (Python $$($(BIN)/python -c 'import platform; print(platform.python_version())'), $$(uname -sm))."; \
	  echo "# \`make lock\` rewrites it from .venv; \`make reproduce-* LOCKED=1\` installs from it."; \
	  $(BIN)/python -m pip freeze --exclude-editable; } > $(LOCK)

demo: install  ## run the embedded default (offline data) and write results/quickstart/
	$(LKM) run configs/quickstart.yaml --jobs 2

# compileall: the suite starts a few hundred Python processes (lkm commands, their workers);
# with PYTHONDONTWRITEBYTECODE set, each would compile lkm's modules anew (~0.5-1 s of CPU).
# Beside mypy's single thread: compile_kernels fills numba's cache once (~30 s of CPU)
# instead of in every test process and fit worker that first needs a kernel, then a
# collect-only pass writes pytest's rewritten test modules (PYTHONDONTWRITEBYTECODE would
# have each pytest worker rewrite all of them again, ~5 s; its errors show in the real run).
test: install  ## type-check lkm/ (mypy), then run the test suite but its `slow` tests (what CI runs; uses the dataset mirror in $$LKM_DATA_DIR)
	$(BIN)/python -m compileall -q lkm
	{ $(BIN)/python scripts/compile_kernels.py && \
	  { PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -q --collect-only -m "not slow" -p no:cacheprovider > /dev/null || true; }; } & \
	warm=$$!; $(BIN)/mypy; typed=$$?; wait $$warm && exit $$typed
	$(BIN)/python -m pytest -q -n 2 -m "not slow" --durations=30

test-slow: install  ## the `slow` tests alone: full-size versions of checks `make test` runs small (the wheel's full report and lpl reproduction, kill -9 at three points, ...)
	$(BIN)/python -m compileall -q lkm
	$(BIN)/python scripts/compile_kernels.py
	$(BIN)/python -m pytest -q -n 2 -m slow --durations=30

typecheck: install  ## mypy over lkm/ (strict on lkm.methods, lkm.spec, lkm.engine; pyproject.toml [tool.mypy])
	$(BIN)/mypy

check-shipped: install  ## re-fit every shipped record a solver route touches (PRLS/PLapRLS, SVM-KNN, the SVM everywhere), label for label (~1 h 30 min)
	$(BIN)/python -m pytest -q -n 2 -m shipped_refit --refit-shipped

lint: install  ## static checks
	$(BIN)/ruff check lkm tests scripts
	$(BIN)/lint-imports
	$(BIN)/mypy

bench: install  ## speed ratios against reference libraries (one spambase fold)
	$(LKM) bench --out results/bench.json

bench-large: install  ## SVM vs SVC at scale (MNIST 3-vs-8, letter, breast cancer idle and with a busy core; MNIST even/odd 20k and 32k), the intelex anchor, approximate neighbours on MNIST (~30 min)
	$(LKM) bench --large --no-tangent --out results/bench_large.json

bench-scaling: install  ## time and memory against n (PL, KernelRidge, LPL, SVM, SVM on intelex, NPPS+SVM, SVC on MNIST and letter; ~1 h): table, slopes, ratios, figure
	$(LKM) bench --scaling --out results/bench_scaling.json --figure docs/figures/speed/scaling.png

bench-cost: install  ## the benchmark's CPU seconds per method and outer fold at 500, 1,000, 2,000 and 5,000 rows (letter, mnist, isolet, spambase; ~50 min): tables, whole-benchmark CPU-hours per cap
	$(LKM) bench --cost --jobs 2 --budget-minutes 48 --out results/bench_cost.json

bench-cluster: install  ## the dask cluster engine (local:2) against --jobs 1 and 2 on a 540-fit sweep: speed-up, overhead per fit (minutes)
	$(LKM) bench --cluster local:2 --out results/bench_cluster.json

bench-cli: install  ## wall time of everyday commands (help, methods, datasets list, a sonar sweep, lkm report): median of 5
	$(BIN)/python scripts/bench_cli.py -n 5

reproduce: $(ENV)  ## every paper, the cross-paper ranking, then the report results/report/index.html (+ report.md); ~3 h cold on 2 cores (71 min before the benchmark, measured 2026-11-26; then the benchmark, 1 h 54 min measured cold 2026-11-30), resumable
	$(LKM) reproduce all --jobs 2

reproduce-smoke: $(ENV)  ## the same with few settings (what CI checks): every output and results/report-smoke/, fast
	$(LKM) reproduce all --smoke --jobs 2

benchmark: $(ENV)  ## the field's benchmark alone: 19 methods on 26 data sets, ranking + pairwise tests in results/cross_paper_summary/; ~1 h 54 min cold on 2 cores (measured 2026-11-30: 3.74 CPU-hours of fits, docs/benchmark.md), resumable
	$(LKM) reproduce benchmark --jobs 2

benchmark-smoke: $(ENV)  ## the benchmark on 3 small sets with tiny grids (seconds); then `lkm compare X --smoke` ranks a method X against it
	$(LKM) reproduce benchmark --smoke --jobs 2

report-snapshot: install  ## the full report from the results that ship with lkm (docs/runs) into results/snapshot-report/: nothing fitted, 25-60 s on 2 cores (3-13 s the second time)
	$(LKM) report --all --results docs/runs --out results/snapshot-report --jobs 2

report: install  ## rebuild results/report/ (index.html, report.md, figures) from the recorded runs; no fitting, seconds
	$(LKM) report --all

reproduce-lpl: $(ENV)  ## Tsuji, Kudo, Tanaka: every table, figure and claim (~12 min cold, seconds when recorded)
	$(LKM) reproduce lpl --jobs 2

reproduce-lpl-smoke: $(ENV)  ## the same with few settings (what CI checks): every output file, fast
	$(LKM) reproduce lpl --smoke --jobs 2

reproduce-npps: $(ENV)  ## Shin, Cho (NPPS): Table 2, Figs. 3, 5-7, kNN invariance and claims
	$(LKM) reproduce npps --jobs 2

reproduce-npps-smoke: $(ENV)  ## the same with few settings (what CI checks)
	$(LKM) reproduce npps --smoke --jobs 2

reproduce-npps-mnist-large: $(ENV)  ## NPPS large-set row: MNIST even vs odd on all 60000 training images (hours; one job, one thread)
	OMP_NUM_THREADS=1 $(LKM) run npps_mnist_even_odd --jobs 1

reproduce-lrr: $(ENV)  ## Li, Chen, Tang (LRR vs RLS): Tables 1-8, Fig. 3, claims with paired tests
	$(LKM) reproduce lrr --jobs 2

reproduce-lrr-smoke: $(ENV)  ## the same with few settings (what CI checks)
	$(LKM) reproduce lrr --smoke --jobs 2

reproduce-cevikalp: $(ENV)  ## Cevikalp et al. (local subspace classifiers): Tables I-II, K sweeps, digit panel, claims
	$(LKM) reproduce cevikalp --jobs 2

reproduce-cevikalp-smoke: $(ENV)  ## the same with few settings (what CI checks)
	$(LKM) reproduce cevikalp --smoke --jobs 2

reproduce-prls: $(ENV)  ## Yang, King, Lyu (PRLS, PLapRLS vs RLS, LapRLS): Fig. 1 toy, Fig. 2 Isolet, Letter and USPS tables, claims
	$(LKM) reproduce prls --jobs 2

reproduce-prls-smoke: $(ENV)  ## the same with few settings (what CI checks)
	$(LKM) reproduce prls --smoke --jobs 2

docs: install  ## build the documentation site (Sphinx) into docs/site/_build/html
	$(BIN)/sphinx-build -W --keep-going -b html docs/site docs/site/_build/html

docs-figures: install  ## snapshot results/ into docs/runs/, then regenerate README's and docs' tables and figures from it
	$(LKM) docs snapshot --results results
	$(LKM) docs build

docs-check: install  ## fail when a table in README.md or docs/ differs from what docs/runs/ gives
	$(LKM) docs check

clean:  ## remove run folders and caches (keeps .venv)
	rm -rf results/*/ .pytest_cache .ruff_cache
