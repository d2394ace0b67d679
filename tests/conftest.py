"""Shared fixtures: one real-nbgrader grading run of every source, release and sample notebook.

Grading is the slow part of the suite, so it happens once per session, as one batch graded on
both cores through the course's own command line (``python -m autograder grade --jobs 2``).
"""
from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from instructor.batch import course  # noqa: E402
from instructor.authoring import samples  # noqa: E402

SOURCE_STUDENT = "zz-source"    # each source notebook, handed in as is: must earn full marks
RELEASE_STUDENT = "zz-release"  # each release notebook, untouched: must earn 0


def _env() -> dict:
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


def pytest_addoption(parser):
    parser.addoption("--assignment", default=None, metavar="NAME",
                     help="only this assignment's tests: its hidden checks, mutants, samples and visible tests "
                          "(make test A=03_yolo_head); the session's grading grades only its notebooks")


def belongs_to(nodeid: str, assignment: str) -> bool:
    """Whether a test is one of ``assignment``'s: its id names the assignment (a parameter such as
    ``[03_yolo_head]`` or ``03_yolo_head/ada``), or it is in the assignment's own file ``test_hidden_aNN.py``."""
    return assignment in nodeid or nodeid.startswith(f"tests/test_hidden_a{assignment[:2]}.py::")


#: The session's grading: the course's own configuration (the repository's nbgrader_config.py) with
#: one cell limit shorter: 25 s a cell instead of 180 (60 for the course's own cells in the confirmation).
#: The slowest honest cell of any sample takes about 5 s with both cores busy, so no score moves; the
#: sample whose ``decode`` never returns (03_yolo_head/endless_decode) then costs a worker about 25 s
#: instead of 60 (tests/test_pipeline.py checks it costs the limit once, not once per run). The
#: course's own limits are tests/test_sandbox.py's.
SESSION_CELL_SECONDS = 25
SESSION_CONFIG = f"c = get_config()  # noqa\nc.Execute.timeout = {SESSION_CELL_SECONDS}\n"


@pytest.fixture(scope="session")
def graded(tmp_path_factory, request) -> dict:
    """{(student, assignment): {"questions": {grade_id: score|None}, "status": str, "workdir": Path}}."""
    root = tmp_path_factory.mktemp("grading")
    jobs = []
    only = request.config.getoption("--assignment")
    for a in course.assignments():
        if only and a != only:
            continue
        for nb in course.source_notebooks(a):
            jobs.append((SOURCE_STUDENT, a, nb))
            jobs.append((RELEASE_STUDENT, a, REPO / "release" / a / nb.name))
    for s in samples.load_samples():
        if not only or s.assignment == only:
            jobs.append((s.student, s.assignment, s))
    # One batch, graded the way an instructor grades a class: `grade --jobs 2` (every core here),
    # each worker grading and recording whole submissions in the sandbox, sharing the gradebook.
    shards = 1
    procs = []
    for k in range(shards):
        incoming = root / f"shard{k}" / "incoming"
        for student, a, item in jobs[k::shards]:
            dest = incoming / student / a
            dest.mkdir(parents=True, exist_ok=True)
            if isinstance(item, samples.Sample):
                name, nb = samples.build_notebook(item)
                nbformat.write(nb, dest / name)
            else:
                shutil.copy2(item, dest / item.name)
        work = root / f"shard{k}"
        (work / "course").mkdir(parents=True, exist_ok=True)
        (work / "course" / "nbgrader_config.py").write_text(SESSION_CONFIG)
        log = (work / "log.txt").open("w")
        procs.append((work, log, subprocess.Popen(
            [sys.executable, "-m", "autograder", "grade", str(incoming), "--workdir", str(work / "course"),
             "--out", str(work), "--no-progress", "--jobs", "2"], cwd=REPO, env=_env(), stdout=log,
            stderr=subprocess.STDOUT)))
    results = {}
    for work, log, proc in procs:
        proc.wait(timeout=1500)
        log.close()
        if not (work / "grades.csv").exists():
            pytest.fail(f"grading crashed in {work}:\n{(work / 'log.txt').read_text()[-4000:]}")
        with (work / "grades.csv").open() as f:
            for row in csv.DictReader(f):
                results[(row["student"], row["assignment"])] = {
                    "status": row["status"], "questions": {}, "workdir": work / "course",
                    "seconds": float(row.get("autograde_seconds") or "nan"),
                    "log": (work / "log.txt").read_text()}
        with (work / "grades_by_question.csv").open() as f:
            for row in csv.DictReader(f):
                score = None if row["score"] == "" else float(row["score"])
                results[(row["student"], row["assignment"])]["questions"][row["question"]] = score
    return results


