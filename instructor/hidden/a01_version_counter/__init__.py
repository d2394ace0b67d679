"""Assignment 1 (the version counter): hidden checks, as probes (sandbox) and judges (grader).

Everything a judge needs to know about PyTorch is found out here, in the grader, *by experiment* on
the installed version, never read from a table and never taken from the sandbox: which tensors an op
saves (write into each and see whether backward refuses), what ``_version`` becomes after each line
of the version program (run it), what the "modified by an inplace operation" message says (provoke
it), and what the right gradient is (an out-of-place decode in float64 on the CPU).

* :mod:`.references` — out of the student package because they are answers: the message's reference
  parser and the experiment that provokes it, the version program's truth, the saved-tensor
  experiment, the reference decode and the fix-judging procedure;
* :mod:`.cases` — inputs the checks draw on: messages written in the installed PyTorch's wording, and
  the decodes the fix-judging question is tested on (as source text, shipped to the probe and
  rebuilt in the judge);
* :mod:`.checks` — the six checks, one per graded test cell;
* :mod:`.mutants` — plausible wrong variants of each reference solution (mutation testing).
"""
from __future__ import annotations

from .cases import DECODE_FAMILY, DECODES, decode_family, second_output_error, synth_message
from .checks import (ASSIGNMENT, FixedSigmoidDecode, JudgeFix, PredictVersions, ReadErrorMessage,
                     ReproduceSigmoidError, SavedBy)
from .mutants import DECODE_MUTANTS, DECODE_SOURCE, MUTANTS, PREDICTED
from .references import (VERSION_ERROR_RE, build_decode, build_op, decode_outcome, from_backward, judge_decode,
                         match_version_error, provoke, reference_decode, run_version_program,
                         saved_by_experiment)

_family, _PREDICTED = decode_family, PREDICTED  # the names tests/test_hidden_a01.py reads

__all__ = ["ASSIGNMENT", "ReproduceSigmoidError", "PredictVersions", "ReadErrorMessage", "SavedBy",
           "FixedSigmoidDecode", "JudgeFix", "MUTANTS", "DECODE_SOURCE", "DECODE_MUTANTS", "DECODE_FAMILY",
           "DECODES", "PREDICTED", "VERSION_ERROR_RE", "match_version_error", "from_backward", "provoke",
           "synth_message", "second_output_error", "decode_family", "run_version_program", "build_op",
           "saved_by_experiment", "reference_decode", "decode_outcome", "judge_decode", "build_decode"]
