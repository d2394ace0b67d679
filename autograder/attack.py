"""Assignment 3 (``03_yolo_head``): checks of a student's decode / head / attack, references, plots.

The notebook's test cells stay short by calling the ``check_*`` functions here. Each check
fails through :mod:`autograder.checks` (``CheckFailed``, an ``AssertionError``) with a message
that names the mistake it caught and what to try next.

What each check catches
-----------------------
``check_decode_matches_legacy``  values equal the release-5.0 decode under ``no_grad`` over varied
    shapes (batch 1-4, nc 1-80, non-square maps) and dtypes: missing ``- 0.5``, no square in the
    width/height, dropped class columns, a wrong stride or anchor factor.
``check_decode_contract``  same shape, dtype and device as ``p``; a float16 ``p`` with a float32
    grid gives float16 (``torch.cat`` promotes mixed dtypes); ``p`` is left unchanged. Tensors made
    on the CPU inside ``decode`` only fail on a CUDA grader: on a CPU-only machine every tensor is a
    CPU tensor, so that mistake cannot be seen there.
``check_decode_gradients``  gradients reach ``p`` and equal autograd of the out-of-place formula
    in float64: catches ``no_grad``, ``.detach()``, ``.data`` writes, identity saved-tensor hooks
    (no error, wrong gradient), and writes left in place (backward raises).
``check_decode_no_inplace``  no write on a tensor autograd saved, seen at the dispatch level by
    :func:`autograder.inplace.assert_no_inplace_on_saved` (not by reading source text).
``check_fixed_detect``  a drop-in head: subclass of ``LegacyDetect``, strict state-dict load, same
    outputs for nl = 1-3 levels, gradients reach the input features and a TinyDetector's image.
``check_attack``  budget (L-inf), image range, and a drop of the best objectness on held-out images.

References: :func:`decode_reference` (float64 autograd truth), :class:`ReferenceFixedDetect`,
:func:`pgd_attack`; plots: :func:`show_attack`. Wrong decodes used by the notebook's
demonstrations and the unit tests: :data:`SILENT_FIXES`.
"""
from __future__ import annotations

import contextlib
import io

import torch

from .checks import call_student, check_tensor, check_true, fail, tolerances
from .inplace import InplaceOnSavedError, assert_no_inplace_on_saved, explain, why_backward_fails
from .runtime import test_configs
from .yolo import LegacyDetect, legacy_decode, make_grid, reference_decode

__all__ = [
    "DECODE_CASES", "HEAD_CASES", "ATTACK_SEED", "ATTACK_EPS", "ATTACK_STEPS", "ATTACK_MARGIN",
    "decode_case", "decode_reference", "ReferenceFixedDetect", "SILENT_FIXES", "compare_silent_fixes",
    "check_decode_matches_legacy", "check_decode_contract", "check_decode_gradients",
    "check_decode_no_inplace", "check_fixed_detect", "check_attack",
    "pgd_attack", "attack_effect", "show_attack", "draw_detections",
]

# Varied level shapes (bs, na, ny, nx, nc, stride): batch 1-4, nc 1-80, non-square maps.
# ``stride`` is a float or, like ``head.stride[i]``, a 0-dim float32 tensor.
DECODE_CASES = (
    dict(bs=1, na=3, ny=4, nx=4, nc=1, stride=8.0),
    dict(bs=2, na=3, ny=3, nx=5, nc=80, stride=16.0),
    dict(bs=4, na=2, ny=6, nx=2, nc=3, stride="tensor32"),
    dict(bs=3, na=1, ny=1, nx=7, nc=20, stride=4.0),
)
# Heads with 1, 2 and 3 levels: (nc, anchors, ch, feature-map sizes (ny, nx), strides).
HEAD_CASES = (
    dict(nc=1, anchors=((10, 13, 16, 30, 33, 23),), ch=(4,), sizes=((3, 5),), strides=(8.0,)),
    dict(nc=3, anchors=((9, 9, 12, 12, 15, 15), (18, 18, 22, 22, 27, 27)), ch=(6, 5),
         sizes=((4, 6), (2, 3)), strides=(8.0, 16.0)),
    dict(nc=80, anchors=((10, 13, 16, 30), (30, 61, 62, 45), (116, 90, 156, 198)), ch=(3, 4, 5),
         sizes=((6, 4), (3, 2), (2, 1)), strides=(8.0, 16.0, 32.0)),
)

