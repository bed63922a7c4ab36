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

# The suite runs as five pytest processes, so that no one holds every tier's memory at once (the
# kernels a process compiles stay until it exits): the CPU engine against torch and jax (both
# imported, and the kernels of their policies), the other oracle tests, the engines' tiers (CPU
# engine, NVRTC, the host CUDA tier), the dispatcher and the kernel description (gp.fuse,
# reductions, the owned math library), and everything else. Each prints its own summary; `make test`
# fails if any fails. A folder added to tests/ runs in the last process (tests/concurrency: 8 threads
# racing for 20 cold kernels x 20 rounds, processes sharing one cold cache). Nothing here needs a folder
# outside the repository: tests/oracle/test_conformance.py scores the records in tests/observed (and
# ../shared/oracle's as extra cases, only where it exists).
TEST_TIERS := tests/oracle tests/engines tests/hostcuda tests/dispatch tests/kernel
test: $(STAMP) $(ORACLE)
	$(PY) -m pytest -q tests/oracle/test_cpu_oracle.py
	$(PY) -m pytest -q tests/oracle --ignore=tests/oracle/test_cpu_oracle.py
	$(PY) -m pytest -q tests/engines tests/hostcuda
	$(PY) -m pytest -q tests/dispatch tests/kernel
	$(PY) -m pytest -q $(foreach d,$(TEST_TIERS),--ignore=$(d))

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
