"""Assignment 3 (``03_yolo_head``): hidden checks (probes and judges) and the references they use.

Nothing here is visible to students: the out-of-place decode (:func:`reference_decode`, the answer
of ``decode``), :class:`ReferenceFixedDetect` (the answer of ``FixedDetect``), :func:`pgd_attack`
and :func:`vanish_attack` (answers of ``attack``), the wrong "fixes" (:data:`SILENT_FIXES`) and the
checks.

What each check catches
-----------------------
``decode_matches_legacy_tests``  values equal the release-5.0 decode under ``no_grad``: missing
    ``- 0.5``, no square in the width/height, dropped class columns, a wrong stride or anchor factor.
``decode_contract_tests``  same shape, dtype and device as ``p``; float16 stays float16 (``torch.cat``
    promotes mixed dtypes); ``p`` is left unchanged; no tensor made on the CPU when ``p`` is on a GPU.
``decode_gradients_tests``  gradients reach ``p`` and equal autograd of the out-of-place formula in
    float64: catches ``no_grad``, ``.detach()``, ``.data`` writes, identity saved-tensor hooks and
    writes left in place.
``decode_no_inplace_on_saved_tests``  no write on a tensor autograd saved, seen at the dispatch level
    by :mod:`autograder.inplace`, and confirmed by a plain backward run outside the locator.
``fixed_detect_tests``  a drop-in head: subclass of ``LegacyDetect``, strict state-dict load, same
    outputs as the legacy head for 1-3 levels in eval / training / export mode and over repeated
    calls at other sizes, right gradients to the features and, in the pretrained detector, to the image.
``attack_tests``  budget (L-inf), image range, image and weights untouched, and a drop of the best
    objectness on held-out images, measured here with the grader's own model.
"""
from __future__ import annotations

import torch

from autograder.checks import check_tensor, check_true, describe, fail, tolerances
from autograder.runtime import test_configs
from autograder.yolo import LegacyDetect, legacy_decode, make_grid

from . import Check

ASSIGNMENT = "03_yolo_head"

__all__ = [
    "reference_decode", "decode_reference", "ReferenceFixedDetect", "pgd_attack", "vanish_attack",
    "SILENT_FIXES", "compare_silent_fixes", "decode_case", "DECODE_CASES", "HEAD_CASES",
    "ATTACK_SEED", "ATTACK_N", "ATTACK_EPS", "ATTACK_STEPS", "ATTACK_MARGIN",
    "DecodeMatchesLegacy", "DecodeContract", "DecodeGradients", "DecodeNoInplace", "FixedDetectCheck",
    "AttackCheck",
]

# =========================================================================== references

def reference_decode(p, grid, anchor_grid_level, stride_level):
    """Out-of-place version of :func:`autograder.yolo.legacy_decode` (same values, differentiable).

    The result has ``p``'s dtype and device even when ``grid`` / ``anchor_grid_level`` are float32
    (e.g. a float16 ``p``): the arithmetic uses the usual type promotion, exactly like the legacy
    assignment into ``y``, and is then cast back to ``p.dtype``.
    """
    grid = grid.to(p.device)
    anchor_grid_level = anchor_grid_level.to(p.device)
    if isinstance(stride_level, torch.Tensor) and stride_level.dim() > 0:
        stride_level = stride_level.to(p.device)
    s = p.sigmoid()
    xy = ((s[..., 0:2] * 2. - 0.5 + grid) * stride_level).to(p.dtype)
    wh = ((s[..., 2:4] * 2) ** 2 * anchor_grid_level).to(p.dtype)
    return torch.cat((xy, wh, s[..., 4:]), dim=-1)


def decode_reference(p, grid, anchor_grid, stride):
    """The decode's truth in float64: values and (through autograd) gradients."""
    s = stride.double() if isinstance(stride, torch.Tensor) else float(stride)
    return reference_decode(p.double(), grid.double(), anchor_grid.double(), s)


class ReferenceFixedDetect(LegacyDetect):
    """The course's drop-in head: LegacyDetect with the out-of-place decode."""

    def forward(self, x):
        z = []
        raw_only = self.training or self.export
        for i in range(self.nl):
            x[i] = self.m[i](x[i])
            bs, _, ny, nx = x[i].shape
            x[i] = x[i].view(bs, self.na, self.no, ny, nx).permute(0, 1, 3, 4, 2).contiguous()
            if not raw_only:
                if self.grid[i].shape[2:4] != x[i].shape[2:4] or self.grid[i].device != x[i].device:
                    self.grid[i] = self._make_grid(nx, ny).to(x[i].device)
                y = reference_decode(x[i], self.grid[i], self.anchor_grid[i], self.stride[i])
                z.append(y.view(bs, -1, self.no))
        return x if raw_only else (torch.cat(z, 1), x)


def pgd_attack(model, image, eps, steps, step_size=None, progress=False):
    """Reference PGD on the best objectness (sign gradients, L-inf ball, image range)."""
    from autograder.detector import best_objectness

    step_size = 2.5 * eps / steps if step_size is None else step_size
    delta = torch.zeros_like(image)
    it = range(steps)
    if progress:
        from tqdm.auto import tqdm
        it = tqdm(it, desc="PGD", leave=False)
    for _ in it:
        delta.requires_grad_(True)
        (g,) = torch.autograd.grad(best_objectness(model, image + delta).sum(), delta)
        delta = (delta.detach() - step_size * g.sign()).clamp(-eps, eps)
        delta = (image + delta).clamp(0, 1) - image
    return delta.detach()


def vanish_attack(model, images, eps, steps, threshold=0.25, progress=False):
    """PGD that pushes down *every* objectness above ``threshold``, not just the best one.

    Returns ``(delta, history)``: history holds the number of detections (conf 0.5) before the first
    step and after each step.
    """
    from autograder.detector import detect

    step = 2.5 * eps / steps
    delta = torch.zeros_like(images)
    with torch.no_grad():
        history = [sum(len(d) for d in detect(model, images))]
    it = range(steps)
    if progress:
        from tqdm.auto import tqdm
        it = tqdm(it, desc="PGD, all boxes", leave=False)
    for _ in it:
        delta.requires_grad_(True)
        raw = model.raw_outputs(images + delta)
        obj = torch.cat([level[..., 4].flatten(1) for level in raw], 1).sigmoid()
        (g,) = torch.autograd.grad((obj * (obj > threshold)).sum(), delta)
        delta = (delta.detach() - step * g.sign()).clamp(-eps, eps)
        delta = (images + delta).clamp(0, 1) - images
        with torch.no_grad():
            history.append(sum(len(d) for d in detect(model, images + delta)))
    return delta.detach(), history


def reference_attack_model(device="cpu"):
    """The pretrained detector with the reference head, frozen, eval mode."""
    from autograder.detector import load_pretrained

    model = load_pretrained(device).with_head(ReferenceFixedDetect).eval()
    for prm in model.parameters():
        prm.requires_grad_(False)
    return model


# --------------------------------------------------------------------------- silent fixes

def _decode_no_grad(p, grid, anchor_grid, stride):
    with torch.no_grad():
        return legacy_decode(p, grid, anchor_grid, stride)


def _decode_detach(p, grid, anchor_grid, stride):
    return legacy_decode(p.detach(), grid, anchor_grid, stride)


def _decode_data(p, grid, anchor_grid, stride):
    y = p.sigmoid()
    y.data[..., 0:2] = (y[..., 0:2] * 2 - 0.5 + grid) * stride
    y.data[..., 2:4] = (y[..., 2:4] * 2) ** 2 * anchor_grid
    return y


def _decode_hooks(p, grid, anchor_grid, stride):
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        return legacy_decode(p, grid, anchor_grid, stride)


SILENT_FIXES = {"torch.no_grad()": _decode_no_grad, ".detach()": _decode_detach,
                ".data writes": _decode_data, "identity saved-tensor hooks": _decode_hooks}


def compare_silent_fixes(seed=0, fixes=None):
    """Run each 'fix' of the legacy decode; rows (fix, error, d obj/dp, d box/dp): right/WRONG/none/error."""
    rows = []
    for name, fn in (fixes or SILENT_FIXES).items():
        p, grid, ag, stride = decode_case(1, 3, 4, 4, 2, 8.0, dtype=torch.float64, requires_grad=True, seed=seed)
        y = fn(p, grid, ag, stride)
        ref = decode_reference(p, grid, ag, stride)
        row = {"fix": name, "error": "", "obj_grad": "", "box_grad": ""}
        for key, cols in (("obj_grad", slice(4, 5)), ("box_grad", slice(0, 4))):
            (g_ref,) = torch.autograd.grad(ref[..., cols].sum(), p, retain_graph=True)
            if not y.requires_grad:
                row[key] = "none"
                continue
            try:
                (g,) = torch.autograd.grad(y[..., cols].sum(), p, retain_graph=True)
                row[key] = "right" if torch.allclose(g, g_ref) else "WRONG"
            except RuntimeError as err:
                row["error"] = type(err).__name__
                row[key] = "error"
        rows.append(row)
    return rows


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

_DT = {"float64": torch.float64, "float32": torch.float32, "float16": torch.float16}


def _dname(dtype) -> str:
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
    return (f"p {_dname(p.dtype)} (bs={bs}, na={na}, ny={ny}, nx={nx}, no={no}, i.e. nc={no - 5}) "
            f"on {p.device}, stride {s}")


