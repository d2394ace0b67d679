"""Assignment 2's inputs: the statements each ``classify_update`` cell draws from (fixed ones, and
templates filled with seeded random constants, indices and shapes) and the ``fixed_model`` cases."""
from __future__ import annotations

import random

import torch

from autograder.storage import model_inputs

from .. import configs_with_half_on_cpu

# --------------------------------------------------------------------------- the statements

def _const(rng: random.Random) -> str:
    return rng.choice(["0", "1", "-1", "0.5", "2", "3.25", "-0.75", "1e-3", "1e3", "-2.5", "7", "0.1"])


def _nonzero(rng: random.Random) -> str:
    return rng.choice(["1", "-1", "0.5", "2", "3.25", "-0.75", "1e3", "-2.5", "7", "0.1"])


def _tiny(rng: random.Random) -> str:
    return rng.choice(["1e-2", "1e-3", "1e-4", "3e-5", "1e-6", "1e-8", "2 ** -9", "2 ** -12"])


def expand_templates(templates: list[str], rng: random.Random, per_template: int) -> list[str]:
    """Each template with ``per_template`` random fillings, deduplicated, in a stable order."""
    out: list[str] = []
    for t in templates:
        for _ in range(per_template if "{" in t else 1):
            i, j = rng.randrange(2), rng.randrange(3)
            lo = rng.choice(["-2", "-1", "0", "0.25"])
            s = t.format(c=_const(rng), nz=_nonzero(rng), eps=_tiny(rng), i=i, j=j, j1=j + 1, lo=lo,
                         hi=rng.choice(["0.5", "1", "2.5"]), k=rng.randrange(6), d=rng.randrange(3),
                         n=rng.randrange(1, 4), shape=rng.choice(["-1", "3, 2", "6, 1", "1, 6", "2, 3", "2, 1, 3"]))
            if s not in out:
                out.append(s)
    return out


# Rebind or write? Only statements whose in-place writes leave x naming x0 (same object, same storage),
# and rebinds to tensors with memory of their own.
REBIND_FIXED = [
    "x = x * 2", "x.mul_(2)", "x.clamp_(0, 1)", "x = torch.sigmoid(x)", "torch.sigmoid(x, out=x)",
    "x.copy_(x * 2)", "x[:, 1] = 0", "x = x.clone()", "x -= x.mean()",
    "x.index_fill_(0, torch.tensor([0], device=x.device), 5.)", "x = torch.where(x > 0, x, 0.)",
    "x[x < 0] = 0", "x = x.exp()", "x = 2 * x",
]
REBIND_TEMPLATES = [
    # writes
    "x += {c}", "x -= {c}", "x *= {c}", "x /= {nz}", "x.add_({c})", "x.sub_({c})", "x.mul_({c})", "x.div_({nz})",
    "x[{i}] = {c}", "x[{i}, {j}] = {c}", "x[:, {j}] = x[:, {j}] * {c}", "x[{i}] += {c}", "x[:, :{j1}] -= {c}",
    "x.clamp_({lo}, {hi})", "x.copy_(x * {c})", "x.fill_({c})", "x.zero_()", "x.sigmoid_()", "x.exp_()",
    "x.abs_()", "x.neg_()", "x.relu_()", "x.tanh_()", "x.pow_(2)", "torch.mul(x, {c}, out=x)",
    "torch.add(x, {c}, out=x)", "x = x.mul_({c})", "x = x.add_({c})", "x.masked_fill_(x > {c}, 0)",
    "x.index_fill_(1, torch.tensor([{j}], device=x.device), {c})", "x.addcmul_(x, x)",
    "x.lerp_(torch.zeros_like(x), 0.5)", "x[x > {c}] = {c}", "x.t_()", "x.unsqueeze_(0)", "x.resize_(3, 2)",
    "x.squeeze_()", "x.floor_()", "x[...] = {c}", "x[:] = x.flip(0)", "x.clamp_(min={lo})",
    "x.scatter_(1, torch.zeros(2, 1, dtype=torch.long, device=x.device), {c})",
    # rebinds to new memory
    "x = x + {c}", "x = x * {c}", "x = {c} * x", "x = x - x.mean()", "x = x.flip(0)", "x = x.relu()",
    "x = x.abs()", "x = torch.zeros_like(x)", "x = torch.cat([x, x])", "x = x.clamp({lo}, {hi})",
    "x = x[[1, 0]]", "x = x.pow(2)", "x = x @ x.T", "x = x.sum(0)", "x = -x", "x = x ** 2",
    "x = x.softmax(-1)", "x = x.cumsum(1)", "x = torch.stack([x, x])", "x = x.t().contiguous()",
    "x = x.new_ones(2, 3)", "x = x.detach().clone()", "x = x * 1", "x = x + 0", "x = x[:, [{j}]]",
    "x = x.repeat({n}, 1)", "x = torch.tensor(x.tolist(), dtype=x.dtype, device=x.device)",
]

