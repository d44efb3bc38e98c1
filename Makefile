# Two commands do everything on a fresh machine:  `make demo`  and  `make test`.
# Both create .venv when it is missing and install the project into it.
SHELL := /bin/bash
PY    := .venv/bin/python
BIN   := .venv/bin
# Real MNIST IDX files for development and CI (never copied into the repository).
export FRACSGD_DATA ?= $(shell [ -d ../shared/data/MNIST/raw ] && cd ../shared/data && pwd)
export MPLBACKEND := Agg
export PYTHONHASHSEED := 0

.PHONY: venv install demo test test-nbs test-py check-clean docs chromium bench gpu-check clean sync lab

venv: .venv/.installed

.venv/.installed: setup.py settings.ini
	@test -x $(PY) || python3 -m venv .venv
	$(BIN)/pip install -q --upgrade "pip<27"
	$(BIN)/pip install -q -e ".[dev]"
	$(PY) tools/site.py katex
	@touch $@

install: venv

## The main job: the moons anomalous-diffusion study (paper fig. 1), quick mode.
demo: venv
	$(BIN)/fracsgd run moons-diffusion --quick

## Everything CI checks: clean export, every notebook, and pytest, whose site test opens every page in headless
## Chromium. The docs build runs every code cell of every notebook as nbdev_test does (IN_TEST=1, the notebook's
## folder, test-flagged cells skipped) and fails on the first cell that raises, so it is the notebook test: running
## nbdev_test as well would execute every notebook twice. `make test-nbs` runs nbdev_test alone.
test: venv chromium
	$(MAKE) check-clean
	$(MAKE) docs
	FRACSGD_SITE_DIR=_site $(MAKE) test-py

# nbdev_export and nbdev_clean must not change a clean checkout.
check-clean:
	@before=$$(find nbs fracsgd -type f \( -name '*.ipynb' -o -name '*.py' \) -not -path '*/_proc/*' -print0 | sort -z | xargs -0 sha1sum | sha1sum); \
	$(BIN)/nbdev_export && $(BIN)/nbdev_clean && \
	after=$$(find nbs fracsgd -type f \( -name '*.ipynb' -o -name '*.py' \) -not -path '*/_proc/*' -print0 | sort -z | xargs -0 sha1sum | sha1sum); \
	if [ "$$before" != "$$after" ]; then echo "FAIL: nbdev_export/nbdev_clean changed files: export and clean the notebooks, then commit"; git status --short nbs fracsgd; exit 1; fi; \
	echo "check-clean: nbdev_export and nbdev_clean change nothing"
	$(PY) tools/readme.py --check
	$(PY) tools/pairs.py --check

## Bring every notebook and its percent script in nbs/_scripts/ together (the newer of the two wins), then export.
sync: venv
	$(PY) tools/pairs.py --sync
	$(BIN)/nbdev_export

## JupyterLab on the notebooks (jupytext opens the paired scripts as notebooks too).
lab: venv
	$(BIN)/jupyter lab nbs

test-nbs:
	$(BIN)/nbdev_test --n_workers 1 --timing

# pytest-xdist spreads the tests over the cores (tests/conftest.py keeps the Ray tests on one worker and the site tests
# on one; the groups need pytest < 9.2, see settings.ini): on two cores about 8.5 min (2026-11-27). The 15 slowest
# tests are listed at the end.
test-py:
	$(BIN)/pytest -q -n auto --dist loadgroup --durations=15 tests

## Documentation site into _site/: Quarto when it is on PATH, else the pure-Python renderer.
docs: venv
	$(PY) tools/site.py build

chromium:
	@command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium >/dev/null)

bench: venv
	$(BIN)/fracsgd bench displacement

## On a machine with a GPU: every study's smoke and quick presets on cuda, and the LLC and ensemble benchmarks, into
## results/gpu-check/gpu_check.md (commit it under nbs/bench/ with the card and date). GPU_PY: a Python that has
## the project's packages, e.g. `make gpu-check GPU_PY=python3` on a machine without .venv.
GPU_PY ?= $(PY)
gpu-check:
	$(GPU_PY) tools/gpu_check.py --device cuda --out results/gpu-check

clean:
	rm -rf _docs _proc _site results .pytest_cache
