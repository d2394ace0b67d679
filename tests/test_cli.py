"""The command line on bad input: one clear line naming the file, the rest still graded,
non-zero exit, nothing submitted modified."""
from __future__ import annotations

import csv
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from instructor.authoring import samples

REPO = Path(__file__).resolve().parents[1]


def run(*args, cwd=REPO):
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return subprocess.run([sys.executable, "-m", "autograder", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def _digest(folder: Path) -> dict:
    return {p.relative_to(folder): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _orientation_sample(student):
    [s] = [s for s in samples.load_samples("00_orientation") if s.student == student]
    return samples.build_notebook(s)


@pytest.mark.slow
def test_grade_reports_each_bad_file_and_grades_the_rest(tmp_path):
    sub = tmp_path / "submitted"
    name, good = _orientation_sample("ada")
    (sub / "ada" / "00_orientation").mkdir(parents=True)
    nbformat.write(good, sub / "ada" / "00_orientation" / name)
    # a file that is not a notebook, next to a good one
    (sub / "ada" / "00_orientation" / "notes.txt").write_text("my notes")
    # corrupt JSON
    (sub / "bob" / "00_orientation").mkdir(parents=True)
    (sub / "bob" / "00_orientation" / name).write_text('{"cells": [ {"cell_type": "code", ')
    # an assignment the course does not have
    (sub / "cyd" / "99_unknown").mkdir(parents=True)
    nbformat.write(good, sub / "cyd" / "99_unknown" / "99_unknown.ipynb")
    # flat layout: a notebook whose name matches no assignment
    (sub / "dan").mkdir()
    stranger = nbformat.from_dict(good)
    for cell in stranger.cells:
        cell.metadata.pop("nbgrader", None)   # nor do its cell ids say which assignment it is
    nbformat.write(stranger, sub / "dan" / "homework.ipynb")
    # JupyterLab's renamed copy, in the flat layout: recognised by its cell ids, graded as the course's name
    (sub / "gus").mkdir()
    nbformat.write(good, sub / "gus" / name.replace(".ipynb", "-Copy1.ipynb"))
    # a student whose code kills the kernel: graded as far as it ran and flagged; must not stop the others
    _, crash = _orientation_sample("ada")
    for cell in crash.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "environment_report":
            cell.source = "import os\nos._exit(1)"
    (sub / "eve" / "00_orientation").mkdir(parents=True)
    nbformat.write(crash, sub / "eve" / "00_orientation" / name)
    # flat layout that works: <student>/<notebook>.ipynb
    (sub / "fay").mkdir()
    nbformat.write(good, sub / "fay" / name)
    before = _digest(sub)

    proc = run("grade", str(sub), "--workdir", str(tmp_path / "course"), "--out", str(tmp_path), "--no-progress")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    err = proc.stderr
    assert f"{sub / 'ada' / '00_orientation' / 'notes.txt'}: not a notebook" in err
    assert f"{sub / 'bob' / '00_orientation' / name}: corrupt notebook: not valid JSON" in err
    assert f"{sub / 'cyd' / '99_unknown'}: unknown assignment '99_unknown'" in err
    assert f"{sub / 'dan' / 'homework.ipynb'}: notebook of an unknown assignment" in err
    assert "Traceback" not in err, err
    # eve's dying kernel may print its own last words (e.g. a libzmq assertion) on the inherited
    # stderr; every line about a submission is ours, one line each, starting with 'error: '
    about_submissions = [l for l in err.strip().splitlines() if str(sub) in l or "00_orientation" in l]
    assert len(about_submissions) == 4, err
    for line in about_submissions:
        assert line.startswith("error: "), f"every problem is one line starting with 'error: ', got: {line!r}"

    assert "autograded total" in proc.stdout and "8/8" in proc.stdout, proc.stdout
    assert "graded 4 of 4 submission(s)" in proc.stdout, proc.stdout
    assert "flagged:   eve/00_orientation: cell" in proc.stdout, proc.stdout
    with (tmp_path / "grades.csv").open() as f:
        rows = {r["student"]: r for r in csv.DictReader(f)}
    assert rows["ada"]["status"] == "graded" and rows["ada"]["auto_score"] == "8"
    assert rows["fay"]["status"] == "graded" and rows["fay"]["auto_score"] == "8"
    assert rows["gus"]["status"] == "graded" and rows["gus"]["auto_score"] == "8", rows["gus"]
    assert f"note: gus/00_orientation: {name.replace('.ipynb', '-Copy1.ipynb')} was graded as {name}" in proc.stdout
    # eve's answer cell ended the process: that question is lost, the other three are graded
    assert rows["eve"]["status"] == "graded" and rows["eve"]["auto_score"] == "6", rows["eve"]
    assert "ended the Python process" in rows["eve"]["flags"], rows["eve"]
    assert _digest(sub) == before, "grading modified the submitted files"


def test_grade_missing_folder_is_one_clear_line(tmp_path):
    proc = run("grade", str(tmp_path / "nope"), "--workdir", str(tmp_path / "w"))
    assert proc.returncode == 1
    assert f"error: {tmp_path / 'nope'}: no such folder" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("content,why", [
    (None, "no such file"),
    ("just text", "not a notebook (.ipynb)"),
    ('{"cells": [', "corrupt notebook: not valid JSON"),
])
def test_selfgrade_bad_input(tmp_path, content, why):
    path = tmp_path / ("x.txt" if content == "just text" else "00_orientation.ipynb")
    if content is not None:
        path.write_text(content)
    proc = run("selfgrade", str(path))
    assert proc.returncode == 2
    assert f"error: {path}: {why}" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_selfgrade_unknown_assignment(tmp_path):
    """A notebook whose name and cell ids match no assignment (a renamed copy is recognised by its ids:
    tests/test_check.py)."""
    path = tmp_path / "my_homework.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 + 1")]), path)
    proc = run("selfgrade", str(path))
    assert proc.returncode == 2 and "which assignment is this?" in proc.stderr