# A new object on the same memory (and a few look-alikes that copy or hand back x itself). The byte view
# is int8, a dtype outside the course's vocabulary of drawn kinds: a label quoting the statement names no
# dtype the cell does not draw (its inputs are the dtypes of ``classify_configs``).
VIEW_FIXED = [
    "x = x.view(-1)", "x = x.T", "x = x[1:]", "x = x.detach()", "x = x.reshape(3, 2)", "x = x.unsqueeze(0)",
    "x = x[:, ::2]", "x = x.expand(4, 2, 3)", "x = x.view(-1)[2:]",
]
VIEW_TEMPLATES = [
    "x = x[{i}]", "x = x[:, {j}:]", "x = x[{i}:, :{j1}]", "x = x.view({shape})", "x = x.reshape({shape})",
    "x = x.mT", "x = x.t()", "x = x.transpose(0, 1)", "x = x.permute(1, 0)", "x = x.unsqueeze({d})",
    "x = x.expand({n}, 2, 3)", "x = x.narrow(1, {j}, 1)", "x = x.select(0, {i})", "x = x.diagonal()",
    "x = x.flatten()", "x = x.data", "x = x.unbind(0)[{i}]", "x = x.chunk(3, dim=1)[{j}]", "x = x.split(1)[{i}]",
    "x = x[..., None]", "x = x.view(torch.int8)", "x = torch.as_strided(x, (2, 2), (1, 1))", "x = x.t().t()",
    "x = x.squeeze()", "x = x[:0]", "x = x.movedim(1, 0)", "x = x.unflatten(1, (3, 1))", "x = x.view_as(x)",
    "x = x.view(-1)[{k}:]", "x = x.unfold(1, 2, 1)", "x = x.swapaxes(0, 1)", "x = x.as_strided((3,), (2,))",
    "x = x[{i}, {j}]", "x = x.detach().view(-1)", "y = x; x = y[:]",
    # look-alikes
    "x = x.t().reshape(6)", "x = x.flip(1)", "x = x[[0, 1]]", "x = x.real", "x = x.contiguous()",
    "x = x.view(-1).clone()", "x = x.T.contiguous()",
]

# Nothing happened to x0, and x still names it (and look-alikes whose answer depends on dtype or device).
NO_CHANGE_FIXED = [
    "x = x.to(x.dtype)", "x = x.to(x.device)", "y = x + 1", "y = x.view(-1)", "x = x.requires_grad_(False)",
    "pass", "x = x.float() if x.dtype == torch.float32 else x",
]
NO_CHANGE_TEMPLATES = [
    "x = x.type(x.dtype)", "x = torch.as_tensor(x)", "x = torch.asarray(x)", "x = x.detach_()", "x = x.real",
    "x.resize_(2, 3)", "x = [x][0]", "x = (lambda t: t)(x)", "x, y = x, x + {c}", "x.data *= 1",
    "x.data.copy_(x.data)", "x.data.add_(0)", "x.data.t_()", "x.data.unsqueeze_(0)", "x.data.resize_(6)",
    "x.requires_grad_()", "x = x.requires_grad_()", "y = x.clone(); y += {c}", "y = x.detach(); y = y + {c}",
    "x.data.set_(x.data.clone())", "x.grad = None", "x = x.to(dtype=x.dtype, device=x.device)",
    "x = x.contiguous().contiguous()", "x = x.clone() if False else x", "z = x[{i}] * {c}",
    "x.untyped_storage().copy_(x.clone().untyped_storage())", "x = x.cpu() if x.is_cpu else x",
    # depends on dtype / device: no-change in one configuration, a new tensor or a view in others
    "x = x.half()", "x = x.to(torch.float16)", "x = x.bfloat16()", "x = x.double()", "x = x.float()",
    "x = x.cpu()", "x = x.to('cpu')", "x = x.to(torch.float64).to(x.dtype)", "x = x.type(torch.float32)",
    # look-alikes
    "x = x.reshape(x.shape)", "x = x.view(-1).view(2, 3)", "x = x.view(2, 3)", "x = x.clone().contiguous()",
]

