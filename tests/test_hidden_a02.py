"""instructor/hidden/a02_names_and_storage/, in-process (no nbgrader, no sandbox): every check passes
the reference solutions and other correct styles, and fails wrong answers (misconceptions, silent fixes)
with the course's messages. The sample submissions' per-question expectations are replayed too."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from autograder.checks import CheckFailed
from instructor.authoring.samples import load_samples
from instructor.hidden import checks_for, judge_results, run_in_process
from instructor.hidden import a02_names_and_storage as a02

REPO = Path(__file__).resolve().parents[1]
ASSIGNMENT = "02_names_and_storage"
SOURCE = REPO / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
CLASSIFY_IDS = ["classify_update_rebind_vs_inplace_tests", "classify_update_new_view_tests",
                "classify_update_no_change_tests", "classify_update_untracked_and_version_tests"]
MODEL_IDS = ["fixed_model_forward_tests", "fixed_model_gradients_tests"]

PRELUDE = """
import torch
from autograder import course_device
from autograder.storage import make_x
DEVICE = course_device()
"""


def _cell(grade_id: str) -> str:
    nb = json.loads(SOURCE.read_text())
    [cell] = [c for c in nb["cells"] if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == grade_id]
    return "".join(cell["source"])


def namespace(*codes: str) -> dict:
    """The notebook's setup (its read-only leaky_model included) and the given answer cells."""
    ns: dict = {}
    exec(PRELUDE + "\n" + _cell("leaky_model") + "\n" + "\n".join(codes), ns)  # noqa: S102 - test code
    return ns


REFERENCE = (_cell("classify_update"), _cell("fixed_model"))


def verdicts(ns: dict, grade_ids=CLASSIFY_IDS + MODEL_IDS) -> dict:
    return {gid: run_in_process(gid, ns, ASSIGNMENT) for gid in grade_ids}


# --------------------------------------------------------------------------- the checks themselves

def test_every_graded_cell_has_a_check():
    nb = json.loads(SOURCE.read_text())
    graded = [c["metadata"]["nbgrader"]["grade_id"] for c in nb["cells"]
              if c.get("metadata", {}).get("nbgrader", {}).get("grade") and c["cell_type"] == "code"]
    assert graded == [c.grade_id for c in checks_for(ASSIGNMENT)] == CLASSIFY_IDS + MODEL_IDS


def test_cases_are_deterministic_plain_data_and_cover_the_visible_tests():
    for check in checks_for(ASSIGNMENT):
        first, again = check.cases(), check.cases()
        assert len(first) == len(again) > 0
        for a, b in zip(first, again):
            assert a.keys() == b.keys() and a.get("label")
            for k in a:
                assert torch.equal(a[k], b[k]) if isinstance(a[k], torch.Tensor) else a[k] == b[k]
                assert isinstance(a[k], (torch.Tensor, str, bool, type(None))), (check.grade_id, k)
    # the visible tests' inputs are cases of the judges
    device = str(a02.course_device())
    cases = {gid: [(c["statement"], c["device"], c["dtype"]) for c in check.cases()]
             for check in checks_for(ASSIGNMENT) if (gid := check.grade_id) in CLASSIFY_IDS}
    for gid, visible in [(CLASSIFY_IDS[0], ["x = x + 1", "x += 1", "x[0] = 1", "x = x.add_(1)", "x[0] += 1", "x.t_()"]),
                         (CLASSIFY_IDS[1], ["x = x[:]", "x = x[1:]"]),
                         (CLASSIFY_IDS[2], ["x = x.contiguous()", "x.requires_grad_()"]),
                         (CLASSIFY_IDS[3], ["x.data += 1", "x.detach().add_(1)", "x *= 1", "x.data = x.data.clone()"])]:
        for s in visible:
            assert (s, device, "float32") in cases[gid]
    for check in checks_for(ASSIGNMENT):
        if check.grade_id in MODEL_IDS:
            first = check.cases()[0]
            x, w = (t.detach() for t in a02.model_inputs("cpu", torch.float64, seed=0))
            assert torch.equal(first["x"], x) and torch.equal(first["w"], w)
            assert (first["device"], first["dtype"]) == (device, "float64")


