"""The stages after canonical, in milliseconds: the judge (:func:`pipeline.keep_lower`) and the one-line reason a
failed grading gives (:func:`pipeline.read_notebook`, :func:`pipeline.failure_reason`,
:func:`pipeline.kernel_failure`, :func:`pipeline.failing_tests`). No kernel, no sandbox, no grading run.

``keep_lower`` runs on a real nbgrader gradebook (SQLite, built once for the module and copied per test) laid
out like ``00_orientation``'s: four test cells of 2 points, plus one written answer nobody graded yet.
"""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook, new_output

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from instructor.engine import pipeline  # noqa: E402
from instructor.engine.confirm import ERROR_TAIL_BYTES, ERROR_TAIL_LINES  # noqa: E402
from instructor.hidden import Verdict  # noqa: E402
from instructor.layout import gradebook_layout  # noqa: E402

ASSIGNMENT = "00_orientation"
STUDENT = "ann"
TESTS = [c["grade_id"] for c in gradebook_layout(ASSIGNMENT)]   # the four test cells, 2 points each
WRITTEN = "essay"                                                # a hand-graded cell: no auto score


# --------------------------------------------------------------------------- a real gradebook

@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    pipeline.prepare_environment()   # nbgrader's gradebook without an `alembic` subprocess
    from nbgrader.api import Gradebook

    db = tmp_path_factory.mktemp("gradebook") / "gradebook.db"
    with Gradebook(f"sqlite:///{db}") as gb:
        gb.add_assignment(ASSIGNMENT)
        gb.add_notebook(ASSIGNMENT, ASSIGNMENT)
        for c in gradebook_layout(ASSIGNMENT):
            gb.add_grade_cell(c["grade_id"], ASSIGNMENT, ASSIGNMENT, max_score=c["points"], cell_type="code")
        gb.add_grade_cell(WRITTEN, ASSIGNMENT, ASSIGNMENT, max_score=3, cell_type="markdown")
        gb.add_student(STUDENT)
        gb.add_submission(ASSIGNMENT, STUDENT)
    return db


class Api:
    """What keep_lower and scores use of nbgrader's API: a new gradebook session at each ``.gradebook``."""

    def __init__(self, db: Path):
        self.url = f"sqlite:///{db}"

    @property
    def gradebook(self):
        from nbgrader.api import Gradebook

        return Gradebook(self.url)


@pytest.fixture()
def api(template, tmp_path) -> Api:
    db = tmp_path / "gradebook.db"
    shutil.copy(template, db)
    return Api(db)


def kernel_says(api: Api, autos: dict) -> None:
    """What nbgrader's autograde writes: the in-kernel score of each test cell (None: not autograded)."""
    with api.gradebook as gb:
        for g in gb.find_submission(ASSIGNMENT, STUDENT).notebooks[0].grades:
            g.auto_score = autos.get(g.name)
        gb.db.commit()


def book(api: Api) -> dict:
    with api.gradebook as gb:
        return {g.name: g.auto_score for g in gb.find_submission(ASSIGNMENT, STUDENT).notebooks[0].grades}


def judge(api: Api, verdicts: dict) -> pipeline.Result:
    res = pipeline.Result(STUDENT, ASSIGNMENT, ok=True)
    pipeline.keep_lower(api, pipeline.Submission(STUDENT, ASSIGNMENT, []), verdicts, res)
    return res


FULL = {g: 2.0 for g in TESTS}
PASS = {g: Verdict(g, True, "", 3) for g in TESTS}


# --------------------------------------------------------------------------- keep_lower

def test_agreeing_verdicts_leave_the_gradebook_as_the_kernel_wrote_it(api):
    autos = {TESTS[0]: 2.0, TESTS[1]: 0.0, TESTS[2]: 2.0, TESTS[3]: 0.0}
    kernel_says(api, autos)
    verdicts = {g: Verdict(g, autos[g] > 0, "" if autos[g] else "cube_sum_grad raised ValueError", 3) for g in TESTS}
    res = judge(api, verdicts)
    assert book(api) == {**autos, WRITTEN: None}
    assert res.integrity == []