# Written behind autograd's back (values big and tiny, shape, storage moves with equal values, dtype-dependent
# no-ops) or written with autograd told though nothing changed, through another object, or before a rebind.
UNTRACKED_FIXED = [
    "x.data.mul_(2)", "x.data[0] = x.data[0] + 1", "x.data = x.data + 1", "x.data.clamp_(0, 1)",
    "x.clamp_(-100, 100)", "x.detach()[1] = 0", "x.data.add_(1); x = x + 1", "y = x[0]; y += 1",
    "x.data.sub_(x.data)",
]
UNTRACKED_TEMPLATES = [
    "x.data += {nz}", "x.data.mul_({nz})", "x.data[{i}] = x.data[{i}] + {nz}", "x.data = x.data + {nz}",
    "x.data.zero_()", "x.data.masked_fill_(x > {c}, 0)", "x.data.add_({nz}); x = x * {c}", "x.data.exp_()",
    "x.data[{i}, {j}] = {c}", "x.untyped_storage().fill_(0)", "x.data.neg_(); x = x[:]",
    # tiny changes: lost in half precision, not in float32 / float64
    "x.data += {eps}", "x.data.mul_(1 + {eps})", "x.data[{i}, {j}] += {eps}", "x.data.sub_({eps})",
    # shape changes, storage untouched
    "x.data = x.data.view(3, 2)", "x.data = x.data.t()", "x.data = x.data.reshape(-1)", "x.data = x.data[:1]",
    "x.data = x.data.unsqueeze(0)", "x.data = x.data[:, :{j1}]",
    # storage moves, values equal
    "x.data = x.data.clone()", "x.data = x.data * 1", "x.data = torch.tensor(x.tolist(), dtype=x.dtype, device=x.device)",
    "x.data = x.data.contiguous().clone()",
    # dtype-dependent: a no-op in one dtype
    "x.data = x.data.half()", "x.data = x.data.to(torch.float64)", "x.data = x.data.float()",
    # the version moved though nothing changed, or through another object, or before a rebind
    "x *= 1", "x.add_(0)", "x.copy_(x)", "x[:] = x.clone()", "x.mul_(1); x = x + 1", "x.add_({c}); x = x[:]",
    "x = x.add_({c})[:]", "x.set_(x.clone())", "x.resize_(6)", "x.squeeze_()", "x.detach().t_()",
    "x.detach().zero_()", "y = x.view(-1); y.mul_({c})", "y = x[{i}]; y += {c}", "x.detach()[{i}] = {c}",
    "x.masked_fill_(x > 100, 0)", "x.nan_to_num_()", "x.clamp_(min=-1e4)", "x.abs_().neg_().neg_()",
    "x.index_add_(0, torch.tensor([0], device=x.device), torch.zeros(1, 3, device=x.device, dtype=x.dtype))",
    "y = x.detach(); y.mul_({c}); x = y.clone()", "x[0] = x[0]",
    "x.unsqueeze_(0); x = x.squeeze(0)",
]


def classify_configs() -> list[tuple[str, str]]:
    """Every (device, dtype) of ``test_configs()`` and, on the CPU, float16 and bfloat16 too, as names."""
    return [(str(d), str(t).replace("torch.", "")) for d, t in configs_with_half_on_cpu()]


def statement_case(statement: str, device: str | None, dtype: str | None) -> dict:
    if device is None:
        label = f"classify_update({statement!r})  (device and dtype left to their defaults)"
    else:
        label = f"classify_update({statement!r}, device={device!r}, dtype=torch.{dtype})"
    return {"statement": statement, "device": device, "dtype": dtype, "label": label}


def model_case(device, dtype: str, seed: int, n: int = 5, scale: float = 1.0, upstream: str = "ramp",
                saved_writes: bool = False) -> dict:
    x, w = (t.detach() for t in model_inputs("cpu", torch.float64, n=n, seed=seed))
    x = x * scale
    if upstream == "ones":
        up = torch.ones(n, 4, dtype=torch.float64)
    else:
        up = torch.linspace(-1, 1, n * 4, dtype=torch.float64).reshape(n, 4)
    extra = f", x scaled by {scale:g}" if scale != 1 else ""
    where = ("on the 'meta' device (no values: it stands in for a GPU, so a tensor made on the CPU "
             "does not fit)" if str(device) == "meta" else f"on {device}")
    return {"x": x, "w": w, "device": str(device), "dtype": dtype, "upstream": up, "saved_writes": saved_writes,
            "label": f"x ({n}, 3), w (3, 4), {dtype} {where}, seed {seed}{extra}"}


def meta_case(dtype: str = "float32", seed: int = 10) -> dict:
    """The forward pass with ``x`` and ``w`` on the ``meta`` device: the CPU grader's stand-in for a GPU.
    Like CUDA, ``meta`` accepts Python numbers and 0-dim CPU tensors next to its tensors, and refuses any
    other CPU tensor; it holds no values, so only the devices are judged (values: the other cases)."""
    return model_case("meta", dtype, seed=seed, upstream="ones")