def test_classify_cases_reach_every_category_by_several_mechanisms():
    seen: dict[str, set] = {c: set() for c in a02.CATEGORIES}
    dtypes: dict[str, set] = {}
    for check in checks_for(ASSIGNMENT):
        if check.grade_id not in CLASSIFY_IDS:
            continue
        for case in check.cases():
            device = case["device"] or str(a02.course_device())
            dtype = getattr(torch, case["dtype"] or "float32")
            seen[a02.classify(case["statement"], device, dtype)].add(case["statement"])
            dtypes.setdefault(case["statement"], set()).add(a02.classify(case["statement"], device, dtype))
    assert all(len(s) >= 10 for s in seen.values()), {k: len(v) for k, v in seen.items()}
    dependent = [s for s, cats in dtypes.items() if len(cats) > 1]
    assert len(dependent) >= 10, dependent  # answers that depend on the dtype (half-precision no-ops, casts)
    statements = set(dtypes)
    for must in ("x.data = x.data.clone()", "x.data = x.data.view(3, 2)", "x.data += 1e-6", "x.t_()",
                 "x.data *= 1", "x = x.half()"):
        assert must in statements


def test_cells_keep_their_themes():
    """Rebind-vs-write cases only hold writes that keep x on x0 and rebinds to new memory; the new-view
    and no-change cells hold no untracked write (those are the last cell's subject)."""
    for check in checks_for(ASSIGNMENT):
        if check.grade_id not in CLASSIFY_IDS:
            continue
        for case in check.cases():
            device = case["device"] or str(a02.course_device())
            facts = a02.measure(case["statement"], device, getattr(torch, case["dtype"] or "float32"))
            if check.grade_id == CLASSIFY_IDS[0]:
                assert facts.category in ("in-place", "new-tensor"), case
                assert facts.same_object == (facts.category == "in-place") and facts.same_storage == facts.same_object
            elif check.grade_id in CLASSIFY_IDS[1:3]:
                assert facts.category != "untracked-write", case


def test_reference_classifier_measures_known_behaviour():
    for statement, category in [("x = x + 1", "new-tensor"), ("x += 1", "in-place"), ("x = x.add_(1)", "in-place"),
                                ("x = x[:]", "new-view"), ("x = x.contiguous()", "no-change"),
                                ("x.data += 1", "untracked-write"), ("x.detach().add_(1)", "in-place"),
                                ("x.data.add_(1)", "untracked-write"), ("x *= 1", "in-place"),
                                ("x.data = x.data.clone()", "untracked-write"), ("x.data *= 1", "no-change")]:
        for dtype in (torch.float64, torch.float32, torch.float16):
            assert a02.classify(statement, "cpu", dtype) == category, (statement, dtype)
    assert a02.classify("x.data += 1e-6", "cpu", torch.float32) == "untracked-write"
    assert a02.classify("x.data += 1e-6", "cpu", torch.float16) == "no-change"
    with pytest.raises(TypeError):
        a02.measure("x = 3", "cpu", torch.float32)


# --------------------------------------------------------------------------- right answers pass

CORRECT_ALT = '''
def classify_update(statement, device=None, dtype=None):
    def look(t):
        return {"ptr": t.untyped_storage().data_ptr(), "ver": t._version, "shape": tuple(t.shape),
                "vals": t.detach().clone()}
    env = {"torch": torch, "x": make_x(device if device is not None else DEVICE, dtype or torch.float32)}
    x0 = env["x"]
    before = look(x0)
    exec(statement, env)
    after, x1 = look(x0), env["x"]
    if after["ver"] != before["ver"]:
        return "in-place"
    if not (after["ptr"] == before["ptr"] and after["shape"] == before["shape"]
            and torch.equal(after["vals"], before["vals"])):
        return "untracked-write"
    if x1 is x0:
        return "no-change"
    return "new-view" if x1.untyped_storage().data_ptr() == before["ptr"] else "new-tensor"
'''