# The attack test: images from a seed the notebook never uses (the notebook uses 3; training 0;
# detector.EVAL_SEED is for detector quality), a budget of 16/255 and 10 PGD steps.
ATTACK_SEED = 31337
ATTACK_N = 4
ATTACK_EPS = 16 / 255
ATTACK_STEPS = 10
ATTACK_MARGIN = 0.03  # required drop of the mean best objectness (a plain PGD gets 0.04-0.35)


# --------------------------------------------------------------------------- inputs

def decode_case(bs=2, na=3, ny=4, nx=5, nc=3, stride=8.0, *, dtype=torch.float32, device="cpu",
                anchor_dtype=torch.float32, requires_grad=False, seed=0):
    """Inputs for ``decode(p, grid, anchor_grid, stride)`` on one level.

    ``grid`` is float32 whatever ``dtype`` (as in release 5.0, where ``_make_grid`` ignores the
    model's dtype), ``anchor_grid`` has ``anchor_dtype``; ``p`` holds moderate logits so every
    column matters. Returns ``(p, grid, anchor_grid, stride)``.
    """
    gen = torch.Generator().manual_seed(seed)
    no = nc + 5
    # Logits within +-4 (+-3 in float16): beyond that sigmoid saturates and its derivative y * (1 - y),
    # computed from a rounded y, loses most of its digits in half precision, for every correct answer.
    bound = 3.0 if dtype in (torch.float16, torch.bfloat16) else 4.0
    p = (torch.randn(bs, na, ny, nx, no, generator=gen, dtype=torch.float64) * 1.5).clamp(-bound, bound)
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
    return (f"p {str(p.dtype).replace('torch.', '')} (bs={bs}, na={na}, ny={ny}, nx={nx}, no={no}, "
            f"i.e. nc={no - 5}) on {p.device}, stride {s}")


def decode_reference(p, grid, anchor_grid, stride):
    """The decode's truth in float64: values and (through autograd) gradients."""
    s = stride.double() if isinstance(stride, torch.Tensor) else float(stride)
    return reference_decode(p.double(), grid.double(), anchor_grid.double(), s)


def _call_decode(decode, p, grid, anchor_grid, stride):
    """Call the student's decode; a device mix-up gets its own hint."""
    try:
        return call_student(decode, p, grid, anchor_grid, stride, name="decode")
    except AssertionError as err:
        text = str(err)
        if "same device" in text or "Expected all tensors to be on" in text or "not on the expected device" in text:
            line = next((l for l in text.splitlines() if "device" in l and "try next" not in l), "")
            fail("decode mixes devices", inputs=_describe_case(p, stride), detail=line.strip()[:300],
                 hint="a tensor made inside decode lives on the CPU while p is on the GPU: "
                      "create it with device=p.device (or derive it from p: torch.zeros_like, "
                      "p.new_tensor), or avoid new tensors: plain numbers broadcast on any device.")
        raise


# --------------------------------------------------------------------------- decode checks

def _diagnose_values(got, expected, p, grid, anchor_grid, stride, what):
    """Name the first column group that is wrong, with the most likely mistake."""
    tol = tolerances(p.dtype)
    g, e = got.detach().to(expected.device, torch.float64), expected.detach().double()
    s = p.detach().double().sigmoid()
    st = float(stride)
    ag = anchor_grid.double()
    groups = ((slice(0, 2), "x, y (columns 0:2)"), (slice(2, 4), "w, h (columns 2:4)"),
              (slice(4, None), "objectness and classes (columns 4:)"))
    for cols, name in groups:
        if torch.allclose(g[..., cols], e[..., cols], **tol):
            continue
        hint = ""
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
        diff = (g[..., cols] - e[..., cols]).abs()
        k = int(diff.argmax())
        idx = tuple(int(i) for i in torch.unravel_index(torch.tensor(k), diff.shape))
        fail(f"{what}: wrong values in {name}", inputs=_describe_case(p, stride),
             expected=f"{float(e[..., cols].flatten()[k]):.6g} at index {idx} of those columns",
             got=f"{float(g[..., cols].flatten()[k]):.6g}", hint=hint)


