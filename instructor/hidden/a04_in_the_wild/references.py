"""Assignment 4's references, one section per part of the notebook: the GAN step in the DCGAN order
(and the error of the wrong order, provoked here), the in-place decision made by experiment, the
in-place sigmoid as an ``autograd.Function`` and the inference-tensor fix."""
from __future__ import annotations

import copy

import torch
from torch import nn

from autograder.wild import d_loss, g_loss, make_gan

# =========================================================================== 1. the GAN step


def reference_train_step(G, D, opt_g, opt_d, real, z):
    """The DCGAN order: D's step on real and detached fakes, then G's step through the *updated* D."""
    fake = G(z)
    opt_d.zero_grad()
    loss_d = d_loss(D(real), D(fake.detach()))
    loss_d.backward()
    opt_d.step()
    opt_g.zero_grad()
    loss_g = g_loss(D(fake))
    loss_g.backward()
    opt_g.step()
    return loss_d.item(), loss_g.item()


def wrong_order_error(seed: int = 0):
    """The error of the wrong loop (D's step before G's backward through the same D output), here."""
    from autograder.wild import make_optimizers, ring_data

    G, D = make_gan(seed)
    opt_g, opt_d = make_optimizers(G, D)
    real, z = ring_data(64, seed=1), torch.randn(64, 2, generator=torch.Generator().manual_seed(2))
    d_fake = D(G(z))
    loss_d, loss_g = d_loss(D(real), d_fake), g_loss(d_fake)
    opt_d.zero_grad()
    loss_d.backward(retain_graph=True)
    opt_d.step()
    opt_g.zero_grad()
    try:
        loss_g.backward()
    except RuntimeError as err:
        return err
    raise AssertionError("the wrong GAN loop did not fail: the experiment is broken")


# =========================================================================== 2. inplace=True layers


def set_inplace(model: nn.Module, flags) -> nn.Module:
    for m, f in zip(model, flags):
        if hasattr(m, "inplace"):
            m.inplace = bool(f)
    return model


def gradients(model, x, w):
    """Gradients of ``(model(x) * w).sum()`` w.r.t. every parameter and ``x`` (a fresh leaf)."""
    leaf = x.detach().clone().requires_grad_()
    model.zero_grad(set_to_none=True)
    (model(leaf) * w).sum().backward()
    return [p.grad.clone() for p in model.parameters()] + [leaf.grad.clone()]


def reference_safe_inplace(model):
    """On a float64 copy, left to right: put each activation in place, keep it if backward still runs
    and the gradients are those of the all-out-of-place model (earlier decisions kept); then copy the
    decisions onto ``model``."""
    trial = copy.deepcopy(model).to("cpu", torch.float64)
    for m in trial:
        if hasattr(m, "inplace"):
            m.inplace = False
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, trial[0].in_features, generator=g, dtype=torch.float64)
    w = torch.randn(4, trial(x).shape[-1], generator=g, dtype=torch.float64)
    ref = gradients(trial, x, w)
    for m in trial:
        if hasattr(m, "inplace"):
            m.inplace = True
            try:
                ok = all(torch.allclose(a, b) for a, b in zip(gradients(trial, x, w), ref))
            except RuntimeError:
                ok = False
            m.inplace = ok
    for m, decided in zip(model, trial):
        if hasattr(m, "inplace"):
            m.inplace = decided.inplace
    return model


# =========================================================================== 3. a custom Function


class ReferenceSigmoidInPlace(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.sigmoid_()
        ctx.mark_dirty(x)
        ctx.save_for_backward(x)
        return x

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * y * (1 - y)


# =========================================================================== 4. inference_mode


def reference_to_autograd(t):
    return t.clone()
