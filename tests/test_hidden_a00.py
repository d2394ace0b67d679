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
    """The tasks ask autograd to compute the gradient of the fn they are given: the default's formula
    (sample ``closed_form``) fails, and the message says it fits the default function only."""
    from instructor.authoring.samples import SAMPLES, parse_sample

    ns = dict(notebook_namespace("00_orientation"))
    code = next(t for k, g, t in parse_sample(SAMPLES / "00_orientation" / "closed_form.py").blocks
                if g == grade_id.removesuffix("_tests"))
    exec(code, ns)  # noqa: S102
    with contextlib.redirect_stdout(io.StringIO()):
        v = run_in_process(grade_id, ns, "00_orientation")
    assert not v.passed and "not of the fn it was given" in v.message, v.message


# ------------------------------------------------------------------------- computed by autograd, judged outside
# The two autograd questions used to be judged by a count of backward passes taken in the student's own
# process: a formula after one unrelated backward (tests/hostile/00_orientation/forged_backward.py) scored 8/8.
# Now each list of values comes with functions to differentiate drawn at grading time, whose gradients the
# judge computes in the grader: nothing the student's process reports is trusted.

AUTOGRAD_CHECKS = {"cube_sum_grad_tests": a00.CubeSumGrad, "intermediate_grad_tests": a00.IntermediateGrad}


def _namespace_with(sample_path) -> dict:
    from instructor.authoring.samples import parse_sample

    ns = dict(notebook_namespace("00_orientation"))
    for kind, grade_id, text in parse_sample(sample_path).blocks:
        if kind == "solution" and grade_id in ("cube_sum_grad", "intermediate_grad"):
            exec(text, ns)  # noqa: S102
    return ns


def _judge(check, ns, cases):
    from instructor.hidden import judge_results, probe_source
    from instructor.hidden.probe_driver import compile_probe, run_case

    probe = compile_probe(probe_source(check), check.grade_id)
    with contextlib.redirect_stdout(io.StringIO()):
        results = [run_case(probe, ns, dict(c), 0) for c in cases]
    return judge_results(check, cases, results)


def _old_count_check(fn, values_lists, formula) -> bool:
    """The check as it was: the right numbers for the default function, and at least one backward pass
    counted (autograd's engine wrapped) while the student's function ran, in the student's process."""
    import torch
    from torch.autograd.variable import Variable

    for values in values_lists:
        engine, runs = Variable._execution_engine, []

        class Counting:
            def run_backward(self, *a, **k):
                runs.append(1)
                return engine.run_backward(*a, **k)

            def __getattr__(self, name):
                return getattr(engine, name)

        Variable._execution_engine = Counting()
        try:
            g = fn(list(values))
        finally:
            Variable._execution_engine = engine
        if not (runs and torch.allclose(g.double().cpu(), formula(torch.tensor(values, dtype=torch.float64)),
                                        rtol=1e-10, atol=1e-12)):
            return False
    return True


FORMULAS = {"cube_sum_grad_tests": lambda v: 3 * v ** 2, "intermediate_grad_tests": lambda v: 2 * v.sigmoid()}


@pytest.mark.parametrize("grade_id", list(AUTOGRAD_CHECKS))
def test_a_forged_backward_count_passed_the_old_check_and_fails_now(grade_id):
    from instructor.authoring.samples import REPO

    ns = _namespace_with(REPO / "tests" / "hostile" / "00_orientation" / "forged_backward.py")
    check = AUTOGRAD_CHECKS[grade_id]()
    fn = ns[check.function]
    # the attack works without the defence: the old count-based check passes it ...
    assert _old_count_check(fn, check.value_lists(), FORMULAS[grade_id])
    # ... and so does today's judge with the grading-time draw switched off (only the default function)
    cases = check.cases()
    assert _judge(check, ns, [c for c in cases if c["fn"] is None]).passed
    # with the draw it fails, and says why
    v = _judge(check, ns, cases)
    assert not v.passed and "not of the fn it was given" in v.message, v.message


