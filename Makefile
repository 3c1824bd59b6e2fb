# Set-up and everyday targets.  Only Python 3.11+ and make are needed:
# every target creates .venv on first use and installs the package into it.

PYTHON ?= python3
VENV   ?= .venv

# Another JAX release: `make test JAX=0.8.3` (also demo, test-compat, bench)
# builds .venvs/jax0.8.3 with jax/jaxlib 0.8.3 and a Python that release has
# wheels for (3.11 below 0.11, 3.12 from 0.11; JAX_PYTHON=3.13 asks for
# another), found on PATH or through pyenv by tools/find-python.
JAX        ?=
JAX_PYTHON ?=
JAX_PINS   :=
ifneq ($(strip $(JAX)),)
VENV     := .venvs/jax$(strip $(JAX))
PYTHON   := $(shell tools/find-python $(strip $(JAX)) $(JAX_PYTHON) 2>/dev/null || echo MISSING)
JAX_PINS := 'jax==$(strip $(JAX)).*' 'jaxlib==$(strip $(JAX)).*'
endif
VPY    := $(VENV)/bin/python
DEPS   := $(VENV)/.no64-deps
STAMP  := $(VENV)/.no64-installed
DOCS_DEPS := $(VENV)/.no64-docs-deps
# What the installed package is built from: a change reinstalls it.
SOURCES := setup.py $(shell find src -type f \( -name '*.py' -o -name '*.pth' -o -name py.typed \) 2>/dev/null)

# Extra arguments, e.g. `make bench BENCH_ARGS="--layers 12 --repeats 5"`.
BENCH_ARGS ?=
PYTEST_ARGS ?=

.PHONY: all demo test test-quick test-compat test-device device-wheel accuracy test-matrix lint docs bench bench-emulation bench-pairs bench-iree-vulkan clean distclean

all: test

# The environment is built in two steps, each a file target: the dependencies
# (rebuilt when pyproject.toml changes) and the package itself, installed as
# users get it -- not in editable mode, so that its start-up file is in place
# -- and reinstalled whenever a source file changes.
$(DEPS): pyproject.toml
	@test "$(PYTHON)" != MISSING || { tools/find-python $(strip $(JAX)) $(JAX_PYTHON); exit 2; }
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "no64 needs Python 3.11 or newer; run make PYTHON=python3.11 (or newer)")'
	$(PYTHON) -m venv $(VENV) || { echo "could not create $(VENV): install the venv module for $(PYTHON) (e.g. the python3-venv package)" >&2; exit 1; }
	$(VPY) -m pip install --quiet --disable-pip-version-check --upgrade pip 'setuptools>=77'
	$(VPY) -m pip install --quiet --disable-pip-version-check '.[test,lint]' $(JAX_PINS)
	@touch $@