@pytest.mark.slow
def test_selfgrade_prints_scores_and_messages_not_hidden_code(tmp_path):
    name, nb = _orientation_sample("ben")
    path = tmp_path / name
    nbformat.write(nb, path)
    before = path.read_bytes()
    proc = run("selfgrade", str(path))
    assert proc.returncode == 0, proc.stdout + proc.stderr   # graded: a partial score is not a failure
    out = proc.stdout
    assert "environment_report_tests" in out and "2 / 2" in out
    assert "cube_sum_grad_tests" in out and "try next" in out
    assert "autograded total: 2 / 8" in out
    assert out.strip().splitlines()[-1] == ("You have 2 of 8 autograded points so far; see the table above for "
                                            "what to try next (each failing question's message ends with it), "
                                            "then grade it again.")
    assert "BEGIN HIDDEN TESTS" not in out and "reference_chain" not in out, "hidden test code leaked"
    assert path.read_bytes() == before


def test_selfgrade_last_line_says_where_the_student_stands():
    """The sentence selfgrade ends with (its exit status is 0 whenever the notebook was graded)."""
    from instructor.classroom.cli import _selfgrade_sentence
    from instructor.engine.pipeline import QuestionScore, Result

    def result(*scores):
        res = Result("you", "03_yolo_head", True)
        res.questions = [QuestionScore(f"q{i}", s, m, k) for i, (s, m, k) in enumerate(scores)]
        return res

    assert _selfgrade_sentence(result((2, 2, "auto"), (0, 6, "auto"))) == (
        "You have 2 of 8 autograded points so far; see the table above for what to try next (each failing "
        "question's message ends with it), then grade it again.")
    assert _selfgrade_sentence(result((8, 8, "auto"), (None, 3, "manual"))) == (
        "You have all 8 autograded points: every visible and hidden test passes. Your written answers "
        "(3 points) are graded by hand after you hand in.")


def test_release_of_unknown_assignment_fails_clearly():
    proc = run("release", "99_nope")
    assert proc.returncode != 0 and "unknown assignment" in (proc.stderr + proc.stdout)