@pytest.mark.parametrize("grade_id", list(AUTOGRAD_CHECKS))
def test_every_drawn_function_separates_autograd_from_the_formula(grade_id):
    """Over many draws (other seeds than the check's): the reference answer (autograd of fn) passes every
    case, the default's formula (sample ``closed_form``) fails every case with a drawn function."""
    from instructor.authoring.samples import SAMPLES

    check = AUTOGRAD_CHECKS[grade_id]()
    reference = dict(notebook_namespace("00_orientation"))
    formula = _namespace_with(SAMPLES / "00_orientation" / "closed_form.py")
    for seed in range(5):
        cases = a00.function_cases(check.value_lists(), check.DEFAULT, seed=1000 + seed,
                                   at_sigmoid=grade_id == "intermediate_grad_tests")
        assert _judge(check, reference, cases).passed
        drawn = [c for c in cases if c["fn"] is not None]
        assert len(drawn) > len(check.value_lists())
        for case in drawn:
            assert not _judge(check, formula, [case]).passed, case["label"]


def test_functions_are_drawn_anew_at_each_grading():
    """Two gradings draw different functions (the seeded ones repeat; the fresh ones come from the system's
    randomness), so no answer can be prepared for them from an earlier feedback."""
    first, second = a00.CubeSumGrad().cases(), a00.CubeSumGrad().cases()
    fresh = [c["fn"] for c in first if "drawn when your work was graded" in c["label"]]
    assert len(fresh) >= 4
    assert fresh != [c["fn"] for c in second if "drawn when your work was graded" in c["label"]]
    seeded = lambda cs: [c["fn"] for c in cs if "drawn when" not in c["label"]]  # noqa: E731
    assert seeded(first) == seeded(second)


def test_a_signature_without_fn_is_named():
    ns = dict(notebook_namespace("00_orientation"))
    exec("def cube_sum_grad(values):\n"  # noqa: S102
         "    x = torch.tensor(values, dtype=torch.float64, device=DEVICE, requires_grad=True)\n"
         "    (x ** 3).sum().backward()\n    return x.grad\n", ns)
    v = _judge(a00.CubeSumGrad(), ns, a00.CubeSumGrad().cases())
    assert not v.passed and "does not take the function to differentiate" in v.message, v.message


def test_drawing_ends_and_keeps_its_draws_where_torch_allclose_is_patched(monkeypatch):
    """Where a submission made ``torch.allclose`` always true (nbgrader's own kernel, no sandbox), the loop
    that redraws a function whose gradient equals the default's once never ended and the cell timed out.
    The draws are bounded and compared in plain floats: the same seeded functions, drawn at once."""
    import time

    import torch

    honest = a00.function_cases(a00.CubeSumGrad().value_lists(), a00.CubeSumGrad.DEFAULT, seed=101, fresh=0)
    monkeypatch.setattr(torch, "allclose", lambda *a, **k: True)
    t0 = time.perf_counter()
    patched = a00.function_cases(a00.CubeSumGrad().value_lists(), a00.CubeSumGrad.DEFAULT, seed=101, fresh=0)
    assert time.perf_counter() - t0 < 10
    assert [c["fn"] for c in patched] == [c["fn"] for c in honest]
    from instructor.hidden.a00_orientation.checks import _differs

    g0 = a00.autograd_of(None, a00.CubeSumGrad.DEFAULT, [1.0, 2.0])
    assert not _differs(g0, g0) and _differs(g0 + 1, g0) and not _differs(g0 * float("nan"), g0)


# ------------------------------------------------------------------------- a derivative autograd did not compute
# An answer that differentiates fn numerically (a complex step: fn on x + ih, tests/samples/00_orientation/
# complex_step.py) is right to float64 precision on smooth functions. It used to lose its points only where a
# drawn op happened to reject complex input (softplus), and was then told "not implemented yet". Now every
# drawn function holds a `.detach()` (whose gradient autograd alone knows), and the probe counts the calls of
# fn whose result autograd tracks, so the judge can say what happened.