def _check_shape(y, p, stride, what):
    check_tensor(y, what, hint="decode must return the decoded tensor.")
    if tuple(y.shape) != tuple(p.shape):
        hint = "keep every dimension of p."
        if y.dim() == p.dim() and y.shape[:-1] == p.shape[:-1] and y.shape[-1] < p.shape[-1]:
            hint = (f"the last dimension must stay no = nc + 5 = {p.shape[-1]}: x, y, w, h, objectness and "
                    f"every class score. Join the rest too: torch.cat((xy, wh, s[..., 4:]), -1).")
        fail(f"{what} has the wrong shape (dropped columns?)", inputs=_describe_case(p, stride),
             expected=str(tuple(p.shape)), got=str(tuple(y.shape)), hint=hint)


def check_decode_matches_legacy(decode, configs=None, cases=DECODE_CASES):
    """Values of ``decode`` == ``legacy_decode`` under ``no_grad``, for every case and config."""
    for device, dtype in configs or test_configs():
        for k, case in enumerate(cases):
            p, grid, ag, stride = decode_case(**case, dtype=dtype, device=device,
                                              anchor_dtype=torch.float32 if k % 2 else dtype, seed=k)
            with torch.no_grad():
                expected = legacy_decode(p.clone(), grid, ag, stride)
                y = _call_decode(decode, p.clone(), grid, ag, stride)
            _check_shape(y, p, stride, "decode(p, ...)")
            _diagnose_values(y, expected, p, grid, ag, stride, "decode(p, ...) differs from the legacy decode")


def check_decode_contract(decode, device=None):
    """Same shape, dtype and device as ``p``; float16 stays float16; ``p`` untouched."""
    device = torch.device(device) if device is not None else test_configs()[-1][0]
    for dtype, anchor_dtype in ((torch.float16, torch.float32), (torch.float16, torch.float16),
                                (torch.float64, torch.float32), (torch.float32, torch.float32)):
        p, grid, ag, stride = decode_case(2, 3, 3, 4, 2, 8.0, dtype=dtype, device=device,
                                          anchor_dtype=anchor_dtype, seed=11)
        before = p.clone()
        y = _call_decode(decode, p, grid, ag, stride)
        what = (f"decode(p {str(dtype).replace('torch.', '')}, grid float32, anchor_grid "
                f"{str(anchor_dtype).replace('torch.', '')})")
        _check_shape(y, p, stride, what)
        check_tensor(y, what, dtype=dtype, hint=(
            "the result must have p's dtype. In float16 the grid is float32, and torch.cat of a float16 "
            "piece with a float32 piece promotes to float32: cast each piece with .to(p.dtype) before cat."))
        if y.device != p.device:
            fail(f"{what} is on the wrong device", expected=str(p.device), got=str(y.device),
                 hint="build the result from p and tensors on p.device (device=p.device).")
        check_true(y is not p and torch.equal(p, before), f"{what} changed its input p",
                   hint="decode must leave p alone: start from s = p.sigmoid() (a new tensor), never p.sigmoid_().")


