# Two commands on a fresh machine with Python 3.11:  make demo  |  make test
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
DEMO_HOME := .demo-home

.PHONY: demo test check lint fmt bench clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

demo: $(BIN)/.installed  ## index the sample vault in examples/ and search it
	VAULTLENS_HOME=$(DEMO_HOME) $(BIN)/vaultlens index --vault examples/vault
	@grep -v '^\s*$$' examples/demo_queries.txt | while IFS= read -r q; do \
		echo; echo "\$$ vaultlens search \"$$q\" -n 3"; \
		VAULTLENS_HOME=$(DEMO_HOME) $(BIN)/vaultlens search --vault examples/vault -n 3 "$$q"; \
	done

check: $(BIN)/.installed  ## lint and type-check, changing nothing
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy

test: check  ## the whole suite (what CI runs)
	$(BIN)/python -m pytest -q

fmt: $(BIN)/.installed
	$(BIN)/ruff format src tests bench
	$(BIN)/ruff check --fix src tests bench

clean:
	rm -rf $(VENV) $(DEMO_HOME) .pytest_cache .mypy_cache .ruff_cache
