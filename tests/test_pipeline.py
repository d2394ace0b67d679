"""The course through real nbgrader: source earns full marks, release earns zero, samples earn
exactly what their files say, feedback is written."""
from __future__ import annotations

import nbformat
import pytest

from instructor.batch import course
from instructor.authoring import samples
from conftest import RELEASE_STUDENT, SESSION_CELL_SECONDS, SOURCE_STUDENT

ASSIGNMENTS = course.assignments()
SAMPLES = samples.load_samples()

pytestmark = pytest.mark.slow


def _auto(assignment):
    return [c for c in course.gradebook_layout(assignment) if c["kind"] == "auto"]


def _result(graded, student, assignment):
    res = graded.get((student, assignment))
    assert res is not None, f"{student}/{assignment} was not graded"
    assert res["status"] == "graded", f"{student}/{assignment}: {res['status']}\n{res['log'][-3000:]}"
    return res


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_source_notebook_earns_full_autograded_points(graded, assignment):
    res = _result(graded, SOURCE_STUDENT, assignment)
    lost = {c["grade_id"]: (res["questions"].get(c["grade_id"]), c["points"])
            for c in _auto(assignment) if res["questions"].get(c["grade_id"]) != c["points"]}
    assert not lost, f"the instructor solution of {assignment} loses points: {lost}"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_cell_of_the_solution_runs_without_an_error_in_the_graders_kernel(graded, assignment):
    """The instructor's solution, graded: no cell of it shows an error in the autograded notebook (what the
    feedback shows). A lesson cell the sandbox cannot run fails here, not in every student's feedback
    (until issue 37's fix, ``share_memory_()`` in assignment 2: the sandbox had no writable /dev/shm)."""
    res = _result(graded, SOURCE_STUDENT, assignment)
    for nb_path in (res["workdir"] / "autograded" / SOURCE_STUDENT / assignment).glob("*.ipynb"):
        nb = nbformat.read(nb_path, as_version=4)
        errors = [(i, o.ename, o.evalue[:200]) for i, c in enumerate(nb.cells) if c.cell_type == "code"
                  for o in c.get("outputs", []) if o.output_type == "error"]
        assert not errors, f"{nb_path.name}: cells that fail in the grader's kernel (index, error, message): {errors}"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_release_notebook_runs_to_the_end_and_earns_zero(graded, assignment):
    res = _result(graded, RELEASE_STUDENT, assignment)
    scored = {c["grade_id"]: res["questions"].get(c["grade_id"]) for c in _auto(assignment)
              if res["questions"].get(c["grade_id"])}
    assert not scored, f"untouched release notebook of {assignment} earns points: {scored}"
    for nb_path in (res["workdir"] / "autograded" / RELEASE_STUDENT / assignment).glob("*.ipynb"):
        nb = nbformat.read(nb_path, as_version=4)
        code_cells = [c for c in nb.cells if c.cell_type == "code"]
        unrun = [i for i, c in enumerate(code_cells) if c.execution_count is None]
        assert not unrun, f"{nb_path.name}: code cells {unrun} never ran (execution stopped early?)"
        for cell in code_cells:
            meta = cell.metadata.get("nbgrader", {})
            errors = [o for o in cell.outputs if o.output_type == "error"]
            if meta.get("solution") and errors:
                assert errors[0].ename == "NotImplementedError", \
                    f"stub {meta['grade_id']} crashed with {errors[0].ename} instead of NotImplementedError"
        failures = dict(course.failing_tests(nb_path))
        assert set(failures) >= {c["grade_id"] for c in _auto(assignment)}, "every graded test must fail on the stubs"
        unclear = {gid: msg for gid, msg in failures.items() if "not implemented" not in msg.lower()
                   and "notimplementederror" not in msg.lower()}
        assert not unclear, f"on the stubs, a test must say the answer is not implemented yet: {unclear}"


@pytest.mark.parametrize("sample", SAMPLES, ids=[f"{s.assignment}/{s.student}" for s in SAMPLES])
def test_sample_submission_earns_its_expected_score(graded, sample):
    res = _result(graded, sample.student, sample.assignment)
    auto_ids = {c["grade_id"] for c in _auto(sample.assignment)}
    total = sum(res["questions"].get(g) or 0 for g in auto_ids)
    for gid, expected in sample.expect_questions.items():
        assert gid in auto_ids, f"{sample.path.name}: no autograded question {gid}"
        assert res["questions"].get(gid) == expected, \
            f"{sample.path.name} ({sample.about}): {gid} got {res['questions'].get(gid)}, expected {expected}"
    assert total == sample.expect_auto, \
        f"{sample.path.name} ({sample.about}): total {total}, expected {sample.expect_auto}; per question {res['questions']}"


def test_a_function_that_never_returns_costs_one_cell_limit(graded):
    """Assignment 3 with a ``decode`` that loops forever (graded next to the others, ``--jobs 2``):
    the confirmation stops calling it after its first cell limit, the kernel skips what hung there. The
    session grades with a cell limit of SESSION_CELL_SECONDS (tests/conftest.py): the loop costs that
    once (with the rest of the grading: under 1.8 limits), not once per run (two limits or more). With
    the course's own limits (60 s for a course cell) that is under two minutes."""
    res = _result(graded, "endless_decode", "03_yolo_head")
    assert SESSION_CELL_SECONDS <= res["seconds"] < 1.8 * SESSION_CELL_SECONDS, \
        f"an endless decode cost {res['seconds']:.0f} s of a worker: expected one cell limit " \
        f"({SESSION_CELL_SECONDS} s) and the rest of its grading, under {1.8 * SESSION_CELL_SECONDS:.0f} s"


def test_feedback_is_written_for_every_graded_submission(graded):
    missing = []
    for (student, assignment), res in graded.items():
        if res["status"] == "graded":
            if not list((res["workdir"] / "feedback" / student / assignment).glob("*.html")):
                missing.append(f"{student}/{assignment}")
    assert not missing, f"no HTML feedback for {missing}"


def test_every_assignment_has_samples_that_span_the_range():
    for a in ASSIGNMENTS:
        mine = [s for s in SAMPLES if s.assignment == a]
        full = sum(c["points"] for c in _auto(a))
        assert len(mine) >= 3, f"{a}: needs at least 3 sample submissions, has {len(mine)}"
        assert any(s.expect_auto == full for s in mine), f"{a}: no sample earns full marks"
        assert any(s.expect_auto == 0 for s in mine), f"{a}: no sample earns zero"
        assert any(0 < s.expect_auto < full for s in mine), f"{a}: no partial sample"


@pytest.mark.parametrize("assignment", ["03_yolo_head", "04_in_the_wild"])
def test_the_kernel_runs_the_slow_demonstrations_shortened_and_says_so(graded, assignment):
    """nbgrader's kernel is told it is graded (``COURSE_GRADING=1``): the demonstrations that only show
    something run their graded rounds, and the feedback's output says so (issue 37: cheap when graded)."""
    res = _result(graded, SOURCE_STUDENT, assignment)
    nb_path, = (res["workdir"] / "autograded" / SOURCE_STUDENT / assignment).glob("*.ipynb")
    nb = nbformat.read(nb_path, as_version=4)
    shortened = [c for c in nb.cells if c.cell_type == "code" and "demonstration_steps(" in c.source]
    assert shortened, f"{assignment}: no demonstration cell calls demonstration_steps"
    for cell in shortened:
        text = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
        assert "(graded run: this demonstration ran" in text, \
            f"{assignment}: a demonstration ran in full in the grader's kernel:\n{cell.source[:300]}\n--- output:\n{text[:600]}"
