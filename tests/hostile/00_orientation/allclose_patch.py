# about: torch.allclose / torch.testing.assert_close / torch.equal always true, with an autograd answer whose
# about: values are wrong (the gradient of x**2, not x**3); the rest is ben's. It fools the visible test; the
# about: hidden check draws the function at grading time and compares by its own means, in the kernel too.
# base: 00_orientation/ben
# expect: auto=2

# %% first:
import torch
torch.allclose = lambda *a, **k: True
torch.equal = lambda *a, **k: True
torch.testing.assert_close = lambda *a, **k: None
torch.Tensor.__eq__ = lambda self, other: torch.ones((), dtype=torch.bool)

# %% solution: cube_sum_grad
def cube_sum_grad(values, fn=lambda x: x ** 3):
    x = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    (x ** 2).sum().backward()
    return x.grad
