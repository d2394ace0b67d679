"""Assignment 1's references: the truths its judges find out by experiment, on the installed PyTorch.

The version-counter message (its reference parser, and :func:`provoke`, which makes backward raise
it — shipped to the probes too), the version program's truth, the saved-tensor experiment, the
reference decode and the fix-judging procedure (:func:`judge_decode`).
"""
from __future__ import annotations

import math
import os
import re
from typing import Any, Callable

import torch

from autograder.saved_tensors import VERSION_PROGRAM, decode_constants

# --------------------------------------------------------------------------- the message

#: PyTorch's version-counter message. Tolerant of the wordings seen across versions: the node is
#: printed as "Sigmoid" (2.13) or "SigmoidBackward0" (older); the "which is output N of ..." part is
#: absent when the saved tensor has no grad_fn (a leaf). Types may be legacy names
#: (``torch.cuda.HalfTensor``) or backend names (``CPUBFloat16Type``).
VERSION_ERROR_RE = re.compile(
    r"modified by an inplace operation: \[(?P<type>[\w.]+) \[(?P<shape>[\d, ]*)\]\]"
    r"(?:, which is output (?P<index>\d+) of (?P<node>[\w:]+),)?"
    r"\s*is at version (?P<now>\d+); expected version (?P<saved>\d+) instead")


def match_version_error(err: BaseException | str) -> dict | None:
    """The message's fields, or None if it is not the version-counter error (the reference parser)."""
    m = VERSION_ERROR_RE.search(str(err))
    if m is None:
        return None
    return {"tensor_type": m["type"],
            "shape": tuple(int(s) for s in m["shape"].replace(" ", "").split(",") if s),
            "node": m["node"], "version_now": int(m["now"]), "version_saved": int(m["saved"])}


def from_backward(frames: list) -> bool:
    """True if a traceback (``[(file, function), ...]``, as the probe reports it) passes through
    autograd's ``backward``/``grad`` in ``torch/autograd``: the error was not built and raised by hand."""
    marker = f"{os.sep}torch{os.sep}autograd{os.sep}"
    return any(isinstance(f, (list, tuple)) and len(f) == 2 and isinstance(f[0], str) and marker in f[0]
               and f[1] in {"backward", "grad", "_engine_run_backward"} for f in frames)


def provoke(spec: dict):
    """Make backward raise the version-counter error as ``spec`` says; return ``(err, facts)``.

    ``spec``: ``saved`` is "output" (``y = op(x)``, then writes into ``y``), "input" (``h = x * 2``,
    ``y = h ** 2`` saves ``h``, then writes into ``h``) or "constant" (``y = x * c``, ``c`` a tensor of
    ``dtype`` that needs no grad, so the message names no op); ``op`` (output only) one of sigmoid,
    tanh, exp, relu, sqrt, reciprocal; ``shape`` (rank 0 to 6, no zero size), ``dtype``, ``device``;
    ``pre`` writes before the save (input and constant: expected version > 0), ``writes`` after it;
    ``style`` of the writes: "slice" (slice assignments), "method" (``copy_`` with grad on) or
    "no_grad" (``copy_`` under ``torch.no_grad()``). ``facts``: what the tensor itself says.
    Used by the probe (a live exception for the student) and by the judge (the same scenario, here).
    """
    import torch

    dtype, device = getattr(torch, spec["dtype"]), torch.device(spec["device"])
    shape = tuple(spec["shape"])
    grad_dtype = dtype if (dtype.is_floating_point or dtype.is_complex) else torch.float32
    x = (torch.rand(shape, device=device).to(grad_dtype) + 0.5).requires_grad_()

    def write(t, n, style):
        for k in range(n):
            if style == "slice":
                idx = (..., slice(k % shape[-1], k % shape[-1] + 1)) if shape else (...,)
                t[idx] = t[idx].clone()
            elif style == "method":
                t.copy_(t.clone())
            else:
                with torch.no_grad():
                    t.copy_(t.clone())

    if spec["saved"] == "output":
        target = getattr(torch, spec["op"])(x)
        y = target
    elif spec["saved"] == "input":
        target = x * 2
        write(target, spec.get("pre", 0), "no_grad")
        y = target ** 2
    else:
        target = (torch.rand(shape, device=device) * 3 + 1).to(dtype)
        write(target, spec.get("pre", 0), "no_grad")
        y = x * target
    facts = {"shape": tuple(target.shape), "version_saved": int(target._version)}
    write(target, spec["writes"], spec.get("style", "slice"))
    facts["version_now"] = int(target._version)
    loss = y.abs().sum() if y.is_complex() else y.sum()
    try:
        loss.backward()
    except RuntimeError as err:
        return err, facts
    raise AssertionError(f"backward did not fail for {spec}: the experiment is broken")