# The student package's raw measurements (no category) with the rules applied: also right.
VIA_MEASURE = '''
from autograder import storage
def classify_update(statement, device=None, dtype=None):
    m = storage.measure(statement, DEVICE if device is None else device, dtype or torch.float32)
    if m.version_bumped:
        return "in-place"
    if m.contents_changed:
        return "untracked-write"
    return "no-change" if m.same_object else "new-view" if m.same_storage else "new-tensor"
'''

CLONE_FIX = '''
def fixed_model(x, w):
    h = x @ w
    h += 0.1
    h.relu_()
    y = h.sigmoid().clone()
    y[:, :2] = y[:, :2] * 2 - 0.5
    y[:, 2:] = (y[:, 2:] * 2) ** 2
    return y
'''

STACK_FIX = '''
def fixed_model(x, w):
    y = torch.sigmoid(torch.clamp(torch.addmm(torch.full((1, 4), 0.1, dtype=x.dtype, device=x.device), x, w), min=0))
    a, b = y.split(2, dim=1)
    return torch.cat((a * 2 - 0.5, (2 * b).pow(2)), dim=1)
'''

WHERE_FIX = '''
def fixed_model(x, w):
    y = (x @ w + 0.1).relu().sigmoid()
    first = torch.arange(4, device=x.device) < 2
    return torch.where(first, y * 2 - 0.5, (y * 2) ** 2)
'''


# Constants a GPU accepts next to its tensors: Python numbers and 0-dim CPU tensors of x's dtype.
SCALARS_FIX = '''
def fixed_model(x, w):
    y = torch.sigmoid(torch.relu(x @ w + torch.tensor(0.1, dtype=x.dtype)))
    return torch.cat([y[:, :2] * torch.tensor(2.0, dtype=x.dtype) - 0.5, (y[:, 2:] * 2) ** 2], dim=1)
'''

# Right on every real device, but not computable on the value-less meta device (a data-dependent branch,
# a CPU round trip): the meta case judges device mismatches only, so these pass.
META_UNFRIENDLY_FIX = '''
def fixed_model(x, w):
    z = x @ w + 0.1
    if bool((z < 0).any()):
        z = z.clamp(min=0)
    y = z.cpu().sigmoid().to(x.device)
    return torch.cat([y[:, :2] * 2 - 0.5, (y[:, 2:] * 2) ** 2], dim=1)
'''


@pytest.mark.parametrize("codes", [REFERENCE, (CORRECT_ALT, CLONE_FIX), (VIA_MEASURE, STACK_FIX),
                                   (REFERENCE[0], WHERE_FIX), (REFERENCE[0], SCALARS_FIX),
                                   (REFERENCE[0], META_UNFRIENDLY_FIX)],
                         ids=["reference", "alt-clone", "measure-stack", "where", "scalars", "meta-unfriendly"])
def test_correct_answers_pass_every_check(codes):
    for gid, v in verdicts(namespace(*codes)).items():
        assert v.passed, f"{gid}: {v.message}"
        assert v.cases > 0


# --------------------------------------------------------------------------- wrong answers fail

def _classifier(body: str) -> str:
    return f'''
def classify_update(statement, device=None, dtype=None):
    x = make_x(DEVICE if device is None else device, dtype or torch.float32)
    x0, ptr, ver, shape, vals = x, x.untyped_storage().data_ptr(), x._version, x.shape, x.detach().clone()
    scope = {{"torch": torch, "x": x}}
    exec(statement, scope)
    x1 = scope["x"]
{body}
'''


