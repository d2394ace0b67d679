"""predict_versions' feedback counts wrong *steps*: one mistake early in the program is one message, not one per
later line (issue 38), and the verdict is the same as comparing the values."""
from __future__ import annotations

import random

from autograder.saved_tensors import VERSION_PROGRAM, measure_version_program, wrong_steps


def test_one_wrong_step_is_one_message_though_every_later_value_is_off():
    measured = measure_version_program()
    truth = [v for v, _ in measured]
    line = next(n for n, (s, _) in enumerate(VERSION_PROGRAM) if s == "a[1] += 1")   # two in-place ops
    new_object = next(n for n, (s, _) in enumerate(VERSION_PROGRAM) if s == "a = a * 1")
    pred = [v - 1 if line <= n < new_object else v for n, v in enumerate(truth)]      # counted it as one
    values_off = sum(p != t for p, t in zip(pred, truth))
    assert values_off >= 5, "the cascade this test is about"
    steps = wrong_steps(pred, measured)
    assert steps == [f"line {line + 1}: you predict +1 (to {truth[line] - 1}); it moves the counter +2"], steps


def test_a_new_object_is_judged_by_its_value_not_by_the_step_from_the_old_one():
    measured = measure_version_program()
    new_object = next(n for n, (s, _) in enumerate(VERSION_PROGRAM) if s == "a = a * 1")
    assert measured[new_object] == (0, False)
    pred = [v for v, _ in measured]
    pred[new_object] = 3
    pred[new_object + 1] = 3 + measured[new_object + 1][0]   # the step after it predicted right
    assert wrong_steps(pred, measured) == [f"line {new_object + 1}: you predict 3; it is 0"]


def test_no_wrong_step_exactly_when_every_value_is_right():
    measured = measure_version_program()
    truth = [v for v, _ in measured]
    assert wrong_steps(truth, measured) == []
    rng = random.Random(0)
    for _ in range(500):
        pred = [v + rng.choice((0, 0, 0, -1, 1, 2)) for v in truth]
        assert (wrong_steps(pred, measured) == []) == (pred == truth), pred
