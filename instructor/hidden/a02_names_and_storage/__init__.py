"""Assignment 2 (names and storage): hidden checks, as probes (sandbox) and judges (grader).

Two questions:

* ``classify_update(statement, device=None, dtype=None)`` (four test cells): the case carries a
  statement; the probe hands it to the student's function; the judge measures the statement *here*,
  in the grader (:func:`~.references.measure`, the reference classifier that used to live in the
  student package) and compares the categories.
* ``fixed_model(x, w)`` (two test cells): the probe calls the student's function on leaves made from
  the case's tensors and returns the output, its ``requires_grad``, the gradients with respect to
  ``x`` and ``w`` for the case's upstream gradient (or the error backward raised) and, for the
  gradients cell, the report of the in-place locator; the judge compares with the float64
  :func:`~.references.reference_model` computed here.

* :mod:`.references` — the reference classifier (:func:`~.references.measure`) and the reference model;
* :mod:`.cases` — the statements each classify cell draws from, and the model cases;
* :mod:`.checks` — the six checks, one per graded test cell;
* :mod:`.mutants` — plausible wrong variants of each reference solution (mutation testing).
"""
from __future__ import annotations

from autograder import course_device
from autograder.storage import model_inputs

from .cases import (NO_CHANGE_FIXED, NO_CHANGE_TEMPLATES, REBIND_FIXED, REBIND_TEMPLATES, UNTRACKED_FIXED,
                    UNTRACKED_TEMPLATES, VIEW_FIXED, VIEW_TEMPLATES)
from .checks import (ASSIGNMENT, CPU_TENSOR_ON_GPU, FLOAT64_TOL, ClassifyRebindVsInplace, ClassifyNewView,
                     ClassifyNoChange, ClassifyUntrackedAndVersion, FixedModelForward, FixedModelGradients)
from .mutants import MUTANTS
from .references import CATEGORIES, Facts, classify, measure, model_reference, reference_model

_reference = model_reference  # the name tests/test_hidden_a02.py reads

__all__ = ["ASSIGNMENT", "CATEGORIES", "Facts", "measure", "classify", "reference_model", "model_reference",
           "REBIND_FIXED", "REBIND_TEMPLATES", "VIEW_FIXED", "VIEW_TEMPLATES", "NO_CHANGE_FIXED",
           "NO_CHANGE_TEMPLATES", "UNTRACKED_FIXED", "UNTRACKED_TEMPLATES", "ClassifyRebindVsInplace",
           "ClassifyNewView", "ClassifyNoChange", "ClassifyUntrackedAndVersion", "CPU_TENSOR_ON_GPU",
           "FLOAT64_TOL", "FixedModelForward", "FixedModelGradients", "MUTANTS", "course_device", "model_inputs"]