def test_a_fooled_notebook_gets_the_check_outside_the_kernel_s_zero(api):
    # the attack: the notebook's own tests were fooled (say, `call_student` patched): full marks in the kernel
    kernel_says(api, FULL)
    fooled = TESTS[1]
    verdicts = {**PASS, fooled: Verdict(fooled, False, "cube_sum_grad returned the wrong gradient\n"
                                                       "  for input: [1.0, -2.0]\n  expected: [3, 12]", 3)}
    before = book(api)
    assert before[fooled] == 2.0     # the control: what the gradebook holds without the judge
    res = judge(api, verdicts)
    assert book(api) == {**FULL, fooled: 0.0, WRITTEN: None}
    assert res.integrity == [f"{fooled}: the notebook's own tests gave 2, the check outside the kernel gave 0 "
                             "(cube_sum_grad returned the wrong gradient); kept 0"]
    total = sum(q.score or 0 for q in pipeline.scores(api, ASSIGNMENT, STUDENT))
    assert total == 6.0


def test_when_only_the_check_outside_passes_the_kernel_s_lower_score_is_kept(api):
    kernel_says(api, {**FULL, TESTS[2]: 0.0})
    res = judge(api, PASS)
    assert book(api)[TESTS[2]] == 0.0
    assert res.integrity == [f"{TESTS[2]}: the check outside the kernel passed but the notebook's own tests gave 0; "
                             "kept 0"]


@pytest.mark.parametrize("passed, kept", [(True, 1.5), (False, 0.0)])
def test_partial_credit_is_kept_or_lowered(api, passed, kept):
    kernel_says(api, {**FULL, TESTS[0]: 1.5})
    res = judge(api, {**PASS, TESTS[0]: Verdict(TESTS[0], passed, "" if passed else "wrong", 3)})
    assert book(api)[TESTS[0]] == kept
    assert len(res.integrity) == 1 and res.integrity[0].startswith(f"{TESTS[0]}: ")
    assert res.integrity[0].endswith(f"kept {kept:g}")


def test_a_verdict_from_a_worker_as_plain_json_counts_like_a_verdict(api, tmp_path):
    kernel_says(api, FULL)
    objects = {**PASS, TESTS[3]: Verdict(TESTS[3], False, "intermediate_grad is not implemented yet", 3)}
    res_objects = judge(api, objects)
    lowered = book(api)
    kernel_says(api, FULL)
    res_json = judge(api, json.loads(json.dumps({g: v.as_json() for g, v in objects.items()})))
    assert book(api) == lowered and lowered[TESTS[3]] == 0.0
    assert res_json.integrity == res_objects.integrity


def test_cells_without_a_verdict_or_without_an_auto_score_are_not_touched(api):
    kernel_says(api, FULL)
    res = judge(api, {WRITTEN: Verdict(WRITTEN, False, "no check", 0)})   # the only verdict: a hand-graded cell
    assert book(api) == {**FULL, WRITTEN: None}
    assert res.integrity == []


@pytest.mark.parametrize("message, shown", [
    ("", "failed"),
    ("   \n\n", "failed"),
    ("first line\nsecond line", "first line"),
    ("e" * 5000, "e" * 160),
])
def test_the_integrity_line_is_the_first_line_of_the_message_bounded(api, message, shown):
    kernel_says(api, FULL)
    res = judge(api, {**PASS, TESTS[0]: Verdict(TESTS[0], False, message, 3)})
    assert res.integrity == [f"{TESTS[0]}: the notebook's own tests gave 2, the check outside the kernel gave 0 "
                             f"({shown}); kept 0"]


def test_a_student_made_message_cannot_write_escapes_into_the_integrity_line(api):
    """The judge's message quotes what the student's function raised (``NameError: ... is not defined`` is shown
    as is): the integrity line is printed on the instructor's terminal, so it must be plain printable text."""
    kernel_says(api, FULL)
    evil = "\x1b[2J\x1b[1A\u202eall tests passed\x07 name 'x' is not defined\r  integrity: none"
    assert not evil.strip().splitlines()[0].isprintable()   # the control: its first line, as is, is not
    res = judge(api, {**PASS, TESTS[0]: Verdict(TESTS[0], False, evil, 3)})
    [line] = res.integrity
    assert line.isprintable(), ascii(line)
    assert "all tests passed" in line and line.endswith("; kept 0")
    assert book(api)[TESTS[0]] == 0.0


# --------------------------------------------------------------------------- a notebook that cannot be read

@pytest.mark.parametrize("content, reason", [
    (b"\x89PNG\r\n\x1a\n\x00\xff", "not a text file (is it really a notebook?)"),
    (b'{"cells": [', "corrupt notebook: not valid JSON (line 1, column 12: Expecting value)"),
    (b"[1, 2]", "not a Jupyter notebook (no 'cells' in the JSON)"),
    (b'{"metadata": {}}', "not a Jupyter notebook (no 'cells' in the JSON)"),
    (json.dumps({"cells": [{"cell_type": "code"}], "metadata": {}, "nbformat": 4,
                 "nbformat_minor": 5}).encode(), "not a valid Jupyter notebook ("),
])
def test_a_notebook_that_cannot_be_read_gives_one_line_naming_what_is_wrong(tmp_path, content, reason):
    path = tmp_path / "ann.ipynb"
    path.write_bytes(content)
    nb, why = pipeline.read_notebook(path)
    assert nb is None and why.startswith(reason) and "\n" not in why and len(why) < 250, why


