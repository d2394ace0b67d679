"""Class-scale grading: ``grade --jobs N`` gives exactly the scores of ``--jobs 1``, and a worker
that dies takes only its submission with it (retried alone; flagged after dying twice)."""
from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from instructor.authoring import samples

REPO = Path(__file__).resolve().parents[1]
EQUIVALENCE = ("00_orientation", "01_version_counter")

pytestmark = pytest.mark.slow


def _grade(incoming: Path, work: Path, jobs: int, env_extra: dict | None = None) -> dict:
    env = dict(os.environ, PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    env.update(env_extra or {})
    proc = subprocess.run([sys.executable, "-m", "autograder", "grade", str(incoming), "--workdir", str(work / "course"),
                           "--out", str(work), "--no-progress", "--jobs", str(jobs)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=1500)
    assert (work / "grades.csv").exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    return _rows(work)


def _rows(work: Path) -> dict:
    """{(student, assignment): {question: score as written, "_status", "_flags"}} from a grading's CSVs."""
    rows = {}
    with (work / "grades_by_question.csv").open() as f:
        for row in csv.DictReader(f):
            rows.setdefault((row["student"], row["assignment"]), {})[row["question"]] = row["score"]
    with (work / "grades.csv").open() as f:
        for row in csv.DictReader(f):
            rows.setdefault((row["student"], row["assignment"]), {})["_status"] = row["status"]
            rows[(row["student"], row["assignment"])]["_flags"] = row["flags"]
    return rows


def _orientation_class(tmp_path: Path, students: dict[str, str]) -> Path:
    """Students handing in copies of 00_orientation samples ({student: sample}); the incoming folder."""
    incoming = tmp_path / "incoming"
    by_name = {s.student: s for s in samples.load_samples("00_orientation")}
    for student, base in students.items():
        name, nb = samples.build_notebook(by_name[base])
        (incoming / student / "00_orientation").mkdir(parents=True)
        nbformat.write(nb, incoming / student / "00_orientation" / name)
    return incoming


def _class_of(samples_: list, incoming: Path) -> dict:
    """Each sample handed in by its student (``incoming/<student>/<assignment>/``); {(student, assignment):
    the sample's expected automatic score}."""
    expected = {}
    for s in samples_:
        name, nb = samples.build_notebook(s)
        (incoming / s.student / s.assignment).mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, incoming / s.student / s.assignment / name)
        expected[(s.student, s.assignment)] = s.expect_auto
    return expected


def _interrupted_then_resumed(incoming: Path, work: Path, jobs: int) -> dict:
    """``grade --jobs N`` killed after two submissions (``COURSE_GRADING_STOP_AFTER``), then run again:
    {"killed": the first run, "ledger": its ledger, "again": the second run}."""
    env = dict(os.environ, PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    cmd = [sys.executable, "-m", "autograder", "grade", str(incoming), "--workdir", str(work / "course"),
           "--out", str(work), "--no-progress", "--jobs", str(jobs)]
    # returns only once every process holding its output has ended: with --jobs 2 its workers (and the
    # fork server they came from) must die with the grading process, not live on
    killed = subprocess.run(cmd, cwd=REPO, env=dict(env, COURSE_GRADING_STOP_AFTER="2"), capture_output=True,
                            text=True, timeout=300)
    out = {"killed": killed, "half_written": (work / "grades.csv").exists()}
    if (work / "course" / "grading-ledger.json").exists():
        out["ledger"] = __import__("json").loads((work / "course" / "grading-ledger.json").read_text())
    out["again"] = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=1500)
    return out


@pytest.fixture(scope="module")
def serial(tmp_path_factory) -> dict:
    """The samples of :data:`EQUIVALENCE` (not test_order.py's /tmp ones, the slowest to grade) graded
    with ``--jobs 1``, the way an interrupted grading is finished: killed after two submissions, then
    run again. Read by the equivalence test (its scores against the session's ``--jobs 2`` grading)
    and by the resumption test's ``--jobs 1`` case. (Until issue 37 each graded its own class.)"""
    root = tmp_path_factory.mktemp("serial")
    chosen = [s for s in samples.load_samples() if s.assignment in EQUIVALENCE and not s.student.startswith("tmp_")]
    expected = _class_of(chosen, root / "incoming")
    return {"root": root, "chosen": chosen, "expected": expected,
            **_interrupted_then_resumed(root / "incoming", root / "work", jobs=1)}


def test_jobs_1_gives_the_same_scores_as_jobs_2(graded, serial):
    """The session's grading ran with --jobs 2; the same samples of two assignments graded one at a time
    (``serial``: a grading interrupted once and finished) get the same scores, notebooks and feedback."""
    chosen, work = serial["chosen"], serial["root"] / "work"
    assert serial["again"].returncode == 0, serial["again"].stdout[-2000:] + serial["again"].stderr[-2000:]
    serial_rows = _rows(work)
    ledger = __import__("json").loads((graded[(chosen[0].student, chosen[0].assignment)]["workdir"]
                                       / "grading-ledger.json").read_text())
    assert all(entry["result"]["recorded"] for entry in ledger.values() if entry["result"]["ok"]), \
        "a --jobs 2 worker on this machine did not record in the shared course folder"
    for s in chosen:
        key = (s.student, s.assignment)
        parallel = graded[key]
        assert serial_rows[key]["_status"] == parallel["status"] == "graded", (key, serial_rows[key], parallel["status"])
        scores = {q: (None if v == "" else float(v)) for q, v in serial_rows[key].items() if not q.startswith("_")}
        assert scores == parallel["questions"], f"{key}: --jobs 1 {scores} != --jobs 2 {parallel['questions']}"
        # each --jobs 2 worker graded and recorded in the course folder itself: what formgrader and the
        # feedback show is what a one-at-a-time run writes (same cells, same kinds of output, same questions)
        one = _autograded(work / "course", *key)
        two = _autograded(parallel["workdir"], *key)
        assert one and one == two, f"{key}: the autograded notebooks differ between --jobs 1 and --jobs 2"
        assert _questions_in_feedback(work / "course", *key) == \
            _questions_in_feedback(parallel["workdir"], *key) != []


def _autograded(course: Path, student: str, assignment: str) -> dict:
    """Per autograded notebook: each cell's type, source, nbgrader metadata and output kinds."""
    out = {}
    for path in sorted((course / "autograded" / student / assignment).glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        out[path.name] = [(c.cell_type, c.source, c.metadata.get("nbgrader"), _output_kinds(c)) for c in nb.cells]
    return out


def _output_kinds(cell) -> list:
    """(type, stream name, error name) of each output; consecutive chunks of one stream count once
    (how a kernel's prints are split into messages depends on timing)."""
    kinds = []
    for o in cell.get("outputs", []):
        kind = (o.output_type, o.get("name"), o.get("ename"))
        if not (kinds and kind[0] == "stream" and kinds[-1] == kind):
            kinds.append(kind)
    return kinds


def _questions_in_feedback(course: Path, student: str, assignment: str) -> list[list[str]]:
    """Per feedback page, the questions its summary names."""
    import re

    return [re.findall(r'class="course-question">([^<]+)<', p.read_text())
            for p in sorted((course / "feedback" / student / assignment).glob("*.html"))]


def test_a_dying_worker_is_retried_and_a_killer_is_flagged(tmp_path):
    incoming = _orientation_class(tmp_path, {"ann": "ada", "bob": "ada", "cat": "ben", "dan": "ada"})
    marker = tmp_path / "bob-died-once"
    rows = _grade(incoming, tmp_path / "work", jobs=2,
                  env_extra={"COURSE_GRADING_FAULTS": f"ann:always,bob:once:{marker}"})
    assert marker.exists(), "the fault was not injected"
    ann = rows[("ann", "00_orientation")]
    assert ann["_status"].startswith("error") and "killed its grading worker 2 times" in ann["_flags"], ann
    assert rows[("bob", "00_orientation")]["_status"] == "graded"      # died once, retried, graded
    assert sum(float(v or 0) for q, v in rows[("bob", "00_orientation")].items() if not q.startswith("_")) == 8
    assert sum(float(v or 0) for q, v in rows[("cat", "00_orientation")].items() if not q.startswith("_")) == 2
    assert sum(float(v or 0) for q, v in rows[("dan", "00_orientation")].items() if not q.startswith("_")) == 8


@pytest.mark.parametrize("jobs", [1, 2])
def test_an_interrupted_batch_resumes_without_grading_anything_twice(tmp_path, jobs, request):
    """Killed after two submissions, then run again: what was graded is not graded again, the rest is,
    and the scores are the samples'. ``--jobs 1``: the ``serial`` grading (two assignments' samples);
    ``--jobs 2``: the orientation class (without test_order.py's /tmp samples, the slowest to grade)."""
    if jobs == 1:
        run = request.getfixturevalue("serial")
        work, expected = run["root"] / "work", run["expected"]
    else:
        work = tmp_path / "work"
        expected = _class_of([s for s in samples.load_samples("00_orientation") if not s.student.startswith("tmp_")],
                             tmp_path / "incoming")
        run = _interrupted_then_resumed(tmp_path / "incoming", work, jobs=2)
    killed, again = run["killed"], run["again"]
    assert killed.returncode == 137, killed.stdout[-2000:] + killed.stderr[-2000:]
    assert not run["half_written"]  # never half-written
    ledger = run.get("ledger", {})
    assert len(ledger) >= 2
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
    assert f"{len(ledger)} submission(s) unchanged since they were last graded" in again.stdout, again.stdout
    with (work / "grades.csv").open() as f:
        got = {(r["student"], r["assignment"]): float(r["auto_score"]) for r in csv.DictReader(f)}
    assert got == expected
    ledger = __import__("json").loads((work / "course" / "grading-ledger.json").read_text())
    assert {k: v["times"] for k, v in ledger.items()} == {f"{s}/{a}": 1 for s, a in expected}


def test_a_worker_grades_in_place_only_in_the_folder_of_its_batch(tmp_path):
    """Workers record in the course folder only when they see the very folder the grading process
    marked for this batch; anything else (another machine, an old or forged mark) grades privately."""
    from instructor.batch import parallel

    shared = parallel.batch_token(tmp_path)
    assert parallel.sees_course(shared) == tmp_path
    assert parallel.sees_course(None) is None
    assert parallel.sees_course({**shared, "token": "0" * 32}) is None            # an earlier batch's mark
    assert parallel.sees_course({**shared, "workdir": str(tmp_path / "elsewhere")}) is None   # not this disk
    (tmp_path / parallel.BATCH_FILE).unlink()
    assert parallel.sees_course(shared) is None


def test_grading_on_a_dask_cluster_retries_a_dead_worker_and_flags_a_killer(tmp_path, monkeypatch):
    """A real LocalCluster (two worker processes, no mock): the same grades as one at a time; a worker
    that dies once gets its submission retried elsewhere; one that kills workers twice is flagged.

    Graded as workers on other machines are (``shared_disk=False``): each submission travels as bytes,
    is graded in the worker's private folder, and is recorded by the grading process. (The ``--jobs``
    tests above cover workers that record in the shared course folder.)"""
    import dask
    from distributed import Client, LocalCluster

    from instructor.batch import course

    incoming = _orientation_class(tmp_path, {"ann": "ada", "bob": "ada", "cat": "ben", "dan": "cy"})
    marker = tmp_path / "bob-died-once"
    monkeypatch.setenv("COURSE_GRADING_FAULTS", f"ann:always,bob:once:{marker}")
    monkeypatch.setenv("PYTHONPATH", str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    # Dask's own retry budget is left at its default: blame is counted by the grader, one submission per worker.
    with dask.config.set({"distributed.scheduler.allowed-failures": 3}):
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
                Client(cluster) as client:
            subs, problems = course.collect_submissions(incoming)
            assert not problems
            results = {r.student: r for r in course.grade(subs, tmp_path / "course", progress=False,
                                                           feedback=False, scheduler=client, shared_disk=False)}
    assert marker.exists()
    assert not results["ann"].ok and "killed its grading worker 2 times" in " ".join(results["ann"].flags)
    assert results["bob"].ok and results["bob"].auto_score == 8      # its first worker died; retried
    assert results["cat"].auto_score == 2 and results["dan"].auto_score == 0, {k: (r.ok, r.auto_score, r.error, r.flags) for k, r in results.items()}
    assert not any(r.recorded for r in results.values()), "a private-folder worker claimed to have recorded"
    assert all(r.started > 0 for r in results.values() if r.ok), "a worker's result came back without its start time"


def test_the_bench_says_when_the_first_submission_began_and_the_last_ended():
    from instructor.authoring import bench
    from instructor.engine.pipeline import Result

    results = [Result("a", "x", ok=True, started=105.0, seconds=20.0), Result("b", "x", ok=True, started=103.5,
                                                                             seconds=30.0),
               Result("c", "x", ok=False)]   # never began (a broken file): not counted
    line = bench.edges(results, start=100.0, end=140.0)
    assert line == "the first submission began 3.5 s after the start, the last ended 6.5 s before the end", line
    assert bench.edges([Result("c", "x", ok=False)], 0.0, 1.0) == "no submission was graded"



def test_the_bench_measures_what_n_cores_give_at_the_moment(monkeypatch):
    """The probe runs alone in this process, then in N child processes at once: N x alone / the slowest
    child. Here the loop "takes" 1 s alone and 2 s in a child (a child is another process)."""
    import os

    from instructor.authoring import bench

    parent = os.getpid()
    monkeypatch.setattr(bench, "speed_probe", lambda: 1.0 if os.getpid() == parent else 2.0)
    assert bench.pair_probe(2) == 1.0   # two at once, each half as fast: one core's worth
    assert bench.pair_probe(3) == 1.5
