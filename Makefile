# decisions: common tasks. `make help` lists them.
.DEFAULT_GOAL := help
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
PYTEST_ARGS ?=
# the ledger's PostgreSQL tests: a throwaway server around each pytest run (fails if it cannot start)
WITH_POSTGRES ?= scripts/postgres.sh run

.PHONY: help
help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

$(VENV)/.installed: pyproject.toml
	@echo "setting up $(VENV) (build and test dependencies) ..."
	@python3 -m venv $(VENV)
	@$(PIP) install --quiet --upgrade pip
	@$(PIP) install --quiet "maturin>=1.5,<2" "pydantic>=2.6" "jsonschema>=4.21" "jsonschema-rs>=0.61" \
	    "pytest>=8" "hypothesis>=6.100" "pytest-benchmark>=4" "orjson>=3.9" "jiter>=0.5" \
	    "openai>=1.40" "anthropic>=0.34" "httpx>=0.27" "mypy>=1.10" "types-jsonschema" "google-genai>=1.0"
	@$(PIP) install --quiet "psycopg[binary]>=3.1" "ruff>=0.6" "import-linter>=2.0"
	@touch $@

.PHONY: venv
venv: $(VENV)/.installed ## create .venv with the build and test dependencies

.PHONY: build
BUILD_FLAGS ?= --release
build: venv ## build the Rust extension into the package (BUILD_FLAGS= for a quick debug build)
	@rm -f python/decisions/_native*.so
	@echo "building the extension ($(if $(BUILD_FLAGS),release,debug)) ..."
	@PIP_QUIET=1 VIRTUAL_ENV=$(abspath $(VENV)) PATH=$(abspath $(VENV))/bin:$$PATH maturin develop $(BUILD_FLAGS) --quiet

.PHONY: cargo-test
cargo-test: ## run the Rust core's tests, and check that the fuzz targets still compile against the core
	cargo test --quiet
	cd fuzz && cargo check --quiet

.PHONY: browser
browser: ## Chromium from the OS packages, for the HTML report's browser tests (installed once, quietly)
	@command -v chromium >/dev/null || { echo "installing chromium (apt) ..."; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

.PHONY: pytest
pytest: build browser ## run the Python suite on the native backend, then with DECISIONS_PURE=1
	$(WITH_POSTGRES) env DECISIONS_REQUIRE_NATIVE=1 $(PY) -m pytest -q $(PYTEST_ARGS)
	$(WITH_POSTGRES) env DECISIONS_PURE=1 $(PY) -m pytest -q $(PYTEST_ARGS)

.PHONY: typecheck
typecheck: build ## mypy --strict on the package, and stubtest of _native.pyi against the built extension
	$(PY) -m mypy --strict python/decisions
	$(PY) -m mypy.stubtest decisions._native --allowlist packaging/stubtest-allowlist.txt

.PHONY: style
style: venv ## formatting and import layers: ruff (check, format), cargo fmt, the import-linter contract
	$(VENV)/bin/ruff check python tests benches packaging fuzz/seeds.py
	$(VENV)/bin/ruff format --check python tests benches packaging fuzz/seeds.py
	cargo fmt --check
	cd fuzz && cargo fmt --check
	PYTHONPATH=python $(VENV)/bin/lint-imports

.PHONY: format
format: venv ## apply ruff (fixes, format) and cargo fmt
	$(VENV)/bin/ruff check --fix python tests benches packaging fuzz/seeds.py
	$(VENV)/bin/ruff format python tests benches packaging fuzz/seeds.py
	cargo fmt
	cd fuzz && cargo fmt

.PHONY: lint
lint: style typecheck clippy ## style, typecheck, then clippy (unwrap/expect/panic/indexing denied in rust/src/core)

.PHONY: wheels
wheels: venv ## the binary wheel (maturin, release), the pure py3-none-any wheel and the runtime dependencies' wheels, into dist/
	VIRTUAL_ENV=$(abspath $(VENV)) PATH=$(abspath $(VENV))/bin:$$PATH maturin build --release --quiet --out dist
	$(PY) packaging/pure/build.py --out dist
	$(PY) packaging/deps.py --out dist
	@ls -1 dist/*.whl

.PHONY: test
test: style cargo-test typecheck pytest ## everything CI runs: style, cargo test, mypy/stubtest, pytest on both backends (incl. the wheels)

.PHONY: demo
demo: build ## the main job: `decisions inspect` over the bundled example recordings (exit 0 = each gave its outcome)
	$(PY) -m decisions

.PHONY: bench
bench: build ## benchmarks: medians side by side, printed as ratios
	$(PY) benches/report.py

# --- hardening: clippy, fuzzing, long property runs ---

.PHONY: clippy
clippy: venv ## clippy on the core (unwrap/expect/panic/indexing denied there) and the binding
	cargo clippy --all-targets --quiet
	PYO3_PYTHON=$(abspath $(PY)) cargo clippy --all-targets --features python --quiet

FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?=
FUZZ_FLAGS ?=
.PHONY: fuzz
fuzz: ## run each cargo-fuzz target for FUZZ_SECONDS (FUZZ_TARGETS= to pick, FUZZ_FLAGS= for libFuzzer); installs cargo-fuzz if missing; summary in fuzz/logs
	FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_FLAGS="$(FUZZ_FLAGS)" fuzz/run.sh $(FUZZ_TARGETS)

MUTATIONS ?= 1000000
.PHONY: test-long
test-long: build ## the native-vs-pure differential tests: long hypothesis profile, MUTATIONS mutated recordings (~30-50 min)
	HYPOTHESIS_PROFILE=long DECISIONS_MUTATIONS=$(MUTATIONS) DECISIONS_REQUIRE_NATIVE=1 $(PY) -m pytest -q -m differential $(PYTEST_ARGS)

MUTATION_MODULES ?=
.PHONY: mutation
mutation: venv ## mutation testing (mutmut, pure backend, one worker) of the guard modules against their own tests (MUTATION_MODULES= to pick; 5-25 min a module on a shared machine, about an hour for openai_chat; equivalents in scripts/mutation-equivalent.txt); not part of `make test`
	$(PIP) install --quiet "mutmut>=3.8,<4"
	$(PY) scripts/mutation.py $(MUTATION_MODULES)

.PHONY: test-memory
test-memory: build ## the 1 GiB adversarial-stream memory run, on both backends
	DECISIONS_REQUIRE_NATIVE=1 $(PY) -m pytest -q -m slow tests/test_resources.py $(PYTEST_ARGS)
