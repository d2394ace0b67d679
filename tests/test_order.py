"""A score never depends on where a submission is graded: its place in the batch, ``--jobs``, the
pre-started sandbox, or where the checkout lives.

One class of three: an honest notebook whose every answer goes through temporary files (``mkdtemp``,
``torch.save`` to a path, ``NamedTemporaryFile``, ``savefig('/tmp/…')``, a cache under ``$HOME``), the
plain model answers, and a notebook that sets traps in ``/tmp`` for whoever comes next (names taken, a
daemon keeping them taken, a key in its uid's keyring). Graded once per configuration -- ``--jobs 1``
and ``--jobs 2``, the pre-started sandbox on and off, one of them from a copy of the checkout under
``/tmp`` -- two gradings at a time, each batch seven hand-ins long: one of the three orders from a
fresh worker, then every ordered pair of the class on the same worker (:func:`_sequence`). Every hand-in
of a notebook, in every configuration, gets the same scores, status, flags and verdicts.
(Before the fix, a worker's second submission found its sandbox's ``/tmp`` deleted, and the honest
notebook lost points graded anywhere but first.)

Until issue 37 this graded the class of three twelve times (three orders x two sandboxes x two
``--jobs``) plus once more from the ``/tmp`` checkout: 13 grader starts and 21 workers, each paying its
imports and the first plot again. Now four gradings of seven: the same configurations, each sample
still graded first by a fresh worker in each sandbox mode (see :data:`CONFIGS`), and every sample after
every other on one worker (before: only the three pairs the orders' rotation gives). Not replayed any
more: each of the three orders from a fresh worker in every configuration (two of them are, with
``--jobs 1``, one per sandbox mode).
"""
from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest

from instructor.authoring import samples
from instructor import sandbox
from instructor.sandbox import zygote

REPO = Path(__file__).resolve().parents[1]
CLASS = ("tmp_user", "ada", "tmp_planter")
ORDERS = (("tmp_planter", "tmp_user", "ada"), ("tmp_user", "ada", "tmp_planter"), ("ada", "tmp_planter", "tmp_user"))
#: (name, --jobs, pre-started sandbox, the order the batch starts with, checkout under /tmp). With
#: ``--jobs 1`` the worker's first hand-in is the order's first; with ``--jobs 2`` each worker's first is
#: one of the order's first two: so in each sandbox mode every sample is graded first by a fresh worker.
CONFIGS = (
    ("fresh sandbox, --jobs 1", 1, "off", ORDERS[2], False),
    ("fresh sandbox, --jobs 2", 2, "off", ORDERS[0], False),
    ("pre-started sandbox, --jobs 1, checkout under /tmp", 1, "on", ORDERS[0], True),
    ("pre-started sandbox, --jobs 2", 2, "on", ORDERS[1], False),
)

pytestmark = pytest.mark.slow


def _sequence(order: tuple[str, str, str]) -> tuple[str, ...]:
    """``x y z x z y x``: the order itself from a fresh worker, then on the same worker every ordered
    pair of the class once (xy yz zx xz zy yx), each sample at least twice."""
    x, y, z = order
    return (x, y, z, x, z, y, x)


def _class(folder: Path, order: tuple[str, ...]) -> Path:
    """The incoming folder: student ``<k>-<sample>`` hands in that sample; the grader takes them by name."""
    assert len(order) <= 10, "one digit per hand-in: the grader takes them by name"
    incoming = folder / "incoming"
    by_name = {s.student: s for s in samples.load_samples("00_orientation")}
    for k, sample in enumerate(order):
        name, nb = samples.build_notebook(by_name[sample])
        (incoming / f"{k}-{sample}" / "00_orientation").mkdir(parents=True)
        nbformat.write(nb, incoming / f"{k}-{sample}" / "00_orientation" / name)
    return incoming


