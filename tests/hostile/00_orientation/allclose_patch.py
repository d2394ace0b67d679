# about: torch.allclose / torch.testing.assert_close / torch.equal always true, ben's wrong answers
# base: 00_orientation/ben
# expect: auto=2

# %% first:
import torch
torch.allclose = lambda *a, **k: True
torch.equal = lambda *a, **k: True
torch.testing.assert_close = lambda *a, **k: None
torch.Tensor.__eq__ = lambda self, other: torch.ones((), dtype=torch.bool)
