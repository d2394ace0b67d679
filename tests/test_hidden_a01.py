"""Assignment 1's hidden checks (instructor/hidden/a01_version_counter/), in-process, no nbgrader.

Every check passes the source notebook's reference solutions and the other correct styles of the
sample submissions, and fails wrong answers, silent-wrong fixes included. The namespace is the
notebook's own: every code cell but the graded tests, executed here; a variant replaces one answer.
"""
from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path

import nbformat
import pytest
import torch

os.environ.setdefault("MPLBACKEND", "Agg")

from instructor.hidden.probe_driver import sanitize  # noqa: E402
from instructor.authoring.samples import parse_sample  # noqa: E402
from instructor.hidden import a01_version_counter as a01  # noqa: E402
from instructor.hidden import checks_for, run_in_process  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "source" / "01_version_counter" / "01_version_counter.ipynb"
SAMPLES = REPO / "tests" / "samples" / "01_version_counter"
GRADE_IDS = ["reproduce_sigmoid_error_tests", "predict_versions_tests", "read_error_message_tests",
             "saved_by_tests", "fixed_sigmoid_decode_tests", "judge_fix_tests"]


def _cells() -> list[tuple[str | None, str]]:
    nb = nbformat.read(SOURCE, as_version=4)
    out = []
    for c in nb.cells:
        meta = c.metadata.get("nbgrader", {})
        if c.cell_type == "code" and not (meta.get("grade") and not meta.get("solution")):
            out.append((meta.get("grade_id"), c.source))
    return out


@pytest.fixture(scope="module")
def notebook_ns() -> dict:
    """The source notebook's namespace: set-up, lesson cells and the reference solutions."""
    ns: dict = {"__name__": "__main__"}
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        for gid, src in _cells():
            exec(compile(src, f"<cell {gid}>", "exec"), ns)  # noqa: S102
    return ns


def with_answer(ns: dict, code: str) -> dict:
    """The notebook's namespace with one answer replaced (``code`` defines it)."""
    variant = dict(ns)
    exec(code, variant)  # noqa: S102
    return variant


def verdict(grade_id: str, ns: dict):
    with contextlib.redirect_stdout(io.StringIO()):
        return run_in_process(grade_id, ns, "01_version_counter")


# --------------------------------------------------------------------------- the framework's view

def test_one_check_per_graded_cell():
    nb = nbformat.read(SOURCE, as_version=4)
    graded = [c.metadata["nbgrader"]["grade_id"] for c in nb.cells
              if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")]
    assert graded == GRADE_IDS
    assert [c.grade_id for c in checks_for("01_version_counter")] == GRADE_IDS
    for c in nb.cells:
        if c.metadata.get("nbgrader", {}).get("grade_id") in GRADE_IDS:
            assert "confirmed(" in c.source and "saved_tensors import check" not in c.source


def test_cases_are_plain_data_and_deterministic(tmp_path):
    for check in checks_for("01_version_counter"):
        cases = check.cases()
        assert cases and all(isinstance(c, dict) for c in cases)
        torch.save(cases, tmp_path / "cases.pt")
        torch.load(tmp_path / "cases.pt", weights_only=True)  # what the sandbox can read
        assert repr(sanitize(cases)) == repr(sanitize(check.cases())), check.grade_id
        assert all("label" in c for c in cases)


def test_student_package_holds_no_answers():
    from autograder import saved_tensors

    for name in ("reference_decode", "match_version_error", "run_version_program", "saved_by_experiment",
                 "FIX_CANDIDATES", "judge_decode", "check_fix_judge", "check_error_reader",
                 "check_reproduced_error", "check_saved_by", "check_fixed_decode", "check_version_predictions"):
        assert not hasattr(saved_tensors, name), name
    assert saved_tensors.decode_constants and saved_tensors.VERSION_PROGRAM


def test_fix_candidates_have_one_outcome_whatever_the_input():
    """The judge's truth for judge_fix must not depend on the student's random input and weights."""
    outcomes = {}
    for name, _, src in a01.DECODES:
        decode = a01.build_decode(src, name)
        seen = {a01.judge_decode(decode, seed=s) for s in range(6)}
        seen |= {a01.judge_decode(decode, seed=s, shape=(1, 2, 3, 3, 6)) for s in range(2)}
        assert len(seen) == 1, (name, seen)
        outcomes[name] = seen.pop()
    assert (outcomes["broken_decode"], outcomes["fix_clone"], outcomes["fake_fix_hooks"]) == \
        ("error", "correct", "wrong_gradient")
    assert set(outcomes.values()) == {"error", "no_gradient", "wrong_gradient", "correct"}


def test_version_program_is_the_one_the_task_shows():
    """The task prints the program the visible test and the hidden check run, line by line."""
    from autograder.saved_tensors import VERSION_PROGRAM, version_program_text

    nb = nbformat.read(SOURCE, as_version=4)
    task = next(c.source for c in nb.cells if c.cell_type == "markdown" and "predict_versions()" in c.source)
    assert version_program_text() in task
    assert f"Return your {len(VERSION_PROGRAM)} numbers" in task
    truth = a01.run_version_program()
    # the surprising cases the notebook measures before the task are in the program
    statements = [s for s, _ in VERSION_PROGRAM]
    assert truth[statements.index("a[1] += 1")] - truth[statements.index("a[1] += 1") - 1] == 2
    assert truth[statements.index("a.unsqueeze_(0)")] - truth[statements.index("a.unsqueeze_(0)") - 1] == 1
    assert truth[statements.index("a.requires_grad_()")] == truth[statements.index("a.requires_grad_()") - 1]
    assert truth[statements.index("a.data.add_(1)")] == truth[statements.index("a.data.add_(1)") - 1]
    assert truth == a01._PREDICTED


def _visible_part(grade_id: str) -> str:
    nb = nbformat.read(SOURCE, as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
    return cell.source.split("### BEGIN HIDDEN TESTS")[0]


def test_visible_judge_fix_cases_agree_with_the_hidden_truth(notebook_ns):
    """Each outcome has a visible case, and each visible expectation is what the grader's truth says."""
    seen = []

    def fake_call(judge, decode):
        return a01.judge_decode(decode)

    def record(got, expected, what, hint=""):
        seen.append((what, got, expected))

    ns = dict(notebook_ns, call_student=fake_call, check_equal=record)
    with contextlib.redirect_stdout(io.StringIO()):
        exec(_visible_part("judge_fix_tests"), ns)  # noqa: S102
    assert seen and all(got == expected for _, got, expected in seen), seen
    assert {expected for _, _, expected in seen} == {"error", "no_gradient", "wrong_gradient", "correct"}
    # the order trap: a result that needs no grad is "no_gradient", though backward on it would raise
    assert ("judge_fix(fake_fix_no_grad)", "no_gradient", "no_gradient") in seen


def test_read_error_cases_span_the_input_space():
    cases = a01.ReadErrorMessage().cases()
    truths = []
    for case in cases:
        if case["kind"] == "live":
            err, _ = a01.provoke(case["spec"])
            truths.append(a01.match_version_error(err))
        else:
            truths.append(a01.match_version_error(case["message"]))
    assert all(t is not None for t in truths)
    assert {len(t["shape"]) for t in truths} >= set(range(7))
    assert {len(str(t["version_now"])) for t in truths} == {1, 2, 3}
    assert any(t["version_saved"] > 0 for t in truths)
    types = {t["tensor_type"] for t in truths}
    assert {"torch.cuda.HalfTensor", "CPUBFloat16Type", "CUDABFloat16Type", "torch.DoubleTensor"} <= types
    nodes = {t["node"] for t in truths}
    assert None in nodes and any("::" in n for n in nodes if n) and "SigmoidBackward0" in nodes
    assert {c.get("as") for c in cases} >= {"text", "exception"} and any(c["kind"] == "live" for c in cases)


def test_the_notebook_shows_live_the_message_forms_the_hidden_cases_use(notebook_ns):
    """The two forms the task names (issue 20): no 'torch.' prefix, an empty shape; both made live in the
    notebook (the visible test reads them) and both drawn by the hidden cases."""
    bf16, scalar = (a01.match_version_error(notebook_ns[k]) for k in ("bf16_err", "scalar_err"))
    assert bf16["tensor_type"] == "CPUBFloat16Type" and bf16["shape"] == (12,)
    assert scalar["tensor_type"] == "torch.FloatTensor" and scalar["shape"] == ()
    truths = [a01.match_version_error(a01.provoke(c["spec"])[0] if c["kind"] == "live" else c["message"])
              for c in a01.ReadErrorMessage().cases()]
    assert any(not t["tensor_type"].startswith("torch.") for t in truths) and any(t["shape"] == () for t in truths)


def test_gpu_grader_adds_cuda_cases(monkeypatch):
    configs = [(torch.device("cpu"), torch.float64), (torch.device("cpu"), torch.float32),
               (torch.device("cuda"), torch.float32), (torch.device("cuda"), torch.float16)]
    monkeypatch.setattr(a01.checks, "test_configs", lambda: configs)  # read by the checks module
    cases = a01.FixedSigmoidDecode().cases()
    assert {(c["device"], c["dtype"]) for c in cases} == {("cpu", "float64"), ("cpu", "float32"),
                                                          ("cuda", "float32"), ("cuda", "float16"),
                                                          ("meta", "float32"), ("meta", "float16")}
    assert all(c["p"].device.type == "cpu" for c in cases)
    specs = a01.ReadErrorMessage()._live_specs()
    assert {s["dtype"] for s in specs if s["device"] == "cuda"} >= {"float16", "bfloat16"}


# --------------------------------------------------------------------------- right answers pass

@pytest.mark.parametrize("grade_id", GRADE_IDS)
def test_reference_solutions_pass(notebook_ns, grade_id):
    v = verdict(grade_id, notebook_ns)
    assert v.passed, v.message
    assert v.cases >= 1


@pytest.mark.parametrize("student", ["ben", "cy"])
def test_other_correct_styles_pass(notebook_ns, student):
    sample = parse_sample(SAMPLES / f"{student}.py")
    ns = dict(notebook_ns)
    for kind, _, text in sample.blocks:
        if kind == "solution":
            exec(text, ns)  # noqa: S102
    for gid in GRADE_IDS:
        v = verdict(gid, ns)
        assert v.passed, (student, gid, v.message)


# --------------------------------------------------------------------------- wrong answers fail

WRONG = {
    "reproduce_sigmoid_error_tests": {
        "built by hand": '''
def reproduce_sigmoid_error():
    return RuntimeError("one of the variables needed for gradient computation has been modified by an "
                        "inplace operation: [torch.FloatTensor [2, 3, 8, 8, 7]], which is output 0 of "
                        "Sigmoid, is at version 2; expected version 0 instead.")
''',
        "three writes": '''
def reproduce_sigmoid_error():
    p = torch.randn(2, 3, 8, 8, 7, requires_grad=True)
    y = broken_decode(p, GRID, ANCHOR_GRID, STRIDE)
    y[..., 4:5] = y[..., 4:5] * 1
    try:
        y.sum().backward()
    except RuntimeError as err:
        return err
''',
        "not detector-shaped": '''
def reproduce_sigmoid_error():
    p = torch.randn(4, 7, requires_grad=True)
    y = p.sigmoid()
    y[:, 0:2] = y[:, 0:2] * 2
    y[:, 2:4] = y[:, 2:4] * 2
    try:
        y.sum().backward()
    except RuntimeError as err:
        return err
''',
        "raised, not returned": '''
def reproduce_sigmoid_error():
    broken_decode(torch.randn(2, 3, 8, 8, 7, requires_grad=True), GRID, ANCHOR_GRID, STRIDE).sum().backward()
''',
        "the message, not the exception": '''
def reproduce_sigmoid_error():
    try:
        broken_decode(torch.randn(2, 3, 8, 8, 7, requires_grad=True), GRID, ANCHOR_GRID, STRIDE).sum().backward()
    except RuntimeError as err:
        return str(err)
''',
    },
    "predict_versions_tests": {
        "one wrong": "def predict_versions():\n    return [0, 1, 2, 4, 4, 5, 5, 6, 6, 7, 0, 2]\n",
        "+1 per statement": "def predict_versions():\n    return [0, 1, 2, 3, 3, 4, 4, 5, 5, 5, 0, 2]\n",
        "the first edition's program": "def predict_versions():\n    return [0, 1, 2, 2, 3, 3, 4, 0, 0, 2]\n",
        "eleven numbers": "def predict_versions():\n    return [0, 1, 2, 4, 4, 5, 5, 6, 7, 7, 0]\n",
        "strings": "def predict_versions():\n    return [str(v) for v in [0, 1, 2, 4, 4, 5, 5, 6, 7, 7, 0, 2]]\n",
        "floats": "def predict_versions():\n    return [0.0, 1, 2, 4, 4, 5, 5, 6, 7, 7, 0, 2]\n",
    },
    "read_error_message_tests": {
        "shape as a list": '''
_right = read_error_message
def read_error_message(err):
    f = _right(err)
    f["shape"] = list(f["shape"])
    return f
''',
        "versions as strings": '''
_right = read_error_message
def read_error_message(err):
    f = _right(err)
    f["version_now"] = str(f["version_now"])
    return f
''',
        "node always Sigmoid": '''
_right = read_error_message
def read_error_message(err):
    f = _right(err)
    f["node"] = "Sigmoid"
    return f
''',
        "no '::' in node names": '''
def read_error_message(err):
    m = re.search(r"\\[([\\w.]+) \\[([\\d, ]*)\\]\\](?:, which is output \\d+ of (\\w+),)?"
                  r"\\s*is at version (\\d+); expected version (\\d+)", str(err))
    return {"tensor_type": m.group(1), "shape": tuple(int(s) for s in m.group(2).split(",") if s.strip()),
            "node": m.group(3), "version_now": int(m.group(4)), "version_saved": int(m.group(5))}
''',
        "one-digit versions": '''
def read_error_message(err):
    m = re.search(r"\\[([\\w.]+) \\[([\\d, ]*)\\]\\](?:, which is output \\d+ of ([^,]+),)?"
                  r"\\s*is at version (\\d); expected version (\\d)", str(err))
    return {"tensor_type": m.group(1), "shape": tuple(int(s) for s in m.group(2).split(",") if s.strip()),
            "node": m.group(3), "version_now": int(m.group(4)), "version_saved": int(m.group(5))}
''',
        "torch.* types only": '''
_right = read_error_message
def read_error_message(err):
    f = _right(err)
    if not f["tensor_type"].startswith("torch."):
        f["tensor_type"] = "torch." + f["tensor_type"]
    return f
''',
        "an extra key": '''
_right = read_error_message
def read_error_message(err):
    return dict(_right(err), message=str(err))
''',
    },
    "saved_by_tests": {
        "a list": '''
_right = saved_by
def saved_by(op):
    return sorted(_right(op))
''',
        "always output": "def saved_by(op):\n    return {'output'}\n",
        "attribute names only": '''
def saved_by(op):
    y = op((torch.rand(5, dtype=torch.float64) + 0.5).requires_grad_().clone())
    names = dir(y.grad_fn)
    if "_saved_result" in names:
        return {"output"}
    return {"input"} if "_saved_self" in names else set()
''',
    },
    "fixed_sigmoid_decode_tests": {
        ".data writes": '''
def fixed_sigmoid_decode(p, grid, anchor_grid, stride):
    y = p.sigmoid()
    y.data[..., 0:2] = (y.data[..., 0:2] * 2 - 0.5 + grid) * stride
    y.data[..., 2:4] = (y.data[..., 2:4] * 2) ** 2 * anchor_grid
    return y
''',
        "identity hooks": '''
def fixed_sigmoid_decode(p, grid, anchor_grid, stride):
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        return broken_decode(p, grid, anchor_grid, stride)
''',
        "detach": '''
def fixed_sigmoid_decode(p, grid, anchor_grid, stride):
    s = p.sigmoid()
    d = s.detach()
    return torch.cat([(d[..., 0:2] * 2 - 0.5 + grid) * stride, (d[..., 2:4] * 2) ** 2 * anchor_grid,
                      s[..., 4:]], -1)
''',
        "no_grad everything": '''
def fixed_sigmoid_decode(p, grid, anchor_grid, stride):
    with torch.no_grad():
        return broken_decode(p, grid, anchor_grid, stride)
''',
        "the bug itself": "fixed_sigmoid_decode = broken_decode\n",
        "always float32": '''
_right = fixed_sigmoid_decode
def fixed_sigmoid_decode(p, grid, anchor_grid, stride):
    return _right(p, grid, anchor_grid, stride).float()
''',
        "drops the class columns": '''
def fixed_sigmoid_decode(p, grid, anchor_grid, stride):
    s = p.sigmoid()
    return torch.cat([(s[..., 0:2] * 2 - 0.5 + grid) * stride, (s[..., 2:4] * 2) ** 2 * anchor_grid,
                      s[..., 4:5]], -1)
''',
        "hard-coded 8x8 grid": '''
def fixed_sigmoid_decode(p, grid, anchor_grid, stride):
    g, a, s8 = decode_constants(8, 8, 3, dtype=p.dtype)
    s = p.sigmoid()
    return torch.cat([(s[..., 0:2] * 2 - 0.5 + g) * s8, (s[..., 2:4] * 2) ** 2 * a, s[..., 4:]], -1)
''',
    },
    "judge_fix_tests": {
        "catches RuntimeError only": '''
def judge_fix(decode):
    p = torch.randn(2, 3, 4, 5, 7, dtype=torch.float64)
    w = torch.randn_like(p)
    consts = decode_constants(4, 5, 3, dtype=torch.float64)
    ref = p.clone().requires_grad_()
    fixed_sigmoid_decode(ref, *consts).backward(w)
    leaf = p.clone().requires_grad_()
    try:
        out = decode(leaf, *consts)
        if not out.requires_grad:
            return "no_gradient"
        out.backward(w)
    except RuntimeError:
        return "error"
    if leaf.grad is None:
        return "no_gradient"
    return "correct" if torch.allclose(leaf.grad, ref.grad) else "wrong_gradient"
''',
        "never no_gradient": '''
def judge_fix(decode):
    p = torch.randn(2, 3, 4, 5, 7, dtype=torch.float64)
    w = torch.randn_like(p)
    consts = decode_constants(4, 5, 3, dtype=torch.float64)
    ref = p.clone().requires_grad_()
    fixed_sigmoid_decode(ref, *consts).backward(w)
    leaf = p.clone().requires_grad_()
    try:
        decode(leaf, *consts).backward(w)
    except Exception:
        return "error"
    return "correct" if leaf.grad is not None and torch.allclose(leaf.grad, ref.grad) else "wrong_gradient"
''',
        "compares values, not gradients": '''
def judge_fix(decode):
    p = torch.randn(2, 3, 4, 5, 7, dtype=torch.float64)
    consts = decode_constants(4, 5, 3, dtype=torch.float64)
    leaf = p.clone().requires_grad_()
    try:
        out = decode(leaf, *consts)
        if not out.requires_grad:
            return "no_gradient"
        out.sum().backward()
    except Exception:
        return "error"
    if leaf.grad is None:
        return "no_gradient"
    good = fixed_sigmoid_decode(p, *consts)
    return "correct" if torch.allclose(out.detach(), good) else "wrong_gradient"
''',
        "always correct": "def judge_fix(decode):\n    return 'correct'\n",
    },
}


@pytest.mark.parametrize("grade_id,label", [(g, k) for g, d in WRONG.items() for k in d])
def test_wrong_answers_fail(notebook_ns, grade_id, label):
    v = verdict(grade_id, with_answer(notebook_ns, WRONG[grade_id][label]))
    assert not v.passed, f"{grade_id} accepted a wrong answer: {label}"
    assert v.message and "try next" in v.message


@pytest.mark.parametrize("grade_id", GRADE_IDS)
def test_missing_answer_fails_clearly(notebook_ns, grade_id):
    function = {c.grade_id: c.function for c in checks_for("01_version_counter")}[grade_id]
    ns = with_answer(notebook_ns, f"def {function}(*args):\n    raise NotImplementedError\n")
    v = verdict(grade_id, ns)
    assert not v.passed and "not implemented yet" in v.message
    del ns[function]
    v = verdict(grade_id, ns)
    assert not v.passed and "is not defined" in v.message


# --------------------------------------------------------------------------- the CPU blind spot (meta)

def test_decode_source_is_the_notebook_solution():
    from instructor.hidden.mutation import reference_solution

    ref = reference_solution("01_version_counter", "fixed_sigmoid_decode")
    assert ref.replace("    ### END SOLUTION", "").rstrip() == a01.DECODE_SOURCE.rstrip()


def test_decode_family_holds_every_outcome_and_rewrites_judged_correct():
    family = a01._family()
    assert len(family) == len(a01.DECODE_FAMILY) >= 20
    outcomes = {about: a01.judge_decode(a01.build_decode(src, name)) for name, about, src in family}
    assert set(outcomes.values()) == {"error", "no_gradient", "wrong_gradient", "correct"}
    equivalent = {m.name for m in a01.DECODE_MUTANTS if m.equivalent}
    for about, outcome in outcomes.items():
        assert (outcome == "correct") == (about.split(": ", 1)[1] in equivalent), (about, outcome)


META_CASES = {
    "CPU zeros": ("fail", '''
def fixed_sigmoid_decode(p, grid, anchor_grid, stride):
    s = p.sigmoid()
    out = torch.zeros(p.shape, dtype=p.dtype)
    return torch.cat([(s[..., 0:2] * 2 - 0.5 + grid) * stride, (s[..., 2:4] * 2) ** 2 * anchor_grid,
                      s[..., 4:]], -1) + out
'''),
    "a non-scalar torch.tensor": ("fail", '''
def fixed_sigmoid_decode(p, grid, anchor_grid, stride):
    s = p.sigmoid()
    return torch.cat([(s[..., 0:2] * torch.tensor([2.0, 2.0], dtype=p.dtype) - 0.5 + grid) * stride,
                      (s[..., 2:4] * 2) ** 2 * anchor_grid, s[..., 4:]], -1)
'''),
    "a CPU column index in torch.where": ("fail", '''
def fixed_sigmoid_decode(p, grid, anchor_grid, stride):
    s = p.sigmoid()
    n = s.shape[-1]
    col = torch.arange(n)
    centre = (s * 2 - 0.5 + torch.nn.functional.pad(grid, (0, n - 2))) * stride
    size = (s * 2) ** 2 * torch.nn.functional.pad(anchor_grid, (2, n - 4))
    return torch.where(col < 2, centre, torch.where(col < 4, size, s))
'''),
    "0-dim CPU tensors and numbers": ("pass", '''
def fixed_sigmoid_decode(p, grid, anchor_grid, stride):
    s = p.sigmoid()
    two, half = torch.tensor(2.0), torch.tensor(0.5, dtype=torch.float64)
    return torch.cat([(s[..., 0:2] * two - half + grid) * stride, (s[..., 2:4] * 2.0) ** 2 * anchor_grid,
                      s[..., 4:]], -1)
'''),
    "a buffer on p's device": ("pass", '''
def fixed_sigmoid_decode(p, grid, anchor_grid, stride):
    s = p.sigmoid()
    out = torch.zeros(p.shape, dtype=p.dtype, device=p.device)
    out[..., :2] = (s[..., :2] * 2 - 0.5 + grid) * stride
    out[..., 2:4] = (s[..., 2:4] * 2) ** 2 * anchor_grid
    out[..., 4:] = s[..., 4:]
    return out
'''),
    "data-dependent code meta cannot run": ("pass", '''
def fixed_sigmoid_decode(p, grid, anchor_grid, stride):
    s = p.sigmoid()
    assert float(s.min()) >= 0.0
    return torch.cat([(s[..., 0:2] * 2 - 0.5 + grid) * stride, (s[..., 2:4] * 2) ** 2 * anchor_grid,
                      s[..., 4:]], -1)
'''),
}


@pytest.mark.parametrize("label", list(META_CASES))
def test_meta_case_catches_cpu_tensors_only(notebook_ns, label):
    want, code = META_CASES[label]
    v = verdict("fixed_sigmoid_decode_tests", with_answer(notebook_ns, code))
    if want == "pass":
        assert v.passed, v.message
    else:
        assert not v.passed
        assert "creates a tensor on the CPU while its input is on another device" in v.message
        assert "device=p.device" in v.message and "meta device" in v.message


def test_right_decodes_pass_on_meta(notebook_ns):
    check = a01.FixedSigmoidDecode()
    meta = [c for c in check.cases() if c["device"] == "meta"]
    assert {c["dtype"] for c in meta} == {"float32", "float16"}
    for name, _, src in a01.DECODES:
        decode = a01.build_decode(src, name)
        if a01.judge_decode(decode) != "correct":
            continue
        ns = dict(notebook_ns, fixed_sigmoid_decode=decode)
        v = verdict("fixed_sigmoid_decode_tests", ns)
        if name == "fix_masks":  # right on the CPU (a judge_fix candidate), but its zeros are CPU tensors
            assert not v.passed and "creates a tensor on the CPU" in v.message
        else:
            assert v.passed, (name, v.message)


# --------------------------------------------------------------------------- mutants

def test_every_mutant_applies_and_compiles():
    from instructor.hidden.mutation import apply, reference_solution

    for function, target in a01.MUTANTS.items():
        ref = reference_solution("01_version_counter", function)
        assert {c.grade_id for c in checks_for("01_version_counter")} >= set(target.checks)
        for m in target.mutants:
            compile(apply(ref, m), f"<{function}: {m.name}>", "exec")  # a syntax error is no kill


# ------------------------------------------------------------------------- saved_by on composed functions


def sample_code(student: str, grade_id: str) -> str:
    return next(t for k, g, t in parse_sample(SAMPLES / f"{student}.py").blocks if g == grade_id)


def test_saved_by_reading_the_last_node_fails_on_a_composed_function(notebook_ns):
    """The text says "any function of one tensor"; the last node of ``t ** 2 + 1`` (an add) saves nothing,
    its square saves the input. Sample ``last_node_saved_by`` reads the last node only."""
    ns = with_answer(notebook_ns, sample_code("last_node_saved_by", "saved_by"))
    v = verdict("saved_by_tests", ns)
    assert not v.passed and "t ** 2 + 1" in v.message, v.message
    # the control: on the single ops the check drew before, the same answer passed
    check = a01.SavedBy()
    single = [c for c in check.cases() if c["op"] not in a01.SavedBy.OPS[-7:]]
    from instructor.hidden import judge_results, probe_source
    from instructor.hidden.probe_driver import compile_probe, run_case

    probe = compile_probe(probe_source(check), check.grade_id)
    with contextlib.redirect_stdout(io.StringIO()):
        results = [run_case(probe, ns, dict(c), 0) for c in single]
    assert judge_results(check, single, results).passed


def test_composed_functions_span_the_answers():
    from instructor.hidden.a01_version_counter.references import build_op, saved_by_experiment

    composed = a01.SavedBy.OPS[-7:]
    assert all(build_op(src).__name__ == "<lambda>" and src.count("(") + src.count("+") + src.count("*") >= 2
               for src in composed)
    answers = [frozenset(saved_by_experiment(build_op(src))) for src in composed]
    assert set(answers) == {frozenset(), frozenset({"input"}), frozenset({"output"}), frozenset({"input", "output"})}


# ------------------------------------------------------------------------- two calls of reproduce_sigmoid_error


def test_a_cached_error_fails_the_two_calls_case(notebook_ns):
    """The text: each call makes its own p and returns its own error. Sample ``cached_error`` keeps the first
    call's error and returns it again: every single call reads right, the pair compared does not."""
    check = a01.ReproduceSigmoidError()
    cases = check.cases()
    assert [c["call"] for c in cases] == [1, 2, "pair"]
    from instructor.hidden import judge_results, probe_source
    from instructor.hidden.probe_driver import compile_probe, run_case

    probe = compile_probe(probe_source(check), check.grade_id)

    def judged(cs):
        ns = with_answer(notebook_ns, sample_code("cached_error", "reproduce_sigmoid_error"))
        with contextlib.redirect_stdout(io.StringIO()):
            return judge_results(check, cs, [run_case(probe, ns, dict(c), 0) for c in cs])

    assert judged(cases[:2]).passed  # the control: two separate calls cannot tell
    v = judged(cases)
    assert not v.passed and "same exception object twice" in v.message, v.message
    assert verdict("reproduce_sigmoid_error_tests", notebook_ns).passed  # the reference: a new error per call
