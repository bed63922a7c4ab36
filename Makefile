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

test: $(STAMP) $(ORACLE)
	$(PY) -m pytest -q
	-$(PY) ../shared/tools/conformance.py --show 0

bench: $(STAMP)
	$(PY) bench/run.py

conformance: $(STAMP)
	$(PY) ../shared/tools/conformance.py --show 5
	$(PY) ../shared/tools/conformance.py --show 5 --data tests/observed

lint: $(STAMP)
	$(PY) -m pip install -q ruff
	$(PY) -m ruff check gpupromote tests bench

docs: $(STAMP)
	$(PY) -m gpupromote docs

clean:
	rm -rf $(VENV) .pytest_cache .benchmarks
