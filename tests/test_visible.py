"""What a student sees before handing in: visible tests that teach, and failures that read short.

Each sample with a ``# visible:`` line names test cells whose *visible* tests must fail with its
answers (the silent-wrong fixes the section warns about) or pass (correct answers in any style).
The session's grading run (``conftest.graded``: real nbgrader, every sample, source and release
notebook) already executed every test cell; a cell whose visible tests passed but whose hidden part
failed ends in ``HiddenTestFailed``, so its visible outcome is read from the autograded notebook with
no extra run. (``python -m instructor.authoring.visible`` runs samples in the release itself, for
authors.) Every failure must read the course's way: at most ten lines, the friendly line first, no
Python traceback and no chained exception — the untouched release notebooks included, which is a
student's very first failure, as nbgrader's feedback shows it.
"""
from __future__ import annotations

import nbformat
import pytest

from instructor.batch import course
from instructor.authoring import samples, visible

VISIBLE = [s for s in samples.load_samples() if s.expect_visible]
MAX_LINES = 10
RELEASE_STUDENT = "zz-release"


@pytest.fixture(scope="session")
def visible_runs(graded, pytestconfig) -> dict[str, visible.VisibleRun]:
    """'<assignment>/<student>' -> each test cell's visible outcome in the autograded notebook."""
    runs = {}
    wanted = [(s.student, s.assignment) for s in VISIBLE] + [(RELEASE_STUDENT, a) for a in course.assignments()]
    only = pytestconfig.getoption("--assignment")   # make test A=...: the session graded that assignment only
    wanted = [w for w in wanted if not only or w[1] == only]
    for student, assignment in wanted:
        entry = graded[(student, assignment)]
        assert entry["status"] == "graded", (student, assignment, entry["status"])
        cells = {}
        for path in sorted((entry["workdir"] / "autograded" / student / assignment).glob("*.ipynb")):
            cells.update(visible.cell_outcomes(nbformat.read(path, as_version=4)))
        name = f"{assignment}/{'release' if student == RELEASE_STUDENT else student}"
        runs[name] = visible.VisibleRun(name, cells)
    return runs


def test_there_are_samples_that_prove_the_visible_tests_teach():
    assert {s.assignment for s in VISIBLE} >= {"01_version_counter", "03_yolo_head"}
    assert any("fail" in s.expect_visible.values() for s in VISIBLE)
    assert any("pass" in s.expect_visible.values() for s in VISIBLE)


@pytest.mark.slow
@pytest.mark.parametrize("sample", VISIBLE, ids=lambda s: f"{s.assignment}/{s.student}")
def test_visible_tests_fail_the_fixes_their_section_warns_about(sample, visible_runs):
    run = visible_runs[f"{sample.assignment}/{sample.student}"]
    wrong = run.mismatches(sample.expect_visible)
    assert not wrong, f"{sample.path.name} ({sample.about}):\n" + "\n".join(wrong)


def _friendly(shown: str) -> list[str]:
    """What is wrong with how a failure reads (empty when it reads the course's way)."""
    lines = shown.strip().splitlines()
    problems = []
    if len(lines) > MAX_LINES:
        problems.append(f"{len(lines)} lines (at most {MAX_LINES})")
    if not lines or not lines[0].startswith("CheckFailed: "):
        problems.append(f"starts with {lines[0][:80]!r} instead of the friendly line" if lines else "empty")
    for marker in ("Traceback (most recent call last)", "During handling of the above exception",
                   "The above exception was the direct cause", "site-packages", "autograder/"):
        if marker in shown:
            problems.append(f"shows {marker!r}")
    return problems


@pytest.mark.slow
@pytest.mark.parametrize("assignment", course.assignments())
def test_a_released_notebook_first_failure_is_short_and_friendly_first(assignment, visible_runs):
    cells = visible_runs[f"{assignment}/release"].cells
    failed = [c for c in cells.values() if c.outcome == "fail"]
    assert failed, f"{assignment}: the untouched release failed no test cell (stubs should)"
    first = failed[0]
    assert not _friendly(first.shown), f"{assignment}/{first.grade_id}: {_friendly(first.shown)}\n{first.shown}"
    assert "not implemented yet" in first.shown.splitlines()[0] + first.shown, first.shown
    assert "try next" in first.shown, first.shown


@pytest.mark.slow
def test_every_visible_failure_reads_short_and_friendly_first(visible_runs):
    bad = [f"{name}/{c.grade_id}: {', '.join(_friendly(c.shown))}\n{c.shown}"
           for name, run in visible_runs.items() for c in run.cells.values()
           if c.outcome == "fail" and _friendly(c.shown)]
    assert not bad, "\n\n".join(bad)


def test_a_crash_inside_a_student_function_reads_short_with_no_chain():
    """``call_student`` turns a crash into the course's message, raised outside the ``except``."""
    from autograder.checks import CheckFailed, call_student

    def stub():
        raise NotImplementedError("write me")

    def crash(x):
        return x.nope

    for fn, args, first in ((stub, (), "stub is not implemented yet"), (crash, (1,), "crash(...) raised AttributeError")):
        with pytest.raises(CheckFailed) as info:
            call_student(fn, *args)
        assert str(info.value).splitlines()[0] == first
        assert info.value.__context__ is None and info.value.__cause__ is None
        assert len(str(info.value).splitlines()) <= MAX_LINES