WRONG_CLASSIFIERS = {
    # contents before the version: a write that changed values counts as untracked
    "contents-first": (_classifier('''
    if x0.untyped_storage().data_ptr() != ptr or x0.shape != shape or not torch.equal(x0.detach(), vals):
        return "untracked-write"
    if x0._version > ver:
        return "in-place"
    return "no-change" if x1 is x0 else "new-view" if x1.untyped_storage().data_ptr() == ptr else "new-tensor"
'''), {"classify_update_rebind_vs_inplace_tests": "'untracked-write'",
        "classify_update_untracked_and_version_tests": "autograd was told"}),
    # values only: a storage move with equal values looks like nothing
    "no-storage-compare": (_classifier('''
    if x0._version > ver:
        return "in-place"
    if x0.shape != shape or not torch.equal(x0.detach(), vals):
        return "untracked-write"
    return "no-change" if x1 is x0 else "new-view" if x1.untyped_storage().data_ptr() == ptr else "new-tensor"
'''), {"classify_update_untracked_and_version_tests": "x.data = x.data"}),
    # x.data_ptr() is the first element's address: a view starting further in looks like new memory
    "element-ptr": (_classifier('''
    if x0._version > ver:
        return "in-place"
    if x0.untyped_storage().data_ptr() != ptr or x0.shape != shape or not torch.equal(x0.detach(), vals):
        return "untracked-write"
    return "no-change" if x1 is x0 else "new-view" if x1.data_ptr() == x0.data_ptr() else "new-tensor"
'''), {"classify_update_new_view_tests": "'new-tensor'"}),
    # the dtype argument ignored: half-precision no-ops and casts come out wrong
    "ignores-dtype": (REFERENCE[0].replace("torch.float32 if dtype is None else dtype", "torch.float32"),
                      {"classify_update_no_change_tests": "make_x(", "classify_update_untracked_and_version_tests": "make_x("}),
    # a misspelt category
    "misspelt": ("def classify_update(statement, device=None, dtype=None):\n    return 'inplace'\n",
                 {gid: "unknown category" for gid in CLASSIFY_IDS}),
}


@pytest.mark.parametrize("name", sorted(WRONG_CLASSIFIERS))
def test_wrong_classifiers_fail_with_a_useful_message(name):
    code, failing = WRONG_CLASSIFIERS[name]
    got = verdicts(namespace(code, REFERENCE[1]), CLASSIFY_IDS)
    for gid, v in got.items():
        if gid in failing:
            assert not v.passed, gid
            assert failing[gid] in v.message and "try next" in v.message, v.message
        else:
            assert v.passed, f"{gid}: {v.message}"


def _leaky_in(wrapper: str) -> str:
    return f'''
def fixed_model(x, w):
{wrapper}
'''


