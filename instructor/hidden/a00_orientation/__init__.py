"""Assignment 0 (orientation): hidden checks, as probes (sandbox) and judges (grader).

* :mod:`.checks` — the four checks (one per graded test cell), the helper their probes ship
  (:func:`~.checks.call_with_fn`) and what their judges use: the functions drawn for the two autograd
  questions (:func:`~.checks.draw_function`, :func:`~.checks.function_cases`) and their gradients,
  computed here (:func:`~.checks.autograd_of`);
* :mod:`.mutants` — the plausible wrong variants of each reference solution (mutation testing).
"""
from __future__ import annotations

from .checks import (ASSIGNMENT, PIECES, CubeSumGrad, EnvironmentReport, GradFnChain, IntermediateGrad, autograd_of,
                     call_with_fn, draw_function, function_cases)
from .mutants import MUTANTS

__all__ = ["ASSIGNMENT", "PIECES", "EnvironmentReport", "CubeSumGrad", "GradFnChain", "IntermediateGrad",
           "autograd_of", "call_with_fn", "draw_function", "function_cases", "MUTANTS"]