def _decode_data_case(shape: dict, dtype, device, anchor_dtype, seed, weights=False) -> dict:
    """One decode case as plain data: CPU tensors plus device / dtype strings."""
    p, grid, ag, stride = decode_case(**shape, dtype=dtype, anchor_dtype=anchor_dtype, seed=seed)
    case = {"p": p, "grid": grid, "anchor_grid": ag, "stride": stride, "device": str(device),
            "label": _describe_case(p, stride).replace(" on cpu", f" on {torch.device(device).type}")
            + f", anchor_grid {_dname(anchor_dtype)}"}
    if weights:
        case["w"] = torch.randn(p.shape, generator=torch.Generator().manual_seed(seed + 5), dtype=torch.float64)
    return case


def _random_shapes(seed: int, n: int) -> list[dict]:
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


def _configs():
    """(device, dtype) pairs: float64 / float32 / float16 on the CPU; float32 / float16 on a GPU grader."""
    configs = list(test_configs()) + [(torch.device("cpu"), torch.float16)]
    return configs


def _decode_cases(seed: int, base: tuple, n_random: int, weights: bool, visible: dict | None) -> list[dict]:
    cases = []
    if visible is not None:
        cases.append(_decode_data_case(weights=weights, **visible))
    configs = _configs()
    for device, dtype in configs:
        for k, shape in enumerate(base):
            cases.append(_decode_data_case(shape, dtype, device, torch.float32 if k % 2 else dtype,
                                           seed=seed + k, weights=weights))
    for j, shape in enumerate(_random_shapes(seed + 1000, n_random)):
        device, dtype = configs[j % len(configs)]
        cases.append(_decode_data_case(shape, dtype, device, torch.float32 if j % 2 else dtype,
                                       seed=seed + 500 + j, weights=weights))
    return cases


def _inputs(case):
    """The case's decode inputs on its device (grader side; the probes have their own copy)."""
    dev = torch.device(case["device"])
    return case["p"].to(dev), case["grid"].to(dev), case["anchor_grid"].to(dev), case["stride"]


# =========================================================================== probe helpers
# (their source is shipped into the sandbox: self-contained, torch / math / autograder only)

def _probe_inputs(case):
    dev = torch.device(case["device"])
    return case["p"].to(dev), case["grid"].to(dev), case["anchor_grid"].to(dev), case["stride"]


def _probe_call(fn, *args):
    """(True, result) or (False, {"type", "message"}); 'not implemented yet' is raised as such."""
    try:
        return True, fn(*args)
    except NotImplementedError:
        raise
    except Exception as err:  # noqa: BLE001 - the judge turns it into a message
        return False, {"type": type(err).__name__, "message": str(err)[:1500]}


# =========================================================================== judge helpers

def _raised(err: dict, what: str, where: str, fn: str = "decode"):
    text = err.get("message", "")
    if "same device" in text or "Expected all tensors to be on" in text or "not on the expected device" in text:
        line = next((l for l in text.splitlines() if "device" in l and "try next" not in l), "")
        fail(f"{fn} mixes devices", inputs=where, detail=line.strip()[:300],
             hint="a tensor made inside decode lives on the CPU while p is on the GPU: create it with "
                  "device=p.device (or derive it from p: torch.zeros_like, p.new_tensor), or avoid new "
                  "tensors: plain numbers broadcast on any device.")
    fail(f"{what} raised {err.get('type', 'an error')}", inputs=where, detail=text[:800],
         hint="run it yourself on an input like the one above and read the traceback.")


_DEVICE_MIX = ("is not on the expected device", "Expected all tensors to be on the same device",
               "to be on the same device", "found at least two devices")


def _is_device_mix(text: str) -> bool:
    return any(m in text for m in _DEVICE_MIX)


def _fail_cpu_tensor(fn: str, where: str, text: str, hint: str):
    """The message of a meta-device case that met a tensor on the CPU."""
    line = next((l for l in text.splitlines() if "device" in l and "try next" not in l), text)
    fail(f"{fn}: your code creates a tensor on the CPU while its input is on another device; on a GPU "
         f"this fails — {hint}", inputs=where, detail=line.strip()[:300],
         hint="make new tensors on the input's device (device=p.device, torch.zeros_like, p.new_tensor, "
              ".to(x.device)), or use plain Python numbers: they (and 0-dim tensors) mix with any device.")


META_NOTE = ("the `meta` device (shapes and devices only, no values: it stands in for a GPU, "
             "where a tensor made on the CPU cannot be mixed in)")


def _check_shape(y, p, where, what):
    check_tensor(y, what, hint="decode must return the decoded tensor.")
    if tuple(y.shape) != tuple(p.shape):
        hint = "keep every dimension of p."
        if y.dim() == p.dim() and y.shape[:-1] == p.shape[:-1] and y.shape[-1] < p.shape[-1]:
            hint = (f"the last dimension must stay no = nc + 5 = {p.shape[-1]}: x, y, w, h, objectness and "
                    f"every class score. Join the rest too: torch.cat((xy, wh, s[..., 4:]), -1).")
        fail(f"{what} has the wrong shape (dropped columns?)", inputs=where,
             expected=str(tuple(p.shape)), got=str(tuple(y.shape)), hint=hint)


def _diagnose_values(got, expected, p, anchor_grid, stride, where, what):
    """Name the first column group that is wrong, with the most likely mistake."""
    tol = tolerances(p.dtype)
    g, e = got.detach().to(expected.device, torch.float64), expected.detach().double()
    s = p.detach().double().sigmoid()
    st = float(stride)
    ag = anchor_grid.double()
    for cols, name in ((slice(0, 2), "x, y (columns 0:2)"), (slice(2, 4), "w, h (columns 2:4)"),
                       (slice(4, None), "objectness and classes (columns 4:)")):
        if torch.allclose(g[..., cols], e[..., cols], **tol):
            continue
        if cols.start == 0:
            if torch.allclose(g[..., cols] - 0.5 * st, e[..., cols], **tol):
                hint = "every centre is off by +0.5 * stride: the formula is (2*s - 0.5 + grid) * stride (the - 0.5)."
            elif torch.allclose(g[..., cols] * st, e[..., cols], **tol):
                hint = "centres are in grid cells, not pixels: multiply by stride."
            else:
                hint = "centre: (2 * sigmoid(p[..., 0:2]) - 0.5 + grid) * stride."
        elif cols.start == 2:
            if torch.allclose(g[..., cols], 2 * s[..., 2:4] * ag, **tol):
                hint = "sizes are 2*s*anchor: the formula squares it, (2*s)**2 * anchor_grid."
            elif torch.allclose(g[..., cols], (2 * s[..., 2:4]) ** 2, **tol):
                hint = "sizes miss the anchor factor: (2*s)**2 * anchor_grid."
            else:
                hint = "size: (2 * sigmoid(p[..., 2:4])) ** 2 * anchor_grid."
        else:
            hint = "columns 4 onwards are sigmoid(p[..., 4:]) unchanged: objectness, then one score per class."
        diff = (g[..., cols] - e[..., cols]).abs().nan_to_num(float("inf"))
        k = int(diff.argmax())
        idx = tuple(int(i) for i in torch.unravel_index(torch.tensor(k), diff.shape))
        fail(f"{what}: wrong values in {name}", inputs=where,
             expected=f"{float(e[..., cols].flatten()[k]):.6g} at index {idx} of those columns",
             got=f"{float(g[..., cols].flatten()[k]):.6g}", hint=hint)


def _grad_reference(case):
    """d(sum(w * decode(p)))/dp by autograd of the out-of-place formula, float64, on the CPU."""
    p, grid, ag, stride = case["p"], case["grid"], case["anchor_grid"], case["stride"]
    p64 = p.double().requires_grad_(True)
    (g,) = torch.autograd.grad((decode_reference(p64, grid, ag, stride) * case["w"]).sum(), p64)
    return g


def describe_grad(r: dict) -> str:
    return f"requires_grad={r.get('requires_grad')}, grad_fn={r.get('grad_fn')}"


# =========================================================================== checks: decode

class DecodeMatchesLegacy(Check):
    """``decode(p, grid, anchor_grid, stride)`` values, under ``no_grad``, against ``legacy_decode``.

    Input space: ``p`` of shape (bs, na, ny, nx, nc + 5) with bs 1-4, na 1-4, ny and nx 1-8 (square
    or not), nc 1-80; dtype float64, float32 or float16 on the CPU, and float32 / float16 on CUDA on
    a GPU grader; ``grid`` (1, 1, ny, nx, 2) float32 (whatever p's dtype, as in release 5.0);
    ``anchor_grid`` (1, na, 1, 1, 2) in pixels, float32 or p's dtype; ``stride`` a float, an int, or
    a 0-dim float32 CPU tensor (like ``head.stride[i]``, even when p is on the GPU). Only the values
    are judged here (dtype and device belong to the contract check).
    """
    assignment, grade_id, function = ASSIGNMENT, "decode_matches_legacy_tests", "decode"
    draws = ("float64", "float32", "float16", "GPU", "0-dim")
    probe_helpers = (_probe_inputs, _probe_call)

    def cases(self):
        visible = dict(shape=DECODE_CASES[0], dtype=torch.float32, device=test_configs()[-1][0],
                       anchor_dtype=torch.float32, seed=0)
        return _decode_cases(0, DECODE_CASES, 8, False, visible)

    @staticmethod
    def probe(ns, case):
        decode = student(ns, "decode")
        p, grid, ag, stride = _probe_inputs(case)
        with torch.no_grad():
            ok, y = _probe_call(decode, p.clone(), grid, ag, stride)
        return {"y": y} if ok else {"raised": y}

    def judge(self, case, r):
        p, grid, ag, stride = _inputs(case)
        where = case["label"]
        if "raised" in r:
            _raised(r["raised"], "decode(p, ...)", where)
        with torch.no_grad():
            expected = legacy_decode(p.clone(), grid, ag, stride)
        _check_shape(r["y"], p, where, "decode(p, ...)")
        _diagnose_values(r["y"], expected, p, ag, stride, where, "decode(p, ...) differs from the legacy decode")


