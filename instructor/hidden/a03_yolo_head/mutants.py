"""Assignment 3's mutants: plausible wrong variants of each reference solution
(``python -m instructor.hidden.mutation 03_yolo_head``): each must fail a check, except those marked
equivalent (they must pass)."""
from __future__ import annotations

import torch

from ..mutation import Mutant, Target

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
        # hiding gradients from the count (issue 36): the stem's hooks cleared, a private copy, every counter off
        Mutant("the stem's hooks cleared, ten gradients per step", "    for _ in tqdm(range(steps),",
               "    model.stem._forward_pre_hooks.clear()\n    for _ in tqdm(range(10 * steps),"),
        Mutant("a private copy of the detector attacked, ten gradients per step", "    for _ in tqdm(range(steps),",
               "    from autograder.attack import attack_model\n    model = attack_model(image.device)\n"
               "    for _ in tqdm(range(10 * steps),"),
        Mutant("every counter switched off (hooks cleared, dispatch modes popped), ten gradients per step",
               "    for _ in tqdm(range(steps),",
               "    hooks = dict(model.stem._forward_pre_hooks)\n    model.stem._forward_pre_hooks.clear()\n"
               "    modes = [torch._C._pop_torch_dispatch_stack(None) for _ in "
               "range(torch._C._len_torch_dispatch_stack())]\n"
               "    for _ in tqdm(range(10 * steps),"),
        Mutant("a private copy of the detector attacked, one gradient per step", "    for _ in tqdm(range(steps),",
               "    from autograder.attack import attack_model\n    model = attack_model(image.device)\n"
               "    for _ in tqdm(range(steps),",
               equivalent="the same frozen detector gives the same gradients, one per step; the dispatch mode "
                          "counts a copy's first convolution too"),
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
