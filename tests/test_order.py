"""A score never depends on where a submission is graded: its place in the batch, ``--jobs``, the
pre-started sandbox, or where the checkout lives.

One class of three: an honest notebook whose every answer goes through temporary files (``mkdtemp``,
``torch.save`` to a path, ``NamedTemporaryFile``, ``savefig('/tmp/…')``, a cache under ``$HOME``), the
plain model answers, and a notebook that sets traps in ``/tmp`` for whoever comes next (names taken, a
daemon keeping them taken, a key in its uid's keyring). Graded in three orders, with ``--jobs 1`` and
``--jobs 2``, with the pre-started sandbox on and off, two gradings at a time: every score, status, flag
and verdict is the same.
(Before the fix, a worker's second submission found its sandbox's ``/tmp`` deleted, and the honest
notebook lost points graded anywhere but first.)
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

pytestmark = pytest.mark.slow


def _class(folder: Path, order: tuple[str, ...]) -> Path:
    """The incoming folder: student ``<k>-<sample>`` hands in that sample; the grader takes them by name."""
    incoming = folder / "incoming"
    by_name = {s.student: s for s in samples.load_samples("00_orientation")}
    for k, sample in enumerate(order):
        name, nb = samples.build_notebook(by_name[sample])
        (incoming / f"{k}-{sample}" / "00_orientation").mkdir(parents=True)
        nbformat.write(nb, incoming / f"{k}-{sample}" / "00_orientation" / name)
    return incoming


def _grade(incoming: Path, work: Path, jobs: int, env_extra: dict, cwd: Path = REPO,
           python: str = sys.executable) -> dict:
    env = dict(os.environ, PATH=str(Path(python).parent) + os.pathsep + os.environ.get("PATH", ""))
    env.update(env_extra)
    proc = subprocess.run([python, "-m", "autograder", "grade", str(incoming), "--workdir", str(work / "course"),
                           "--out", str(work), "--no-progress", "--jobs", str(jobs)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900)
    assert (work / "grades.csv").exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    by_sample: dict[str, dict] = {}
    with (work / "grades_by_question.csv").open() as f:
        for row in csv.DictReader(f):
            by_sample.setdefault(row["student"].split("-", 1)[1], {}).setdefault("scores", {})[row["question"]] = row["score"]
    with (work / "grades.csv").open() as f:
        for row in csv.DictReader(f):
            entry = by_sample.setdefault(row["student"].split("-", 1)[1], {})
            entry["status"], entry["flags"] = row["status"], row["flags"]
    ledger = json.loads((work / "course" / "grading-ledger.json").read_text())
    started = {}
    for key, entry in ledger.items():
        sample = key.split("/")[0].split("-", 1)[1]
        by_sample[sample]["verdicts"] = entry["result"]["verdicts"]
        started[sample] = entry["result"]["started"]
    by_sample["_order"] = sorted(started, key=started.get)
    return by_sample


def _without_order(result: dict) -> dict:
    return {k: v for k, v in result.items() if not k.startswith("_")}


@pytest.mark.skipif(not sandbox.status()["bwrap"], reason="grading order matters only with the sandbox")
def test_scores_and_verdicts_do_not_depend_on_order_jobs_or_the_pre_started_sandbox(tmp_path):
    zygote_modes = {"on": {}, "off": {"COURSE_ZYGOTE": "off"}}
    if not zygote.enabled(sandbox.Limits()):
        zygote_modes.pop("on")  # this machine has no pre-started sandbox to switch on
    cases = []
    for order in ORDERS:
        incoming = _class(tmp_path / "-".join(order), order)
        cases += [(order, mode, jobs, incoming) for mode in zygote_modes for jobs in (1, 2)]

    def grade(case) -> dict:
        order, mode, jobs, incoming = case
        run = _grade(incoming, tmp_path / "-".join(order) / f"{mode}-{jobs}", jobs, zygote_modes[mode])
        if jobs == 1:
            assert run["_order"] == list(order), "the batch was not graded in the order this case is about"
        return _without_order(run)

    # Two gradings at a time (each its own course folder, as two instructors' on one machine): a
    # --jobs 1 grading leaves a core idle, and a score must not depend on what else the machine runs.
    with ThreadPoolExecutor(2) as pool:
        results = dict(zip([c[:3] for c in cases], pool.map(grade, cases)))
    first = next(iter(results.values()))
    assert set(first) == set(CLASS)
    assert first["tmp_user"]["status"] == "graded" and first["tmp_user"]["flags"] == ""
    assert sum(float(v or 0) for v in first["tmp_user"]["scores"].values()) == 8, first["tmp_user"]
    for case, got in results.items():
        assert got == first, f"{case} differs from {next(iter(results))}: {got} != {first}"


@pytest.mark.skipif(not zygote.enabled(sandbox.Limits()), reason="needs the pre-started sandbox (root, bubblewrap)")
def test_a_checkout_under_tmp_grades_every_submission_of_a_worker(tmp_path):
    """``make demo`` from a clone under /tmp failed from a worker's second submission on: the checkout
    (student package, virtual environment) lives under the sandbox's own /tmp. A copy of the repository
    and of its virtual environment (hard links: instant) under /tmp grades a class of three."""
    base = Path("/tmp") / f"course-copy-{os.getpid()}"
    try:
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
        python = str(base / ".venv" / "bin" / "python")
        incoming = _class(tmp_path, ORDERS[0])
        run = _grade(incoming, tmp_path / "graded", 1, {}, cwd=base, python=python)
        expected = {s.student: s.expect_auto for s in samples.load_samples("00_orientation") if s.student in CLASS}
        got = {s: sum(float(v or 0) for v in run[s]["scores"].values()) for s in CLASS}
        assert got == expected, run
        assert all(run[s]["status"] == "graded" and run[s]["flags"] == "" for s in ("tmp_user", "ada")), run
    finally:
        shutil.rmtree(base, ignore_errors=True)
