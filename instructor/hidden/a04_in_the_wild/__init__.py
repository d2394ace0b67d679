"""Assignment 4 (in-place in the wild): hidden checks, as probes (sandbox) and judges (grader).

The references live here (never in the student package): the GAN step in the DCGAN order, the
in-place decision made by experiment, the in-place sigmoid as an ``autograd.Function`` and the
inference-tensor fix. Every truth is found out in the grader on the installed PyTorch: the GAN
reference step runs in float64 on the CPU from the same (dtype-rounded) weights and batches, the
in-place decision by running forward and backward with each activation in place, the saved bytes
with ``saved_tensors_hooks``.

* :mod:`.references` — those references, one section per part of the notebook;
* :mod:`.checks` — the five checks, one per graded test cell; each draws its cases from its own
  set-ups (class attributes: ``SETUPS``, ``SPECS``, ``SHAPES``, :data:`~.checks.COMPOSITIONS`), so
  there is no separate cases module;
* :mod:`.mutants` — plausible wrong variants of each reference solution (mutation testing).
"""
from __future__ import annotations

from ..a01_version_counter.references import from_backward, match_version_error
from .checks import (ASSIGNMENT, COMPOSITIONS, CPU_HINT, META, ReproduceGanError, SafeInplace, SigmoidInPlace,
                     ToAutograd, TrainStep, build_composition)
from .mutants import MUTANTS
from .references import (ReferenceSigmoidInPlace, gradients, reference_safe_inplace, reference_to_autograd,
                         reference_train_step, set_inplace, wrong_order_error)

__all__ = ["ASSIGNMENT", "ReproduceGanError", "TrainStep", "SafeInplace", "SigmoidInPlace", "ToAutograd",
           "COMPOSITIONS", "build_composition", "META", "CPU_HINT", "MUTANTS", "ReferenceSigmoidInPlace",
           "gradients", "reference_safe_inplace", "reference_to_autograd", "reference_train_step", "set_inplace",
           "wrong_order_error", "from_backward", "match_version_error"]
