# One command runs the app (`make run`), one runs the tests (`make test`); both set everything up.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
LOCK    := requirements/lock.txt
export PYTHONDONTWRITEBYTECODE := 1

.PHONY: run demo gui test test-fast test-slow bench fuzz mutation mutation-union proto proto-check setup system lock clean screenshots installer

run: setup
	$(BIN)/archivist demo

demo: run

gui: setup
	$(BIN)/archivist gui

# three pytest-xdist workers on the two cores (each worker has its own SparkSession): one of them runs the tests
# that mostly wait on sockets (tests/conftest.py NETWORK_AREAS) while the other two fill the core it leaves idle
# (docs/QUALITY.md "Three workers"); branch coverage of core/ printed at the end:
# every Python process of the run (children and Spark's workers too) records it with slipcover through the venv's
# archivist_coverage.pth (scripts/coverage_hook.py); scripts/coverage_report.py merges it. The exit code is pytest's.
COVDIR := .coverage-data
DURATIONS ?= 15
XDIST ?= 3
test: setup
	$(BIN)/python proto/generate.py --check
	rm -rf $(COVDIR) && mkdir $(COVDIR)
	ARCHIVIST_COVERAGE_HOOK=$(CURDIR)/scripts/coverage_hook.py ARCHIVIST_COVERAGE_DIR=$(CURDIR)/$(COVDIR) \
	  ARCHIVIST_COVERAGE_CACHE=$(CURDIR)/.coverage-cache \
	  $(BIN)/python -m pytest tests -n $(XDIST) --dist loadgroup --no-loadscope-reorder -p no:slipcover --durations=$(DURATIONS); status=$$?; \
	  $(BIN)/python scripts/coverage_report.py $(COVDIR); exit $$status

test-fast: setup
	$(BIN)/python -m pytest tests/unit -q

# what `make test` skips for its length (marked slow, ARCHIVIST_SLOW=1): the real Spark warm-up and GUI responsiveness
# on a JVM, the four-JVM cluster runs, the large build equality. The window's tests in a process of their own: they
# need one without the pipeline tests' session-wide SparkSession.
test-slow: setup
	ARCHIVIST_SLOW=1 $(BIN)/python -m pytest tests/gui -m slow -q
	ARCHIVIST_SLOW=1 $(BIN)/python -m pytest tests -m slow -q --ignore=tests/gui --ignore=tests/bench

bench: setup
	ARCHIVIST_SLOW=1 $(BIN)/python -m pytest tests/bench -s -q

# every decoder of outside data, 1,000,000 inputs each (ARCHIVIST_FUZZ=N to change); `make test` runs 10,000
fuzz: setup
	ARCHIVIST_FUZZ=$${ARCHIVIST_FUZZ:-1000000} $(BIN)/python -m tests.fuzz.driver

# mutmut on every mutated module in turn, each with its own unit tests (scripts/mutation_module.py MODULES), outside
# the checkout, niced, one child: every mutant is checked (about 45-70 min here); each module's score and minutes go
# to /tmp/archivist-mutation/summary.tsv as it finishes, their sum is printed last; fails when a module is under 85%
# (docs/QUALITY.md).
mutation: setup
	$(BIN)/python scripts/mutation_module.py --all --min 85

# The same mutants with the union of every module's tests ([tool.mutmut] in pyproject.toml), from a fresh mutants/:
# can only kill more, but the functions nearly every test calls make it 3-4 hours here. `$(BIN)/mutmut show NAME`.
mutation-union: setup
	rm -rf mutants
	nice -n 15 $(BIN)/mutmut run --max-children 1
	$(BIN)/python scripts/mutation_score.py --min 85

setup: system $(VENV)/.stamp js-deps

system:
	@bash scripts/setup-system.sh

$(VENV)/.stamp: pyproject.toml $(LOCK) scripts/coverage.pth
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q -c $(LOCK) -e ".[dev]"
	cp scripts/coverage.pth "$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/archivist_coverage.pth"
	touch $@

# js-waku (interop partner for the Waku tests), pinned in tests/interop/js/package-lock.json
js-deps:
	@if [ -f tests/interop/js/package.json ]; then \
	  [ tests/interop/js/node_modules/.package-lock.json -nt tests/interop/js/package-lock.json ] || \
	  (cd tests/interop/js && npm ci --no-audit --no-fund --loglevel=error); fi

proto: $(VENV)/.stamp
	$(BIN)/python proto/generate.py

lock:
	$(BIN)/python -m pip freeze --exclude-editable | grep -v '^archivist' > $(LOCK)

screenshots: setup
	$(BIN)/python scripts/screenshots.py

installer: setup
	$(MAKE) -C installer

.PHONY: appimage
appimage:         # dist/archivist-<version>-x86_64.run: one self-extracting file with its own Python (installer/README.md)
	$(MAKE) -C installer portable

clean:
	rm -rf $(VENV) build dist *.egg-info
