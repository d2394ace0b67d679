"""The hidden part of a test cell: report the verdict of the check that ran *outside* this kernel.

A graded test cell ends with ``confirmed("<grade_id>")`` between nbgrader's hidden-test markers.
When the notebook is autograded, the grader has already run that question's check in a separate
sandboxed process (the student's cells only, no hidden code, no reference answers) and judged the
results in its own process; it hands the verdicts to this kernel as a read-only JSON file named by
``COURSE_VERDICTS``. ``confirmed`` raises the judge's message when the check failed, so the student
reads it in the feedback. Patching this function cannot raise a grade: the gradebook keeps the
lower of this cell's outcome and the judge's verdict.

Run in an instructor's ``source/`` notebook (no verdict file), it runs the check in this process,
through the instructor side of the repository.
"""
from __future__ import annotations

import json
import os
import sys

from .checks import CheckFailed
from .i18n import _

__all__ = ["confirmed", "HiddenTestFailed"]


class HiddenTestFailed(CheckFailed):
    """A hidden test failed (its visible tests, above it in the same cell, passed).

    It reads like any other failed check; its own name lets the course's tests tell, in an autograded
    notebook, a cell whose *visible* tests failed from one whose hidden tests did.
    """


def confirmed(grade_id: str) -> None:
    path = os.environ.get("COURSE_VERDICTS")
    if path:
        try:
            with open(path) as f:
                verdict = json.load(f).get(grade_id)
        except (OSError, ValueError) as err:
            raise CheckFailed(_(f"the grader's verdicts could not be read ({err}); ask your instructor")) from None
        if verdict is None:
            raise CheckFailed(_(f"no confirmation for '{grade_id}': the hidden checks of this question did not run"))
        if not verdict["passed"]:
            raise HiddenTestFailed(verdict["message"]) from None
        return
    from .cli import instructor_available, use_instructor_side

    if not instructor_available():
        print(_(f"(hidden tests of '{grade_id}' run when the notebook is graded: "
                "python -m autograder selfgrade NOTEBOOK in a clone of the course)"))
        return
    use_instructor_side()
    from instructor.hidden import run_in_process

    verdict = run_in_process(grade_id, sys._getframe(1).f_globals)
    if not verdict.passed:   # in the notebook's language, the hidden checks' texts included (the grader's catalogue)
        from instructor.engine.i18n import translate_verdict

        from .i18n import language

        raise HiddenTestFailed(translate_verdict(verdict.message, language())) from None
