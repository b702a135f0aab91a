# Two commands for a new user: `make demo` and `make test`.  Everything they need is
# installed here from the committed lock (uv.lock) into .venv; nothing is installed globally.
# The workspace holds two distributions: tfjob-provider (this folder) and tfjob-sandbox
# (tfjob-sandbox/); the demo (demo/) belongs to neither.

PYTHON ?= python3
UV_VERSION := 0.13.9
VENV := .venv
BIN := $(VENV)/bin
# Use a working uv from PATH when there is one, else a private copy in .tools (bootstrapped with pip).
UV := $(or $(shell uv --version >/dev/null 2>&1 && command -v uv),.tools/bin/uv)
PYTEST_ARGS ?=
LINTED := conftest.py tfjob_provider tfjob-sandbox/tfjob_sandbox tfjob-sandbox/tests demo tests benchmarks example_dags vulture_allowlist.py
# The sandbox's "image" for the real-TensorFlow trainer: a second venv, apart from Airflow's, from
# its own lock (pinned tensorflow-cpu and every dependency, with hashes).
VENV_TF := .venv-tf
TF_LOCK := example_dags/trainer/requirements-tf.lock
# The Kubeflow Training SDK, a peer that benchmarks/bench_peers.py measures: a venv of its own
# (it pins its own kubernetes client), from a hashed lock. Not needed by make test.
VENV_SDK := .venv-sdk
SDK_LOCK := benchmarks/peers/requirements-sdk.lock

.PHONY: install venv-tf venv-sdk test test-unit test-tier lint typecheck demo demo-tf dist clean

install: $(VENV)/.installed

.tools/bin/uv:
	$(PYTHON) -m venv .tools
	.tools/bin/pip install --quiet "uv==$(UV_VERSION)"

# --compile-bytecode: every process of the suite (Airflow's CLI, child DAG runs, the full stack's
# components, pod processes) reads .pyc files instead of compiling Airflow and the Kubernetes client
# from source each time, which it would do where PYTHONDONTWRITEBYTECODE is set (docs/adr/0041).
$(VENV)/.installed: pyproject.toml tfjob-sandbox/pyproject.toml uv.lock | $(UV)
	$(UV) sync --frozen --all-packages --compile-bytecode --python "$$(command -v $(PYTHON))"
	touch $@

venv-tf: $(VENV_TF)/.installed

# Recreated from scratch when the lock changes (uv pip sync removes what the lock no longer names).
$(VENV_TF)/.installed: $(TF_LOCK) | $(UV)
	rm -rf $(VENV_TF)
	$(UV) venv --quiet --python "$$(command -v $(PYTHON))" $(VENV_TF)
	$(UV) pip sync --quiet --require-hashes --compile-bytecode --python $(VENV_TF)/bin/python $(TF_LOCK)
	touch $@

venv-sdk: $(VENV_SDK)/.installed

$(VENV_SDK)/.installed: $(SDK_LOCK) | $(UV)
	rm -rf $(VENV_SDK)
	$(UV) venv --quiet --python "$$(command -v $(PYTHON))" $(VENV_SDK)
	$(UV) pip sync --quiet --require-hashes --compile-bytecode --python $(VENV_SDK)/bin/python $(SDK_LOCK)
	touch $@

# ruff, the import-layer contracts, and vulture: code of the product that nothing in the product
# uses (only tests, or nothing) is reported; reviewed exceptions are in vulture_allowlist.py.
lint: install
	$(BIN)/ruff check $(LINTED)
	$(BIN)/ruff format --check $(LINTED)
	$(BIN)/lint-imports
	$(BIN)/vulture tfjob_provider vulture_allowlist.py

typecheck: install
	$(BIN)/mypy

# The real-TensorFlow tests run the trainer with .venv-tf's interpreter: make test creates it.
test: lint typecheck venv-tf browser
	TFJOB_REQUIRE_BROWSER=1 $(BIN)/python -m pytest $(PYTEST_ARGS)

# The fast loop: the pure core, the kube layer and the unit tests (no sandbox, no Airflow run), with
# a tenth of the Hypothesis examples and a per-test timeout; the unit tests that start a fresh
# interpreter are marked slow and left to make test. Under a minute on 2 cores.
test-unit: install
	$(BIN)/python -m pytest tests/unit -m "not slow" -q -p no:cacheprovider --hypothesis-profile=fast --timeout=30 $(PYTEST_ARGS)

# One tier of the suite, without lint: make test-tier TIER=sandbox (unit, sandbox, airflow, examples,
# realtf, browser, e2e, packaging, docs; the tiers are set from the folders in conftest.py).
TIER ?= unit
test-tier: install venv-tf
	$(BIN)/python -m pytest -m "$(TIER)" $(PYTEST_ARGS)

demo: install
	$(BIN)/python -m demo

# The same demo with real TensorFlow in every replica: .venv-tf's interpreter runs the trainer.
demo-tf: install venv-tf
	$(BIN)/python -m demo --tf-python $(VENV_TF)/bin/python

# Wheel and sdist of both distributions (tfjob-provider, tfjob-sandbox) into dist/, then their
# metadata and README rendering (twine, offline) and their contents (tests/packaging/distributions.py:
# the provider's wheel holds the provider only).
dist: install
	rm -rf dist
	$(UV) build --all-packages --out-dir dist
	$(BIN)/twine check --strict dist/*.whl dist/*.tar.gz
	$(BIN)/python -m tests.packaging.distributions dist

clean:
	rm -rf $(VENV) $(VENV_TF) $(VENV_SDK) .tools .pytest_cache .mypy_cache .ruff_cache dist

.PHONY: browser screenshots

# Debian's chromium and chromium-driver, which the TFJob tab's browser tests drive (docs/guides/ui.md).
# Installed with apt-get, as root, when missing; make test needs them and fails without them.
browser:
	@if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then \
		if [ "$$(id -u)" != 0 ]; then \
			echo "make browser: as root, run: apt-get install -y chromium chromium-driver" >&2; exit 1; \
		fi; \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium chromium-driver; \
	fi

# The TFJob tab's pictures (docs/images/tfjob-tab-*.png), taken by its real-browser test.
screenshots: install browser
	TFJOB_REQUIRE_BROWSER=1 TFJOB_TAB_SCREENSHOTS=docs/images $(BIN)/python -m pytest -q -p no:cacheprovider \
		tests/integration/test_ui_browser_tab.py

# Where PYTHONDONTWRITEBYTECODE is set, every process the suite starts would compile this
# repository's modules (and pytest would rewrite every test module) again; the .pyc files go to the
# git-ignored __pycache__ folders (docs/adr/0041).
unexport PYTHONDONTWRITEBYTECODE
