"""nbgrader's exchange, end to end, on an exchange folder made for the test: docs/instructors.md's
"With a JupyterHub exchange" recipe, run as written.

release_assignment -> two students fetch_assignment, fill in, submit -> collect ->
python -m autograder grade (sandboxed, confirmed) -> release_feedback -> each student fetch_feedback.

The instructor's steps run as the recipe writes them, each a command. The students' (the recipe's
Assignments panel, whose handlers run nbgrader's exchange classes in the server) run those classes in
this process, each student with her own configuration and nbgrader cache (issue 37: six new Pythons
less, about 3 s of imports each); ``generate_assignment``, the recipe's ``make release``, runs through
nbgrader's API.
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

from instructor.authoring import samples
from test_exchange_collect import _instructor_steps, _student_step

REPO = Path(__file__).resolve().parents[1]
ASSIGNMENT = "00_orientation"

pytestmark = pytest.mark.slow


def _run(args, cwd, **env_extra):
    env = dict(os.environ, PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    env.update(env_extra)
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{' '.join(map(str, args))}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return proc


def test_release_fetch_submit_collect_grade_feedback(tmp_path):
    nbgrader = [sys.executable, "-m", "nbgrader"]
    exchange = tmp_path / "exchange"
    exchange.mkdir()
    os.chmod(exchange, 0o777)
    course = tmp_path / "course"
    shutil.copytree(REPO / "source" / ASSIGNMENT, course / "source" / ASSIGNMENT)
    config = f'c = get_config()\nc.CourseDirectory.course_id = "inplace-autograd"\nc.Exchange.root = "{exchange}"\n'
    (course / "nbgrader_config.py").write_text(config)
    _instructor_steps(course, release=False)   # nbgrader generate_assignment ASSIGNMENT --force
    _run(nbgrader + ["release_assignment", ASSIGNMENT], course)

    answers = {s.student: s for s in samples.load_samples(ASSIGNMENT)}
    students = {"alice": answers["ada"], "bob": answers["ben"]}
    for student, sample in students.items():
        home = tmp_path / student
        home.mkdir()
        # each student their own nbgrader cache, as separate accounts on a JupyterHub would have
        (home / "nbgrader_config.py").write_text(f'c = get_config()\nc.Exchange.root = "{exchange}"\n'
                                                 f'c.Exchange.cache = "{home / ".nbgrader-cache"}"\n')
        _student_step(home, student, "fetch_assignment", ASSIGNMENT, "inplace-autograd")
        fetched = home / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        assert fetched.is_file()
        _, filled = samples.build_notebook(sample)       # the student's work, on the fetched notebook
        nbformat.write(filled, fetched)
        _student_step(home, student, "submit", ASSIGNMENT, "inplace-autograd")

    _run(nbgrader + ["collect", ASSIGNMENT], course)
    assert sorted(p.name for p in (course / "submitted").iterdir()) == ["alice", "bob"]
    graded = _run([sys.executable, "-m", "autograder", "grade", str(course / "submitted"), "--workdir", str(course),
                   "--no-progress"], REPO)
    assert "graded 2 of 2" in graded.stdout and "file(s) skipped" in graded.stdout, graded.stdout
    assert "; 0 file(s) skipped" in graded.stdout, graded.stdout
    with (course / "grades.csv").open() as f:
        scores = {r["student"]: float(r["auto_score"]) for r in csv.DictReader(f)}
    assert scores == {"alice": students["alice"].expect_auto, "bob": students["bob"].expect_auto}

    _run(nbgrader + ["release_feedback", ASSIGNMENT], course)
    for student in students:
        home = tmp_path / student
        _student_step(home, student, "fetch_feedback", ASSIGNMENT, "inplace-autograd")
        [html] = list((home / ASSIGNMENT / "feedback").glob("*/*.html"))
        text = html.read_text()
        assert f"{scores[student]:g} / 8" in text.replace("(Score: ", "").replace(")", "") or \
            f"Score: {scores[student]:g}" in text, f"{student}'s feedback does not show their score"
        assert "BEGIN HIDDEN TESTS" not in text and "confirmed(" not in text