@pytest.mark.slow
def test_grading_the_course_submitted_folder_in_place_keeps_every_file(tmp_path):
    """`grade submitted` inside the course folder (what an instructor does after `nbgrader collect`)."""
    course = tmp_path / "course"
    name, good = _orientation_sample("ada")
    target = course / "submitted" / "ada" / "00_orientation"
    target.mkdir(parents=True)
    nbformat.write(good, target / name)
    before = _digest(course / "submitted")
    proc = run("grade", str(course / "submitted"), "--workdir", str(course), "--no-progress")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _digest(course / "submitted") == before, "grading in place changed or lost a submission"

    # a different version of ada's notebook graded into the same course: the old one is kept aside
    _, other = _orientation_sample("ben")
    incoming = tmp_path / "incoming" / "ada" / "00_orientation"
    incoming.mkdir(parents=True)
    nbformat.write(other, incoming / name)
    proc = run("grade", str(tmp_path / "incoming"), "--workdir", str(course), "--no-progress")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "was moved to" in proc.stdout
    [kept] = list((course / "replaced_submissions").rglob(name))
    assert hashlib.sha256(kept.read_bytes()).hexdigest() == before[Path("ada/00_orientation") / name], \
        "the earlier submission must be kept byte for byte"


def test_demo_refuses_to_wipe_a_folder_it_did_not_make(tmp_path):
    precious = tmp_path / "my_course"
    precious.mkdir()
    (precious / "gradebook.db").write_text("real grades")
    proc = run("demo", "--workdir", str(precious))
    assert proc.returncode == 2 and "was not made by 'demo'" in proc.stderr
    assert (precious / "gradebook.db").read_text() == "real grades"


def _demo_with(monkeypatch, tmp_path, capsys, grade):
    """``demo`` (its handful of samples) with grading replaced by ``grade(sub) -> Result``."""
    from instructor.classroom import cli
    from instructor.batch import course

    monkeypatch.setattr(course, "grade", lambda subs, workdir, **kw: [grade(s) for s in subs])
    args = cli.build_parser().parse_args(["demo", "--workdir", str(tmp_path / "demo"), "--course",
                                          str(tmp_path / "course"), "--jobs", "1"])
    status = cli.cmd_demo(args)
    return status, capsys.readouterr()


def _as_expected(sub):
    from instructor.batch import course

    [sample] = [s for s in samples.load_samples(sub.assignment) + _hostile(sub.assignment) if s.student == sub.student]
    qs = [course.QuestionScore(gid, v, max(v, 1.0), "auto") for gid, v in sample.expect_questions.items()]
    rest = sample.expect_auto - sum(sample.expect_questions.values())
    qs.append(course.QuestionScore("rest", rest, max(rest, 1.0), "auto"))
    return course.Result(sub.student, sub.assignment, True, qs)


def _hostile(assignment):
    return [samples.parse_sample(p) for p in sorted((REPO / "tests" / "hostile" / assignment).glob("*.py"))]


def test_demo_exits_zero_when_every_sample_is_graded_as_expected(monkeypatch, tmp_path, capsys):
    status, out = _demo_with(monkeypatch, tmp_path, capsys, _as_expected)
    assert status == 0, out.err
    assert "demo finished" in out.out and "were graded as their `# expect:` lines say" in out.out


def test_demo_fails_and_says_which_sample_differs_from_its_expect_line(monkeypatch, tmp_path, capsys):
    from instructor.batch import course

    def one_off(sub):
        res = _as_expected(sub)
        if sub.student == "ben":
            res.questions[-1].score += 1          # one point more than its `# expect:` line
        if sub.student == "cat_style":
            res = course.Result(sub.student, sub.assignment, False,
                                error="RuntimeError: Kernel died before replying to kernel_info\n  File ...")
        return res

    status, out = _demo_with(monkeypatch, tmp_path, capsys, one_off)
    assert status == 1
    assert "demo finished" not in out.out
    assert "demo FAILED" in out.err and "2 of 4 sample(s) were not graded as their `# expect:` line says" in out.err
    assert "error: demo: ben/00_orientation: expected" in out.err
    assert ("error: demo: cat_style/03_yolo_head: expected 16, grading failed: RuntimeError: Kernel died before "
            "replying to kernel_info") in out.err
    # the grader's own error line: the reason's first line, the rest indented below it
    assert "error: cat_style/03_yolo_head: grading failed: RuntimeError: Kernel died" in out.err
    assert "\n      File ..." in out.err