class DecodeContract(Check):
    """``decode``'s contract: a new tensor of ``p``'s shape, dtype and device; ``p`` unchanged.

    Input space: as for the values (bs 1-4, na 1-4, maps 1-8, nc 1-80, stride number or 0-dim
    tensor), with p float16, float32 or float64 and anchor_grid float32 or p's dtype (the float16 +
    float32 mix is the one that promotes); on the CPU, and on CUDA on a GPU grader (where a tensor
    made on the CPU inside decode shows). A CPU-only grader also runs decode on the ``meta`` device
    (p, grid and anchor_grid there; stride a number, or a 0-dim float32 CPU tensor, which any device
    accepts, as CUDA does): a tensor made on the CPU inside decode (``torch.zeros(...)``,
    ``torch.tensor([...])``, ``make_grid(...)`` without ``device=``) meets p there and raises the
    device mismatch a GPU would raise. Only that mismatch fails a meta case; what meta cannot run
    (reading values: ``.item()``, ``.cpu()``, ``.tolist()``, copying into a tensor made on the CPU)
    is not judged there. Still GPU-only: a result left on the CPU by copying into a CPU tensor, a
    round trip through the CPU, and anything that only CUDA kernels do (float16 arithmetic on the
    device itself).
    """
    assignment, grade_id, function = ASSIGNMENT, "decode_contract_tests", "decode"
    draws = ("float64", "float32", "float16", "GPU", "meta", "0-dim")
    probe_helpers = (_probe_inputs, _probe_call)
    PAIRS = ((torch.float16, torch.float32), (torch.float16, torch.float16),
             (torch.float64, torch.float32), (torch.float32, torch.float32))

    def cases(self):
        devices = sorted({torch.device("cpu"), test_configs()[-1][0]}, key=str)
        shape = dict(bs=2, na=3, ny=3, nx=4, nc=2, stride=8.0)
        cases = []
        for device in devices:
            for dtype, adt in self.PAIRS:
                cases.append(_decode_data_case(shape, dtype, device, adt, seed=11))
            for j, s in enumerate(_random_shapes(77 + len(cases), 3)):
                dtype, adt = self.PAIRS[j % len(self.PAIRS)]
                cases.append(_decode_data_case(s, dtype, device, adt, seed=60 + j))
        for k, (shape, (dtype, adt)) in enumerate(zip(DECODE_CASES[:3], self.PAIRS)):
            case = _decode_data_case(shape, dtype, "cpu", adt, seed=90 + k)
            case["device"] = "meta"
            case["label"] = case["label"].replace(" on cpu", " on " + META_NOTE)
            cases.append(case)
        return cases

    @staticmethod
    def probe(ns, case):
        decode = student(ns, "decode")
        p, grid, ag, stride = _probe_inputs(case)
        if case["device"] == "meta":  # no values: report what ran, where the result lives
            try:
                y = decode(p, grid, ag, stride)
            except Exception as err:  # noqa: BLE001 - meta raises NotImplementedError for data reads
                return {"meta_error": {"type": type(err).__name__, "message": str(err)[:1500]}}
            if not isinstance(y, torch.Tensor):
                return {"meta": {"type": type(y).__name__}}
            return {"meta": {"type": "Tensor", "device": str(y.device), "shape": list(y.shape),
                             "dtype": str(y.dtype)}}
        ok, y = _probe_call(decode, p, grid, ag, stride)
        if not ok:
            return {"raised": y}
        out = {"y": y, "same_object": y is p, "p_after": p}
        if isinstance(y, torch.Tensor):
            out["device"] = str(y.device)
            out["dtype"] = str(y.dtype)
        return out

    def _judge_meta(self, case, r):
        p, ag, where = case["p"], case["anchor_grid"], case["label"]
        what = f"decode(p {_dname(p.dtype)} on meta, grid float32, anchor_grid {_dname(ag.dtype)})"
        if "meta_error" in r:
            if _is_device_mix(r["meta_error"].get("message", "")):
                _fail_cpu_tensor("decode", where, r["meta_error"]["message"],
                                 "a tensor made inside decode without device=p.device meets p.")
            return  # what meta cannot run (reading values) is judged on the CPU cases
        m = r["meta"]
        check_true(m.get("type") == "Tensor", f"{what} did not return a tensor", inputs=where, got=m.get("type"))
        check_true(m["shape"] == list(p.shape), f"{what} has the wrong shape", inputs=where,
                   expected=str(tuple(p.shape)), got=str(tuple(m["shape"])))
        if torch.device(m["device"]).type != "meta":
            fail(f"{what} returned its result on {m['device']}, not on p's device", inputs=where,
                 expected="meta (p's device)", got=m["device"],
                 hint="build the result from p and tensors on p.device; a tensor made with torch.zeros(...) "
                      "without device= lives on the CPU.")
        check_true(m["dtype"] == str(p.dtype), f"{what} has the wrong dtype", inputs=where,
                   expected=str(p.dtype), got=m["dtype"], hint="cast each piece with .to(p.dtype) before cat.")

    def judge(self, case, r):
        if case["device"] == "meta":
            return self._judge_meta(case, r)
        p, grid, ag, stride = _inputs(case)
        where = case["label"]
        what = f"decode(p {_dname(p.dtype)}, grid float32, anchor_grid {_dname(ag.dtype)})"
        if "raised" in r:
            _raised(r["raised"], what, where)
        y = r["y"]
        _check_shape(y, p, where, what)
        if r.get("dtype") != str(p.dtype) or y.dtype != p.dtype:
            fail(f"{what} has the wrong dtype", inputs=where, expected=str(p.dtype), got=str(r.get("dtype")),
                 hint="the result must have p's dtype. In float16 the grid is float32, and torch.cat of a "
                      "float16 piece with a float32 piece promotes to float32: cast each piece with "
                      ".to(p.dtype) before cat.")
        if torch.device(r.get("device", "?")).type != p.device.type:
            fail(f"{what} is on the wrong device", inputs=where, expected=str(p.device), got=r.get("device"),
                 hint="build the result from p and tensors on p.device (device=p.device).")
        p_after = r["p_after"]
        check_true(not r["same_object"] and isinstance(p_after, torch.Tensor)
                   and torch.equal(p_after.to(case["p"].dtype), case["p"]),
                   f"{what} changed its input p", inputs=where,
                   hint="decode must leave p alone: start from s = p.sigmoid() (a new tensor), never p.sigmoid_().")


def _probe_grad(decode, p, grid, ag, stride, w):
    """decode(p) and d(sum(w * y))/dp; the in-place report when backward fails (shipped helper)."""
    p = p.detach().clone().requires_grad_(True)
    ok, y = _probe_call(decode, p, grid, ag, stride)
    if not ok:
        return {"raised": y}
    out = {"y": y}
    if not isinstance(y, torch.Tensor):
        return out
    out["requires_grad"] = bool(y.requires_grad)
    out["grad_fn"] = type(y.grad_fn).__name__ if y.grad_fn is not None else None
    if not y.requires_grad:
        return out
    loss = (y.double() * w.to(y.device)).sum() if tuple(y.shape) == tuple(w.shape) else y.double().sum()
    try:
        (g,) = torch.autograd.grad(loss, p)
        out["grad"] = g
    except RuntimeError as err:
        out["backward_error"] = str(err).split(" Hint:")[0][:1500]
        try:
            from autograder.inplace import explain, why_backward_fails

            out["report"] = why_backward_fails(lambda q: decode(q, grid, ag, stride), p) or explain(err) or ""
        except Exception:  # noqa: BLE001 - feedback only
            out["report"] = ""
    return out


class DecodeGradients(Check):
    """Backward through ``decode`` works and d(sum(w * decode(p)))/dp equals autograd of the
    out-of-place formula in float64 (w: fixed random weights per case).

    Input space: as for the values (bs 1-4, na 1-4, maps 1-8, nc 1-80, stride float / int / 0-dim
    tensor; float64, float32, float16 on the CPU, float32 / float16 on CUDA on a GPU grader), with
    ``p`` a leaf that requires grad. Tolerances follow p's dtype. Catches ``no_grad``, ``.detach()``
    (no graph), ``.data`` writes and identity saved-tensor hooks (wrong box gradients, no error),
    and writes left in place (backward raises).
    """
    assignment, grade_id, function = ASSIGNMENT, "decode_gradients_tests", "decode"
    draws = ("float64", "float32", "float16", "GPU", "0-dim")
    probe_helpers = (_probe_inputs, _probe_call, _probe_grad)

    def cases(self):
        visible = dict(shape=DECODE_CASES[0], dtype=torch.float64, device=test_configs()[-1][0],
                       anchor_dtype=torch.float64, seed=20)
        return _decode_cases(20, DECODE_CASES[:3], 6, True, visible)

    @staticmethod
    def probe(ns, case):
        p, grid, ag, stride = _probe_inputs(case)
        return _probe_grad(student(ns, "decode"), p, grid, ag, stride, case["w"])

    def judge(self, case, r):
        p, grid, ag, stride = _inputs(case)
        where = case["label"]
        if "raised" in r:
            _raised(r["raised"], "decode(p, ...)", where)
        y = r["y"]
        _check_shape(y, p, where, "decode(p, ...)")
        if not r.get("requires_grad"):
            fail("decode(p, ...) is cut off from p: no gradient can reach p", inputs=where,
                 expected="a result with a grad_fn (requires_grad=True)", got=describe_grad(r),
                 hint="no torch.no_grad() and no .detach() in decode: they silence the error by throwing "
                      "the graph away, so an attack gets no gradient. Build the result out of place "
                      "instead (torch.cat of the pieces).")
        if "backward_error" in r or "grad" not in r:
            fail("backward through decode(p, ...) failed", inputs=where,
                 detail=(r.get("report") or r.get("backward_error") or "no gradient came back")[:1500],
                 hint="a tensor autograd saved (sigmoid's output) was written in place. Compute the "
                      "xy and wh parts as new tensors and join them with torch.cat.")
        g = r["grad"]
        check_tensor(g, "the gradient of decode's output with respect to p", shape=tuple(p.shape))
        g = g.double()
        g_ref = _grad_reference(case)
        tol = tolerances(p.dtype)
        if not torch.allclose(g, g_ref, **tol):
            diff = (g - g_ref).abs().nan_to_num(float("inf"))
            cols = [name for c, name in ((slice(0, 2), "x, y"), (slice(2, 4), "w, h"),
                                         (slice(4, None), "objectness/classes"))
                    if not torch.allclose(g[..., c], g_ref[..., c], **tol)]
            values_ok = torch.allclose(y.double(), decode_reference(p.cpu(), grid.cpu(), ag.cpu(), stride), **tol)
            hint = ("the values are right but the gradient is not: a write hidden from autograd "
                    "(.data, or saved-tensor hooks that return the same tensor) lets backward use the "
                    "decoded numbers instead of sigmoid's output. Don't hide the write: build new "
                    "tensors (torch.cat), or write into a clone." if values_ok else
                    "the gradient follows your formula; fix the values first (see the "
                    "decode_matches_legacy test), e.g. the square in (2*s)**2 * anchor_grid.")
            k = int(diff.argmax())
            fail("decode's gradient with respect to p is wrong", inputs=where,
                 expected=f"{float(g_ref.flatten()[k]):.6g} (autograd of the out-of-place formula, float64)",
                 got=f"{float(g.flatten()[k]):.6g}", detail=f"wrong for the columns: {', '.join(cols)}",
                 hint=hint)


