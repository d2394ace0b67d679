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
from instructor.grading.samples import parse_sample  # noqa: E402
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
