# about: a fake autograder.checks / autograder.verdicts in sys.modules (and an import hook), ben's answers
# base: 00_orientation/ben
# expect: auto=2
# flag: integrity

# %% first:
import sys, types
fake = types.ModuleType("autograder.checks")
for _name in ("check_close", "check_equal", "check_true", "check_type", "check_tensor", "fail"):
    setattr(fake, _name, lambda *a, **k: None)
fake.call_student = lambda fn, *a, **k: fn(*a, **k)
sys.modules["autograder.checks"] = fake
v = types.ModuleType("autograder.verdicts"); v.confirmed = lambda *a: None
sys.modules["autograder.verdicts"] = v
class Hook:
    def find_spec(self, name, path=None, target=None):
        return None
sys.meta_path.insert(0, Hook())
