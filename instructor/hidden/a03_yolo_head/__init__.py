"""Assignment 3 (``03_yolo_head``): hidden checks (probes and judges) and the references they use.

Nothing here is visible to students: the out-of-place decode (:func:`reference_decode`, the answer
of ``decode``), :class:`ReferenceFixedDetect` (the answer of ``FixedDetect``), :func:`pgd_attack`
and :func:`vanish_attack` (answers of ``attack``), the wrong "fixes" (:data:`SILENT_FIXES`) and the
checks.

* :mod:`.references` — the answers above and the wrong fixes, compared by :func:`compare_silent_fixes`;
* :mod:`.cases` — the input space: level shapes, heads, the attack's held-out images, and the case builders;
* :mod:`.checks` — the six checks (below), with the helpers their probes ship and their judges use;
* :mod:`.mutants` — plausible wrong variants of each reference solution (mutation testing).

What each check catches
-----------------------
``decode_matches_legacy_tests``  values equal the release-5.0 decode under ``no_grad``: missing
    ``- 0.5``, no square in the width/height, dropped class columns, a wrong stride or anchor factor.
``decode_contract_tests``  same shape, dtype and device as ``p``; float16 stays float16 (``torch.cat``
    promotes mixed dtypes); ``p`` is left unchanged; no tensor made on the CPU when ``p`` is on a GPU.
``decode_gradients_tests``  gradients reach ``p`` and equal autograd of the out-of-place formula in
    float64: catches ``no_grad``, ``.detach()``, ``.data`` writes, identity saved-tensor hooks and
    writes left in place.
``decode_no_inplace_on_saved_tests``  no write into the memory of a tensor autograd saved, seen at the
    dispatch level by :mod:`autograder.inplace` (matched by storage bytes, so ``.data`` writes and
    identity saved-tensor hooks fail too), and confirmed by a plain backward run outside the locator.
``fixed_detect_tests``  a drop-in head: subclass of ``LegacyDetect``, strict state-dict load, same
    outputs as the legacy head for 1-3 levels in eval / training / export mode and over repeated
    calls at other sizes, right gradients to the features and, in the pretrained detector, to the image.
``attack_tests``  budget (L-inf), image range, image and weights untouched, and a drop of the best
    objectness on held-out images, measured here with the grader's own model.
"""
from __future__ import annotations

from .cases import (ATTACK_EPS, ATTACK_MARGIN, ATTACK_N, ATTACK_SEED, ATTACK_STEPS, DECODE_CASES, HEAD_CASES,
                    META_NOTE, decode_case)
from .checks import (ASSIGNMENT, AttackCheck, DecodeContract, DecodeGradients, DecodeMatchesLegacy,
                     DecodeNoInplace, FixedDetectCheck, describe_grad, fail_raised)
from .mutants import MUTANTS
from .references import (SILENT_FIXES, ReferenceFixedDetect, compare_silent_fixes, decode_reference, pgd_attack,
                         reference_attack_model, reference_decode, vanish_attack)

_raised = fail_raised  # the name tests/test_hidden_a03.py reads

__all__ = [
    "reference_decode", "decode_reference", "ReferenceFixedDetect", "pgd_attack", "vanish_attack",
    "SILENT_FIXES", "compare_silent_fixes", "decode_case", "DECODE_CASES", "HEAD_CASES",
    "ATTACK_SEED", "ATTACK_N", "ATTACK_EPS", "ATTACK_STEPS", "ATTACK_MARGIN",
    "DecodeMatchesLegacy", "DecodeContract", "DecodeGradients", "DecodeNoInplace", "FixedDetectCheck",
    "AttackCheck", "ASSIGNMENT", "MUTANTS", "reference_attack_model", "META_NOTE", "describe_grad", "fail_raised",
]