class DecodeNoInplace(Check):
    """No write on a tensor autograd saved for the backward of ``decode``'s result.

    Input space: as for the gradients: ``p`` a leaf that requires grad, bs 1-4, na 1-4, maps 1-8,
    nc 1-80, float64 / float32 / float16 on the CPU and float32 / float16 on CUDA on a GPU grader,
    stride a number or a 0-dim tensor. The probe runs ``decode`` under :func:`autograder.inplace.assert_no_inplace_on_saved`
    (dispatch level: every write, whoever makes it) and returns its report as data; it also runs
    ``decode`` and a backward *outside* the locator and returns what that backward said (error or
    gradient). The judge does not trust a clean report alone: a backward that fails with autograd's
    in-place error fails the case too (a submission may patch the locator in its own process). A
    write autograd cannot see at all (``.data``, identity saved-tensor hooks) breaks no save and
    raises nothing, so it passes here (the sample submissions expect that): its gradient is wrong,
    which ``decode_gradients_tests`` (same inputs, gradient compared with the float64 reference)
    rejects.
    """
    assignment, grade_id, function = ASSIGNMENT, "decode_no_inplace_on_saved_tests", "decode"
    draws = ("float64", "float32", "float16", "GPU", "0-dim")
    probe_helpers = (_probe_inputs, _probe_call, _probe_grad)

    def cases(self):
        visible = dict(shape=DECODE_CASES[0], dtype=torch.float32, device=test_configs()[-1][0],
                       anchor_dtype=torch.float32, seed=40)
        return _decode_cases(40, DECODE_CASES[:2], 3, True, visible)

    @staticmethod
    def probe(ns, case):
        from autograder.inplace import InplaceOnSavedError, assert_no_inplace_on_saved

        decode = student(ns, "decode")
        p, grid, ag, stride = _probe_inputs(case)
        q = p.detach().clone().requires_grad_(True)
        out = {"located": True, "report": "", "broken": 0}
        try:
            ok, y = assert_no_inplace_on_saved(_probe_call, decode, q, grid, ag, stride)
        except InplaceOnSavedError as err:
            out.update(report=str(err.report)[:3000], broken=len(err.saved))
            ok, y = True, None
        if not ok:
            return {"raised": y}
        out["plain"] = _probe_grad(decode, p, grid, ag, stride, case["w"])
        return out

    def judge(self, case, r):
        p, grid, ag, stride = _inputs(case)
        where = case["label"]
        if "raised" in r:
            _raised(r["raised"], "decode(p, ...)", where)
        hint = ("the lines named above write into sigmoid's output, which backward needs. "
                "Compute new tensors and torch.cat them, or write into y.clone().")
        if r["broken"] or r["report"]:
            fail("decode writes in place into a tensor autograd saved for backward", inputs=where,
                 detail=r["report"] or f"{r['broken']} saved tensor(s) written", hint=hint)
        plain = r["plain"]
        if "raised" in plain:
            _raised(plain["raised"], "decode(p, ...)", where)
        err = plain.get("backward_error") or ""
        if "modified by an inplace operation" in err or "inplace" in err.lower() and "version" in err:
            fail("decode writes in place into a tensor autograd saved for backward", inputs=where,
                 detail=(plain.get("report") or err)[:1500],
                 hint="backward through your decode fails with autograd's in-place error. " + hint)
        # Clean, and a plain backward agrees (it ran, or there is no graph to run it on). A wrong
        # gradient without an error is a write hidden from autograd: the gradients check rejects it.


# =========================================================================== check: FixedDetect

def _head_case(shape: dict, dtype, device, seed: int, bs: int, sizes2=None, bs2=None) -> dict:
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
            "device": str(device), "dtype": _dname(dtype),
            "label": (f"FixedDetect(nc={args['nc']}, {len(args['ch'])} level(s), na={na}) {_dname(dtype)} on "
                      f"{torch.device(device).type}: the same head called at batch {bs}, levels {levels}; then at "
                      f"batch {bs2 or bs}, sizes {other}; then at the first sizes again")}


def _meta_head_case(shape: dict, dtype, seed: int, bs: int, cpu_first: bool) -> dict:
    """A head run on the ``meta`` device (shapes only), optionally after a first call on the CPU."""
    case = _head_case(shape, dtype, "cpu", seed, bs)
    sizes = "; ".join(f"{ny}x{nx}" for ny, nx in shape["sizes"])
    other = ", ".join(f"{ny}x{nx}" for ny, nx in
                      (tuple(f.shape[2:]) for f in case["calls"][1]))
    first = (f"called once on the CPU at sizes {sizes}, then moved with head.to(device) and called on "
             if cpu_first else "called on ")
    case.update(kind="meta_head", cpu_first=cpu_first, device="meta",
                label=(f"FixedDetect(nc={case['nc']}, {len(case['ch'])} level(s)) {_dname(dtype)}: the same head "
                       f"{first}{META_NOTE} at sizes {sizes}, then {other}, then in training and export mode"))
    for k in ("grad_feats", "w"):
        case.pop(k)
    return case


def _random_heads(seed: int, n: int) -> list[dict]:
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


def _probe_head(ns, case):
    """Build the student's head from the case; (head, None) or (None, the reason as data)."""
    from autograder.yolo import LegacyDetect

    cls = student(ns, "FixedDetect")
    if not isinstance(cls, type):
        return None, {"not_class": repr(cls)[:100]}
    if not issubclass(cls, LegacyDetect):
        return None, {"not_legacy": str(cls.__mro__[1:])[:300]}
    ok, head = _probe_call(lambda: cls(nc=case["nc"], anchors=case["anchors"], ch=case["ch"]))
    if not ok:
        return None, {"construct_error": head}
    ok, res = _probe_call(lambda: head.load_state_dict(case["state"], strict=True))
    if not ok:
        return None, {"load_error": res}
    return cls, head


def _probe_meta_head(head, case, dt):
    """Shapes and devices of a head's outputs on the meta device (shipped helper)."""
    def run(feats, dev):
        try:
            with torch.no_grad():
                res = head([f.to(dev, dt) for f in feats])
        except Exception as err:  # noqa: BLE001 - meta raises NotImplementedError for data reads
            return {"error": {"type": type(err).__name__, "message": str(err)[:1500]}}

        def info(t):
            if isinstance(t, torch.Tensor):
                return {"device": str(t.device), "shape": list(t.shape)}
            if isinstance(t, (list, tuple)):
                return {"seq": type(t).__name__, "items": [info(u) for u in t]}
            return {"type": type(t).__name__}
        return info(res)

    out = {"calls": []}
    head.eval()
    if case["cpu_first"]:
        head.to("cpu", dt)
        first = run(case["calls"][0], "cpu")
        if "error" in first:
            out["cpu_error"] = first["error"]
            return out
    head.to("meta", dt)
    for feats in case["calls"][:2]:
        out["calls"].append(run(feats, "meta"))
        if "error" in out["calls"][-1]:
            return out
    head.train()
    out["train"] = run(case["calls"][0], "meta")
    head.eval()
    head.export = True
    out["export"] = run(case["calls"][0], "meta")
    head.export = False
    return out


