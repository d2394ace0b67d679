"""Assignment 3's references: the out-of-place decode and its float64 truth, the drop-in head, the
attacks and the attack's model — and the wrong "fixes" of the legacy decode (:data:`SILENT_FIXES`),
compared with the truth by :func:`compare_silent_fixes`."""
from __future__ import annotations

import torch

from autograder.yolo import LegacyDetect, legacy_decode

from .cases import decode_case


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