def test_a_complex_step_fails_and_is_told_autograd_did_not_compute_it():
    from instructor.authoring.samples import SAMPLES

    check = a00.CubeSumGrad()
    ns = _namespace_with(SAMPLES / "00_orientation" / "complex_step.py")
    cases = check.cases()
    v = _judge(check, ns, cases)
    assert not v.passed and "autograd did not compute" in v.message and "is not implemented yet" not in v.message, v.message
    assert "backward()/torch.autograd.grad" in v.message
    # every drawn function fails it, with the same message, whether or not it holds an op that rejects complex
    drawn = [c for c in cases if c["fn"] is not None]
    assert any("softplus" not in c["fn"] for c in drawn)
    for case in drawn:
        one = _judge(check, ns, [case])
        assert not one.passed and "autograd did not compute" in one.message, (case["label"], one.message)
    # the default function is no evidence against it: the cube's complex step is exact
    assert _judge(check, ns, [c for c in cases if c["fn"] is None]).passed


def test_without_the_detached_piece_a_complex_step_passed():
    """The control: the same drawn functions without `.detach()` and without softplus (what the draw could
    give before) let the complex step through; an op that rejects complex input made it raise the
    NotImplementedError that the generic runner reports as "not implemented yet"."""
    from instructor.authoring.samples import SAMPLES

    check = a00.CubeSumGrad()
    ns = _namespace_with(SAMPLES / "00_orientation" / "complex_step.py")
    plain = [dict(c, fn=c["fn"].replace(".detach()", "")) for c in check.cases()
             if c["fn"] is not None and "softplus" not in c["fn"]]
    assert plain and _judge(check, ns, plain).passed
    softplus = eval("lambda v: torch.nn.functional.softplus(v) * 2", {"torch": __import__("torch")})  # noqa: S307
    with pytest.raises(NotImplementedError):
        ns["cube_sum_grad"]([1.0, 2.0], softplus)
    case = {"values": [1.0, 2.0], "fn": "lambda v: torch.nn.functional.softplus(v) * 2", "label": "softplus"}
    v = _judge(check, ns, [case])
    assert not v.passed and "autograd did not compute" in v.message and "is not implemented yet" not in v.message


@pytest.mark.parametrize("grade_id", list(AUTOGRAD_CHECKS))
def test_honest_autograd_styles_are_not_told_otherwise(grade_id):
    """torch.func.grad and torch.autograd.grad track fn's result too: the reference styles pass every draw,
    and a wrong answer that does use autograd keeps its usual message."""
    check = AUTOGRAD_CHECKS[grade_id]()
    name = check.function
    styles = {
        "cube_sum_grad_tests": [
            "def cube_sum_grad(values, fn=lambda x: x ** 3):\n"
            "    x = torch.tensor(values, dtype=torch.float64, device=DEVICE)\n"
            "    return torch.func.grad(lambda t: fn(t).sum())(x)\n",
            "def cube_sum_grad(values, fn=lambda x: x ** 3):\n"
            "    x = torch.tensor(values, dtype=torch.float64, device=DEVICE, requires_grad=True)\n"
            "    with torch.no_grad():\n        fn(x)\n"
            "    return torch.autograd.grad(fn(x).sum(), x)[0]\n"],
        "intermediate_grad_tests": [
            "def intermediate_grad(values, fn=lambda h: h * h):\n"
            "    h = torch.tensor(values, dtype=torch.float64).sigmoid()\n"
            "    return torch.func.grad(lambda t: fn(t).sum())(h)\n"],
    }[grade_id]
    for code in styles:
        ns = dict(notebook_namespace("00_orientation"))
        exec(code, ns)  # noqa: S102
        v = _judge(check, ns, check.cases())
        assert v.passed, v.message
    ns = dict(notebook_namespace("00_orientation"))
    exec(styles[0].replace("fn(t).sum()", "fn(t).mean()"), ns)  # noqa: S102
    v = _judge(check, ns, check.cases())
    assert not v.passed and "autograd did not compute" not in v.message, v.message