def _grade(incoming: Path, work: Path, jobs: int, env_extra: dict, cwd: Path = REPO,
           python: str = sys.executable) -> dict:
    """{student ``<k>-<sample>``: {scores, status, flags, verdicts}}, and ``_order``: the students in the
    order their grading started (the ledger's clock)."""
    env = dict(os.environ, PATH=str(Path(python).parent) + os.pathsep + os.environ.get("PATH", ""))
    env.update(env_extra)
    proc = subprocess.run([python, "-m", "autograder", "grade", str(incoming), "--workdir", str(work / "course"),
                           "--out", str(work), "--no-progress", "--jobs", str(jobs)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900)
    assert (work / "grades.csv").exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    by_student: dict[str, dict] = {}
    with (work / "grades_by_question.csv").open() as f:
        for row in csv.DictReader(f):
            by_student.setdefault(row["student"], {}).setdefault("scores", {})[row["question"]] = row["score"]
    with (work / "grades.csv").open() as f:
        for row in csv.DictReader(f):
            entry = by_student.setdefault(row["student"], {})
            entry["status"], entry["flags"] = row["status"], row["flags"]
    ledger = json.loads((work / "course" / "grading-ledger.json").read_text())
    started = {}
    for key, entry in ledger.items():
        student = key.split("/")[0]
        by_student[student]["verdicts"] = entry["result"]["verdicts"]
        started[student] = entry["result"]["started"]
    by_student["_order"] = sorted(started, key=started.get)
    return by_student


def _without_order(result: dict) -> dict:
    return {k: v for k, v in result.items() if not k.startswith("_")}


def _copy_of_the_checkout_under_tmp(base: Path) -> str:
    """A clone of the repository and its virtual environment (hard links: instant) at ``base``; the
    copy's Python. (``make demo`` from a clone under /tmp once failed from a worker's second submission
    on: the checkout -- student package, virtual environment -- lives under the sandbox's own /tmp.)"""
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(REPO), str(base)], check=True, timeout=120)
    venv = Path(sys.prefix)
    if subprocess.run(["cp", "-al", str(venv), str(base / ".venv")], timeout=300).returncode != 0:
        shutil.rmtree(base / ".venv", ignore_errors=True)  # another file system: hard links cannot cross it
        subprocess.run(["cp", "-a", str(venv), str(base / ".venv")], check=True, timeout=600)
    # the editable install names the checkout it was made from: point the copy's at the copy (a new
    # file, not the hard link: the original's stays as it is)
    for finder in (base / ".venv").glob("lib/python*/site-packages/__editable__*finder.py"):
        text = finder.read_text().replace(str(REPO), str(base))
        finder.unlink()
        finder.write_text(text)
    return str(base / ".venv" / "bin" / "python")


@pytest.fixture(scope="module")
def gradings(tmp_path_factory) -> dict:
    """{configuration name: (its CONFIGS row, the batch's result)}: every configuration this machine
    can grade in, two gradings at a time (each its own course folder, as two instructors' on one
    machine: a --jobs 1 grading leaves a core idle, and a score must not depend on what else the
    machine runs)."""
    if not sandbox.status()["bwrap"]:
        pytest.skip("grading order matters only with the sandbox")
    configs = [c for c in CONFIGS if c[2] == "off" or zygote.enabled(sandbox.Limits())]  # else no pre-started one here
    root = tmp_path_factory.mktemp("order")
    base = Path("/tmp") / f"course-copy-{os.getpid()}"
    try:
        python = _copy_of_the_checkout_under_tmp(base) if any(c[4] for c in configs) else None

        def grade(config) -> dict:
            name, jobs, mode, order, under_tmp = config
            folder = root / name.replace(" ", "_").replace(",", "").replace("/", "")
            incoming = _class(folder, _sequence(order))
            extra = {} if mode == "on" else {"COURSE_ZYGOTE": "off"}
            if under_tmp:
                return _grade(incoming, folder / "graded", jobs, extra, cwd=base, python=python)
            return _grade(incoming, folder / "graded", jobs, extra)

        with ThreadPoolExecutor(2) as pool:
            return {c[0]: (c, run) for c, run in zip(configs, pool.map(grade, configs))}
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_scores_and_verdicts_do_not_depend_on_order_jobs_or_the_pre_started_sandbox(gradings):
    reference: dict[str, tuple[str, str, dict]] = {}   # sample: (configuration, student, what it got)
    for name, ((_, jobs, mode, order, _), run) in gradings.items():
        sequence = _sequence(order)
        students = [f"{k}-{s}" for k, s in enumerate(sequence)]
        assert sorted(_without_order(run)) == students, f"{name}: graded {sorted(_without_order(run))}"
        if jobs == 1:
            assert run["_order"] == students, f"{name}: the batch was not graded in the order this case is about"
        for student in students:
            got, sample = run[student], student.split("-", 1)[1]
            first = reference.setdefault(sample, (name, student, got))
            assert got == first[2], f"{sample}: {student} under {name!r} differs from {first[1]} under " \
                                    f"{first[0]!r}: {got} != {first[2]}"
    assert set(reference) == set(CLASS)
    tmp_user = reference["tmp_user"][2]
    assert tmp_user["status"] == "graded" and tmp_user["flags"] == "", tmp_user
    assert sum(float(v or 0) for v in tmp_user["scores"].values()) == 8, tmp_user


@pytest.mark.skipif(not zygote.enabled(sandbox.Limits()), reason="needs the pre-started sandbox (root, bubblewrap)")
def test_a_checkout_under_tmp_grades_every_submission_of_a_worker(gradings):
    """``make demo`` from a clone under /tmp failed from a worker's second submission on: the checkout
    (student package, virtual environment) lives under the sandbox's own /tmp. The configuration graded
    from a copy of the repository and of its virtual environment under /tmp grades every hand-in of its
    worker (seven, one after another) to the samples' expected scores."""
    [(config, run)] = [(c, r) for c, r in gradings.values() if c[4]]
    expected = {s.student: s.expect_auto for s in samples.load_samples("00_orientation") if s.student in CLASS}
    students = [f"{k}-{s}" for k, s in enumerate(_sequence(config[3]))]
    got = {s: sum(float(v or 0) for v in run[s]["scores"].values()) for s in students}
    assert got == {s: expected[s.split("-", 1)[1]] for s in students}, run
    assert all(run[s]["status"] == "graded" and run[s]["flags"] == ""
               for s in students if s.split("-", 1)[1] in ("tmp_user", "ada")), run
