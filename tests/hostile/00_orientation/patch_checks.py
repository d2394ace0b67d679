# about: setattr on the check helpers the tests import (autograder.checks, autograder.verdicts) so
# about: every in-notebook test passes, with ben's wrong answers: the judge outside the kernel disagrees
# base: 00_orientation/ben
# expect: auto=2
# flag: integrity

# %% first:
import autograder.checks as _c, autograder.verdicts as _v
for _name in ("check_close", "check_equal", "check_true", "check_type", "check_tensor", "fail"):
    setattr(_c, _name, lambda *a, **k: None)
_v.confirmed = lambda *a, **k: None
import autograder
autograder.checks = _c
