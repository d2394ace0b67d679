"""Assignment 4's course code (in-place in the wild): the tiny GAN, its data, the small models of
the ``inplace=True`` question, a saved-tensor meter and a helper for the tests. No answers here: the training step, the
in-place decision, the custom Function and the inference-mode fix are the student's.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["make_gan", "ring_data", "make_optimizers", "d_loss", "g_loss", "ACTIVATIONS", "build_model", "saved_bytes",
           "sample_gan", "first_error"]


def make_gan(seed: int = 0, latent: int = 2, hidden: int = 16, dtype=torch.float32, device="cpu"):
    """``(G, D)``: an MLP generator (latent → 2-D point) and an MLP discriminator (2-D point → one
    logit), seeded, in ``dtype`` on ``device``. Seconds of training on one CPU thread."""
    gen = torch.Generator().manual_seed(seed)
    G = nn.Sequential(nn.Linear(latent, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(),
                      nn.Linear(hidden, 2))
    D = nn.Sequential(nn.Linear(2, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(),
                      nn.Linear(hidden, 1))
    with torch.no_grad():
        for p in list(G.parameters()) + list(D.parameters()):
            bound = 1.0 / math.sqrt(p.shape[-1]) if p.dim() > 1 else 0.1
            p.copy_((torch.rand(p.shape, generator=gen, dtype=torch.float64) * 2 - 1) * bound)
    return G.to(device, dtype), D.to(device, dtype)


def ring_data(n: int, seed: int = 0, modes: int = 8, radius: float = 2.0, std: float = 0.05,
              dtype=torch.float32, device="cpu") -> torch.Tensor:
    """``n`` 2-D points from ``modes`` Gaussian blobs on a circle (the classic toy GAN target)."""
    gen = torch.Generator().manual_seed(seed)
    k = torch.randint(0, modes, (n,), generator=gen)
    angle = 2 * math.pi * k.double() / modes
    centre = torch.stack([angle.cos(), angle.sin()], dim=1) * radius
    return (centre + torch.randn(n, 2, generator=gen, dtype=torch.float64) * std).to(device, dtype)


def make_optimizers(G, D, lr: float = 0.1):
    """Plain SGD for each network: ``(opt_g, opt_d)``."""
    return torch.optim.SGD(G.parameters(), lr=lr), torch.optim.SGD(D.parameters(), lr=lr)


def d_loss(d_real: torch.Tensor, d_fake: torch.Tensor) -> torch.Tensor:
    """The discriminator's loss from its logits: real points labelled 1, generated ones 0
    (binary cross-entropy, mean over the batch, the two terms added)."""
    return (F.binary_cross_entropy_with_logits(d_real, torch.ones_like(d_real))
            + F.binary_cross_entropy_with_logits(d_fake, torch.zeros_like(d_fake)))


def g_loss(d_fake: torch.Tensor) -> torch.Tensor:
    """The generator's (non-saturating) loss: D's logits on generated points, labelled 1."""
    return F.binary_cross_entropy_with_logits(d_fake, torch.ones_like(d_fake))


def sample_gan(G, n: int = 512, seed: int = 1, latent: int = 2) -> torch.Tensor:
    """``n`` generated points (no graph), for plots."""
    p = next(G.parameters())
    z = torch.randn(n, latent, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    with torch.no_grad():
        return G(z.to(p.device, p.dtype)).cpu()


#: The modules :func:`build_model` knows, by name. Activations that take ``inplace=`` are marked.
ACTIVATIONS = {
    "relu": lambda: nn.ReLU(), "leaky_relu": lambda: nn.LeakyReLU(0.1), "elu": lambda: nn.ELU(),
    "hardtanh": lambda: nn.Hardtanh(), "relu6": lambda: nn.ReLU6(), "silu": lambda: nn.SiLU(),
    "hardswish": lambda: nn.Hardswish(), "mish": lambda: nn.Mish(), "selu": lambda: nn.SELU(),
    "celu": lambda: nn.CELU(), "tanh": lambda: nn.Tanh(), "sigmoid": lambda: nn.Sigmoid(),
}


def build_model(spec: list[str], in_features: int = 8, width: int = 16, seed: int = 0,
                dtype=torch.float32, device="cpu") -> nn.Sequential:
    """An ``nn.Sequential`` from names: ``"linear"`` (to ``width`` features; the first maps
    ``in_features``), ``"layernorm"``, or an activation of :data:`ACTIVATIONS`. Every activation
    starts out of place. Seeded weights."""
    gen = torch.Generator().manual_seed(seed)
    layers, features = [], in_features
    for name in spec:
        if name == "linear":
            layers.append(nn.Linear(features, width))
            features = width
        elif name == "layernorm":
            layers.append(nn.LayerNorm(features))
        else:
            layers.append(ACTIVATIONS[name]())
    model = nn.Sequential(*layers)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float64) * (0.5 if p.dim() > 1 else 0.2))
    return model.to(device, dtype)


def saved_bytes(model: nn.Module, x: torch.Tensor) -> int:
    """Bytes of the distinct storages autograd saves for backward during ``model(x)``.

    Counted with ``torch.autograd.graph.saved_tensors_hooks`` (each saved tensor passes through the
    pack hook); a storage saved twice (an in-place activation's output, saved by it and by the next
    layer) counts once. The forward pass runs under the hooks and its graph is thrown away: hooks
    switch PyTorch's version check off, so never call backward on a graph built under them to
    decide whether an in-place op is safe.
    """
    storages: dict[int, int] = {}

    def pack(t):
        s = t.untyped_storage()
        storages[s.data_ptr()] = s.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(x)
    return sum(storages.values())


def first_error(fn) -> str | None:
    """Run ``fn()``; ``None`` when it works, else its error as one short line (its type and the first
    line of its message, without PyTorch's "Hint: ..."). The tests use it to report a failing backward
    briefly instead of showing a traceback."""
    try:
        fn()
    except Exception as err:  # noqa: BLE001 - reported, not hidden: the caller fails with this text
        text = str(err).split(" Hint:")[0].strip().splitlines()
        return f"{type(err).__name__}: {text[0][:300] if text else ''}"
    return None