def check_decode_gradients(decode, configs=None, cases=DECODE_CASES[:3]):
    """Backward works and d(sum(w * decode(p)))/dp equals the float64 out-of-place reference."""
    for device, dtype in configs or test_configs():
        for k, case in enumerate(cases):
            p, grid, ag, stride = decode_case(**case, dtype=dtype, device=device, requires_grad=True,
                                              anchor_dtype=torch.float32 if k % 2 else dtype, seed=20 + k)
            where = _describe_case(p, stride)
            y = _call_decode(decode, p, grid, ag, stride)
            _check_shape(y, p, stride, "decode(p, ...)")
            if not y.requires_grad:
                fail("decode(p, ...) is cut off from p: no gradient can reach p", inputs=where,
                     expected="a result with a grad_fn (requires_grad=True)", got=describe_grad(y),
                     hint="no torch.no_grad() and no .detach() in decode: they silence the error by "
                          "throwing the graph away, so an attack gets no gradient. Build the result out "
                          "of place instead (torch.cat of the pieces).")
            w = torch.randn(y.shape, generator=torch.Generator().manual_seed(5 + k), dtype=torch.float64)
            try:
                (g,) = torch.autograd.grad((y.double() * w.to(y.device)).sum(), p)
            except RuntimeError as err:
                report = why_backward_fails(lambda q: decode(q, grid, ag, stride), p) or explain(err)
                fail("backward through decode(p, ...) failed", inputs=where,
                     detail=(report or str(err))[:1500],
                     hint="a tensor autograd saved (sigmoid's output) was written in place. Compute the "
                          "xy and wh parts as new tensors and join them with torch.cat.")
            p64 = p.detach().double().requires_grad_(True)
            (g_ref,) = torch.autograd.grad((decode_reference(p64, grid, ag, stride) * w.to(p.device)).sum(), p64)
            tol = tolerances(dtype)
            if not torch.allclose(g.double(), g_ref, **tol):
                diff = (g.double() - g_ref).abs()
                cols = [name for c, name in ((slice(0, 2), "x, y"), (slice(2, 4), "w, h"),
                                             (slice(4, None), "objectness/classes"))
                        if not torch.allclose(g.double()[..., c], g_ref[..., c], **tol)]
                with torch.no_grad():
                    values_ok = torch.allclose(y.detach().double(), decode_reference(p, grid, ag, stride), **tol)
                hint = ("the values are right but the gradient is not: a write hidden from autograd "
                        "(.data, or saved-tensor hooks that return the same tensor) lets backward use the "
                        "decoded numbers instead of sigmoid's output. Don't hide the write: build new "
                        "tensors (torch.cat), or write into a clone." if values_ok else
                        "the gradient follows your formula; fix the values first (see the "
                        "decode_matches_legacy test), e.g. the square in (2*s)**2 * anchor_grid.")
                k_max = int(diff.argmax())
                fail("decode's gradient with respect to p is wrong", inputs=where,
                     expected=f"{float(g_ref.flatten()[k_max]):.6g} (autograd of the out-of-place formula, float64)",
                     got=f"{float(g.double().flatten()[k_max]):.6g}",
                     detail=f"wrong for the columns: {', '.join(cols)}",
                     hint=hint)


def describe_grad(y) -> str:
    return f"requires_grad={y.requires_grad}, grad_fn={type(y.grad_fn).__name__ if y.grad_fn else None}"


def check_decode_no_inplace(decode, configs=None, cases=DECODE_CASES[:2]):
    """No in-place write on a tensor autograd saved, checked at the dispatch level."""
    for device, dtype in configs or test_configs():
        for k, case in enumerate(cases):
            p, grid, ag, stride = decode_case(**case, dtype=dtype, device=device, requires_grad=True, seed=40 + k)
            try:
                assert_no_inplace_on_saved(_call_decode, decode, p, grid, ag, stride)
            except InplaceOnSavedError as err:
                fail("decode writes in place into a tensor autograd saved for backward",
                     inputs=_describe_case(p, stride), detail=err.report,
                     hint="the lines named above write into sigmoid's output, which backward needs. "
                          "Compute new tensors and torch.cat them, or write into y.clone().")


# --------------------------------------------------------------------------- the head

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


