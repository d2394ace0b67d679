"""``autograder.check()`` from inside a notebook, and ``selfgrade`` on a renamed copy.

The fast tests run the visible tests of filled-in sample notebooks in a namespace dict (what a kernel's
``user_ns`` is) and of small synthetic notebooks; the slow one runs the real command line.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

import autograder
from autograder.check import NotebookNotFound, check
from instructor.authoring import samples

REPO = Path(__file__).resolve().parents[1]
check_module = sys.modules["autograder.check"]


def _is_test_cell(cell) -> bool:
    meta = cell.metadata.get("nbgrader", {})
    return bool(meta.get("grade")) and not meta.get("solution")


def _filled(tmp_path, assignment: str, student: str) -> tuple[Path, dict]:
    """A sample's notebook written to tmp, and the namespace after running its code cells but the tests
    (what a student's kernel holds after running the answers)."""
    name, nb = samples.build_notebook(samples.parse_sample(REPO / "tests" / "samples" / assignment / f"{student}.py"))
    path = tmp_path / student / name
    path.parent.mkdir(parents=True)
    nbformat.write(nb, path)
    ns: dict = {}
    for cell in nb.cells:
        if cell.cell_type == "code" and not _is_test_cell(cell):
            exec(compile(cell.source, f"<{student} cell>", "exec"), ns)
    return path, ns


def _synthetic(tmp_path, *tests: str, answer: str | None = None) -> Path:
    """A notebook with graded test cells ``t0, t1, ...`` (2 points each) and, with ``answer``, a written
    answer cell (3 points)."""
    cells = []
    for i, src in enumerate(tests):
        cell = nbformat.v4.new_code_cell(src)
        cell.metadata["nbgrader"] = {"grade": True, "solution": False, "locked": True, "grade_id": f"t{i}",
                                     "points": 2, "schema_version": 3, "task": False}
        cells.append(cell)
    if answer is not None:
        cell = nbformat.v4.new_markdown_cell(answer)
        cell.metadata["nbgrader"] = {"grade": True, "solution": True, "locked": False, "grade_id": "essay",
                                     "points": 3, "schema_version": 3, "task": False}
        cells.append(cell)
    path = tmp_path / "synthetic.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=cells), path)
    return path


def test_autograder_check_is_the_function():
    assert autograder.check is check and callable(autograder.check)


def test_visible_points_of_ben_and_ada(tmp_path, capsys):
    path, ns = _filled(tmp_path, "00_orientation", "ben")
    capsys.readouterr()
    report = check(notebook=path, namespace=ns)
    shown = capsys.readouterr().out
    assert (report.earned, report.possible) == (2, 8)
    assert [(q.grade_id, q.earned) for q in report.questions] == [
        ("environment_report_tests", 2), ("cube_sum_grad_tests", 0), ("grad_fn_chain_tests", 0),
        ("intermediate_grad_tests", 0)]
    assert report["cube_sum_grad_tests"].first_line == \
        "CheckFailed: cube_sum_grad([1, -2, 0.5]) has the wrong shape"
    assert report["grad_fn_chain_tests"].first_line.startswith("CheckFailed: grad_fn_chain(")
    assert report["intermediate_grad_tests"].first_line == \
        "CheckFailed: intermediate_grad([0, 1, -2]) has the wrong type"
    assert "try next" in report["cube_sum_grad_tests"].message   # the whole message is kept
    # what was printed: one line per question, the first failure line, the total, the hidden-test caveat
    assert "cube_sum_grad_tests       0 / 2   CheckFailed: cube_sum_grad([1, -2, 0.5]) has the wrong shape" in shown
    assert "visible tests: 2 / 8" in shown and "hidden tests" in shown and "may still fail" in shown
    assert str(report) == repr(report) and "<table>" in report._repr_html_()
    # the test cells ran on a copy: their variables (vals, engine, report...) did not land in the namespace
    assert "engine" not in ns and "report" not in ns

    path, ns = _filled(tmp_path, "00_orientation", "ada")
    report = check(notebook=path, namespace=ns, show=False)
    assert (report.earned, report.possible) == (8, 8) and report.all_passed
    assert all(q.message == "" for q in report.questions)


def test_question_selects_one(tmp_path):
    path, ns = _filled(tmp_path, "00_orientation", "ben")
    by_id = check("cube_sum_grad_tests", notebook=path, namespace=ns, show=False)
    by_function = check("cube_sum_grad", notebook=path, namespace=ns, show=False)
    for report in (by_id, by_function):
        assert [q.grade_id for q in report.questions] == ["cube_sum_grad_tests"]
        assert report.questions[0].earned == 0 and "wrong shape" in report.questions[0].first_line
    assert [q.earned for q in check("environment_report", notebook=path, namespace=ns, show=False).questions] == [2]
    with pytest.raises(ValueError, match="no question 'nope'.*cube_sum_grad_tests"):
        check("nope", notebook=path, namespace=ns, show=False)


def test_written_answer_is_graded_by_hand_never_zero(capsys):
    release = REPO / "release" / "03_yolo_head" / "03_yolo_head.ipynb"
    report = check(notebook=release, namespace={})   # no answers run: every test cell fails, quickly
    shown = capsys.readouterr().out
    [essay] = [q for q in report.questions if q.kind == "manual"]   # its written answer (3 points)
    assert essay.kind == "manual" and essay.earned is None and essay.answered is False
    assert essay.score_text().startswith("graded by hand") and "not answered yet" in essay.score_text()
    [row] = [line for line in shown.splitlines() if essay.grade_id in line]
    assert "graded by hand" in row and "0 /" not in row
    assert report.possible == 16 and report.by_hand == 3 and "(+ 3 point(s) graded by hand)" in shown
    assert [q.grade_id for q in report.questions if q.kind == "auto"][-1] == "attack_tests"
    # selected alone, it is listed too
    alone = check(essay.grade_id, notebook=release, namespace={}, show=False)
    assert [(q.grade_id, q.kind) for q in alone.questions] == [(essay.grade_id, "manual")]


def test_written_answer_that_was_answered(tmp_path):
    path = _synthetic(tmp_path, "assert True", answer="Because the hook returns the same tensor.")
    report = check(notebook=path, namespace={}, show=False)
    assert report["essay"].score_text() == "graded by hand (3 pt)"
    assert (report.earned, report.possible, report.by_hand) == (2, 2, 3)


def test_student_code_cannot_break_the_caller(tmp_path, capsys):
    def bye(*args):
        raise SystemExit(3)

    def interrupted(*args):
        raise KeyboardInterrupt

    path = _synthetic(tmp_path,
                      "result = f()",                                   # SystemExit from the student's function
                      "import sys\nprint('to stderr', file=sys.stderr)",  # nbgrader: stderr zeroes the cell
                      "import torch\ntorch.set_grad_enabled(False)\ng()",  # KeyboardInterrupt: stop here
                      "assert True")
    stdout, stderr = sys.stdout, sys.stderr
    ns = {"f": bye, "g": interrupted}
    report = check(notebook=path, namespace=ns, show=False)
    assert sys.stdout is stdout and sys.stderr is stderr
    import torch

    assert torch.is_grad_enabled(), "a test cell's global switch was not put back"
    t0, t1, t2, t3 = report.questions
    assert t0.earned == 0 and t0.first_line.startswith("SystemExit: 3")
    assert t1.earned == 0 and "wrote to stderr" in t1.message and "to stderr" in t1.message
    assert t2.earned == 0 and t2.first_line.startswith("KeyboardInterrupt")
    assert t3.earned is None and "not run" in t3.score_text()
    assert set(ns) <= {"f", "g", "__builtins__"}
    capsys.readouterr()


def test_partial_credit_and_hidden_blocks(tmp_path):
    path = _synthetic(tmp_path, "1.5",            # nbgrader's partial credit: the cell shows a number
                      "x = 1\n### BEGIN HIDDEN TESTS\nraise RuntimeError('hidden')\n### END HIDDEN TESTS\n",
                      "1.5;")                     # nothing shown: full points
    report = check(notebook=path, namespace={}, show=False)
    assert [q.earned for q in report.questions] == [1.5, 2, 2]


def test_which_notebook(tmp_path, monkeypatch):
    path = _synthetic(tmp_path, "assert True")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    with pytest.raises(NotebookNotFound, match='pass notebook="'):
        check(namespace={}, show=False)
    monkeypatch.setenv("JPY_SESSION_NAME", str(path))   # what jupyter_server sets for the kernel
    assert check(namespace={}, show=False).notebook == path
    monkeypatch.setenv("JPY_SESSION_NAME", str(tmp_path / "renamed-since.ipynb"))
    with pytest.raises(NotebookNotFound, match="renamed or moved"):
        check(namespace={}, show=False)
    assert check(notebook="synthetic.ipynb", namespace={}, show=False).earned == 2
    with pytest.raises(NotebookNotFound, match="no notebook file"):
        check(notebook="nope.ipynb", namespace={}, show=False)


def test_does_nothing_while_graded(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("COURSE_VERDICTS", str(tmp_path / "verdicts.json"))
    report = check(notebook=_synthetic(tmp_path, "raise SystemExit"), namespace={})
    assert report.questions == [] and "being graded" in capsys.readouterr().out


def test_hidden_without_the_grader_says_so(tmp_path, monkeypatch):
    import autograder.cli

    monkeypatch.setattr(autograder.cli, "instructor_available", lambda: False)
    report = check(notebook=_synthetic(tmp_path, "assert True"), namespace={}, hidden=True, show=False)
    assert report.earned == 2 and report.hidden_total is None
    assert any("student install" in n and "only the visible tests" in n for n in report.notes)


def test_hidden_shows_the_graders_result(tmp_path, monkeypatch, capsys):
    """The plumbing of hidden=True, with a stand-in for `python -m autograder selfgrade` (the real one is
    exercised by test_selfgrade_recognises_a_renamed_copy)."""
    fake = tmp_path / "fake_selfgrade.py"
    fake.write_text(
        "import json, os, sys, time\n"
        "print('grading', sys.argv[1]); time.sleep(1.2)\n"
        "json.dump({'assignment': 'synthetic', 'recognised': 'from its file name', 'questions': ["
        "{'grade_id': 't0', 'score': 0, 'max_score': 2, 'kind': 'auto', 'message': 'HiddenTestFailed: on float16'},"
        "{'grade_id': 'essay', 'score': None, 'max_score': 3, 'kind': 'manual', 'message': ''}],"
        "'auto_score': 0, 'auto_max': 2, 'manual_pending': 3, 'notes': []},"
        " open(os.environ['COURSE_SELFGRADE_JSON'], 'w'))\n"
        "sys.exit(1)\n")
    monkeypatch.setattr(check_module, "_selfgrade_command", lambda path: [sys.executable, str(fake), str(path)])
    path = _synthetic(tmp_path, "assert True", answer="my answer")
    report = check(notebook=path, namespace={}, hidden=True)
    shown = capsys.readouterr().out
    assert "not what the kernel holds: save it first" in shown
    assert "grading with the hidden tests" in shown and "exit status 1" in shown   # the progress line
    assert report["t0"].earned == 2 and report["t0"].hidden == "0 / 2"
    assert report["t0"].hidden_message == "HiddenTestFailed: on float16"
    assert report["essay"].hidden == "pending (graded by hand)"
    assert report.hidden_total.endswith("0 / 2  (+ 3 point(s) graded by hand)")
    assert "with hidden tests: 0 / 2   HiddenTestFailed: on float16" in shown


def _cli(*args, env=None):
    full = dict(os.environ, **(env or {}))
    full["PATH"] = str(Path(sys.executable).parent) + os.pathsep + full.get("PATH", "")
    return subprocess.run([sys.executable, "-m", "autograder", *args], cwd=REPO, env=full,
                          capture_output=True, text=True, timeout=600)


def test_selfgrade_unrecognised_notebook_asks_for_the_assignment(tmp_path):
    path = _synthetic(tmp_path, "assert True")
    proc = _cli("selfgrade", str(path))
    assert proc.returncode == 2 and "which assignment is this?" in proc.stderr and "--assignment" in proc.stderr


@pytest.mark.slow
def test_selfgrade_recognises_a_renamed_copy(tmp_path):
    name, nb = samples.build_notebook(samples.parse_sample(REPO / "tests" / "samples" / "00_orientation" / "ben.py"))
    path = tmp_path / "whatever-Copy1.ipynb"
    nbformat.write(nb, path)
    result = tmp_path / "result.json"
    proc = _cli("selfgrade", str(path), env={"COURSE_SELFGRADE_JSON": str(result)})
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr   # graded (2 of 8 points): not a failure of the command
    first = out.splitlines()[0]
    assert first.startswith(f"grading {path} as 00_orientation (hidden tests included); about ") and first.endswith(" s")
    assert "recognised as 00_orientation from its cell ids" in out
    assert "cube_sum_grad_tests              0 / 2" in out and "autograded total: 2 / 8" in out
    assert out.strip().splitlines()[-1].startswith("You have 2 of 8 autograded points so far;")
    data = json.loads(result.read_text())
    assert data["assignment"] == "00_orientation" and (data["auto_score"], data["auto_max"]) == (2, 8)
    assert "wrong shape" in {q["grade_id"]: q for q in data["questions"]}["cube_sum_grad_tests"]["message"]


def _stub_notebook(tmp_path, test_source: str) -> Path:
    """A released-style notebook: a section heading, a set-up cell, an answer cell holding nbgrader's stub,
    and its test cell."""
    heading = nbformat.v4.new_markdown_cell("## 2. Predict the versions\n\nWrite `predict_versions()`.")
    setup = nbformat.v4.new_code_cell("import math\nSCALE = 3")
    answer = nbformat.v4.new_code_cell(
        "def predict_versions():\n    # YOUR CODE HERE\n"
        "    raise NotImplementedError(\"Replace this line with your answer, run the cell, then run the tests below.\")")
    answer.metadata["nbgrader"] = {"grade": False, "solution": True, "locked": False, "grade_id": "predict_versions",
                                   "schema_version": 3, "task": False}
    test = nbformat.v4.new_code_cell(test_source)
    test.metadata["nbgrader"] = {"grade": True, "solution": False, "locked": True,
                                 "grade_id": "predict_versions_tests", "points": 2, "schema_version": 3, "task": False}
    path = tmp_path / "stub.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[heading, setup, answer, test]), path)
    return path


def test_a_fresh_kernel_is_told_which_cells_to_run(tmp_path):
    """Nothing run yet: not a bare NameError but the cell that defines the name, and where it is."""
    path = _stub_notebook(tmp_path, "got = predict_versions()\nassert got == [0, 1] * SCALE")
    report = check(notebook=path, namespace={}, show=False)
    q = report["predict_versions_tests"]
    assert q.earned == 0 and "NameError" not in q.message
    assert q.first_line == ("`predict_versions` is not defined yet: run the cell that defines it (section 2, "
                            "`def predict_versions():` under 'YOUR CODE HERE') and the cells above it, "
                            "then call check() again")
    assert any("Run All Above Selected Cell" in n for n in report.notes)
    # the answer cell was run (and answered), not the set-up cell above it: that one is named by its first line
    ns = {"predict_versions": lambda: [0, 1] * 3}
    q = check(notebook=path, namespace=ns, show=False)["predict_versions_tests"]
    assert q.first_line.startswith("`SCALE` is not defined yet: run the cell that defines it "
                                   "(section 2, the cell starting `import math`)"), q.first_line
    # a name no cell defines: run from the top, and perhaps a cell was deleted
    q = check(notebook=_stub_notebook(tmp_path, "nowhere_defined()"), namespace={}, show=False).questions[0]
    assert q.first_line.startswith("`nowhere_defined` is not defined: no cell of this notebook defines it")


def test_a_fresh_kernel_on_a_released_notebook(capsys):
    """What a new student sees calling check() before running anything in assignment 1."""
    release = REPO / "release" / "01_version_counter" / "01_version_counter.ipynb"
    report = check(notebook=release, namespace={})
    shown = capsys.readouterr().out
    assert "NameError" not in shown
    first = report["reproduce_sigmoid_error_tests"].first_line
    assert first.startswith("`call_student` is not defined yet: run the cell that defines it "
                            "(section \"How this notebook works\", the cell starting `import re`)"), first


def test_a_stub_is_not_implemented_yet(tmp_path):
    """The stub's cell was run: "not implemented yet", as Validate's output says it, whether the test calls
    the function through call_student or directly."""
    ns: dict = {}
    for test_source in ("from autograder.checks import call_student\ncall_student(predict_versions)",
                        "assert predict_versions() == [0, 1]"):
        path = _stub_notebook(tmp_path, test_source)
        exec(compile(nbformat.read(path, as_version=4).cells[2].source, "<answer>", "exec"), ns)
        q = check(notebook=path, namespace=ns, show=False)["predict_versions_tests"]
        assert q.earned == 0 and "predict_versions is not implemented yet" in q.first_line, q.message
    assert q.first_line == ("predict_versions is not implemented yet: replace `raise NotImplementedError` in its "
                            "cell (section 2, `def predict_versions():` under 'YOUR CODE HERE'), run that cell, "
                            "then call check() again")


def test_a_library_not_implemented_error_is_not_called_a_stub(tmp_path):
    """NotImplementedError from a library (an op missing for a device, say) is shown as raised, not as a stub."""
    def library_op():
        raise NotImplementedError("Could not run 'aten::foo' with arguments from the 'Meta' backend")

    path = _stub_notebook(tmp_path, "library_op()")
    q = check(notebook=path, namespace={"library_op": library_op}, show=False).questions[0]
    assert q.first_line == "NotImplementedError: Could not run 'aten::foo' with arguments from the 'Meta' backend"