# --------------------------------------------------------------------------- the version program


def run_version_program() -> list[int]:
    """Execute :data:`VERSION_PROGRAM` and read the versions (the truth, on this PyTorch)."""
    env: dict[str, Any] = {"torch": torch}
    out = []
    for statement, watched in VERSION_PROGRAM:
        exec(statement, env)  # noqa: S102 - our own fixed program
        out.append(int(eval(watched, env)._version))  # noqa: S307
    return out


# --------------------------------------------------------------------------- saved tensors


def build_op(source: str) -> Callable:
    """The op a case ships as text, built the way the probe builds it."""
    return eval(source, {"torch": torch, "math": math})  # noqa: S307


def saved_by_experiment(op: Callable, device="cpu", dtype=torch.float64) -> set[str]:
    """Which of {"input", "output"} ``op`` needs for backward: write into each and see whether
    backward refuses (the behaviour, not the attribute names)."""
    found = set()
    leaf = (torch.rand(2, 5, dtype=dtype, device=device) + 0.5).requires_grad_()
    for role in ("input", "output"):
        x = leaf.clone()  # a non-leaf: writable; clone saves nothing
        y = op(x)
        with torch.no_grad():
            (x if role == "input" else y).mul_(1.0)  # same values, version + 1
        try:
            y.sum().backward()
        except RuntimeError as err:
            if match_version_error(err) is None:
                raise
            found.add(role)
    return found


# --------------------------------------------------------------------------- the box decode


def reference_decode(p, grid, anchor_grid, stride):
    """The decode, out of place (safe to differentiate)."""
    s = p.sigmoid()
    centre = (s[..., 0:2] * 2 - 0.5 + grid) * stride
    size = (s[..., 2:4] * 2) ** 2 * anchor_grid
    return torch.cat([centre, size, s[..., 4:]], dim=-1)


def decode_outcome(decode: Callable, p: torch.Tensor, w: torch.Tensor, consts) -> dict:
    """Run ``decode`` and its backward on a fresh leaf copy of ``p``; report what happened."""
    leaf = p.detach().clone().requires_grad_()
    try:
        out = decode(leaf, *consts)
        if not out.requires_grad:
            return {"status": "no_gradient"}
        out.backward(w.to(out.device, out.dtype))
    except Exception as err:  # noqa: BLE001 - any exception is the outcome "error"
        return {"status": "error", "error": err}
    if leaf.grad is None:
        return {"status": "no_gradient"}
    return {"status": "ran", "grad": leaf.grad}


def judge_decode(decode: Callable, seed: int = 1, shape=(2, 3, 4, 5, 7)) -> str:
    """The truth for the fix-judging question: the task's own procedure, in float64 on the CPU."""
    gen = torch.Generator().manual_seed(seed)
    p = torch.randn(shape, generator=gen, dtype=torch.float64) * 2
    w = torch.randn(shape, generator=gen, dtype=torch.float64)
    consts = decode_constants(shape[2], shape[3], shape[1], dtype=torch.float64)
    ref = p.clone().requires_grad_()
    reference_decode(ref, *consts).backward(w)
    res = decode_outcome(decode, p, w, consts)
    if res["status"] != "ran":
        return res["status"]
    return "correct" if torch.allclose(res["grad"], ref.grad, rtol=1e-6, atol=1e-8) else "wrong_gradient"


def build_decode(source: str, name: str) -> Callable:
    env = {"torch": torch, "math": math, "__name__": "decode_case"}
    exec(source, env)  # noqa: S102 - the grader's own candidates
    return env[name]