def _make_heads(head_cls, case, device, dtype, seed):
    torch.manual_seed(seed)
    args = dict(nc=case["nc"], anchors=case["anchors"], ch=case["ch"])
    legacy = LegacyDetect(**args)
    try:
        head = head_cls(**args)
    except Exception as err:  # noqa: BLE001
        fail(f"FixedDetect(nc=..., anchors=..., ch=...) raised {type(err).__name__}", detail=str(err)[:400],
             hint="keep LegacyDetect's constructor: don't define __init__, or call super().__init__(nc, anchors, ch).")
    try:
        head.load_state_dict(legacy.state_dict(), strict=True)
    except Exception as err:  # noqa: BLE001
        fail("FixedDetect does not load LegacyDetect's state dict (strict=True)", detail=str(err)[:600],
             hint="add no parameter or buffer and rename none: a drop-in head has the same state dict.")
    for h in (legacy, head):
        h.stride = torch.tensor(case["strides"])
        h.to(device, dtype)
    return legacy, head


def _features(case, bs, device, dtype, seed, requires_grad=False):
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(bs, c, ny, nx, generator=gen, dtype=torch.float64).to(device, dtype)
            .requires_grad_(requires_grad) for c, (ny, nx) in zip(case["ch"], case["sizes"])]


def check_fixed_detect(head_cls, configs=None):
    """``head_cls`` is a drop-in replacement of LegacyDetect whose decoded output is differentiable."""
    check_true(isinstance(head_cls, type), "FixedDetect is not a class", got=repr(head_cls)[:100],
               hint="write `class FixedDetect(LegacyDetect):` and run the cell.")
    check_true(issubclass(head_cls, LegacyDetect), "FixedDetect is not a LegacyDetect",
               expected="a subclass of LegacyDetect", got=str(head_cls.__mro__[1:]),
               hint="class FixedDetect(LegacyDetect): keeps the constructor, the buffers and _make_grid.")
    for device, dtype in configs or test_configs():
        for k, case in enumerate(HEAD_CASES):
            where = f"nl={len(case['ch'])}, nc={case['nc']}, {str(dtype).replace('torch.', '')} on {device}"
            legacy, head = _make_heads(head_cls, case, device, dtype, seed=100 + k)
            bs = 1 + k
            feats = _features(case, bs, device, dtype, seed=200 + k)
            # eval mode, no_grad: (decoded, raw list) equal to the legacy head's
            legacy.eval(), head.eval()
            with torch.no_grad():
                exp_dec, exp_raw = legacy(list(feats))
                out = call_student(head, list(feats), name="FixedDetect.forward")
            check_true(isinstance(out, tuple) and len(out) == 2, "FixedDetect in eval mode must return (decoded, raw list)",
                       got=type(out).__name__, inputs=where, hint="return (torch.cat(z, 1), x), like LegacyDetect.")
            dec, raw = out
            check_tensor(dec, "FixedDetect(...)[0] (the decoded boxes)", shape=tuple(exp_dec.shape),
                         hint="view each level's decode as (bs, -1, no) and torch.cat them on dim 1.")
            if not torch.allclose(dec.double(), exp_dec.double(), **tolerances(dtype)):
                fail("FixedDetect's decoded output differs from LegacyDetect's", inputs=where,
                     hint="same convs, same permute, then decode(x[i], self.grid[i], self.anchor_grid[i], "
                          "self.stride[i]) for each level; if decode's own tests fail, fix decode first.")
            for i, (r, e) in enumerate(zip(raw, exp_raw)):
                check_true(torch.allclose(r.double(), e.double(), **tolerances(dtype)),
                           f"FixedDetect's raw level output {i} differs", inputs=where,
                           hint="x[i] must be the permuted conv output (bs, na, ny, nx, no), as in LegacyDetect.")
            # training mode: the raw list only
            legacy.train(), head.train()
            with torch.no_grad():
                out = call_student(head, list(feats), name="FixedDetect.forward")
            check_true(isinstance(out, list) and len(out) == len(exp_raw), "FixedDetect in training mode must "
                       "return the list of raw level outputs", got=type(out).__name__, inputs=where,
                       hint="keep `raw_only = self.training or self.export` and its early return.")
            # gradients reach every feature map and match the reference head
            head.eval()
            ref = ReferenceFixedDetect(nc=case["nc"], anchors=case["anchors"], ch=case["ch"])
            ref.load_state_dict(legacy.state_dict())
            ref.stride = legacy.stride
            ref.to(device, dtype).eval()
            f_ref = _features(case, bs, device, dtype, seed=300 + k, requires_grad=True)
            f_stu = [f.detach().clone().requires_grad_(True) for f in f_ref]
            dec = call_student(head, list(f_stu), name="FixedDetect.forward")[0]
            if not dec.requires_grad:
                fail("no gradient can flow back through FixedDetect", inputs=where, got=describe_grad(dec),
                     hint="the decode inside the head must keep the graph: no torch.no_grad(), no .detach().")
            w = torch.randn(dec.shape, generator=torch.Generator().manual_seed(7), dtype=torch.float64).to(device)
            try:
                grads = torch.autograd.grad((dec.double() * w).sum(), f_stu, allow_unused=True)
            except RuntimeError as err:
                report = why_backward_fails(lambda *f: head(list(f))[0], *f_stu) or explain(err)
                fail("backward through FixedDetect failed", inputs=where, detail=(report or str(err))[:1500],
                     hint="FixedDetect must decode with your out-of-place decode, not LegacyDetect's in-place lines.")
            refs = torch.autograd.grad((ref(list(f_ref))[0].double() * w).sum(), f_ref)
            for i, (g, gr) in enumerate(zip(grads, refs)):
                check_true(g is not None, f"no gradient reaches level {i}'s input", inputs=where,
                           hint="every level must go through decode and into the torch.cat.")
                check_true(torch.allclose(g.double(), gr.double(), **tolerances(dtype)),
                           f"wrong gradient at level {i}'s input features", inputs=where,
                           hint="the decode's gradient is wrong (see decode_gradients tests): a write hidden "
                                "from autograd (.data, saved-tensor hooks) gives wrong box gradients.")
    _check_detector_gradient(head_cls)


