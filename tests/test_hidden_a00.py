"""Assignment 0's hidden checks (instructor/hidden/a00_orientation/), in-process, no nbgrader: the
source notebook's solutions pass, every declared mutant applies and compiles, and the cases are plain,
labelled and span what each docstring promises."""
from __future__ import annotations

import contextlib
import io

import pytest

from instructor.hidden import a00_orientation as a00
from instructor.hidden import checks_for, run_in_process
from instructor.hidden.mutation import apply, notebook_namespace, reference_solution

GRADE_IDS = ["environment_report_tests", "cube_sum_grad_tests", "grad_fn_chain_tests", "intermediate_grad_tests"]


@pytest.mark.parametrize("grade_id", GRADE_IDS)
def test_reference_solutions_pass(grade_id):
    with contextlib.redirect_stdout(io.StringIO()):
        v = run_in_process(grade_id, dict(notebook_namespace("00_orientation")), "00_orientation")
    assert v.passed, v.message


def test_cases_are_labelled_and_repeat_lengths():
    for check in checks_for("00_orientation"):
        assert all(c.get("label") for c in check.cases()), check.grade_id
    for check in (a00.CubeSumGrad(), a00.IntermediateGrad()):
        lengths = [len(c["values"]) for c in check.cases()]
        assert len(set(lengths)) < len(lengths), "a cache keyed by the length must be caught"
    recipes = a00.GradFnChain.RECIPES
    assert any("torch.ones(3) * a" in r for r in recipes) and any(".detach()" in r for r in recipes)


def test_every_mutant_applies_and_compiles():
    assert set(a00.MUTANTS) == {"environment_report", "cube_sum_grad", "grad_fn_chain", "intermediate_grad"}
    for function, target in a00.MUTANTS.items():
        ref = reference_solution("00_orientation", function)
        assert len([m for m in target.mutants if not m.equivalent]) >= 8, function
        for m in target.mutants:
            compile(apply(ref, m), f"<{function}: {m.name}>", "exec")  # a syntax error is no kill


@pytest.mark.parametrize("grade_id", ["cube_sum_grad_tests", "intermediate_grad_tests"])
def test_the_formula_instead_of_autograd_fails(grade_id):
    """The tasks ask autograd to compute the gradient: the right numbers from a formula (sample
    ``closed_form``) fail, and the message says no backward pass ran."""
    from instructor.grading.samples import SAMPLES, parse_sample

    ns = dict(notebook_namespace("00_orientation"))
    code = next(t for k, g, t in parse_sample(SAMPLES / "00_orientation" / "closed_form.py").blocks
                if g == grade_id.removesuffix("_tests"))
    exec(code, ns)  # noqa: S102
    with contextlib.redirect_stdout(io.StringIO()):
        v = run_in_process(grade_id, ns, "00_orientation")
    assert not v.passed and "no backward pass ran" in v.message, v.message
