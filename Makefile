# Two entry points, both self-contained on a fresh machine: `make bench` and `make test`.
# Each creates .venv and installs what it needs; nothing is done by hand.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.gp-installed
ORACLE := $(VENV)/.gp-oracle-installed

.PHONY: test bench lint docs conformance clean

$(STAMP): pyproject.toml setup.py $(wildcard gpupromote/dispatch/fastpath/*.c gpupromote/dispatch/fastpath/*.h)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[test,nvrtc,cuda,plot,dask]"
	touch $(STAMP)

# The real frameworks for the `oracle` value tests (CPU builds; torch 2.13.0 is the pinned CPU wheel).
$(ORACLE): $(STAMP)
	$(PY) -m pip install -q torch==2.13.0 jax jaxlib || echo "oracle frameworks unavailable: oracle tests will skip"
	touch $(ORACLE)

# The suite runs as ten pytest processes, two at a time (tests/run_suite.py: why, and what it prints),
# so that no process holds every tier's memory (the kernels a process compiles stay until it exits):
# the host CUDA tier, the CPU engine (op sweeps; specials, reductions and math helpers), the CUDA
# sources with NVRTC and the caches, gp.fuse with the fuzz, the rest of the dispatcher,
# the CPU engine against torch and jax, the other oracle tests, the kernel description (the owned math
# library), and everything else (a folder added to tests/ runs there). Combinatorial sweeps run their
# lean tier (tests/support/tier.py): `GP_TEST_TIER=full make test` runs every case. Nothing here needs
# a folder outside the repository: tests/oracle/test_conformance.py scores the records in tests/observed
# (and ../shared/oracle's as extra cases, only where it exists).
test: $(STAMP) $(ORACLE)
	$(PY) tests/run_suite.py

bench: $(STAMP)
	$(PY) bench/run.py

# Every policy against the records in tests/observed (gpupromote/tools/conformance.py); a workspace's
# ../shared/oracle records are scored as well where that folder exists, never needed.
conformance: $(STAMP)
	$(PY) -m gpupromote conformance --show 5
	@if [ -d ../shared/oracle/data ]; then $(PY) -m gpupromote conformance --show 5 --data ../shared/oracle/data; fi

lint: $(STAMP)
	$(PY) -m pip install -q ruff
	$(PY) -m ruff check gpupromote tests bench

docs: $(STAMP)
	$(PY) -m gpupromote docs

clean:
	rm -rf $(VENV) .pytest_cache .benchmarks