WRONG_MODELS = {
    # forward cell verdict, gradients cell verdict, a phrase of the gradients cell's message
    "leaky": ("def fixed_model(x, w):\n    return leaky_model(x, w)\n", False, "backward through fixed_model"),
    "no-grad": (_leaky_in("    with torch.no_grad():\n        return leaky_model(x, w)"), False, "cut off from autograd"),
    "detach": (_leaky_in("    return leaky_model(x.detach(), w.detach())"), False, "cut off from autograd"),
    "data": (_leaky_in("    y = torch.relu(x @ w + 0.1).sigmoid()\n    y.data[:, :2] = y.data[:, :2] * 2 - 0.5\n"
                       "    y.data[:, 2:] = (y.data[:, 2:] * 2) ** 2\n    return y"), True, "gradient of fixed_model"),
    "identity-hooks": (_leaky_in("    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):\n"
                                 "        return leaky_model(x, w)"), True, "gradient of fixed_model"),
    "detached-sigmoid": (_leaky_in("    y = torch.relu(x @ w + 0.1).sigmoid().detach()\n"
                                   "    return torch.cat([y[:, :2] * 2 - 0.5, (y[:, 2:] * 2) ** 2], dim=1)"),
                         False, "cut off from autograd"),
    "float32-constant": (_leaky_in("    y = torch.sigmoid(torch.relu(x @ w + torch.full((4,), 0.1)))\n"
                                   "    return torch.cat([y[:, :2] * 2 - 0.5, (y[:, 2:] * 2) ** 2], dim=1)"),
                         False, "float32-accurate"),
    "float32-0dim-constant": (_leaky_in("    y = torch.sigmoid(torch.relu(x @ w + torch.tensor(0.1)))\n"
                                        "    return torch.cat([y[:, :2] * 2 - 0.5, (y[:, 2:] * 2) ** 2], dim=1)"),
                              False, "float32-accurate"),
    "float32-detour": (_leaky_in("    y = torch.sigmoid(torch.relu(x.float() @ w.float() + 0.1)).to(x.dtype)\n"
                                 "    return torch.cat([y[:, :2] * 2 - 0.5, (y[:, 2:] * 2) ** 2], dim=1)"),
                       False, "float32-accurate"),
    # the CPU blind spot: right values on the CPU, a device mismatch on a GPU (caught on meta)
    "cpu-bias": (_leaky_in("    y = torch.sigmoid(torch.relu(x @ w + torch.full((1, 4), 0.1, dtype=x.dtype)))\n"
                           "    return torch.cat([y[:, :2] * 2 - 0.5, (y[:, 2:] * 2) ** 2], dim=1)"),
                 False, "creates a tensor on the CPU"),
    "cpu-mask": (_leaky_in("    y = torch.sigmoid(torch.relu(x @ w + 0.1))\n"
                           "    first = torch.tensor([True, True, False, False])\n"
                           "    return torch.where(first, y * 2 - 0.5, (y * 2) ** 2)"),
                 False, "creates a tensor on the CPU"),
    "cpu-zeros": (_leaky_in("    y = torch.sigmoid(torch.relu(x @ w + 0.1))\n"
                            "    out = torch.zeros(x.shape[0], 4, dtype=x.dtype)\n"
                            "    return torch.cat([y[:, :2] * 2 - 0.5, (y[:, 2:] * 2) ** 2], dim=1) + out"),
                  False, "creates a tensor on the CPU"),
    "no-square": (_leaky_in("    y = torch.sigmoid(torch.relu(x @ w + 0.1))\n"
                            "    return torch.cat([y[:, :2] * 2 - 0.5, y[:, 2:] * 2], dim=1)"), False, "wrong values"),
    "drops-rows": (_leaky_in("    y = torch.sigmoid(torch.relu(x @ w + 0.1))[:1]\n"
                             "    return torch.cat([y[:, :2] * 2 - 0.5, (y[:, 2:] * 2) ** 2], dim=1)"),
                   False, "wrong shape"),
    "returns-tuple": (_leaky_in("    return (torch.cat([x @ w, x @ w], 1),)"), False, "wrong type"),
}


@pytest.mark.parametrize("name", sorted(WRONG_MODELS))
def test_wrong_models_fail(name):
    code, forward_passes, phrase = WRONG_MODELS[name]
    got = verdicts(namespace(REFERENCE[0], code), MODEL_IDS)
    assert got["fixed_model_forward_tests"].passed == forward_passes, got["fixed_model_forward_tests"].message
    v = got["fixed_model_gradients_tests"]
    assert not v.passed and phrase in v.message and "try next" in v.message, v.message


def test_the_meta_case_names_the_cpu_tensor_and_nothing_hidden():
    got = verdicts(namespace(REFERENCE[0], WRONG_MODELS["cpu-bias"][0]), MODEL_IDS)
    for v in got.values():
        assert a02.CPU_TENSOR_ON_GPU in v.message and "'meta' device" in v.message and "try next" in v.message
        assert "_run_model" not in v.message and "reference_model" not in v.message


def test_meta_judge_fails_device_mismatches_only():
    for check in checks_for(ASSIGNMENT):
        if check.grade_id not in MODEL_IDS:
            continue
        [case] = [c for c in check.cases() if c["device"] == "meta"][:1]
        assert "meta" in case["label"]
        ok = {"meta": True, "error": None, "is_tensor": True, "type": "Tensor", "device": "meta"}
        assert judge_results(check, [case], [ok]).passed
        for error in ("RuntimeError: Tensor.item() cannot be called on meta tensors",
                      "NotImplementedError: Cannot copy out of meta tensor; no data!"):
            assert judge_results(check, [case], [{"meta": True, "error": error}]).passed, error
        for error in ("RuntimeError: Tensor on device cpu is not on the expected device meta!",
                      "RuntimeError: Expected all tensors to be on the same device, but found at least two "
                      "devices, meta and cpu!"):
            v = judge_results(check, [case], [{"meta": True, "error": error}])
            assert not v.passed and a02.CPU_TENSOR_ON_GPU in v.message
        v = judge_results(check, [case], [{**ok, "device": "cpu"}])
        assert not v.passed and "another device" in v.message


