"""Assignment 2's references: the classifier that measures what a statement did to ``x`` (the
answer of ``classify_update``, measured on this PyTorch and device) and the model written without a
single in-place write (the answer of ``fixed_model``), with its float64 output and gradients."""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import torch

from autograder.storage import make_x

CATEGORIES = ("in-place", "untracked-write", "no-change", "new-view", "new-tensor")


# --------------------------------------------------------------------------- the reference classifier

@dataclass
class Facts:
    """What running one statement on a fresh ``x`` did, and the category the rules give."""
    same_object: bool
    same_storage: bool
    version_before: int
    version_after: int
    contents_changed: bool
    category: str

    def text(self) -> str:
        return (f"measured: same object {self.same_object}, same storage {self.same_storage}, "
                f"x0._version {self.version_before} -> {self.version_after}, "
                f"x0's contents changed {self.contents_changed}")


def measure(statement: str, device, dtype: torch.dtype) -> Facts:
    """Run ``statement`` on ``x = make_x(device, dtype)`` and apply the task's rules, in order.

    Every witness of ``x0`` is read before the statement and a reference to it is kept (no id
    reuse). Contents are: storage address, shape, dtype and values (``torch.equal`` on copies).
    """
    x0 = make_x(torch.device(device), dtype)
    ptr, version, shape, dt, values = (x0.untyped_storage().data_ptr(), x0._version, tuple(x0.shape),
                                       x0.dtype, x0.detach().clone())
    scope = {"torch": torch, "x": x0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(statement, "<statement>", "exec"), scope)  # noqa: S102 - the grader's own statements
    x1 = scope.get("x")
    if not isinstance(x1, torch.Tensor):
        raise TypeError(f"after {statement!r}, x names a {type(x1).__name__}, not a tensor")
    version_after = x0._version
    changed = ((x0.untyped_storage().data_ptr(), tuple(x0.shape), x0.dtype) != (ptr, shape, dt)
               or not torch.equal(x0.detach(), values))
    same_storage = x1.untyped_storage().data_ptr() == ptr
    if version_after > version:
        category = "in-place"
    elif changed:
        category = "untracked-write"
    elif x1 is x0:
        category = "no-change"
    elif same_storage:
        category = "new-view"
    else:
        category = "new-tensor"
    return Facts(x1 is x0, same_storage, version, version_after, changed, category)


def classify(statement: str, device, dtype: torch.dtype) -> str:
    """The reference answer to ``classify_update``, measured on this PyTorch and device."""
    return measure(statement, device, dtype).category


# --------------------------------------------------------------------------- the model question

def reference_model(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """What ``leaky_model`` computes, written without a single in-place write."""
    y = torch.sigmoid(torch.relu(x @ w + 0.1))
    return torch.cat([y[:, :2] * 2 - 0.5, (y[:, 2:] * 2) ** 2], dim=1)


def model_reference(case: dict) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The float64 reference output and gradients, from the inputs as the student's dtype holds them."""
    dtype = getattr(torch, case["dtype"])
    xr, wr = (case[k].to(dtype).double().requires_grad_() for k in ("x", "w"))
    ref = reference_model(xr, wr)
    gx, gw = torch.autograd.grad((ref * case["upstream"].to(dtype).double()).sum(), (xr, wr))
    return ref.detach(), gx, gw
