# capproof: `make verify` proves every obligation and contract and checks proofs/;
# `make test` runs the pytest suite. Both create .venv and install on first use.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.capproof-installed
RUN    := .capproof/last-run.json

.PHONY: install verify test test-slow report bench clean

install: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

verify: $(STAMP)
	@mkdir -p .capproof
	$(BIN)/capproof prove --json $(RUN)
	$(BIN)/capproof report --check --from $(RUN)

test: $(STAMP)
	$(BIN)/python -m pytest

test-slow: $(STAMP)
	$(BIN)/python -m pytest -m slow

report: $(STAMP)
	$(BIN)/capproof report

bench: $(STAMP)
	$(BIN)/python benchmarks/bench.py

clean:
	rm -rf .capproof .pytest_cache .hypothesis