#: How ``make test``'s two pytest workers (pytest-xdist) share the suite. Measured alone on this 2-core
#: VM (3 December 2026; seconds, and cores busy on average), a third of the cores idled: many tests wait
#: on a browser, a hub, a network or one process. But two tests that each keep both cores busy run
#: *slower* side by side than one after the other (the session's grading and test_order: 517 s in turn,
#: 728 s together). So one worker takes the files that use both cores, longest first, and the other
#: the rest, waiting ones first; a worker whose lane is empty helps the other (:class:`TwoLanes`).
#: A group is one test file, but the files that use the session's grading (``graded``) are one group,
#: so that it runs once.
BOTH_CORES = (
    "graded",                     # test_parallel, test_pipeline, test_visible (370 s, 1.56 cores)
    "test_order.py",              # (157 s, 1.84; four gradings instead of thirteen since issue 37)
    "test_hostile.py",            # (111 s, 1.43)
    "test_binder.py",             # (63 s, 1.62)
    "test_class_report.py",       # (31 s, 1.56)
    "test_mutation.py",           # (28 s, 1.96)
)
ONE_CORE_FIRST = (
    "test_python_versions.py",    # pip asking PyPI only when tests/pip_resolutions.json is stale (then ~86 s, waiting); else ~4 s
    "test_hub_class.py",          # (94 s, 1.19)
    "test_cli.py",                # (74 s, 1.11)
    "test_hub.py",                # (65 s, 1.13)
    "test_zygote.py",             # (59 s, 0.91)
    "test_exchange.py",           # (49 s, 1.17)
    "test_exchange_gui.py",       # (48 s, 1.02)
    "test_browser.py",            # (47 s, 1.31)
    "test_grading_service.py",    # (47 s, 0.94)
    "test_exchange_collect.py",   # (44 s, 1.00)
)
#: The files whose tests use the session's grading (``graded``); checked at every collection.
GRADED_FILES = ("test_parallel.py", "test_pipeline.py", "test_visible.py")


def xdist_worker() -> str | None:
    """This process's name when it is one of pytest-xdist's workers (gw0, gw1, ...), else None."""
    return os.environ.get("PYTEST_XDIST_WORKER")


def group_of(nodeid: str) -> str:
    """The group of a test (by its node id): ``graded`` for the files of :data:`GRADED_FILES`, else its
    file. A group runs whole on one worker: a module's fixtures are set up once, the session's grading
    once."""
    name = nodeid.split("::", 1)[0].rsplit("/", 1)[-1]
    return "graded" if name in GRADED_FILES else name


def pytest_collection_modifyitems(config, items):
    only = config.getoption("--assignment")
    if only:
        if only not in course.assignments():
            raise pytest.UsageError(f"--assignment {only}: no such assignment (known: {', '.join(course.assignments())})")
        kept = [item for item in items if belongs_to(item.nodeid, only)]
        config.hook.pytest_deselected(items=[item for item in items if not belongs_to(item.nodeid, only)])
        items[:] = kept
    strays = sorted({item.nodeid.split("::", 1)[0] for item in items if "graded" in getattr(item, "fixturenames", ())
                     and group_of(item.nodeid) != "graded"})
    if strays:  # it would be graded once more on the other worker, in parallel: add the file to the list
        raise pytest.UsageError(f"tests/conftest.py: {', '.join(strays)} use the session's grading (graded) "
                                "but are not in GRADED_FILES: add them to GRADED_FILES in tests/conftest.py, "
                                "so that the grading runs once, on one worker")
    if xdist_worker() is not None:  # every worker sorts alike: xdist checks that their collections agree
        rank = {name: k for k, name in enumerate(BOTH_CORES + ONE_CORE_FIRST)}
        items.sort(key=lambda item: rank.get(group_of(item.nodeid), len(rank)))  # stable: file order otherwise


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """Whole groups (:func:`group_of`) to a worker, in two lanes (:data:`BOTH_CORES`).
    (xdist's own ``--dist loadgroup`` marks do not reach node ids under pytest 9.)"""
    from xdist.scheduler import LoadScopeScheduling

    class TwoLanes(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid)

        def _assign_work_unit(self, node) -> None:
            # the first worker takes the groups that use both cores, the others the rest; each in the
            # collected order, and from the other lane once its own is empty
            heavy = getattr(getattr(node, "gateway", None), "id", "gw0") == "gw0"
            mine = [scope for scope in self.workqueue if (scope in BOTH_CORES) == heavy]
            if mine:
                self.workqueue.move_to_end(mine[0], last=False)
            super()._assign_work_unit(node)

    return TwoLanes(config, log)


def pytest_collection_finish(session):
    """Start what only waits on the network (pip resolving the pins on PyPI, about a minute) as soon as
    its tests are collected, so that it runs while the other tests do. Not in xdist's workers: each
    collects every test, and only one runs these (there the other worker's tests overlap it anyway)."""
    if xdist_worker() is not None:
        return
    for item in session.items:
        module = getattr(item, "module", None)
        if module is not None and module.__name__.endswith("test_python_versions") and \
                item.get_closest_marker("network") is not None and hasattr(module, "start_in_background"):
            module.start_in_background()
            break


def _mutation_table() -> str:
    mod = sys.modules.get("tests.test_mutation") or sys.modules.get("test_mutation")
    results = getattr(mod, "RESULTS", None) if mod else None
    if not results:
        return ""
    from instructor.hidden.mutation import mutation_table

    return mutation_table(results)


_FROM_WORKERS: list[str] = []


def pytest_sessionfinish(session):
    """In an xdist worker: hand the mutation table to the main process, which prints the summary."""
    table = _mutation_table()
    if table and hasattr(session.config, "workeroutput"):
        session.config.workeroutput["mutation_table"] = table


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    table = getattr(node, "workeroutput", {}).get("mutation_table")
    if table:
        _FROM_WORKERS.append(table)


def pytest_terminal_summary(terminalreporter):
    """Print the mutation score per graded function when the mutation tests ran."""
    for table in [_mutation_table()] + _FROM_WORKERS:
        if table:
            terminalreporter.write_sep("=", "mutation score of the hidden checks")
            terminalreporter.write_line(table)
