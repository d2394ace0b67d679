"""Assignment 3's inputs: level shapes and heads drawn from the task's input space, the attack's
held-out images and budget, and the builders that turn them into cases (plain data: CPU tensors plus
device and dtype names)."""
from __future__ import annotations

import torch

from autograder.runtime import test_configs
from autograder.yolo import LegacyDetect, make_grid

# =========================================================================== inputs

# Level shapes (bs, na, ny, nx, nc, stride): batch 1-4, nc 1-80, non-square maps. ``stride`` is a
# number or, like ``head.stride[i]``, a 0-dim float32 CPU tensor ("tensor32").
DECODE_CASES = (
    dict(bs=1, na=3, ny=4, nx=4, nc=1, stride=8.0),
    dict(bs=2, na=3, ny=3, nx=5, nc=80, stride=16.0),
    dict(bs=4, na=2, ny=6, nx=2, nc=3, stride="tensor32"),
    dict(bs=3, na=1, ny=1, nx=7, nc=20, stride=4.0),
)
# Heads with 1, 2 and 3 levels: (nc, anchors, ch, feature-map sizes (ny, nx), strides).
HEAD_CASES = (
    dict(nc=3, anchors=((9, 9, 12, 12, 15, 15),), ch=(4,), sizes=((3, 5),), strides=(8.0,)),
    dict(nc=1, anchors=((10, 13, 16, 30, 33, 23),), ch=(4,), sizes=((3, 5),), strides=(8.0,)),
    dict(nc=3, anchors=((9, 9, 12, 12, 15, 15), (18, 18, 22, 22, 27, 27)), ch=(6, 5),
         sizes=((4, 6), (2, 3)), strides=(8.0, 16.0)),
    dict(nc=80, anchors=((10, 13, 16, 30), (30, 61, 62, 45), (116, 90, 156, 198)), ch=(3, 4, 5),
         sizes=((6, 4), (3, 2), (2, 1)), strides=(8.0, 16.0, 32.0)),
)
# The attack: held-out images from a seed the notebook never uses (the notebook uses 3, training 0,
# detector.EVAL_SEED is for detector quality), a budget of 16/255 and 10 steps.
ATTACK_SEED = 31337
ATTACK_N = 4
ATTACK_EPS = 16 / 255
ATTACK_STEPS = 10
ATTACK_MARGIN = 0.03  # required drop of the mean best objectness (a plain PGD gets 0.04-0.35)


def dtype_name(dtype) -> str:
    return str(dtype).replace("torch.", "")


def decode_case(bs=2, na=3, ny=4, nx=5, nc=3, stride=8.0, *, dtype=torch.float32, device="cpu",
                anchor_dtype=torch.float32, requires_grad=False, seed=0):
    """Inputs ``(p, grid, anchor_grid, stride)`` of ``decode`` on one level.

    ``grid`` is float32 whatever ``dtype`` (as in release 5.0, where ``_make_grid`` ignores the
    model's dtype), ``anchor_grid`` has ``anchor_dtype``; ``p`` holds moderate logits so every
    column matters (within +-4, +-3 in float16: beyond that sigmoid saturates and its derivative,
    computed from a rounded output, loses most of its digits in half precision for every answer).
    """
    gen = torch.Generator().manual_seed(seed)
    bound = 3.0 if dtype in (torch.float16, torch.bfloat16) else 4.0
    p = (torch.randn(bs, na, ny, nx, nc + 5, generator=gen, dtype=torch.float64) * 1.5).clamp(-bound, bound)
    p = p.to(device, dtype)
    if requires_grad:
        p.requires_grad_(True)
    grid = make_grid(nx, ny).to(device)
    anchor_grid = (5 + 40 * torch.rand(1, na, 1, 1, 2, generator=gen)).to(device, anchor_dtype)
    if stride == "tensor32":
        stride = torch.tensor(16.0)  # a 0-dim CPU tensor, like LegacyDetect.stride[i]
    return p, grid, anchor_grid, stride


def _describe_case(p, stride) -> str:
    bs, na, ny, nx, no = p.shape
    s = f"tensor({float(stride):g})" if isinstance(stride, torch.Tensor) else f"{stride:g}"
    return (f"p {dtype_name(p.dtype)} (bs={bs}, na={na}, ny={ny}, nx={nx}, no={no}, i.e. nc={no - 5}) "
            f"on {p.device}, stride {s}")


def decode_data_case(shape: dict, dtype, device, anchor_dtype, seed, weights=False) -> dict:
    """One decode case as plain data: CPU tensors plus device / dtype strings."""
    p, grid, ag, stride = decode_case(**shape, dtype=dtype, anchor_dtype=anchor_dtype, seed=seed)
    case = {"p": p, "grid": grid, "anchor_grid": ag, "stride": stride, "device": str(device),
            "label": _describe_case(p, stride).replace(" on cpu", f" on {torch.device(device).type}")
            + f", anchor_grid {dtype_name(anchor_dtype)}"}
    if weights:
        case["w"] = torch.randn(p.shape, generator=torch.Generator().manual_seed(seed + 5), dtype=torch.float64)
    return case


def random_shapes(seed: int, n: int) -> list[dict]:
    """Level shapes drawn from the task's input space: bs 1-4, na 1-4, maps 1-8, nc 1-80."""
    g = torch.Generator().manual_seed(seed)

    def pick(lo, hi):
        return int(torch.randint(lo, hi + 1, (1,), generator=g))

    strides = (4.0, 8.0, 16.0, 32.0, 64.0, 8, 32, "tensor32")
    out = []
    for _ in range(n):
        nc = (1, 2, 3, 7, 20, 42, 80)[pick(0, 6)]
        out.append(dict(bs=pick(1, 4), na=pick(1, 4), ny=pick(1, 8), nx=pick(1, 8), nc=nc,
                        stride=strides[pick(0, len(strides) - 1)]))
    return out


