"""Mutation testing of the hidden checks (issue: hidden tests that span everything each task allows).

For every graded function, each plausible wrong variant of the reference solution (declared as
``MUTANTS`` in ``instructor/hidden/aNN_*.py``) must fail at least one of the checks that judge it,
and each mutant declared equivalent (with its reason) must pass them all. Judged in-process, without
nbgrader: seconds per mutant. The per-function mutation score is printed at the end of the run.
"""
from __future__ import annotations

import pytest

from instructor.hidden import ASSIGNMENT_MODULES
from instructor.hidden.mutation import mutation_table, run_mutants

RESULTS: list = []


@pytest.fixture(scope="module")
def judged() -> dict:
    """Every assignment's mutants, judged in two fresh processes at once (each judges in-process, on one
    core; the slowest assignment first)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    order = sorted(ASSIGNMENT_MODULES, key=lambda a: a != "03_yolo_head")
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {a: pool.submit(run_mutants, [a]) for a in order}
        return {a: f.result() for a, f in futures.items()}


@pytest.mark.parametrize("assignment", list(ASSIGNMENT_MODULES))
def test_no_mutant_survives(judged, assignment):
    results = judged[assignment]
    RESULTS.extend(results)
    assert results, f"{assignment} declares no mutants"
    bad = [r for r in results if not r.ok]
    assert not bad, "\n" + mutation_table(results)


def test_every_graded_function_has_at_least_its_share_of_mutants():
    """At least 20 behaviour-changing mutants for a function whose reference answer has 10 or more
    lines of code, 15 for a shorter one (the issue: "at least 20 per function where the function is
    big enough"); every equivalent mutant says why."""
    import importlib

    from instructor.hidden.mutation import reference_solution

    short = []
    for assignment, module in ASSIGNMENT_MODULES.items():
        declared = getattr(importlib.import_module(module), "MUTANTS", {})
        assert declared, assignment
        for function, target in declared.items():
            code = [line for line in reference_solution(assignment, function).splitlines()
                    if line.strip() and not line.strip().startswith("#")]
            live = [m for m in target.mutants if not m.equivalent]
            need = 20 if len(code) >= 10 else 15
            if len(live) < need:
                short.append(f"{assignment}/{function}: {len(live)} mutants for {len(code)} lines (need {need})")
            assert all(len(m.equivalent) > 10 for m in target.mutants if m.equivalent), function
    assert not short, "\n".join(short)