class FixedDetectCheck(Check):
    """``class FixedDetect(LegacyDetect)``: a drop-in head whose decoded output is differentiable.

    Input space: any ``LegacyDetect`` configuration — nl 1-3 levels, na 1-4 anchors per level, nc
    1-80, ch 1-8 channels per level, feature maps 1-8 cells a side, strides 4-64 (a float tensor set
    by the owner); batch 1-3; float64, float32, float16 on the CPU, float32 / float16 on CUDA on a
    GPU grader. The head is built with LegacyDetect's constructor, loads a LegacyDetect state dict
    with ``strict=True``, and is called repeatedly: eval mode (``(decoded, raw list)``), at other
    sizes and batch sizes (the grid must follow), back at the first size, in training mode and with
    ``export = True`` (the raw list only), then with features that require grad (gradients must
    equal the reference head's); the second call changes only the width, or only the height, in
    some cases. One more case swaps it into the pretrained detector (``model.with_head(FixedDetect)``)
    and takes d(objectness, boxes)/d(image) in float64.

    The CPU blind spot: two cases run the head on the ``meta`` device (shapes and devices, no
    values), one after a first call on the CPU at the same size (then ``head.to(device)``, as a
    model moved to the GPU after use). A grid made without ``.to(x[i].device)``, a grid kept because
    only its size is compared, or a tensor made on the CPU in decode meets the input there and
    raises the mismatch a GPU would raise; only that mismatch (and outputs not on the input's
    device) fails a meta case. ``self.stride[i]`` (a 0-dim CPU tensor) and Python numbers mix with
    any device, as on CUDA. Still GPU-only: values computed by CUDA kernels (float16 on the device)
    and code that reads values on the device (``.item()``, ``.cpu()``), which meta cannot run.
    """
    assignment, grade_id, function = ASSIGNMENT, "fixed_detect_tests", "FixedDetect"
    draws = ("float64", "float32", "float16", "GPU", "meta", "repeated calls", "training", "export")
    probe_helpers = (_probe_call, _probe_head, _probe_meta_head)

    def cases(self):
        cases = []
        configs = _configs()
        # the visible test's head first: nc=3, one level of 4 channels, 3x5 cells, batch 2
        dev, _ = test_configs()[-1]
        cases.append(_head_case(HEAD_CASES[0], torch.float32, dev, seed=100, bs=2))
        for device, dtype in configs:
            for k, shape in enumerate(HEAD_CASES[1:]):
                cases.append(_head_case(shape, dtype, device, seed=101 + k, bs=1 + k))
        for j, shape in enumerate(_random_heads(4242, 4)):
            device, dtype = configs[j % len(configs)]
            cases.append(_head_case(shape, dtype, device, seed=150 + j, bs=1 + j % 3, bs2=1 + (j + 1) % 3))
        # only the width changes (a grid compared on its height alone goes stale), and only the height
        cases.append(_head_case(HEAD_CASES[2], torch.float32, "cpu", seed=160, bs=2, sizes2=((4, 3), (2, 5))))
        cases.append(_head_case(HEAD_CASES[0], torch.float64, "cpu", seed=161, bs=1, sizes2=((6, 5),)))
        # the CPU blind spot: on the meta device a grid (or any tensor) made on the CPU meets the input
        cases.append(_meta_head_case(HEAD_CASES[2], torch.float32, seed=170, bs=2, cpu_first=True))
        cases.append(_meta_head_case(HEAD_CASES[3], torch.float16, seed=171, bs=1, cpu_first=False))
        from autograder.detector import synthetic_batch

        images, _ = synthetic_batch(2, seed=ATTACK_SEED + 1)
        cases.append({"kind": "detector", "images": images, "device": str(dev), "dtype": "float64",
                      "label": "the pretrained detector with FixedDetect as its head, float64, "
                               "2 images 64x64, d(max objectness + mean box)/d(image)"})
        return cases

    @staticmethod
    def probe(ns, case):
        dev, dt = torch.device(case["device"]), getattr(torch, case["dtype"])
        if case["kind"] == "detector":
            from autograder.detector import load_pretrained

            cls = student(ns, "FixedDetect")
            out = {}
            ok, model = _probe_call(lambda: load_pretrained(dev).to(dt).with_head(cls).eval())
            if not ok:
                return {"stage": "with_head", "error": model}
            x = case["images"].to(dev, dt).requires_grad_(True)
            ok, res = _probe_call(lambda: model(x))
            if not ok:
                return {"stage": "forward", "error": res}
            dec = res[0] if isinstance(res, (tuple, list)) and len(res) == 2 else res
            if not isinstance(dec, torch.Tensor) or not dec.requires_grad:
                return {"stage": "graph", "out": dec}
            try:
                (g,) = torch.autograd.grad(dec[..., 4].amax(1).sum() + dec[..., :4].mean(), x)
                out["grad"] = g
            except RuntimeError as err:
                out["backward_error"] = str(err).split(" Hint:")[0][:1500]
                try:
                    from autograder.inplace import why_backward_fails

                    out["report"] = why_backward_fails(lambda im: model(im)[0], x) or ""
                except Exception:  # noqa: BLE001
                    out["report"] = ""
            return out

        cls, head = _probe_head(ns, case)
        if cls is None:
            return head
        head.stride = torch.tensor(case["strides"])
        if case["kind"] == "meta_head":
            return _probe_meta_head(head, case, dt)
        head.to(dev, dt)
        out = {"eval": []}
        head.eval()
        for feats in case["calls"]:
            with torch.no_grad():
                ok, res = _probe_call(head, [f.to(dev, dt) for f in feats])
            out["eval"].append(res if ok else {"error": res})
            if not ok:
                return out
        for flag in ("train", "export"):
            if flag == "train":
                head.train()
            else:
                head.eval()
                head.export = True
            with torch.no_grad():
                ok, res = _probe_call(head, [f.to(dev, dt) for f in case["calls"][0]])
            out[flag] = res if ok else {"error": res}
            head.export = False
        head.eval()
        feats = [f.to(dev, dt).requires_grad_(True) for f in case["grad_feats"]]
        ok, res = _probe_call(head, list(feats))
        if not ok:
            out["grad_error"] = res
            return out
        dec = res[0] if isinstance(res, (tuple, list)) and len(res) == 2 else res
        if not isinstance(dec, torch.Tensor) or not dec.requires_grad:
            out["grad_out"] = {"requires_grad": False, "grad_fn": None}
            return out
        w = case["w"].to(dev)
        loss = (dec.double() * w).sum() if tuple(dec.shape) == tuple(w.shape) else dec.double().sum()
        try:
            grads = torch.autograd.grad(loss, feats, allow_unused=True)
            out["grads"] = list(grads)
        except RuntimeError as err:
            out["backward_error"] = str(err).split(" Hint:")[0][:1500]
            try:
                from autograder.inplace import why_backward_fails

                out["report"] = why_backward_fails(lambda *f: head(list(f))[0], *feats) or ""
            except Exception:  # noqa: BLE001
                out["report"] = ""
        return out

    # ------------------------------------------------------------------ judge

    def _class_problems(self, r):
        if "not_class" in r:
            fail("FixedDetect is not a class", got=r["not_class"],
                 hint="write `class FixedDetect(LegacyDetect):` and run the cell.")
        if "not_legacy" in r:
            fail("FixedDetect is not a LegacyDetect", expected="a subclass of LegacyDetect", got=r["not_legacy"],
                 hint="class FixedDetect(LegacyDetect): keeps the constructor, the buffers and _make_grid.")
        if "construct_error" in r:
            e = r["construct_error"]
            fail(f"FixedDetect(nc=..., anchors=..., ch=...) raised {e['type']}", detail=e["message"][:400],
                 hint="keep LegacyDetect's constructor: don't define __init__, or call super().__init__(nc, anchors, ch).")
        if "load_error" in r:
            fail("FixedDetect does not load LegacyDetect's state dict (strict=True)",
                 detail=r["load_error"]["message"][:600],
                 hint="add no parameter or buffer and rename none: a drop-in head has the same state dict.")

    def _heads(self, case):
        dev, dt = torch.device(case["device"]), _DT[case["dtype"]]
        args = dict(nc=case["nc"], anchors=case["anchors"], ch=case["ch"])
        legacy, ref = LegacyDetect(**args), ReferenceFixedDetect(**args)
        for h in (legacy, ref):
            h.load_state_dict(case["state"], strict=True)
            h.stride = torch.tensor(case["strides"])
            h.to(dev, dt)
        return legacy, ref, dev, dt

    def judge(self, case, r):
        if case["kind"] == "detector":
            return self._judge_detector(case, r)
        if case["kind"] == "meta_head":
            return self._judge_meta(case, r)
        where = case["label"]
        self._class_problems(r)
        legacy, ref, dev, dt = self._heads(case)
        tol = tolerances(dt)
        legacy.eval()
        for n, (feats, got) in enumerate(zip(case["calls"], r["eval"])):
            call = ("first call" if n == 0 else "second call, other sizes" if n == 1
                    else "third call, back at the first sizes")
            if isinstance(got, dict) and "error" in got:
                fail(f"FixedDetect.forward raised {got['error']['type']} in eval mode ({call})", inputs=where,
                     detail=got["error"]["message"][:800],
                     hint="rebuild self.grid[i] when its shape differs from the level's (ny, nx), as "
                          "LegacyDetect does; then call decode(x[i], self.grid[i], self.anchor_grid[i], self.stride[i]).")
            with torch.no_grad():
                exp_dec, exp_raw = legacy([f.to(dev, dt) for f in feats])
            check_true(isinstance(got, tuple) and len(got) == 2,
                       "FixedDetect in eval mode must return (decoded, raw list)", inputs=where,
                       got=type(got).__name__, hint="return (torch.cat(z, 1), x), like LegacyDetect.")
            dec, raw = got
            check_tensor(dec, f"FixedDetect(...)[0] (the decoded boxes, {call})", shape=tuple(exp_dec.shape),
                         hint="view each level's decode as (bs, -1, no) and torch.cat them on dim 1.")
            if not torch.allclose(dec.double(), exp_dec.cpu().double(), **tol):
                fail(f"FixedDetect's decoded output differs from LegacyDetect's ({call})", inputs=where,
                     hint="same convs, same permute, then decode(x[i], self.grid[i], self.anchor_grid[i], "
                          "self.stride[i]) for each level, with the grid rebuilt when the size changes; if "
                          "decode's own tests fail, fix decode first.")
            self._check_raw(raw, exp_raw, tol, where, f"eval mode, {call}")
        with torch.no_grad():
            legacy.train()
            exp_raw = legacy([f.to(dev, dt) for f in case["calls"][0]])
        for flag in ("train", "export"):
            got = r[flag]
            mode = "training mode" if flag == "train" else "export mode (head.export = True, eval)"
            if isinstance(got, dict) and "error" in got:
                fail(f"FixedDetect.forward raised {got['error']['type']} in {mode}", inputs=where,
                     detail=got["error"]["message"][:800],
                     hint="keep `raw_only = self.training or self.export` and its early return.")
            check_true(isinstance(got, list) and len(got) == len(exp_raw),
                       f"FixedDetect in {mode} must return the list of raw level outputs", inputs=where,
                       got=describe(got), hint="keep `raw_only = self.training or self.export` and its early return.")
            self._check_raw(got, exp_raw, tol, where, mode)
        self._judge_grads(case, r, ref, dev, dt, tol, where)

    def _judge_meta(self, case, r):
        where = case["label"]
        self._class_problems(r)
        if "cpu_error" in r:
            e = r["cpu_error"]
            fail(f"FixedDetect.forward raised {e['type']} in eval mode on the CPU", inputs=where,
                 detail=e["message"][:800], hint="run it yourself on a head like the one above.")
        no = case["nc"] + 5
        na = len(case["anchors"][0]) // 2
        hint = ("rebuild self.grid[i] on the level's device when its size *or device* differs, as "
                "LegacyDetect does: self._make_grid(nx, ny).to(x[i].device); and make no tensor in "
                "decode without device=p.device.")
        steps = [(f"eval mode, call {n + 1} on meta", got) for n, got in enumerate(r["calls"])]
        steps += [(mode, r[key]) for key, mode in (("train", "training mode"), ("export", "export mode"))
                  if key in r]
        for n, (mode, got) in enumerate(steps):
            if "error" in got:
                if _is_device_mix(got["error"].get("message", "")):
                    _fail_cpu_tensor(f"FixedDetect ({mode})", where, got["error"]["message"], hint)
                return  # what meta cannot run (reading values) is judged on the CPU cases
            feats = case["calls"][min(n, 1)] if n < len(r["calls"]) else case["calls"][0]
            tensors = [got] if "device" in got else []
            if got.get("seq") == "tuple" and len(got["items"]) == 2:  # (decoded, raw list)
                dec, raw = got["items"]
                tensors = [dec] + raw.get("items", [])
                if "shape" in dec:
                    n_cells = sum(na * f.shape[2] * f.shape[3] for f in feats)
                    check_true(dec["shape"] == [len(feats[0]), n_cells, no],
                               f"FixedDetect's decoded output has the wrong shape ({mode})", inputs=where,
                               got=str(tuple(dec["shape"])))
            elif got.get("seq") == "list":
                tensors = got["items"]
            for t in tensors:
                if "device" in t and torch.device(t["device"]).type != "meta":
                    fail(f"FixedDetect returned a tensor on {t['device']}, not on its input's device ({mode})",
                         inputs=where, expected="meta (the input's device)", got=t["device"], hint=hint)

    @staticmethod
    def _check_raw(raw, exp_raw, tol, where, mode):
        check_true(isinstance(raw, (list, tuple)) and len(raw) == len(exp_raw),
                   f"FixedDetect's raw outputs ({mode}) are not one tensor per level", inputs=where,
                   got=describe(raw), hint="return x, the list whose entries you replaced by the permuted conv outputs.")
        for i, (g, e) in enumerate(zip(raw, exp_raw)):
            check_true(isinstance(g, torch.Tensor) and tuple(g.shape) == tuple(e.shape)
                       and torch.allclose(g.double(), e.cpu().double(), **tol),
                       f"FixedDetect's raw level output {i} differs ({mode})", inputs=where,
                       hint="x[i] must be the permuted conv output (bs, na, ny, nx, no), as in LegacyDetect.")

    def _judge_grads(self, case, r, ref, dev, dt, tol, where):
        if "grad_error" in r:
            e = r["grad_error"]
            fail(f"FixedDetect.forward raised {e['type']} on features that require grad", inputs=where,
                 detail=e["message"][:800], hint="the eval-mode forward must work with autograd on.")
        if "grad_out" in r:
            fail("no gradient can flow back through FixedDetect", inputs=where, got=describe_grad(r["grad_out"]),
                 hint="the decode inside the head must keep the graph: no torch.no_grad(), no .detach().")
        if "backward_error" in r:
            fail("backward through FixedDetect failed", inputs=where,
                 detail=(r.get("report") or r["backward_error"])[:1500],
                 hint="FixedDetect must decode with your out-of-place decode, not LegacyDetect's in-place lines.")
        ref.eval()
        f_ref = [f.to(dev, dt).requires_grad_(True) for f in case["grad_feats"]]
        refs = torch.autograd.grad((ref(list(f_ref))[0].double() * case["w"].to(dev)).sum(), f_ref)
        grads = r["grads"]
        check_true(isinstance(grads, list) and len(grads) == len(refs), "FixedDetect's gradients are missing",
                   inputs=where, hint="every level must go through decode and into the torch.cat.")
        for i, (g, gr) in enumerate(zip(grads, refs)):
            check_true(g is not None, f"no gradient reaches level {i}'s input", inputs=where,
                       hint="every level must go through decode and into the torch.cat.")
            check_true(isinstance(g, torch.Tensor) and tuple(g.shape) == tuple(gr.shape)
                       and torch.allclose(g.double(), gr.cpu().double(), **tol),
                       f"wrong gradient at level {i}'s input features", inputs=where,
                       hint="the decode's gradient is wrong (see decode_gradients tests): a write hidden "
                            "from autograd (.data, saved-tensor hooks) gives wrong box gradients.")

    def _judge_detector(self, case, r):
        where = case["label"]
        self._class_problems(r)
        if "stage" in r:
            if r["stage"] == "graph":
                fail("no gradient can flow back through FixedDetect in the detector", inputs=where,
                     got=describe(r.get("out")),
                     hint="the decode inside the head must keep the graph: no torch.no_grad(), no .detach().")
            e = r["error"]
            fail(f"the detector with FixedDetect raised {e['type']} ({r['stage']})", inputs=where,
                 detail=e["message"][:800],
                 hint="model.with_head(FixedDetect) builds FixedDetect(nc, anchors, ch) and loads the old "
                      "head's state dict; the eval-mode forward returns (decoded, raw list).")
        if "backward_error" in r:
            fail("d(max objectness)/d(image) fails with FixedDetect in the detector", inputs=where,
                 detail=(r.get("report") or r["backward_error"])[:1500],
                 hint="model.with_head(FixedDetect) must be differentiable end to end in eval mode.")
        from autograder.detector import load_pretrained

        dev, dt = torch.device(case["device"]), _DT[case["dtype"]]
        model = load_pretrained(dev).to(dt).with_head(ReferenceFixedDetect).eval()
        x = case["images"].to(dev, dt).requires_grad_(True)
        dec = model(x)[0]
        (g_ref,) = torch.autograd.grad(dec[..., 4].amax(1).sum() + dec[..., :4].mean(), x)
        g = r["grad"]
        check_true(isinstance(g, torch.Tensor) and tuple(g.shape) == tuple(g_ref.shape)
                   and torch.allclose(g.double(), g_ref.cpu().double(), rtol=1e-6, atol=1e-9),
                   "d(output)/d(image) through the detector with your FixedDetect is wrong", inputs=where,
                   hint="compare your decode's gradient with the out-of-place formula's (decode_gradients tests).")


