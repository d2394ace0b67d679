"""Feedback on a written answer: "pending hand grading" until an instructor grades it, then the score.

nbgrader's feedback template shows an answer nobody has graded yet as ``Score: 0.0 / 3.0``, and counts
it as 0 in the total at the top. The course's feedback (:func:`instructor.engine.feedback.annotate_feedback`)
says it is pending, at the question and in the total, and shows the real score once the gradebook holds a
hand grade (what formgrader's manual grading writes).
"""
from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from instructor.authoring import samples

REPO = Path(__file__).resolve().parents[1]
ASSIGNMENT = "01_version_counter"   # 15 autograded points and one written answer (3 points)


def _env() -> dict:
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


def _written_answer(nb) -> tuple[str, float]:
    [(gid, points)] = [(c.metadata["nbgrader"]["grade_id"], float(c.metadata["nbgrader"]["points"]))
                       for c in nb.cells if c.cell_type == "markdown"
                       and c.metadata.get("nbgrader", {}).get("grade") and c.metadata["nbgrader"].get("solution")]
    return gid, points


def _pending_parts(page: str, gid: str) -> tuple[str, str, str]:
    """The total at the top, the answer's line in the list under it, the score at the answer itself."""
    total = re.search(r"<h4>[^<]*</h4>", page).group(0)
    listed = re.search(rf'<li><a href="#{gid}">[^<]*</a>[^<]*</li>', page).group(0)
    at = re.search(rf'<a name="{gid}"></a><div class="panel-heading">.*?<a href="#top">', page, re.S).group(0)
    return total, listed, " ".join(at.split())


@pytest.mark.slow
def test_written_answer_is_pending_until_graded_by_hand(tmp_path):
    [sample] = [s for s in samples.load_samples(ASSIGNMENT) if s.student == "ada"]   # 15 / 15, answer written
    name, nb = samples.build_notebook(sample)
    gid, points = _written_answer(nb)
    incoming = tmp_path / "incoming" / "ada" / ASSIGNMENT
    incoming.mkdir(parents=True)
    nbformat.write(nb, incoming / name)
    course = tmp_path / "course"
    proc = subprocess.run([sys.executable, "-m", "autograder", "grade", str(tmp_path / "incoming"), "--workdir",
                           str(course), "--no-progress", "--jobs", "1"], cwd=REPO, env=_env(),
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    page_path = course / "feedback" / "ada" / ASSIGNMENT / (Path(name).stem + ".html")
    page = page_path.read_text()

    # graded automatically, the written answer not yet: pending, never 0, at the top and at the question
    total, listed, at = _pending_parts(page, gid)
    assert total == f"<h4>{ASSIGNMENT} (Score: 15 / 15 autograded, {points:g} points pending hand grading)</h4>"
    assert listed.endswith(f"(pending hand grading, {points:g} points)</li>"), listed
    assert f"Pending hand grading ({points:g} points)" in at and "Score:" not in at, at
    assert f"Score: 0.0 / {points}" not in page and "(Score: 15.0 / 18.0)" not in page   # nbgrader's own wording

    # the instructor grades it by hand (formgrader writes manual_score), then Generate Feedback
    db = course / "gradebook.db"
    with sqlite3.connect(db) as con:
        [(course_id,)] = con.execute("SELECT course_id FROM assignment WHERE name = ?", (ASSIGNMENT,)).fetchall()
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{db}", course_id=course_id) as gb:
        grade = gb.find_grade(gid, Path(name).stem, ASSIGNMENT, "ada")
        grade.manual_score = 2.0
        gb.db.commit()
    button = subprocess.run(
        [sys.executable, "-c", "import json, sys; from pathlib import Path; from instructor.classroom import formgrader; "
                               "print(json.dumps(formgrader.pipeline(Path(sys.argv[1]), sys.argv[2], 'ada', 'feedback')))",
         str(course), ASSIGNMENT], cwd=REPO, env=_env(), capture_output=True, text=True, timeout=900)
    assert button.returncode == 0, button.stdout[-3000:] + button.stderr[-3000:]
    reply = json.loads(button.stdout.strip().splitlines()[-1])
    assert reply["success"], reply
    page = page_path.read_text()
    total, listed, at = _pending_parts(page, gid)
    assert total == f"<h4>{ASSIGNMENT} (Score: 17.0 / 18.0)</h4>", total
    assert listed.endswith(f"(Score: 2.0 / {points})</li>"), listed
    assert f"Score: 2.0 / {points}" in at, at
    assert "pending hand grading" not in page.lower()
