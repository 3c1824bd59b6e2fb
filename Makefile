# Set-up and everyday targets.  Only Python 3.11+ and make are needed:
# every target creates .venv on first use and installs the package into it.

PYTHON ?= python3
VENV   ?= .venv
VPY    := $(VENV)/bin/python
STAMP  := $(VENV)/.no64-installed

# Extra arguments, e.g. `make bench BENCH_ARGS="--layers 12 --repeats 5"`.
BENCH_ARGS ?=
PYTEST_ARGS ?=

.PHONY: all demo test bench clean distclean

all: test

# The virtual environment is a file target: it is rebuilt only when the stamp
# is missing or older than pyproject.toml.
$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "no64 needs Python 3.11 or newer; run make PYTHON=python3.11 (or newer)")'
	$(PYTHON) -m venv $(VENV) || { echo "could not create $(VENV): install the venv module for $(PYTHON) (e.g. the python3-venv package)" >&2; exit 1; }
	$(VPY) -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(VPY) -m pip install --quiet --disable-pip-version-check -e '.[test]'
	@touch $@

demo: $(STAMP)
	$(VPY) examples/demo.py

test: $(STAMP)
	$(VPY) -m pytest -q -n 2 $(PYTEST_ARGS)

bench: $(STAMP)
	$(VPY) benchmarks/bench_gpt2.py $(BENCH_ARGS)

# Remove everything the targets produced except the virtual environment.
clean:
	rm -rf out build dist .pytest_cache src/*.egg-info
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +

# Also remove the virtual environment.
distclean: clean
	rm -rf $(VENV)