def case_configs():
    """(device, dtype) pairs: float64 / float32 / float16 on the CPU; float32 / float16 on a GPU grader."""
    configs = list(test_configs()) + [(torch.device("cpu"), torch.float16)]
    return configs


def decode_cases(seed: int, base: tuple, n_random: int, weights: bool, visible: dict | None) -> list[dict]:
    cases = []
    if visible is not None:
        cases.append(decode_data_case(weights=weights, **visible))
    configs = case_configs()
    for device, dtype in configs:
        for k, shape in enumerate(base):
            cases.append(decode_data_case(shape, dtype, device, torch.float32 if k % 2 else dtype,
                                           seed=seed + k, weights=weights))
    for j, shape in enumerate(random_shapes(seed + 1000, n_random)):
        device, dtype = configs[j % len(configs)]
        cases.append(decode_data_case(shape, dtype, device, torch.float32 if j % 2 else dtype,
                                       seed=seed + 500 + j, weights=weights))
    return cases


META_NOTE = ("the `meta` device (shapes and devices only, no values: it stands in for a GPU, "
             "where a tensor made on the CPU cannot be mixed in)")
        # Clean, and a plain backward agrees (it ran, or there is no graph to run it on). A wrong
        # gradient without an error is a write hidden from autograd: the gradients check rejects it.


# =========================================================================== heads (FixedDetect)

def head_case(shape: dict, dtype, device, seed: int, bs: int, sizes2=None, bs2=None) -> dict:
    """Plain data for one head: the legacy state dict, features for each call, gradient weights."""
    torch.manual_seed(seed)
    args = dict(nc=shape["nc"], anchors=tuple(tuple(a) for a in shape["anchors"]), ch=tuple(shape["ch"]))
    legacy = LegacyDetect(**args)
    gen = torch.Generator().manual_seed(seed + 100)

    def feats(sizes, n):
        return [torch.randn(n, c, ny, nx, generator=gen, dtype=torch.float64).to(dtype)
                for c, (ny, nx) in zip(args["ch"], sizes)]

    sizes2 = sizes2 or tuple((ny + 1, max(1, nx - 1)) for ny, nx in shape["sizes"])
    calls = [feats(shape["sizes"], bs), feats(sizes2, bs2 or bs), feats(shape["sizes"], bs)]
    grad_feats = feats(shape["sizes"], bs)
    na, no = len(args["anchors"][0]) // 2, args["nc"] + 5
    n = sum(na * ny * nx for ny, nx in shape["sizes"])
    levels = "; ".join(f"{c} ch {ny}x{nx}" for c, (ny, nx) in zip(args["ch"], shape["sizes"]))
    other = ", ".join(f"{ny}x{nx}" for ny, nx in sizes2)
    return {"kind": "head", **args, "strides": tuple(float(s) for s in shape["strides"]),
            "state": {k: v.clone() for k, v in legacy.state_dict().items()},
            "calls": calls, "grad_feats": grad_feats,
            "w": torch.randn(bs, n, no, generator=gen, dtype=torch.float64),
            "device": str(device), "dtype": dtype_name(dtype),
            "label": (f"FixedDetect(nc={args['nc']}, {len(args['ch'])} level(s), na={na}) {dtype_name(dtype)} on "
                      f"{torch.device(device).type}: the same head called at batch {bs}, levels {levels}; then at "
                      f"batch {bs2 or bs}, sizes {other}; then at the first sizes again")}


def meta_head_case(shape: dict, dtype, seed: int, bs: int, cpu_first: bool) -> dict:
    """A head run on the ``meta`` device (shapes only), optionally after a first call on the CPU."""
    case = head_case(shape, dtype, "cpu", seed, bs)
    sizes = "; ".join(f"{ny}x{nx}" for ny, nx in shape["sizes"])
    other = ", ".join(f"{ny}x{nx}" for ny, nx in
                      (tuple(f.shape[2:]) for f in case["calls"][1]))
    first = (f"called once on the CPU at sizes {sizes}, then moved with head.to(device) and called on "
             if cpu_first else "called on ")
    case.update(kind="meta_head", cpu_first=cpu_first, device="meta",
                label=(f"FixedDetect(nc={case['nc']}, {len(case['ch'])} level(s)) {dtype_name(dtype)}: the same head "
                       f"{first}{META_NOTE} at sizes {sizes}, then {other}, then in training and export mode"))
    for k in ("grad_feats", "w"):
        case.pop(k)
    return case


def random_heads(seed: int, n: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)

    def pick(lo, hi):
        return int(torch.randint(lo, hi + 1, (1,), generator=g))

    out = []
    for _ in range(n):
        nl, na = pick(1, 3), pick(1, 4)
        anchors = tuple(tuple(pick(4, 160) for _ in range(2 * na)) for _ in range(nl))
        out.append(dict(nc=(1, 2, 3, 20, 80)[pick(0, 4)], anchors=anchors,
                        ch=tuple(pick(1, 8) for _ in range(nl)),
                        sizes=tuple((pick(1, 7), pick(1, 7)) for _ in range(nl)),
                        strides=tuple(float(2 ** (pick(2, 3) + i)) for i in range(nl))))
    return out
