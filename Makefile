# The two set-up commands of the README are `make run` and `make test`; both
# build their own virtualenv in .venv from nothing but python3 and gcc.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# Extra daemon flags for `make run`, e.g. make run ARGS="--addr :9316 --log-level debug"
# (without --addr in ARGS the daemon listens on loopback only)
ARGS ?=
RUN_ADDR := $(if $(findstring --addr,$(ARGS)),,--addr 127.0.0.1:9316)
# Extra pytest arguments for `make test`, e.g. make test PYTEST_ARGS="-k nri -x"
PYTEST_ARGS ?=

.PHONY: run test lint stress-test venv install-test install uninstall proto bench mutation clean docs dashboard

# Bare-metal install (make install / make uninstall, as root): a non-editable virtualenv
# under PREFIX, the unit, and an env file for flags that an upgrade leaves alone.
PREFIX ?= /opt/koordlet
UNIT_DIR ?= /etc/systemd/system
ENV_FILE ?= /etc/default/koordlet
SYSTEMCTL ?= systemctl

# The perf C extension (cffi) compiles against Python.h: Debian ships it in pythonX.Y-dev.
HAS_HEADERS := import os, sys, sysconfig; sys.exit(not os.path.isfile(os.path.join(sysconfig.get_paths()["include"], "Python.h")))

$(PY):
	$(PYTHON) -m venv $(VENV) || { apt-get update -qq && apt-get install -y -qq python3-venv && $(PYTHON) -m venv $(VENV); }
	@$(PYTHON) -c '$(HAS_HEADERS)' || { apt-get update -qq && apt-get install -y -qq \
	  python$$($(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])')-dev; }
	$(PY) -m pip install -q --upgrade pip

# One venv: `make run` installs what the daemon needs, `make test` adds the test tools;
# each sentinel says what is in, so running both in any order installs each set once.
$(VENV)/.installed: $(PY) setup.cfg setup.py pyproject.toml system/_perf_build.py
	$(PY) -m pip install -q -e '.[fast]'
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed
	$(PY) -m pip install -q -e '.[fast,test]'
	touch $@

$(VENV)/.installed-mutation: $(VENV)/.installed-test
	$(PY) -m pip install -q -e '.[mutation]'
	touch $@

venv: $(VENV)/.installed
install-test: $(VENV)/.installed-test

# Idempotent: a second run upgrades the venv in place and keeps the env file.
install:
	$(PYTHON) -m venv $(PREFIX) || { apt-get update -qq && apt-get install -y -qq python3-venv && $(PYTHON) -m venv $(PREFIX); }
	@$(PYTHON) -c '$(HAS_HEADERS)' || { apt-get update -qq && apt-get install -y -qq \
	  python$$($(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])')-dev; }
	$(PREFIX)/bin/pip install -q --upgrade pip
	$(PREFIX)/bin/pip install -q --upgrade '.[fast]'
	install -D -m 0644 systemd/koordlet.service $(UNIT_DIR)/koordlet.service
	test -e $(ENV_FILE) || install -D -m 0644 systemd/koordlet.env $(ENV_FILE)
	-$(SYSTEMCTL) daemon-reload

uninstall:
	-$(SYSTEMCTL) disable --now koordlet.service
	rm -f $(UNIT_DIR)/koordlet.service
	-$(SYSTEMCTL) daemon-reload
	rm -rf $(PREFIX)
	@echo "kept $(ENV_FILE) and /var/lib/koordlet; remove them by hand if wanted"

# Runs the daemon standalone on this host, as deployed (-OO: see systemd/koordlet.service).
# Metrics stay on loopback unless ARGS says otherwise.
run: venv
	PYTHONOPTIMIZE=2 PYTHONPYCACHEPREFIX=$(VENV)/pycache $(VENV)/bin/koordlet $(RUN_ADDR) $(ARGS)

test: lint
	$(PY) -m pytest $(PYTEST_ARGS)

# The whole suite 5 times with 4 CPU-bound loops alongside: it must hold on a busy machine.
stress-test: install-test
	$(PY) tests/stress.py --runs 5 --loops 4 -- $(PYTEST_ARGS)

# Type check (mypy, setup.cfg [mypy]) and lint (ruff, pyproject.toml): part of `make test`.
lint: install-test
	$(VENV)/bin/mypy
	$(VENV)/bin/ruff check .

# README's flag table, from the options' declarations
docs: install-test
	$(PY) -m koordlet.daemon.cli README.md

# The Grafana dashboard over a real run (Debian's prometheus scraping the daemon with two
# pods in real cgroups), drawn into docs/img/dashboard.png; needs root and `prometheus`.
DASHBOARD_PNG ?= docs/img/dashboard.png
DASHBOARD_SECONDS ?= 180
dashboard: install-test
	$(PY) -m pip install -q -e '.[dashboard]'
	KOORDLET_DASHBOARD_PNG=$(DASHBOARD_PNG) KOORDLET_DASHBOARD_SECONDS=$(DASHBOARD_SECONDS) \
	  $(PY) -m pytest -q -p no:cacheprovider tests/deploy/test_dashboard.py

proto: install-test
	$(PY) -m proto.generate

bench: install-test
	$(PY) -m pip install -q -e '.[bench]'
	@for b in bench/*.py; do n=$$(basename $$b .py); [ "$$n" = "__init__" ] && continue; \
	  echo "== $$n"; $(PY) -m bench.$$n || exit 1; done

# Mutation testing (not part of `make test` or CI: it takes minutes per module).
# MODULES=... narrows it, e.g. make mutation MODULES=system/cgroup_codecs.py
MODULES ?=
mutation: $(VENV)/.installed-mutation
	$(PY) -m tests.mutation $(MODULES)

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .hypothesis
