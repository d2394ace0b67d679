"""Cost of the in-place locator on the course's own detector (the README states the figure)."""
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
    ratio = measure_overhead(_RawDetector(), input_shape=(4, 3, 64, 64), repeats=9)
    print(f"locator overhead on TinyDetector forward+backward (batch 4, 64x64): {ratio:.2f}x")
    assert ratio < 6, f"the locator costs {ratio:.1f}x a plain run (aim: under 3x)"