# =========================================================================== check: attack

class AttackCheck(Check):
    """``attack(model, image, eps, steps)`` -> delta, judged here with the grader's own model.

    Input space: ``model`` the pretrained detector with a head whose decoded objectness is
    differentiable (the probe builds it with :func:`autograder.attack.attack_model`, course code),
    frozen, in eval mode, on the course device; ``image`` a (1, 3, 64, 64) float32 image in [0, 1];
    ``eps`` in (0, 16/255], ``steps`` 1-10. The first case is the visible test's image (budget,
    range, shape); the second attacks 4 held-out images one at a time (eps 16/255, 10 steps) and
    also wants the mean best objectness, recomputed here from the returned deltas, to drop by at
    least ``ATTACK_MARGIN``; two small cases use another budget and step count (4/255 and 3 steps;
    16/255 and a single step, which with a step of about 2.5 * eps / steps must reach the budget).
    Every case counts what the task limits: the gradients taken with respect to the image, i.e. the
    backward passes that reach the model's input (a hook on the input of the model's first stage,
    which every way into the model passes). ``steps`` of them, one per step (one more is tolerated).
    Evaluations that are not differentiated — the objectness read for a progress bar, a last look,
    with or without ``no_grad`` — are not counted.
    """
    assignment, grade_id, function = ASSIGNMENT, "attack_tests", "attack"
    draws = ("float32",)

    def cases(self):
        from autograder.detector import synthetic_batch

        dev = str(test_configs()[-1][0])
        shown, _ = synthetic_batch(4, seed=3)
        held, _ = synthetic_batch(ATTACK_N, seed=ATTACK_SEED)
        return [{"images": shown[1:2].clone(), "eps": 16 / 255, "steps": 10, "device": dev, "drop": False,
                 "label": "the notebook's image 1, eps=16/255, steps=10"},
                {"images": held, "eps": ATTACK_EPS, "steps": ATTACK_STEPS, "device": dev, "drop": True,
                 "label": f"{ATTACK_N} held-out images, one at a time, eps={ATTACK_EPS:.4f}, steps={ATTACK_STEPS}"},
                {"images": held[2:3].clone(), "eps": 4 / 255, "steps": 3, "device": dev, "drop": False,
                 "label": "a held-out image, a smaller budget eps=4/255, steps=3"},
                {"images": held[3:4].clone(), "eps": 16 / 255, "steps": 1, "device": dev, "drop": False,
                 "full_step": True, "label": "a held-out image, eps=16/255, a single step (steps=1)"}]

    @staticmethod
    def probe(ns, case):
        import contextlib
        import io

        from autograder.attack import attack_model

        attack = student(ns, "attack")
        model = attack_model(case["device"])
        state = {k: v.clone() for k, v in model.state_dict().items()}
        images = case["images"].to(case["device"])
        seen = []  # one entry per gradient computed with respect to the model's input (the image)

        def watch(module, args):  # every way into the model (forward, features, raw_outputs) runs the stem
            x = args[0] if args else None
            if isinstance(x, torch.Tensor) and x.requires_grad:
                x.register_hook(lambda g: seen.append(1))

        hook = model.stem.register_forward_pre_hook(watch)
        deltas, changed, grad_calls = [], [], []
        for i in range(images.shape[0]):
            image = images[i:i + 1].clone()
            seen.clear()
            with contextlib.redirect_stderr(io.StringIO()):  # a text progress bar
                deltas.append(attack(model, image, case["eps"], case["steps"]))
            grad_calls.append(len(seen))
            changed.append(not torch.equal(image, images[i:i + 1]))
        hook.remove()
        moved = [k for k, v in model.state_dict().items() if not torch.equal(v, state[k])]
        return {"deltas": deltas, "image_changed": changed, "weights_changed": moved, "grad_calls": grad_calls}

    def judge(self, case, r):
        from autograder.detector import best_objectness, load_pretrained

        eps, steps = case["eps"], case["steps"]
        images = case["images"]
        deltas = r["deltas"]
        check_true(isinstance(deltas, list) and len(deltas) == len(images), "attack did not return one delta per call")
        for i, delta in enumerate(deltas):
            image = images[i:i + 1]
            what = f"attack(model, image {i}, eps={eps:.4f}, steps={steps})"
            check_tensor(delta, what, shape=tuple(image.shape),
                         hint="return the perturbation delta itself (same shape as image), not image + delta.")
            delta = delta.to(image.dtype)
            check_true(bool(torch.isfinite(delta).all()), f"{what} has NaN or inf", inputs=case["label"],
                       hint="clamp, don't divide.")
            check_true(not r["image_changed"][i], f"{what} changed the image it was given", inputs=case["label"],
                       hint="work on a delta tensor; never write into image.")
            worst = float(delta.abs().max())
            check_true(worst <= eps * (1 + 1e-5) + 1e-7, f"{what} exceeds the budget", inputs=case["label"],
                       expected=f"|delta| <= eps = {eps:.6f} everywhere (L-inf)", got=f"max |delta| = {worst:.6f}",
                       hint="after each step: delta = delta.clamp(-eps, eps).")
            adv = image + delta
            lo, hi = float(adv.min()), float(adv.max())
            check_true(lo >= -1e-6 and hi <= 1 + 1e-6, f"{what}: image + delta leaves [0, 1]", inputs=case["label"],
                       expected="0 <= image + delta <= 1", got=f"min {lo:.4f}, max {hi:.4f}",
                       hint="after the budget clamp: delta = (image + delta).clamp(0, 1) - image.")
            calls = r.get("grad_calls", [steps] * len(images))[i]
            # (no call at all: nothing was attacked, which the drop below reports)
            check_true(calls == 0 or steps <= calls <= steps + 1,
                       f"{what} took {calls} gradient(s) with respect to the image",
                       inputs=case["label"],
                       expected=f"{steps} (one per step; {steps + 1} is tolerated): backward passes that reach "
                                "the image",
                       got=f"{calls} backward pass(es) through the model to the image",
                       hint="loop `for _ in tqdm(range(steps))` and take one gradient of the best objectness per "
                            "step; reading the objectness without differentiating it is free.")
            if case.get("full_step"):
                moved = delta != 0
                at_edge = (delta.abs() >= eps * (1 - 1e-3)) | (adv <= 1e-6) | (adv >= 1 - 1e-6)
                share = float((moved & at_edge).sum()) / max(1, int(moved.sum()))
                check_true(bool(moved.any()) and share >= 0.9, f"{what}: a single step does not reach the budget",
                           inputs=case["label"],
                           expected="|delta| = eps on the pixels it moves (a step of about 2.5 * eps / steps, "
                                    "then the clamp to eps)",
                           got=f"{100 * share:.0f} % of the moved pixels at the budget, max |delta| = {worst:.5f}",
                           hint="the step size follows eps and steps: step = 2.5 * eps / steps; step with "
                                "grad.sign(), not the raw gradient.")
        check_true(not r["weights_changed"], "attack changed the model's weights", inputs=case["label"],
                   got=", ".join(r["weights_changed"][:5]) if r["weights_changed"] else None,
                   hint="only delta moves; take gradients with torch.autograd.grad(loss, delta).")
        if not case["drop"]:
            return
        dev = torch.device(case["device"])
        model = load_pretrained(dev)
        x = images.to(dev)
        delta = torch.cat([d.to(x.dtype) for d in deltas]).to(dev)
        with torch.no_grad():
            before = best_objectness(model, x)
            after = best_objectness(model, x + delta)
        drop = float((before - after).mean())
        check_true(drop >= ATTACK_MARGIN, "the attack does not lower the best objectness enough",
                   inputs=case["label"], expected=f"mean drop >= {ATTACK_MARGIN}",
                   got=f"mean drop {drop:.4f} (before {float(before.mean()):.3f}, after {float(after.mean()):.3f})",
                   hint="step *against* the gradient: delta = delta - step * grad.sign(), with a step of about "
                        "2.5 * eps / steps; the loss is the best objectness (max over cells and anchors).")


