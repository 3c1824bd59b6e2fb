# Set-up and everyday targets.  Only Python 3.11+ and make are needed:
# every target creates .venv on first use and installs the package into it.

PYTHON ?= python3
VENV   ?= .venv
VPY    := $(VENV)/bin/python
DEPS   := $(VENV)/.no64-deps
STAMP  := $(VENV)/.no64-installed
# What the installed package is built from: a change reinstalls it.
SOURCES := setup.py $(shell find src -type f \( -name '*.py' -o -name '*.pth' -o -name py.typed \) 2>/dev/null)

# Extra arguments, e.g. `make bench BENCH_ARGS="--layers 12 --repeats 5"`.
BENCH_ARGS ?=
PYTEST_ARGS ?=

.PHONY: all demo test bench bench-emulation clean distclean

all: test

# The environment is built in two steps, each a file target: the dependencies
# (rebuilt when pyproject.toml changes) and the package itself, installed as
# users get it -- not in editable mode, so that its start-up file is in place
# -- and reinstalled whenever a source file changes.
$(DEPS): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "no64 needs Python 3.11 or newer; run make PYTHON=python3.11 (or newer)")'
	$(PYTHON) -m venv $(VENV) || { echo "could not create $(VENV): install the venv module for $(PYTHON) (e.g. the python3-venv package)" >&2; exit 1; }
	$(VPY) -m pip install --quiet --disable-pip-version-check --upgrade pip 'setuptools>=77'
	$(VPY) -m pip install --quiet --disable-pip-version-check '.[test]'
	@touch $@

$(STAMP): $(DEPS) $(SOURCES)
	$(VPY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation --force-reinstall .
	@touch $@

demo: $(STAMP)
	$(VPY) examples/demo.py

test: $(STAMP)
	$(VPY) -m pytest -q -n 2 $(PYTEST_ARGS)

bench: $(STAMP)
	$(VPY) benchmarks/bench_gpt2.py $(BENCH_ARGS)

# Runtime of each emulated 64-bit op kind (policy="exact") against its native
# 64-bit form on the CPU backend, e.g. BENCH_ARGS="--size 1048576 --repeats 5".
bench-emulation: $(STAMP)
	$(VPY) benchmarks/bench_emulation.py $(BENCH_ARGS)

# Remove everything the targets produced except the virtual environment.
clean:
	rm -rf out build dist .pytest_cache src/*.egg-info
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +

# Also remove the virtual environment.
distclean: clean
	rm -rf $(VENV)