def _check_detector_gradient(head_cls):
    """The head swapped into a TinyDetector: d(max objectness)/d(image) exists and is right."""
    from .detector import TinyDetector, synthetic_batch

    torch.manual_seed(3)
    base = TinyDetector().double().eval()
    images, _ = synthetic_batch(2, seed=ATTACK_SEED + 1)
    grads = []
    for cls in (head_cls, ReferenceFixedDetect):
        model = base.with_head(cls)
        x = images.double().clone().requires_grad_(True)
        out = call_student(model, x, name="TinyDetector with FixedDetect")[0]
        try:
            (g,) = torch.autograd.grad(out[..., 4].amax(1).sum() + out[..., :4].mean(), x)
        except RuntimeError as err:
            report = why_backward_fails(lambda im: model(im)[0], x) or explain(err)
            fail("d(max objectness)/d(image) fails with FixedDetect in a TinyDetector",
                 detail=(report or str(err))[:1500],
                 hint="model.with_head(FixedDetect) must be differentiable end to end in eval mode.")
        grads.append(g)
    check_true(torch.allclose(grads[0], grads[1], rtol=1e-6, atol=1e-9),
               "d(output)/d(image) through a TinyDetector with your FixedDetect is wrong",
               hint="compare your decode's gradient with the out-of-place formula's (decode_gradients tests).")


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
    """Run each 'fix' of the legacy decode; return rows (name, error?, d obj/dp ok?, d box/dp ok?).

    Gradients are compared with autograd of the out-of-place formula (float64). "none" means no
    gradient reaches p at all.
    """
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


# --------------------------------------------------------------------------- the attack

def pgd_attack(model, image, eps, steps, step_size=None, progress=False):
    """Reference PGD on the best objectness (sign gradients, L-inf ball, image range)."""
    from .detector import best_objectness

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