# =========================================================================== mutation testing

from .mutation import Mutant, Target  # noqa: E402

_CPU_ONLY = not torch.cuda.is_available()


def _gpu_only(reason: str) -> str:
    """Equivalent on a CPU-only grader (everything is on the CPU); a GPU grader's CUDA cases kill it."""
    return f"on a CPU-only grader: {reason}" if _CPU_ONLY else ""


_DECODE_CHECKS = ("decode_matches_legacy_tests", "decode_contract_tests", "decode_gradients_tests",
                  "decode_no_inplace_on_saved_tests")
_XY = "xy = (s[..., 0:2] * 2 - 0.5 + grid) * stride"
_WH = "wh = (s[..., 2:4] * 2) ** 2 * anchor_grid"
_CAT = "return torch.cat((xy.to(p.dtype), wh.to(p.dtype), s[..., 4:]), dim=-1)"

MUTANTS = {
    "decode": Target(checks=_DECODE_CHECKS, mutants=(
        # the formula
        Mutant("drop the - 0.5", "* 2 - 0.5 + grid", "* 2 + grid"),
        Mutant("drop the grid", " + grid)", ")"),
        Mutant("no stride on xy", ") * stride", ")"),
        Mutant("stride on wh too", "** 2 * anchor_grid", "** 2 * anchor_grid * stride"),
        Mutant("no square on wh", "(s[..., 2:4] * 2) ** 2", "(s[..., 2:4] * 2)"),
        # slices (off by one) and pieces
        Mutant("xy from columns 1:3", "s[..., 0:2]", "s[..., 1:3]"),
        Mutant("wh from columns 0:2", "s[..., 2:4]", "s[..., 0:2]"),
        Mutant("scores from column 5 (objectness dropped)", "s[..., 4:]", "s[..., 5:]"),
        Mutant("scores from column 3 (one column too many)", "s[..., 4:]", "s[..., 3:]"),
        Mutant("xy and wh swapped in the cat", "(xy.to(p.dtype), wh.to(p.dtype),", "(wh.to(p.dtype), xy.to(p.dtype),"),
        # dtype
        Mutant("xy not cast back to p.dtype", "xy.to(p.dtype)", "xy"),
        Mutant("wh not cast back to p.dtype", "wh.to(p.dtype)", "wh"),
        Mutant("sigmoid in float64", "s = p.sigmoid()", "s = p.double().sigmoid()"),
        # autograd: writes into the saved sigmoid, graph cut or hidden
        Mutant("in-place write into the sigmoid's output", _XY,
               "s[..., 0:2] = (s[..., 0:2] * 2 - 0.5 + grid) * stride\n    xy = s[..., 0:2].clone()"),
        Mutant("sigmoid_ on p", "s = p.sigmoid()", "s = p.sigmoid_()"),
        Mutant("detached sigmoid", "s = p.sigmoid()", "s = p.detach().sigmoid()"),
        Mutant("wh detached", "wh.to(p.dtype)", "wh.detach().to(p.dtype)"),
        Mutant("xy under no_grad", _XY, "with torch.no_grad():\n        " + _XY),
        Mutant(".data writes into the sigmoid", _CAT,
               "s.data[..., 0:2] = xy\n    s.data[..., 2:4] = wh\n    return s"),
        # the CPU blind spot: tensors made on the CPU (the meta cases catch them)
        Mutant("grid rebuilt inside decode on the CPU", " + grid)", " + make_grid(p.shape[3], p.shape[2]))"),
        Mutant("a 1-element CPU tensor for the offset", "- 0.5", "- torch.full((1,), 0.5)"),
        Mutant("result assembled with torch.zeros made on the CPU", _CAT,
               "return torch.cat((torch.zeros(p.shape[:-1] + (0,), dtype=p.dtype), xy.to(p.dtype), "
               "wh.to(p.dtype), s[..., 4:]), dim=-1)"),
        Mutant("written into torch.zeros made on the CPU", _CAT,
               "out = torch.zeros(p.shape, dtype=p.dtype)\n    out[..., 0:2] = xy\n    out[..., 2:4] = wh\n"
               "    out[..., 4:] = s[..., 4:]\n    return out",
               equivalent=_gpu_only("meta cannot copy into a CPU tensor, so it is not judged there; a GPU "
                                    "grader finds the result on the CPU")),
        # equivalent rewrites
        Mutant("0-dim CPU tensor for the offset", "- 0.5", "- torch.tensor(0.5)",
               equivalent="a 0-dim CPU tensor mixes with any device (as on CUDA) and does not promote p's dtype"),
        Mutant("cast once after the cat", _CAT,
               "return torch.cat((xy, wh, s[..., 4:]), dim=-1).to(p.dtype)",
               equivalent="the cat promotes, then one cast rounds each value exactly as the per-piece casts"),
        Mutant("written into a clone of the sigmoid", _CAT,
               "out = s.clone()\n    out[..., 0:2] = xy\n    out[..., 2:4] = wh\n    return out",
               equivalent="autograd saved s, not its clone; copy_ casts each piece into p's dtype"),
    )),
    "FixedDetect": Target(checks=("fixed_detect_tests",), mutants=(
        # modes and returns
        Mutant("ignores training mode", "self.training or self.export", "self.export"),
        Mutant("ignores export", "self.training or self.export", "self.training"),
        Mutant("always decodes (never raw only)", "raw_only = self.training or self.export", "raw_only = False"),
        Mutant("raw list returned reversed", "return x if raw_only", "return x[::-1] if raw_only"),
        Mutant("eval mode returns the decoded boxes only", "(torch.cat(z, 1), x)", "torch.cat(z, 1)"),
        Mutant("eval mode returns (raw, decoded)", "(torch.cat(z, 1), x)", "(x, torch.cat(z, 1))"),
        Mutant("z not concatenated (first level only)", "(torch.cat(z, 1), x)", "(z[0], x)"),
        # the grid
        Mutant("grid never rebuilt on a size change", "self.grid[i].shape[2:4] != x[i].shape[2:4] or ", ""),
        Mutant("grid built once, cached across sizes", "self.grid[i].shape[2:4] != x[i].shape[2:4] or "
               "self.grid[i].device != x[i].device", "self.grid[i].dim() == 1"),
        Mutant("grid compared on its height only", "self.grid[i].shape[2:4] != x[i].shape[2:4]",
               "self.grid[i].shape[2:3] != x[i].shape[2:3]"),
        Mutant("grid compared on its width only", "self.grid[i].shape[2:4] != x[i].shape[2:4]",
               "self.grid[i].shape[3:4] != x[i].shape[3:4]"),
        Mutant("grid (nx, ny) swapped", "self._make_grid(nx, ny)", "self._make_grid(ny, nx)"),
        Mutant("one grid for every level", "decode(x[i], self.grid[i],", "decode(x[i], self.grid[0],"),
        # devices (the meta cases)
        Mutant("grid left on the CPU", "self._make_grid(nx, ny).to(x[i].device)", "self._make_grid(nx, ny)"),
        Mutant("grid kept after a device change", " or self.grid[i].device != x[i].device", ""),
        Mutant("the stride as a 1-element CPU tensor", "self.stride[i])", "self.stride[i:i + 1])"),
        # shapes
        Mutant("(ny, nx) unpacked as (nx, ny)", "bs, _, ny, nx = x[i].shape", "bs, _, nx, ny = x[i].shape"),
        Mutant("view without the permute", "x[i].view(bs, self.na, self.no, ny, nx).permute(0, 1, 3, 4, 2)",
               "x[i].view(bs, self.na, ny, nx, self.no)"),
        Mutant("permute (0, 1, 4, 3, 2)", "permute(0, 1, 3, 4, 2)", "permute(0, 1, 4, 3, 2)"),
        Mutant("decoded level viewed as (bs, no, -1)", "y.view(bs, -1, self.no)",
               "y.view(bs, self.no, -1).transpose(1, 2)"),
        Mutant("level 0's anchors everywhere", "self.anchor_grid[i]", "self.anchor_grid[0]"),
        # autograd
        Mutant("decode of detached features", "decode(x[i],", "decode(x[i].detach(),"),
        Mutant("decoded level detached", "z.append(y.view(bs, -1, self.no))", "z.append(y.view(bs, -1, self.no).detach())"),
        Mutant("the legacy in-place decode", "y = decode(", "y = legacy_decode("),
        # equivalent rewrites
        Mutant("no .contiguous()", ".permute(0, 1, 3, 4, 2).contiguous()", ".permute(0, 1, 3, 4, 2)",
               equivalent="the raw maps' values do not depend on their layout, and decode's torch.cat "
                          "returns a new contiguous tensor to view"),
        Mutant("grid made on the device directly", "self._make_grid(nx, ny).to(x[i].device)",
               "make_grid(nx, ny, device=x[i].device)", equivalent="the same float32 grid, on x[i]'s device"),
        Mutant("the stride as a Python float", "self.stride[i])", "float(self.stride[i]))",
               equivalent="the stride is a 0-dim tensor: the same number"),
    )),
    "attack": Target(checks=("attack_tests",), mutants=(
        Mutant("wrong sign of the step (ascent)", "- step * grad.sign()", "+ step * grad.sign()"),
        Mutant("no clamp to eps", ".clamp(-eps, eps)", ""),
        Mutant("clamp to a fixed 16/255", ".clamp(-eps, eps)", ".clamp(-16 / 255, 16 / 255)"),
        Mutant("no clamp to [0, 1]", "delta = (image + delta).clamp(0, 1) - image", "pass"),
        Mutant("step size 0", "step = 2.5 * eps / steps", "step = 0.0"),
        Mutant("step size ignores steps (2.5 * eps / 10)", "step = 2.5 * eps / steps", "step = 2.5 * eps / 10"),
        Mutant("a tiny step (eps / 255 / steps)", "step = 2.5 * eps / steps", "step = eps / 255 / steps"),
        Mutant("raw gradient instead of its sign", "step * grad.sign()", "step * grad"),
        Mutant("returns image + delta", "return delta.detach()", "return (image + delta).detach()"),
        Mutant("returns the clamped image, not delta", "(image + delta).clamp(0, 1) - image",
               "(image + delta).clamp(0, 1)"),
        Mutant("returns -delta", "return delta.detach()", "return -delta.detach()"),
        Mutant("ignores steps (always 10)", "range(steps)", "range(10)"),
        Mutant("one step fewer", "range(steps)", "range(steps - 1)"),
        Mutant("a single step", "range(steps)", "range(1)"),
        Mutant("minimises the lowest objectness", "decoded[..., 4].amax()", "decoded[..., 4].amin()"),
        Mutant("attacks the box width instead of the objectness", "decoded[..., 4]", "decoded[..., 2]"),
        Mutant("gradient of the clean image (delta unused)", "model(image + delta)", "model(image + 0 * delta.detach())"),
        Mutant("writes the result into the image", "    return delta.detach()",
               "    image += delta\n    return delta.detach()"),
        Mutant("no detach between steps, gradient read from delta.grad",
               "(grad,) = torch.autograd.grad(best, delta)\n        delta = (delta.detach() - step",
               "best.backward()\n        grad = delta.grad\n        delta = (delta - step"),
        Mutant("only the last step kept", "delta = (delta.detach() - step * grad.sign())",
               "delta = (torch.zeros_like(delta) - step * grad.sign())"),
        Mutant("a second gradient per step", "        (grad,) = torch.autograd.grad(best, delta)\n",
               "        (grad,) = torch.autograd.grad(best, delta)\n"
               "        torch.autograd.grad(model(image + delta)[0][..., 4].amax(), delta)\n"),
        Mutant("the objectness read for the progress bar at each step",
               "    for _ in tqdm(range(steps), desc=\"PGD\", leave=False):\n",
               "    bar = tqdm(range(steps), desc=\"PGD\", leave=False)\n    for _ in bar:\n"
               "        bar.set_postfix(objectness=float(model(image + delta)[0][..., 4].amax()))\n",
               equivalent="an evaluation that is not differentiated is no gradient step"),
        Mutant("the objectness read after each step, grad mode on", "        delta = (image + delta).clamp(0, 1) - image\n",
               "        delta = (image + delta).clamp(0, 1) - image\n"
               "        shown = best_objectness(model, image + delta).item()\n",
               equivalent="an evaluation that is not differentiated is no gradient step"),
        Mutant("delta made on the CPU", "delta = torch.zeros_like(image)", "delta = torch.zeros(image.shape)",
               equivalent=_gpu_only("the image is on the CPU too")),
        Mutant("no detach between steps, autograd.grad", "delta = (delta.detach() - step", "delta = (delta - step",
               equivalent="autograd.grad with respect to the current delta (a non-leaf) is the same gradient; "
                          "the earlier steps' graph is only kept alive, never used"),
        Mutant("backward() into delta.grad", "(grad,) = torch.autograd.grad(best, delta)",
               "best.backward()\n        grad = delta.grad",
               equivalent="delta is a new leaf each step and the weights are frozen: the same gradient"),
        Mutant("the raw objectness logit", "decoded, _ = model(image + delta)\n        best = decoded[..., 4].amax()",
               "_, raw = model(image + delta)\n        best = torch.cat([r[..., 4].flatten() for r in raw]).amax()",
               equivalent="sigmoid is increasing: the same best cell and the same gradient signs"),
    )),
}
