# Two commands set everything up on a fresh machine:  make demo  and  make test.
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(CURDIR)/$(VENV)/bin
STAMP  := $(VENV)/.installed
# nbgrader shells out to alembic and Jupyter starts kernels by name: both must find the venv first.
export PATH := $(BIN):$(PATH)
export PYTHONHASHSEED := 0
# make test runs the suite on two pytest workers (pytest-xdist): many tests wait on a browser, a hub or
# a network more than they compute, and one worker left a core idle a third of the time. Each test file
# is one group, the session's grading another (tests/conftest.py); PYTEST_PARALLEL= runs it in one.
PYTEST_PARALLEL ?= -n 2 --dist loadscope --no-loadscope-reorder
# COURSE_LANG=zh_CN: release, demo, lab and hub run the Chinese edition (zh_CN/, README 中文版); empty: English.
COURSE_LANG ?=
ifneq ($(strip $(COURSE_LANG)),)
export COURSE_LANG
endif
LANG_ARG := $(if $(COURSE_LANG),--lang $(COURSE_LANG))

.PHONY: help setup demo test test-fast lab lab-instructor release selfgrade lock train screenshots clean bench bench-grading sandbox-check gpu-check

help:
	@echo "make demo       set up, release and autograde 4 sample submissions, print the grade table (DEMO_ARGS=--full: all)"
	@echo "make test       set up, then run the whole test suite (what CI runs); A=03_yolo_head: one assignment's tests"
	@echo "make lab        JupyterLab on the course, student view (Assignments, Validate)"
	@echo "make lab-instructor   JupyterLab with nbgrader's instructor panels (formgrader)"
	@echo "make release    regenerate release/ from source/ with nbgrader"
	@echo "make selfgrade NB=path/to/notebook.ipynb   grade one filled-in notebook"
	@echo "make train      retrain the small detector's weights (minutes)"
	@echo "make screenshots  retake the README's screenshots (JupyterLab in Chromium)"
	@echo "make lock       rewrite constraints.txt from the current venv"
	@echo "make resolutions  ask PyPI again and rewrite tests/pip_resolutions.json (pip's answers for the pins; make lock calls it)"
	@echo "make bench      grade a synthetic class three ways (nbgrader alone, --jobs 1, --jobs N); BENCH_ARGS=--copies 2"
	@echo "make bench-grading  time plain autograde vs the sandboxed, confirmed pipeline (minutes)"
	@echo "COURSE_LANG=zh_CN make release|demo|lab|hub   the same in the Chinese edition (zh_CN/)"
	@echo "make hub        (root) JupyterHub for a class on this machine, formgrader as its grader service; HUB_ARGS=\"--demo\" demo accounts, \"--roster class.csv\", see docs/deploying.md"
	@echo "make gpu-check  on a CUDA machine: every hidden check's CUDA cases on the references and the samples; skipped without a GPU (GPU_CHECK_ARGS=--assignment 03_yolo_head)"

# The dev extra brings the hub's packages (tests/test_hub.py), pinned apart in hub/constraints-hub.txt so
# that Binder's environment.yml, made from constraints.txt, never replaces Binder's own JupyterHub.
# Every Jupyter server of the venv serves the course's formgrader, never nbgrader's own (whose submission
# page runs a student's script as the instructor): autograder/course_formgrader.py writes the venv's config.
$(STAMP): constraints.txt hub/constraints-hub.txt pyproject.toml autograder/course_formgrader.py
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip>=24"
	$(BIN)/python -m pip install --quiet -c constraints.txt -c hub/constraints-hub.txt -e '.[dev]'
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (course)" >/dev/null
	$(BIN)/python -m autograder.course_formgrader install >/dev/null
	touch $@

setup: $(STAMP) sandbox-check

# Grading runs submissions inside bubblewrap (apt-get install bubblewrap; .ci/run installs it).
sandbox-check:
	@command -v bwrap >/dev/null 2>&1 || echo "WARNING: bubblewrap (bwrap) is not installed: grading will run submissions WITHOUT the sandbox (apt-get install bubblewrap)" >&2

demo: setup
	$(BIN)/python -m autograder demo $(LANG_ARG) $(DEMO_ARGS)

# make test A=03_yolo_head: one assignment's hidden checks, mutants, samples and visible tests only.
test: setup
	$(BIN)/python -m pytest -q $(PYTEST_PARALLEL) $(if $(A),--assignment $(A))

test-fast: setup
	$(BIN)/python -m pytest -q -m "not slow and not browser"

lab: setup
	$(BIN)/python -m autograder.lab $(LANG_ARG) $(LAB_ARGS)

lab-instructor: setup
	$(BIN)/python -m autograder.lab --instructor $(LANG_ARG) $(LAB_ARGS)

release: setup
	$(BIN)/python -m autograder release $(LANG_ARG)

selfgrade: setup
	$(BIN)/python -m autograder selfgrade $(NB)

train: setup
	$(BIN)/python scripts/train_detector.py

bench: setup
	$(BIN)/python -m autograder bench $(BENCH_ARGS)

bench-grading: setup
	$(BIN)/python scripts/bench_grading.py

gpu-check: setup
	$(BIN)/python -m instructor.authoring.gpu_check $(GPU_CHECK_ARGS)

screenshots: setup
	UPDATE_SCREENSHOTS=1 $(BIN)/python -m pytest -q tests/test_browser.py

lock: setup
	{ sed '/^[^#]/,$$d' constraints.txt; $(BIN)/python -m pip freeze --all --exclude-editable | grep -v '^pip==' | grep -viE "^($$(sed -n 's/==.*//p' hub/constraints-hub.txt | sed 's/[-_.]/[-_.]/g' | paste -sd'|'))==" | sed 's/^torch==\(.*\)+cpu$$/torch==\1/'; } > constraints.new && mv constraints.new constraints.txt
	$(BIN)/python scripts/environment_yml.py
	$(MAKE) resolutions

# pip's answers for the pins on Python 3.11-3.13 (PyPI), which tests/test_python_versions.py trusts while
# the pins, its pip command and pip's version are those they were made for.
.PHONY: resolutions
resolutions: setup
	$(BIN)/python tests/test_python_versions.py --record

clean:
	rm -rf $(VENV) submitted autograded feedback gradebook.db grades.csv grading artifacts

# JupyterHub for a class (docs/deploying.md): as root. Everything the hub keeps lives under HUB_PREFIX.
HUB_PREFIX ?= /srv/inplace-hub
HUB_LOCK   ?= --lock-checkout
.PHONY: hub
hub: setup hub/node_modules/.package-lock.json
	@test "$$(id -u)" = 0 || { echo "make hub makes OS accounts and runs JupyterHub as root: sudo make hub" >&2; exit 1; }
	$(BIN)/python -m pip install --quiet -c constraints.txt -c hub/constraints-hub.txt jupyterhub
	$(BIN)/python -m instructor.classroom.hub setup --prefix $(HUB_PREFIX) $(HUB_LOCK) $(LANG_ARG) $(HUB_ARGS)
	cd $(HUB_PREFIX)/state && HUB_PREFIX=$(HUB_PREFIX) $(BIN)/python -m jupyterhub -f $(CURDIR)/hub/jupyterhub_config.py

hub/node_modules/.package-lock.json: hub/package.json hub/package-lock.json
	cd hub && npm ci --no-audit --no-fund