def attack_model(device="cpu"):
    """The pretrained detector with the course's differentiable head, frozen, eval mode."""
    from .detector import load_pretrained

    model = load_pretrained(device).with_head(ReferenceFixedDetect).eval()
    for prm in model.parameters():
        prm.requires_grad_(False)
    return model


@torch.no_grad()
def attack_effect(model, images, delta):
    """(best objectness before, after) per image, plus detection counts (conf 0.5)."""
    from .detector import best_objectness, detect

    before, after = best_objectness(model, images), best_objectness(model, images + delta)
    n_before = [len(d) for d in detect(model, images)]
    n_after = [len(d) for d in detect(model, images + delta)]
    return before, after, n_before, n_after


def check_attack(attack, device=None, eps=ATTACK_EPS, steps=ATTACK_STEPS, margin=ATTACK_MARGIN):
    """Budget, range and effect of the student's attack on held-out images, one image at a time."""
    from .detector import best_objectness, synthetic_batch

    device = torch.device(device) if device is not None else test_configs()[-1][0]
    model = attack_model(device)
    images, _ = synthetic_batch(ATTACK_N, seed=ATTACK_SEED)
    images = images.to(device)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    deltas = []
    for i in range(ATTACK_N):
        image = images[i:i + 1].clone()
        with contextlib.redirect_stderr(io.StringIO()):  # a text progress bar must not zero the test
            delta = call_student(attack, model, image, eps, steps, name="attack")
        what = f"attack(model, image {i}, eps={eps:.4f}, steps={steps})"
        check_tensor(delta, what, shape=tuple(image.shape),
                     hint="return the perturbation delta itself (same shape as image), not image + delta.")
        delta = delta.detach().to(device, image.dtype)
        check_true(bool(torch.isfinite(delta).all()), f"{what} has NaN or inf", hint="clamp, don't divide.")
        check_true(torch.equal(image, images[i:i + 1]), f"{what} changed the image it was given",
                   hint="work on a delta tensor; never write into image.")
        worst = float(delta.abs().max())
        check_true(worst <= eps * (1 + 1e-5) + 1e-7, f"{what} exceeds the budget",
                   expected=f"|delta| <= eps = {eps:.6f} everywhere (L-inf)", got=f"max |delta| = {worst:.6f}",
                   hint="after each step: delta = delta.clamp(-eps, eps).")
        adv = image + delta
        lo, hi = float(adv.min()), float(adv.max())
        check_true(lo >= -1e-6 and hi <= 1 + 1e-6, f"{what}: image + delta leaves [0, 1]",
                   expected="0 <= image + delta <= 1", got=f"min {lo:.4f}, max {hi:.4f}",
                   hint="after the budget clamp: delta = (image + delta).clamp(0, 1) - image.")
        deltas.append(delta)
    for k, v in model.state_dict().items():
        check_true(torch.equal(v, state[k]), "attack changed the model's weights",
                   hint="only delta moves; take gradients with torch.autograd.grad(loss, delta).")
    delta = torch.cat(deltas)
    with torch.no_grad():
        before = best_objectness(model, images)
        after = best_objectness(model, images + delta)
    drop = float((before - after).mean())
    check_true(drop >= margin, "the attack does not lower the best objectness enough",
               inputs=f"{ATTACK_N} held-out images, eps={eps:.4f}, steps={steps}",
               expected=f"mean drop >= {margin}",
               got=f"mean drop {drop:.4f} (before {float(before.mean()):.3f}, after {float(after.mean()):.3f})",
               hint="step *against* the gradient: delta = delta - step * grad.sign(), with a step of about "
                    "2.5 * eps / steps; the loss is the best objectness (max over cells and anchors).")
    return before, after


# --------------------------------------------------------------------------- plots

