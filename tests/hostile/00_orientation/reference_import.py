# about: finds the repository from the installed package (autograder.__file__), imports the instructor's
# about: hidden checks and replaces their verdicts with passes, the visible helpers too; cy's empty answers.
# about: Without the sandbox this is full marks (tests/test_hostile.py grades it unguarded too).
# base: 00_orientation/cy
# expect: auto=0

# %% first:
import os, sys
import autograder
_repo = os.path.dirname(os.path.dirname(os.path.abspath(autograder.__file__)))
sys.path[:0] = [_repo, "../../..", "../../../.."]
try:
    import instructor.hidden as _hidden  # the instructor side: must not exist in the sandbox
    _hidden.run_in_process = lambda grade_id, *a, **k: _hidden.Verdict(grade_id, True)
    import autograder.checks as _c
    for _name in ("check_close", "check_equal", "check_true", "check_type", "check_tensor", "fail"):
        setattr(_c, _name, lambda *a, **k: None)
    _c.call_student = lambda fn, *a, **k: None
    FOUND_INSTRUCTOR = True
except ImportError:
    FOUND_INSTRUCTOR = False