def test_a_folder_in_place_of_a_notebook_says_it_cannot_be_read(tmp_path):
    (tmp_path / "ann.ipynb").mkdir()
    assert pipeline.read_notebook(tmp_path / "ann.ipynb") == (None, "cannot be read (Is a directory)")


def test_a_released_notebook_reads_without_a_reason():
    nb, why = pipeline.read_notebook(REPO / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    assert why is None and len(nb.cells) > 0


def test_a_hostile_cell_type_in_the_reason_stays_one_printable_line(tmp_path):
    bad = {"cells": [{"id": "a", "cell_type": "\x1b[2Jcode\n[ERROR] forged", "metadata": {}, "source": ""}],
           "metadata": {},
           "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "ann.ipynb"
    path.write_text(json.dumps(bad))
    _, why = pipeline.read_notebook(path)
    assert why.startswith("not a valid Jupyter notebook (") and why.isprintable(), ascii(why)


# --------------------------------------------------------------------------- a failed nbgrader step

def test_a_traceback_only_in_the_error_is_the_reason():
    error = ("Traceback (most recent call last):\n  File \"x.py\", line 1, in f\n    g()\n"
             "OSError: [Errno 28] No space left on device")
    reason = pipeline.failure_reason({"success": False, "log": "", "error": error})
    assert reason.splitlines()[0] == "OSError: [Errno 28] No space left on device"


def test_a_huge_hostile_traceback_is_bounded_and_clean():
    tb = ("Traceback (most recent call last):\n"
          + "".join(f"  File \"f{i}.py\", line {i}, in g\n    \x1b[2J{'y' * 500}\n" for i in range(2000))
          + "RuntimeError: \x1b]0;pwned\x07kernel \u202edied")
    reason = pipeline.failure_reason({"success": False, "log": f"[ERROR] {tb}\n", "error": ""})
    lines = reason.splitlines()
    assert lines[0] == "RuntimeError: kernel died"
    assert len(lines) <= ERROR_TAIL_LINES and len(reason) <= ERROR_TAIL_BYTES + 300 + ERROR_TAIL_LINES
    assert all(line.isprintable() for line in lines), ascii(reason[:300])


def test_the_kernel_s_own_last_words_join_the_reason(tmp_path):
    res = pipeline.Result(STUDENT, ASSIGNMENT, ok=False, error="RuntimeError: Kernel died")
    pipeline.kernel_failure(res, tmp_path)   # no kernel.log: nothing added
    assert res.error == "RuntimeError: Kernel died"
    (tmp_path / "kernel.log").write_text("starting\nImportError: libcuda.so.1: cannot open shared object file\n")
    pipeline.kernel_failure(res, tmp_path)
    assert res.error.splitlines() == ["RuntimeError: Kernel died", "the kernel's last error output:", "starting",
                                      "ImportError: libcuda.so.1: cannot open shared object file"]


def test_a_failing_test_says_the_error_never_the_hidden_test_code(tmp_path):
    hidden = "assert secret_reference(x) == 42  # HIDDEN"
    meta = {"nbgrader": {"grade_id": "t", "grade": True, "solution": False, "locked": True, "points": 2}}
    nb = new_notebook(cells=[
        new_code_cell(hidden, metadata=meta, outputs=[new_output(
            "error", ename="AssertionError", evalue="got 41", traceback=[f"----> 1 {hidden}", "AssertionError: got 41"])]),
        new_code_cell("pass", metadata={"nbgrader": {**meta["nbgrader"], "grade_id": "ok"}}, outputs=[]),
        new_code_cell("print('x')", metadata={"nbgrader": {**meta["nbgrader"], "grade_id": "noisy"}},
                      outputs=[new_output("stream", name="stderr", text="warning: slow\n")]),
    ])
    path = tmp_path / "graded.ipynb"
    nbformat.write(nb, path)
    failures = pipeline.failing_tests(path)
    assert failures[0] == ("t", "AssertionError: got 41")
    assert "ok" not in dict(failures)
    assert all("secret_reference" not in msg for _, msg in failures)
