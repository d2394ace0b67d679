"""Hostile *handing in*: what a class's submissions folder can hold besides notebooks.

Graded by the real command (``python -m autograder grade``) next to honest students whose scores
must not move:

* symbolic links (to another student's notebook, to another student's folder, into ``source/``)
  and hard links are never followed: each is named on one line, the student gets a row saying why;
* a student id that starts like a spreadsheet formula is neutralised in every CSV cell;
* a submission that kills the grading process is not graded forever: the rerun flags it and
  grades everyone else.
"""
from __future__ import annotations

import csv
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from instructor.batch import course
from instructor.authoring import samples

REPO = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.slow]


def _notebook(student: str, dest: Path) -> Path:
    [s] = [s for s in samples.load_samples("00_orientation") if s.student == student]
    name, nb = samples.build_notebook(s)
    dest.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, dest / name)
    return dest / name


def _grade(incoming: Path, work: Path, **env) -> tuple[int, str, dict]:
    proc = subprocess.run([sys.executable, "-m", "autograder", "grade", str(incoming), "--workdir", str(work / "course"),
                           "--out", str(work), "--no-progress", "--jobs", "1"], cwd=REPO, capture_output=True,
                          text=True, env={**os.environ, **env}, timeout=900)
    rows = {}
    if (work / "grades.csv").exists():
        with (work / "grades.csv").open(newline="") as f:
            rows = {r["student"]: r for r in csv.DictReader(f)}
    return proc.returncode, proc.stdout + proc.stderr, rows


@pytest.fixture(scope="module")
def class_with_links(tmp_path_factory):
    root = tmp_path_factory.mktemp("links")
    incoming = root / "incoming"
    ada = _notebook("ada", incoming / "ada" / "00_orientation")
    _notebook("ben", incoming / "ben" / "00_orientation")
    formula = incoming / "=2+5" / "00_orientation"
    formula.mkdir(parents=True)
    shutil.copy2(ada, formula / ada.name)
    (incoming / "eve" / "00_orientation").mkdir(parents=True)
    (incoming / "eve" / "00_orientation" / ada.name).symlink_to(ada)             # another student's notebook
    (incoming / "mallory").symlink_to(incoming / "ada", target_is_directory=True)  # another student's folder
    (incoming / "oscar" / "00_orientation").mkdir(parents=True)
    [src] = course.source_notebooks("00_orientation")
    (incoming / "oscar" / "00_orientation" / ada.name).symlink_to(src)            # the instructor's solution
    outside = root / "outside" / ada.name                                          # a file of the course, same disk
    outside.parent.mkdir()
    shutil.copy2(src, outside)
    (incoming / "trudy" / "00_orientation").mkdir(parents=True)
    os.link(outside, incoming / "trudy" / "00_orientation" / ada.name)
    (root / "course").mkdir()
    (root / "course" / "nbgrader_config.py").write_text("c = get_config()  # noqa\nc.Execute.timeout = 60\n")
    code, log, rows = _grade(incoming, root)
    return {"code": code, "log": log, "rows": rows, "root": root}


def test_honest_students_keep_their_scores(class_with_links):
    rows = class_with_links["rows"]
    assert rows, class_with_links["log"][-3000:]
    assert rows["ada"]["auto_score"] == "8" and rows["ben"]["auto_score"] == "2", class_with_links["log"][-3000:]


@pytest.mark.parametrize("student,kind", [("eve", "symbolic link"), ("mallory", "symbolic link"),
                                          ("oscar", "symbolic link"), ("trudy", "hard link")])
def test_links_are_never_followed(class_with_links, student, kind):
    row = class_with_links["rows"][student]
    assert row["status"].startswith("not graded:") and kind in row["status"], row
    assert row["auto_score"] == "0", row
    lines = [l for l in class_with_links["log"].splitlines() if l.startswith("error:") and f"/{student}" in l]
    assert lines and kind in lines[0], class_with_links["log"][-2000:]
    assert not (class_with_links["root"] / "course" / "autograded" / student).exists()


def test_no_csv_cell_starts_a_formula(class_with_links):
    rows = class_with_links["rows"]
    assert rows["'=2+5"]["auto_score"] == "8", rows.keys()  # graded, and its id made inert
    for name in ("grades.csv", "grades_by_question.csv"):
        with (class_with_links["root"] / name).open(newline="") as f:
            for row in csv.reader(f):
                for cell in row:
                    assert not cell.startswith(course.FORMULA_STARTS), f"{name}: {row}"


def test_csv_cell_rule():
    for bad in ("=1+1", "+1", "-1", "@SUM(A1)", "\tx", "\rx"):
        assert course.csv_cell(bad) == "'" + bad
    assert course.csv_cell("ada") == "ada" and course.csv_cell(2.5) == "2.5" and course.csv_cell(3) == "3"
    buf = io.StringIO()
    course.SafeWriter(buf).writerow(["=cmd|' /C calc'!A0", "ok, with a comma"])
    assert next(csv.reader(io.StringIO(buf.getvalue()))) == ["'=cmd|' /C calc'!A0", "ok, with a comma"]


def test_a_submission_that_kills_the_grader_is_flagged_on_the_rerun(tmp_path):
    incoming = tmp_path / "incoming"
    _notebook("ada", incoming / "ada" / "00_orientation")
    _notebook("ben", incoming / "ben" / "00_orientation")
    (tmp_path / "course").mkdir()
    code, log, rows = _grade(incoming, tmp_path, COURSE_GRADING_DIE_ON="ben")
    assert code != 0 and not rows, "the injected death did not happen"
    code, log, rows = _grade(incoming, tmp_path)  # the rerun: no death this time, ben is not retried
    assert rows["ada"]["auto_score"] == "8", log[-2000:]
    assert "died while grading" in rows["ben"]["status"] and "died while grading" in rows["ben"]["flags"], rows["ben"]
    code, log, rows = _grade(incoming, tmp_path, COURSE_GRADING_DIE_ON="nobody")
    assert "died while grading" in rows["ben"]["status"], "a plain rerun must not retry it"
