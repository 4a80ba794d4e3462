# Set-up and entry points. Every target creates and fills .venv if needed.
# torch is installed first, pinned to the CPU build on this machine's disk, so that
# no multi-GB CUDA build is pulled; everything else follows from pyproject.toml.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.icml26-installed
PYTEST_ARGS ?=

.PHONY: install run report test test-slow clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e ".[all,test]"
	touch $(STAMP)

install: $(STAMP)

## The main job: every implemented reproduction (quick setting), then the report.
run: $(STAMP)
	$(BIN)/icml26 run all --quick; status=$$?; $(BIN)/icml26 report && exit $$status

report: $(STAMP)
	$(BIN)/icml26 report

## The default test run (under 15 minutes on 2 cores).
test: $(STAMP)
	$(BIN)/python -m pytest -m "not slow" -q $(PYTEST_ARGS)

## Whole reproductions and long trainings.
test-slow: $(STAMP)
	$(BIN)/python -m pytest -m slow -q $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info .pytest_cache
