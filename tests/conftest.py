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

from instructor.grading import course, samples  # noqa: E402

SOURCE_STUDENT = "zz-source"    # each source notebook, handed in as is: must earn full marks
RELEASE_STUDENT = "zz-release"  # each release notebook, untouched: must earn 0


def _env() -> dict:
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


@pytest.fixture(scope="session")
def graded(tmp_path_factory) -> dict:
    """{(student, assignment): {"questions": {grade_id: score|None}, "status": str, "workdir": Path}}."""
    root = tmp_path_factory.mktemp("grading")
    jobs = []
    for a in course.assignments():
        for nb in course.source_notebooks(a):
            jobs.append((SOURCE_STUDENT, a, nb))
            jobs.append((RELEASE_STUDENT, a, REPO / "release" / a / nb.name))
    for s in samples.load_samples():
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


def pytest_collection_finish(session):
    """Start what only waits on the network (pip resolving the pins on PyPI, about a minute) as soon as
    its tests are collected, so that it runs while the other tests do."""
    for item in session.items:
        module = getattr(item, "module", None)
        if module is not None and module.__name__.endswith("test_python_versions") and \
                item.get_closest_marker("network") is not None and hasattr(module, "start_in_background"):
            module.start_in_background()
            break


def pytest_terminal_summary(terminalreporter):
    """Print the mutation score per graded function when the mutation tests ran."""
    mod = sys.modules.get("tests.test_mutation") or sys.modules.get("test_mutation")
    results = getattr(mod, "RESULTS", None) if mod else None
    if results:
        from instructor.hidden.mutation import mutation_table

        terminalreporter.write_sep("=", "mutation score of the hidden checks")
        terminalreporter.write_line(mutation_table(results))