def draw_detections(ax, image, dets, title="", classes=None):
    """Show ``image`` (3, H, W) with ``dets`` (list of (box_xyxy, score, cls)) on a matplotlib axis."""
    from matplotlib.patches import Rectangle

    from .detector import CLASSES

    classes = classes or CLASSES
    colours = ("tab:red", "tab:cyan", "tab:olive")
    ax.imshow(image.detach().cpu().permute(1, 2, 0).clamp(0, 1).numpy(), interpolation="nearest")
    for box, score, c in dets:
        x1, y1, x2, y2 = (float(v) for v in box)
        ax.add_patch(Rectangle((x1, y1), x2 - x1, y2 - y1, fill=False, lw=1.5, ec=colours[c % 3]))
        ax.text(x1, y1 - 1, f"{classes[c]} {score:.2f}", color=colours[c % 3], fontsize=7,
                bbox=dict(fc="white", alpha=0.6, pad=0.5, lw=0))
    ax.set_title(title, fontsize=9)
    ax.axis("off")


def show_attack(model, image, delta, eps=None, conf=0.5):
    """Figure: detections before, after, and the perturbation (scaled to +-eps). Returns the figure."""
    import matplotlib.pyplot as plt

    from .detector import best_objectness, detect

    image = image[:1]
    delta = delta[:1].to(image.device)
    eps = eps or float(delta.abs().max()) or 1.0
    with torch.no_grad():
        b, a = float(best_objectness(model, image)), float(best_objectness(model, image + delta))
    d0, d1 = detect(model, image, conf=conf)[0], detect(model, image + delta, conf=conf)[0]
    fig, axes = plt.subplots(1, 3, figsize=(9, 3.3))
    draw_detections(axes[0], image[0], d0, f"before: best objectness {b:.3f}\n{len(d0)} detection(s)")
    draw_detections(axes[1], (image + delta)[0], d1, f"after: best objectness {a:.3f}\n{len(d1)} detection(s)")
    shown = (delta[0].detach().cpu() / (2 * eps) + 0.5).clamp(0, 1)
    axes[2].imshow(shown.permute(1, 2, 0).numpy(), interpolation="nearest")
    axes[2].set_title(f"perturbation (grey = 0, ±{eps * 255:.0f}/255)", fontsize=9)
    axes[2].axis("off")
    fig.tight_layout()
    return fig



# --------------------------------------------------------------------------- beyond the best box

def vanish_attack(model, images, eps, steps, threshold=0.25, progress=True):
    """PGD that pushes down *every* confident objectness, not just the best one.

    Lowering only the maximum moves the top cell a little while its neighbours stay above the
    detection threshold; summing the objectness of all cells above ``threshold`` attacks every
    box at once. Returns ``(delta, history)``: history holds the number of detections (conf 0.5)
    before the first step and after each step, for a plot.
    """
    from .detector import detect

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
        loss = (obj * (obj > threshold)).sum()
        (g,) = torch.autograd.grad(loss, delta)
        delta = (delta.detach() - step * g.sign()).clamp(-eps, eps)
        delta = (images + delta).clamp(0, 1) - images
        with torch.no_grad():
            history.append(sum(len(d) for d in detect(model, images + delta)))
    return delta.detach(), history


def show_vanish(model, images, delta, history, shown=4):
    """Figure: detections per image before/after for a few images, and detections left per step."""
    import matplotlib.pyplot as plt

    from .detector import detect

    with torch.no_grad():
        before, after = detect(model, images), detect(model, images + delta)
    fig = plt.figure(figsize=(10, 4.6))
    grid = fig.add_gridspec(2, shown + 1, width_ratios=[1] * shown + [1.6])
    for i in range(shown):
        draw_detections(fig.add_subplot(grid[0, i]), images[i], before[i], f"before: {len(before[i])}")
        draw_detections(fig.add_subplot(grid[1, i]), (images + delta)[i], after[i], f"after: {len(after[i])}")
    ax = fig.add_subplot(grid[:, shown])
    total = max(history)
    ax.plot(range(len(history)), history, marker="o", ms=3)
    ax.set_xlabel("PGD step")
    ax.set_ylabel(f"detections left in {len(images)} images")
    ax.set_ylim(0, total + 1)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig
