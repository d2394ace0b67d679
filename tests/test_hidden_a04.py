"""Assignment 4's hidden checks (instructor/hidden/a04_in_the_wild/), in-process, no nbgrader.

Every check passes the source notebook's reference solutions and the sample submissions' other
correct styles, and fails wrong answers, the silent-wrong GAN fixes and a Function without
``mark_dirty`` included. The namespace is the notebook's own: every code cell but the graded tests.
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

from autograder import runtime  # noqa: E402
from instructor.hidden.probe_driver import sanitize  # noqa: E402
from instructor.authoring.samples import parse_sample  # noqa: E402
from instructor.hidden import a04_in_the_wild as a04  # noqa: E402
from instructor.hidden import checks_for, run_in_process  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "source" / "04_in_the_wild" / "04_in_the_wild.ipynb"
SAMPLES = REPO / "tests" / "samples" / "04_in_the_wild"
GRADE_IDS = ["reproduce_gan_error_tests", "train_step_tests", "safe_inplace_tests", "sigmoid_inplace_tests",
             "to_autograd_tests"]


@pytest.fixture(scope="module")
def notebook_ns() -> dict:
    nb = nbformat.read(SOURCE, as_version=4)
    ns: dict = {"__name__": "__main__"}
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        for c in nb.cells:
            meta = c.metadata.get("nbgrader", {})
            if c.cell_type == "code" and not (meta.get("grade") and not meta.get("solution")):
                exec(compile(c.source, f"<cell {meta.get('grade_id')}>", "exec"), ns)  # noqa: S102
    return ns


def with_answer(ns: dict, code: str) -> dict:
    variant = dict(ns)
    exec(code, variant)  # noqa: S102
    return variant


def verdict(grade_id: str, ns: dict):
    with contextlib.redirect_stdout(io.StringIO()):
        return run_in_process(grade_id, ns, "04_in_the_wild")


def sample_answer(student: str, grade_id: str) -> str:
    return next(t for k, g, t in parse_sample(SAMPLES / f"{student}.py").blocks if g == grade_id)


def test_one_check_per_graded_cell():
    nb = nbformat.read(SOURCE, as_version=4)
    graded = [c.metadata["nbgrader"]["grade_id"] for c in nb.cells
              if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")]
    assert graded == GRADE_IDS
    assert [c.grade_id for c in checks_for("04_in_the_wild")] == GRADE_IDS


def test_cases_are_plain_data_and_deterministic(tmp_path):
    for check in checks_for("04_in_the_wild"):
        cases = check.cases()
        assert cases and all("label" in c for c in cases)
        torch.save(cases, tmp_path / "cases.pt")
        torch.load(tmp_path / "cases.pt", weights_only=True)
        assert repr(sanitize(cases)) == repr(sanitize(check.cases())), check.grade_id


def test_student_package_holds_no_answers():
    from autograder import wild

    for name in ("train_step", "reference_train_step", "safe_inplace", "reference_safe_inplace", "SigmoidInPlace",
                 "ReferenceSigmoidInPlace", "to_autograd", "reproduce_gan_error"):
        assert not hasattr(wild, name), name


@pytest.mark.parametrize("grade_id", GRADE_IDS)
def test_reference_solutions_pass(notebook_ns, grade_id):
    v = verdict(grade_id, notebook_ns)
    assert v.passed, v.message


@pytest.mark.parametrize("student", ["ben"])
@pytest.mark.parametrize("grade_id", ["reproduce_gan_error", "train_step", "safe_inplace", "sigmoid_inplace",
                                      "to_autograd"])
def test_other_correct_styles_pass(notebook_ns, student, grade_id):
    v = verdict(grade_id + "_tests", with_answer(notebook_ns, sample_answer(student, grade_id)))
    assert v.passed, v.message


@pytest.mark.parametrize("student,grade_id,words", [
    ("stale_graph", "train_step", "gradient D steps with"),
    ("data_copy", "train_step", "gradient G steps with"),
    ("detach_wrong", "train_step", "no gradient reached G"),
    ("no_grad", "train_step", "no gradient reached G"),
    ("no_mark_dirty", "sigmoid_inplace", "Jacobian"),
    ("all_inplace", "safe_inplace", "backward through the model"),
    ("all_inplace", "to_autograd", "inference tensor"),
    ("cpu_buffers", "sigmoid_inplace", "creates a tensor on the CPU"),   # caught on meta, without a GPU
    ("cpu_buffers", "to_autograd", "a tensor made on the CPU"),
    ("data_write_times_one", "to_autograd", "torch.int64"),             # a bool t made int64
])
def test_silent_and_wrong_answers_fail(notebook_ns, student, grade_id, words):
    v = verdict(grade_id + "_tests", with_answer(notebook_ns, sample_answer(student, grade_id)))
    assert not v.passed and words in v.message, v.message


def test_a_write_through_data_under_mark_dirty_is_accepted(notebook_ns):
    v = verdict("sigmoid_inplace_tests", with_answer(notebook_ns, sample_answer("data_write_times_one",
                                                                                "sigmoid_inplace")))
    assert v.passed, v.message


@pytest.mark.parametrize("body", ["t.cpu().clone().to(t.device)", "torch.empty_like(t).copy_(t)",
                                  "torch.empty(t.shape, dtype=t.dtype, device=t.device).copy_(t)",
                                  "t.to(t.dtype, copy=True)"])
def test_copies_that_end_on_the_device_of_t_pass(notebook_ns, body):
    v = verdict("to_autograd_tests", with_answer(notebook_ns, f"def to_autograd(t):\n    return {body}\n"))
    assert v.passed, v.message


def test_to_autograd_cases_span_the_dtypes_the_text_names():
    cases = a04.ToAutograd().cases()
    assert {c["dtype"] for c in cases} >= {"float64", "float32", "float16", "bfloat16", "int64", "int32", "uint8",
                                           "bool", "complex64"}
    meta = [c for c in cases if c["device"] == "meta"]
    assert {c["dtype"] for c in meta} >= {"float32", "bool"} and any(c["x"].dim() == 0 for c in meta)
    assert all(c["x"].dtype == getattr(torch, c["dtype"]) for c in cases if c["dtype"] in ("bool", "uint8", "int32"))


def test_the_wrong_loop_fails_as_the_notebook_says():
    err = a04.wrong_order_error()
    fields = a04.match_version_error(err)
    assert fields and fields["version_now"] == fields["version_saved"] + 1 and fields["shape"] == (16, 1)


def test_safe_inplace_truth_keeps_earlier_decisions():
    from autograder.wild import build_model

    flags = [getattr(m, "inplace", None) for m in
             a04.reference_safe_inplace(build_model(["linear", "leaky_relu", "relu", "linear"]))]
    assert flags == [None, True, False, None]


def test_gpu_grader_adds_cuda_cases(monkeypatch):
    configs = [(torch.device("cpu"), torch.float64), (torch.device("cpu"), torch.float32),
               (torch.device("cuda"), torch.float32), (torch.device("cuda"), torch.float16)]
    monkeypatch.setattr(runtime, "test_configs", lambda: configs)  # read by configs_with_half_on_cpu()
    for check in (a04.TrainStep(), a04.SafeInplace(), a04.SigmoidInPlace(), a04.ToAutograd()):
        cases = check.cases()
        assert {("cuda", "float16"), ("cpu", "float64")} <= {(c.get("device"), c.get("dtype")) for c in cases}
        assert all(t.device.type == "cpu" for c in cases for t in c.values() if isinstance(t, torch.Tensor))


def test_mutants_declared():
    for fn, target in a04.MUTANTS.items():
        live = [m for m in target.mutants if not m.equivalent]
        assert len(live) >= 8, fn


def test_a_forged_inplace_report_gains_nothing(notebook_ns):
    """tests/hostile/04_in_the_wild/forged_inplace_report.py: SigmoidInPlace without mark_dirty whose own
    process reports the version bumped (Tensor._version patched) and raises the leaf rule by hand. The
    forged field reads as wanted, but the identity test (``y is h``: without mark_dirty PyTorch hands back
    a view) and the Jacobians, compared in the grader, fail it."""
    from instructor.hidden import judge_results, probe_source
    from instructor.hidden.probe_driver import compile_probe, run_case

    hostile = REPO / "tests" / "hostile" / "04_in_the_wild" / "forged_inplace_report.py"
    code = next(t for k, g, t in parse_sample(hostile).blocks if g == "sigmoid_inplace")
    real_version = torch.Tensor._version
    try:
        ns = with_answer(notebook_ns, code)
        check = a04.SigmoidInPlace()
        cases = check.cases()
        probe = compile_probe(probe_source(check), check.grade_id)
        inplace = next(c for c in cases if c["kind"] == "inplace" and c["device"] == "cpu")
        r = run_case(probe, ns, dict(inplace), 0)
        assert r["version_bumped"] is True and r["same_object"] is False  # the forged field, the true identity
        leaf = next(c for c in cases if c["kind"] == "leaf")
        assert "leaf" in run_case(probe, ns, dict(leaf), 0)["raised"]  # the leaf rule, raised by hand
        with contextlib.redirect_stdout(io.StringIO()):
            results = [run_case(probe, ns, dict(c), 0) for c in cases]
        v = judge_results(check, cases, results)
    finally:
        torch.Tensor._version = real_version
    assert not v.passed and "Jacobian" in v.message, v.message


# ------------------------------------------------------------------------- issue 38: what the text allows, drawn


def _judged(check, ns, cases):
    from instructor.hidden import judge_results, probe_source
    from instructor.hidden.probe_driver import compile_probe, run_case

    probe = compile_probe(probe_source(check), check.grade_id)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return judge_results(check, cases, [run_case(probe, ns, dict(c), 0) for c in cases])


def test_ctx_y_fails_on_a_write_after_apply(notebook_ns, monkeypatch):
    """Section 3's first rule: an output kept as ctx.y is never version-checked, so a write into y after
    apply gives a silently wrong gradient. Sample ``ctx_y_saved`` (mark_dirty right) fails on those cases,
    passed without them (the control), and a saved clone of the output (right: no wrong gradient) passes."""
    ns = with_answer(notebook_ns, sample_answer("ctx_y_saved", "sigmoid_inplace"))
    v = verdict("sigmoid_inplace_tests", ns)
    assert not v.passed and "after y.mul_(3)" in v.message and "ctx.save_for_backward" in v.message, v.message
    monkeypatch.setattr(a04.SigmoidInPlace, "WRITES", [])
    assert verdict("sigmoid_inplace_tests", ns).passed
    monkeypatch.undo()
    saved_clone = sample_answer("ada", "sigmoid_inplace").replace("ctx.save_for_backward(x)",
                                                                   "ctx.save_for_backward(x.clone())")
    assert "x.clone()" in saved_clone
    assert verdict("sigmoid_inplace_tests", with_answer(notebook_ns, saved_clone)).passed


def test_the_reference_refuses_a_write_after_apply():
    """The truth the judge accepts: the reference's backward raises the version-counter error."""
    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    y = a04.ReferenceSigmoidInPlace.apply(x * 1)
    y.mul_(3)
    with pytest.raises(RuntimeError) as err:
        y.sum().backward()
    assert a04.match_version_error(str(err.value)) is not None


def test_safe_inplace_models_span_the_text():
    """The text: a Linear first, then Linears, LayerNorms and activations in any order, possibly ending in an
    activation; the visible test's model is SPECS[0] and ends in one."""
    specs = [spec for spec, _ in a04.SafeInplace.SPECS]
    assert specs[0] == ["linear", "relu", "linear", "sigmoid", "relu", "linear", "relu"]
    assert all(s[0] == "linear" for s in specs)
    assert sum(s[-1] != "linear" for s in specs) >= 3 and sum("layernorm" in s for s in specs) >= 2
    half = [specs[k] for k in a04.SafeInplace.HALF_ON_CPU]
    assert sum(any(a in s for a in ("elu", "celu", "selu")) for s in half) >= 3
    assert any(s[-1] != "linear" and "layernorm" in s for s in half)


def test_upstream_weights_sized_from_the_last_module_fail(notebook_ns):
    v = verdict("safe_inplace_tests", with_answer(notebook_ns, sample_answer("last_module_sized", "safe_inplace")))
    assert not v.passed and "out_features" in v.message, v.message


def test_an_experiment_in_half_precision_fails_where_precision_decides(notebook_ns, monkeypatch):
    """Sample ``own_dtype_experiment`` decides on a CPU copy in the model's own dtype: in float16/bfloat16
    rounding alone makes ELU/CELU/SELU fail torch.allclose. The half-precision models drawn now catch it on
    every one of them that holds those activations; the three half-precision models drawn before (none of
    them) passed it (the control: a float32 model caught it only by the chance of its weights)."""
    ns = with_answer(notebook_ns, sample_answer("own_dtype_experiment", "safe_inplace"))
    check = a04.SafeInplace()
    half = [c for c in check.cases() if c["dtype"] in ("float16", "bfloat16")]
    caught = [c for c in half if any(a in c["spec"] for a in ("elu", "celu", "selu"))]
    assert len(caught) >= 6
    for case in caught:
        v = _judged(check, ns, [case])
        assert not v.passed and "wrong activations in place" in v.message, (case["label"], v.message)
    monkeypatch.setattr(a04.SafeInplace, "HALF_ON_CPU", (3, 4, 5))
    old_half = [c for c in a04.SafeInplace().cases() if c["dtype"] in ("float16", "bfloat16")]
    assert old_half and _judged(check, ns, old_half).passed
    assert _judged(check, notebook_ns, half).passed  # the reference, on every half-precision model


def test_to_autograd_draws_an_empty_tensor(notebook_ns, monkeypatch):
    cases = a04.ToAutograd().cases()
    assert any(c["x"].numel() == 0 and c["x"].dim() == 2 for c in cases)
    ns = with_answer(notebook_ns, sample_answer("tolist_copy", "to_autograd"))
    v = verdict("to_autograd_tests", ns)
    assert not v.passed and "empty (0, 3)" in v.message and "wrong shape" in v.message, v.message
    monkeypatch.setattr(a04.ToAutograd, "SHAPES", [s for s in a04.ToAutograd.SHAPES if 0 not in s[0]])
    assert verdict("to_autograd_tests", ns).passed  # the control: without the empty tensor it passed


def test_only_the_no_data_error_is_excused_on_meta(notebook_ns):
    """The text: code that reads values cannot run on meta and is judged on the CPU cases; any other error
    fails. An error of the answer's own on meta used to be excused too."""
    own = "def to_autograd(t):\n    if t.device.type == 'meta':\n        raise ValueError('no device')\n    return t.clone()\n"
    v = verdict("to_autograd_tests", with_answer(notebook_ns, own))
    assert not v.passed and "ValueError" in v.message and "meta" in v.message, v.message
    check = a04.ToAutograd()
    cpu_only = [c for c in check.cases() if c["device"] != "meta"]
    assert _judged(check, with_answer(notebook_ns, own), cpu_only).passed  # the control: meta is what fails it
    reads = "def to_autograd(t):\n    return t.cpu().clone().to(t.device)\n"
    assert verdict("to_autograd_tests", with_answer(notebook_ns, reads)).passed
