"""Assignment 0 (orientation): hidden checks, as probes (sandbox) and judges (grader).

* :mod:`.checks` — the four checks (one per graded test cell) and the helpers their probes ship
  (:func:`~.checks.counted_backward`) and their judges use;
* :mod:`.mutants` — the plausible wrong variants of each reference solution (mutation testing).
"""
from __future__ import annotations

from .checks import (ASSIGNMENT, EnvironmentReport, CubeSumGrad, GradFnChain, IntermediateGrad,
                     check_autograd_ran, counted_backward)
from .mutants import MUTANTS

__all__ = ["ASSIGNMENT", "EnvironmentReport", "CubeSumGrad", "GradFnChain", "IntermediateGrad",
           "check_autograd_ran", "counted_backward", "MUTANTS"]