def test_mutants_cover_each_graded_function():
    from instructor.hidden.mutation import apply, reference_solution

    assert set(a02.MUTANTS) == {"classify_update", "fixed_model"}
    assert a02.MUTANTS["classify_update"].checks == tuple(CLASSIFY_IDS)
    assert a02.MUTANTS["fixed_model"].checks == tuple(MODEL_IDS)
    for function, target in a02.MUTANTS.items():
        live = [m for m in target.mutants if not m.equivalent]
        assert len(live) >= 20, (function, len(live))
        names = [m.name for m in target.mutants]
        assert len(set(names)) == len(names)
        reference = reference_solution(ASSIGNMENT, function)
        for m in target.mutants:
            assert apply(reference, m) != reference, m.name
    # machine-dependent mutants are equivalent only where no GPU can tell them apart
    machine = [m for t in a02.MUTANTS.values() for m in t.mutants
               if m.name in ("device argument ignored", "default device the CPU instead of DEVICE",
                             "result moved to the CPU")]
    assert len(machine) == 3 and all(bool(m.equivalent) == (not torch.cuda.is_available()) for m in machine)


def test_a_reported_write_into_a_saved_tensor_fails_even_with_right_gradients():
    check = next(c for c in checks_for(ASSIGNMENT) if c.grade_id == MODEL_IDS[1])
    case = check.cases()[0]
    ref, gx, gw = a02._reference(case)
    right = {"is_tensor": True, "type": "Tensor", "out": ref, "requires_grad": True, "device": case["device"],
             "grads": [gx, gw], "saved_writes": None}
    assert judge_results(check, [case], [right]).passed
    v = judge_results(check, [case], [{**right, "saved_writes": "In-place write on a tensor autograd saved"}])
    assert not v.passed and "writes into a tensor autograd saved" in v.message


def test_a_garbage_result_or_an_error_fails():
    check = next(c for c in checks_for(ASSIGNMENT) if c.grade_id == MODEL_IDS[1])
    cases = check.cases()[:1]
    v = judge_results(check, cases, [{"__object__": "Weird"}])
    assert not v.passed and "could not check" in v.message
    v = judge_results(check, cases, [{"__error__": {"type": "NotImplementedError", "message": ""}}])
    assert not v.passed and "not implemented yet" in v.message
    v = judge_results(check, cases, None)
    assert not v.passed
    with pytest.raises(CheckFailed, match="unknown category"):
        checks_for(ASSIGNMENT)[0].judge({"statement": "x += 1", "device": "cpu", "dtype": "float32"}, "inplace")


# --------------------------------------------------------------------------- the sample submissions

SAMPLES = load_samples(ASSIGNMENT)


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.student for s in SAMPLES])
def test_samples_get_their_expected_verdicts_in_process(sample):
    codes = [text for kind, gid, text in sample.blocks if kind == "solution"]
    stubs = {gid for kind, gid, _ in sample.blocks if kind == "solution"}
    stub = "def {0}(*args, **kwargs):\n    raise NotImplementedError\n"
    codes += [stub.format(name) for name in ("classify_update", "fixed_model") if name not in stubs]
    got = verdicts(namespace(*codes))
    nb = json.loads(SOURCE.read_text())
    points = {m["grade_id"]: m["points"] for c in nb["cells"]
              if (m := c.get("metadata", {}).get("nbgrader", {})).get("grade") and c["cell_type"] == "code"}
    for gid, expected in sample.expect_questions.items():
        assert got[gid].passed == (expected > 0), f"{sample.student} {gid}: {got[gid].message}"
    assert sum(points[g] for g, v in got.items() if v.passed) == sample.expect_auto
