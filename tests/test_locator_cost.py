"""Cost of the in-place locator on the course's own detector (docs/locator.md states the figure)."""
from __future__ import annotations

import torch

from autograder.detector import load_pretrained
from autograder.inplace import measure_overhead


class _RawDetector(torch.nn.Module):
    """The detector in training mode, all raw level maps flattened: forward + backward through it all."""

    def __init__(self):
        super().__init__()
        self.det = load_pretrained().train()

    def forward(self, x):
        return torch.cat([level.flatten() for level in self.det(x)])


def test_locator_overhead_on_the_small_detector():
    # Same model and input for both paths; 3 warm-up runs of each, then 31 alternating plain/located
    # forward+backward runs, one thread's CPU time; the ratio of the medians.  Any Python dispatch
    # mode costs ~1.25x here before it does anything (every aten op, backward's included, is a call
    # into Python): the locator's own work is what lies above that.
    ratio = measure_overhead(_RawDetector(), input_shape=(4, 3, 64, 64), repeats=31)
    print(f"locator overhead on TinyDetector forward+backward (batch 4, 64x64): {ratio:.2f}x")
    assert ratio < 1.5, f"the locator costs {ratio:.2f}x a plain run (budget: under 1.5x)"