$(STAMP): $(DEPS) $(SOURCES)
	@# a stale build/ would ship modules that no longer exist (a module turned package)
	rm -rf build
	$(VPY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation --force-reinstall .
	@touch $@

demo: $(STAMP)
	$(VPY) examples/demo.py

test: $(STAMP)
	$(VPY) -m pytest -q -n 2 $(PYTEST_ARGS)

# The compatibility subset (tests marked `compat`: the pass, the compile
# hook, no64.jit, export, the audit, the soundness property), e.g. with JAX=.
test-compat: $(STAMP)
	$(VPY) -m pytest -q -n 2 -m compat $(PYTEST_ARGS)

# The device lane (tests/device, marked `device`): a held set of 64-bit
# programs on every path into no64, on whatever device JAX sees (the CPU
# here), against the x64 program on the CPU; prints the table, and writes it
# into DEVICE_LANE_OUT when set. CONTRIBUTING.md says how to run it on a
# machine with an accelerator (tools/device-lane).
test-device: $(STAMP)
	$(VPY) -m pytest -q -m device tests/device $(PYTEST_ARGS)

# The wheel the device lane installs on a machine with an accelerator.
device-wheel: $(STAMP)
	PYTHON=$(VPY) tools/device-lane wheel

# Median / p99 / max ulp per float op of the device's own float64 and of
# no64's pairs on it, e.g. BENCH_ARGS="--n 1000000".
accuracy: $(STAMP)
	$(VPY) benchmarks/accuracy.py $(BENCH_ARGS)

# A quick check beside the full suite (which continuous integration runs):
# the compatibility subset without its two slowest parts, the soundness
# property's sweeps and the audit's runs of whole scripts.
QUICK ?= -m compat -k "not test_strict_acceptance_is_sound and not test_audit"
test-quick: $(STAMP)
	$(VPY) -m pytest -q -n 2 $(QUICK) $(PYTEST_ARGS)

# ruff over the sources, tests, benchmarks, examples and tools, and mypy over
# the packages in src (both configured in pyproject.toml).
lint: $(DEPS)
	$(VPY) -m ruff check src tests benchmarks examples tools
	$(VPY) -m mypy

# The version matrix: the full suite on the oldest and the newest JAX the
# pins admit, the demo and the compatibility subset on every minor release in
# between, each in a virtual environment built from the registry.
MATRIX_FULL   ?= 0.7.0 0.12.0.1
MATRIX_COMPAT ?= 0.8.3 0.9.2 0.11.2:3.13
test-matrix:
	@set -e; for v in $(MATRIX_FULL); do \
	    j=$${v%%:*}; p=$$(echo $$v | sed -n 's/.*://p'); \
	    echo "== jax $$j: demo and full suite"; \
	    $(MAKE) --no-print-directory demo test JAX=$$j JAX_PYTHON=$$p; \
	done; \
	for v in $(MATRIX_COMPAT); do \
	    j=$${v%%:*}; p=$$(echo $$v | sed -n 's/.*://p'); \
	    echo "== jax $$j: demo and compatibility subset"; \
	    $(MAKE) --no-print-directory demo test-compat JAX=$$j JAX_PYTHON=$$p; \
	done

# The documentation's tools, the `docs` extra of pyproject.toml.
$(DOCS_DEPS): $(DEPS)
	$(VPY) -m pip install --quiet --disable-pip-version-check '.[docs]' $(JAX_PINS)
	@touch $@

# The documentation site (mkdocs.yml, docs/) in site/, with warnings as
# errors: a link or anchor that does not resolve, a page left out of the
# navigation, a docstring that does not parse.  The command line's reference
# is read from its parser, so the package is installed first.
docs: $(DOCS_DEPS) $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VPY) -m mkdocs build --strict --site-dir site

bench: $(STAMP)
	$(VPY) benchmarks/bench_gpt2.py $(BENCH_ARGS)

# Runtime of each emulated 64-bit op kind (policy="exact") against its native
# 64-bit form on the CPU backend, e.g. BENCH_ARGS="--size 1048576 --repeats 5".
bench-emulation: $(STAMP)
	$(VPY) benchmarks/bench_emulation.py $(BENCH_ARGS)

# float64 as pairs of f32 (float_policy="pairs") against native f32 and f64
# on the CPU backend, side by side in one run: elementwise ops, a row sum, a
# cumulative sum, matmuls by exact slices and a small program, e.g.
# BENCH_ARGS="--repeats 11 --dots 256 512".
bench-pairs: $(STAMP)
	$(VPY) benchmarks/bench_pairs.py $(BENCH_ARGS)

# no64's words against IREE's own 64-bit emulation on a Vulkan target without
# Int64 (needs the IREE tools and a Vulkan driver; says so and skips without).
bench-iree-vulkan: $(STAMP)
	$(VPY) benchmarks/bench_iree_vulkan.py $(BENCH_ARGS)

# Remove everything the targets produced except the virtual environment.
clean:
	rm -rf out build dist site .pytest_cache .ruff_cache .mypy_cache src/*.egg-info
	find . \( -path ./.venv -o -path ./.venvs \) -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +

# Also remove the virtual environments.
distclean: clean
	rm -rf .venv .venvs $(VENV)
