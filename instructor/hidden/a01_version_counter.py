"""Assignment 1 (the version counter): hidden checks, as probes (sandbox) and judges (grader).

Everything a judge needs to know about PyTorch is found out here, in the grader, *by experiment* on
the installed version, never read from a table and never taken from the sandbox: which tensors an op
saves (write into each and see whether backward refuses), what ``_version`` becomes after each line
of the version program (run it), what the "modified by an inplace operation" message says (provoke
it), and what the right gradient is (an out-of-place decode in float64 on the CPU).

Also here, out of the student package because they are answers: the reference decode, the message's
reference parser, the version program's truth, the saved-tensor experiment and the decodes the
fix-judging question is tested on (as source text, shipped to the probe and rebuilt in the judge).
"""
from __future__ import annotations

import math
import os
import re
from typing import Any, Callable

import torch

from autograder.checks import check_equal, check_true, check_type, describe, fail, tolerances
from autograder.runtime import test_configs
from autograder.saved_tensors import VERSION_PROGRAM, decode_constants

from . import Check
from .mutation import Mutant, Target, apply

ASSIGNMENT = "01_version_counter"

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


def _template() -> tuple[str, str, str]:
    """(text before the type, text after "instead.", the "which is output" part's wording) of the
    installed PyTorch's message, measured on a live error."""
    err, _ = provoke({"saved": "output", "op": "sigmoid", "shape": [2], "dtype": "float32",
                      "device": "cpu", "writes": 1})
    text = str(err)
    head = text[: text.index("[")]
    tail = text[text.index(" instead.") + len(" instead."):]
    return head, tail, ", which is output 0 of {node},"


def synth_message(tensor_type: str, shape, node: str | None, now: int, saved: int, hint: bool = True) -> str:
    """The message PyTorch prints, with other fields (types and devices this machine cannot make)."""
    head, tail, which = _template()
    dims = ", ".join(str(int(d)) for d in shape)
    text = (f"{head}[{tensor_type} [{dims}]]{which.format(node=node) if node else ''} is at version {now}; "
            f"expected version {saved} instead.")
    return text + (tail if hint else "")


def _second_output_error() -> RuntimeError:
    """A live version-counter error whose saved tensor is output 1 of its node (eigh's eigenvectors)."""
    x = (torch.rand(3, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(7)) + 0.5).requires_grad_()
    values, vectors = torch.linalg.eigh(x @ x.T)
    with torch.no_grad():
        vectors.mul_(1.0)
    try:
        (values.sum() + vectors.sum()).backward()
    except RuntimeError as err:
        assert (match_version_error(err) or {}).get("node"), str(err)
        return err
    raise AssertionError("backward did not fail: the experiment is broken")


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


# The decodes the fix-judging question is tested on: (name, what it does, source). Right in several
# styles, wrong in every silent way, and failing in several loud ones. Each outcome holds for any
# random input and upstream gradient (tests/test_hidden_a01.py checks that over seeds).
_BROKEN_ON = '''
def broken_decode_on(y, grid, anchor_grid, stride):
    y[..., 0:2] = (y[..., 0:2] * 2 - 0.5 + grid) * stride
    y[..., 2:4] = (y[..., 2:4] * 2) ** 2 * anchor_grid
    return y
'''
_BROKEN = '''
def broken_decode(p, grid, anchor_grid, stride):
    y = p.sigmoid()
    y[..., 0:2] = (y[..., 0:2] * 2 - 0.5 + grid) * stride
    y[..., 2:4] = (y[..., 2:4] * 2) ** 2 * anchor_grid
    return y
'''
_CAT = '''
def fix_cat(p, grid, anchor_grid, stride):
    s = p.sigmoid()
    return torch.cat([(s[..., 0:2] * 2 - 0.5 + grid) * stride, (s[..., 2:4] * 2) ** 2 * anchor_grid,
                      s[..., 4:]], dim=-1)
'''
DECODES: list[tuple[str, str, str]] = [
    # --- the notebook's broken_decode and fake_fix_hooks (both in the visible test), and a clone fix
    ("broken_decode", "the notebook's broken_decode (writes into the sigmoid's output)", _BROKEN),
    ("fix_clone", "writes into a clone of the sigmoid's output", _BROKEN_ON + '''
def fix_clone(p, grid, anchor_grid, stride):
    return broken_decode_on(p.sigmoid().clone(), grid, anchor_grid, stride)
'''),
    ("fake_fix_hooks", "the notebook's fake_fix_hooks", _BROKEN + '''
def fake_fix_hooks(p, grid, anchor_grid, stride):
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        return broken_decode(p, grid, anchor_grid, stride)
'''),
    # --- right, in several styles
    ("fix_cat", "pieces joined with torch.cat", _CAT),
    ("fix_where", "columns chosen with torch.where", '''
def fix_where(p, grid, anchor_grid, stride):
    s = p.sigmoid()
    col = torch.arange(s.shape[-1], device=s.device)
    pad = s.shape[-1] - 2
    g = torch.nn.functional.pad(grid, (0, pad))
    a = torch.nn.functional.pad(anchor_grid, (2, pad - 2))
    centre = (s * 2 - 0.5 + g) * stride
    size = (s * 2) ** 2 * a
    return torch.where(col < 2, centre, torch.where(col < 4, size, s))
'''),
    ("fix_split", "torch.split, then torch.cat", '''
def fix_split(p, grid, anchor_grid, stride):
    xy, wh, rest = p.sigmoid().split([2, 2, p.shape[-1] - 4], dim=-1)
    return torch.cat(((xy * 2 - 0.5 + grid) * stride, (wh * 2) ** 2 * anchor_grid, rest), -1)
'''),
    ("fix_sigmoid_per_piece", "a sigmoid per piece, joined with torch.cat", '''
def fix_sigmoid_per_piece(p, grid, anchor_grid, stride):
    centre = (torch.sigmoid(p[..., :2]) * 2 - 0.5 + grid) * stride
    size = (torch.sigmoid(p[..., 2:4]) * 2).pow(2) * anchor_grid
    return torch.cat([centre, size, torch.sigmoid(p[..., 4:])], -1)
'''),
    ("fix_fresh_tensor", "writes into a new empty tensor", '''
def fix_fresh_tensor(p, grid, anchor_grid, stride):
    s = p.sigmoid()
    y = torch.empty_like(s)
    y[..., :2] = (s[..., :2] * 2 - 0.5 + grid) * stride
    y[..., 2:4] = (s[..., 2:4] * 2) ** 2 * anchor_grid
    y[..., 4:] = s[..., 4:]
    return y
'''),
    ("fix_times_one", "writes into sigmoid(p) * 1.0 (a new tensor nobody saved)", _BROKEN_ON + '''
def fix_times_one(p, grid, anchor_grid, stride):
    return broken_decode_on(p.sigmoid() * 1.0, grid, anchor_grid, stride)
'''),
    ("fix_masks", "arithmetic with column masks", '''
def fix_masks(p, grid, anchor_grid, stride):
    s = p.sigmoid()
    n = s.shape[-1]
    col = torch.arange(n, device=s.device, dtype=s.dtype)
    is_c, is_s = (col < 2).to(s.dtype), ((col >= 2) & (col < 4)).to(s.dtype)
    g = torch.cat([grid, torch.zeros(grid.shape[:-1] + (n - 2,), dtype=s.dtype)], -1)
    a = torch.cat([torch.zeros(anchor_grid.shape[:-1] + (2,), dtype=s.dtype), anchor_grid,
                   torch.zeros(anchor_grid.shape[:-1] + (n - 4,), dtype=s.dtype)], -1)
    return is_c * (s * 2 - 0.5 + g) * stride + is_s * (s * 2) ** 2 * a + (1 - is_c - is_s) * s
'''),
    ("fix_cloning_hooks", "saved_tensors_hooks whose pack hook clones", _BROKEN + '''
def fix_cloning_hooks(p, grid, anchor_grid, stride):
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
        return broken_decode(p, grid, anchor_grid, stride)
'''),
    # --- loud: an exception, in forward or in backward
    ("inplace_sigmoid_", "sigmoid_ on a clone, then the writes", _BROKEN_ON + '''
def inplace_sigmoid_(p, grid, anchor_grid, stride):
    return broken_decode_on(p.clone().sigmoid_(), grid, anchor_grid, stride)
'''),
    ("no_grad_writes", "the writes under torch.no_grad()", _BROKEN_ON + '''
def no_grad_writes(p, grid, anchor_grid, stride):
    y = p.sigmoid()
    with torch.no_grad():
        broken_decode_on(y, grid, anchor_grid, stride)
    return y
'''),
    ("detach_writes", "writes into y.detach()", '''
def detach_writes(p, grid, anchor_grid, stride):
    y = p.sigmoid()
    d = y.detach()
    d[..., 0:2] = (y[..., 0:2] * 2 - 0.5 + grid) * stride
    d[..., 2:4] = (y[..., 2:4] * 2) ** 2 * anchor_grid
    return y
'''),
    ("clone_at_the_end", "the in-place decode, cloned before returning", _BROKEN + '''
def clone_at_the_end(p, grid, anchor_grid, stride):
    return broken_decode(p, grid, anchor_grid, stride).clone()
'''),
    ("allow_mutation_forward_only", "allow_mutation_on_saved_tensors around the forward only", _BROKEN + '''
def allow_mutation_forward_only(p, grid, anchor_grid, stride):
    with torch.autograd.graph.allow_mutation_on_saved_tensors():
        return broken_decode(p, grid, anchor_grid, stride)
'''),
    ("sigmoid_on_the_leaf", "p.sigmoid_() on the leaf itself", _BROKEN_ON + '''
def sigmoid_on_the_leaf(p, grid, anchor_grid, stride):
    return broken_decode_on(p.sigmoid_(), grid, anchor_grid, stride)
'''),
    ("drops_columns", "returns only the four box columns", '''
def drops_columns(p, grid, anchor_grid, stride):
    s = p.sigmoid()
    return torch.cat([(s[..., 0:2] * 2 - 0.5 + grid) * stride, (s[..., 2:4] * 2) ** 2 * anchor_grid], -1)
'''),
    ("raises_value_error", "raises ValueError", '''
def raises_value_error(p, grid, anchor_grid, stride):
    raise ValueError("this decode does not support that shape")
'''),
    # --- no gradient
    ("no_grad_everything", "the whole decode under torch.no_grad()", _BROKEN + '''
def no_grad_everything(p, grid, anchor_grid, stride):
    with torch.no_grad():
        return broken_decode(p, grid, anchor_grid, stride)
'''),
    ("detached_result", "a right decode, detached", _CAT + '''
def detached_result(p, grid, anchor_grid, stride):
    return fix_cat(p, grid, anchor_grid, stride).detach()
'''),
    ("from_p_data", "decodes p.data", _CAT + '''
def from_p_data(p, grid, anchor_grid, stride):
    return fix_cat(p.data, grid, anchor_grid, stride)
'''),
    ("new_leaf", "a right decode of p.detach(), made a new leaf with requires_grad_()", _CAT + '''
def new_leaf(p, grid, anchor_grid, stride):
    return fix_cat(p.detach(), grid, anchor_grid, stride).requires_grad_()
'''),
    # --- silently wrong gradient
    ("data_writes", "writes through .data", _BROKEN_ON + '''
def data_writes(p, grid, anchor_grid, stride):
    y = p.sigmoid()
    broken_decode_on(y.data, grid, anchor_grid, stride)
    return y
'''),
    ("data_writes_into_clone", "a clone, written through .data", _BROKEN_ON + '''
def data_writes_into_clone(p, grid, anchor_grid, stride):
    y = p.sigmoid().clone()
    broken_decode_on(y.data, grid, anchor_grid, stride)
    return y
'''),
    ("detach_before_maths", "centre and size from a detached sigmoid", '''
def detach_before_maths(p, grid, anchor_grid, stride):
    s = p.sigmoid()
    d = s.detach()
    return torch.cat([(d[..., 0:2] * 2 - 0.5 + grid) * stride, (d[..., 2:4] * 2) ** 2 * anchor_grid,
                      s[..., 4:]], -1)
'''),
    ("no_grad_pieces", "centre and size under torch.no_grad()", '''
def no_grad_pieces(p, grid, anchor_grid, stride):
    s = p.sigmoid()
    with torch.no_grad():
        centre = (s[..., 0:2] * 2 - 0.5 + grid) * stride
        size = (s[..., 2:4] * 2) ** 2 * anchor_grid
    return torch.cat([centre, size, s[..., 4:]], -1)
'''),
    ("detached_scores", "right boxes, objectness and classes detached", '''
def detached_scores(p, grid, anchor_grid, stride):
    s = p.sigmoid()
    return torch.cat([(s[..., 0:2] * 2 - 0.5 + grid) * stride, (s[..., 2:4] * 2) ** 2 * anchor_grid,
                      s[..., 4:].detach()], -1)
'''),
    ("grad_hook", "a gradient hook on the sigmoid that halves its gradient", _CAT + '''
def grad_hook(p, grid, anchor_grid, stride):
    q = p * 1.0
    q.register_hook(lambda g: g * 0.5)
    return fix_cat(q, grid, anchor_grid, stride)
'''),
    ("stride_twice", "the centre multiplied by the stride twice", '''
def stride_twice(p, grid, anchor_grid, stride):
    s = p.sigmoid()
    return torch.cat([(s[..., 0:2] * 2 - 0.5 + grid) * stride * stride, (s[..., 2:4] * 2) ** 2 * anchor_grid,
                      s[..., 4:]], -1)
'''),
    ("custom_function_wrong_backward", "a custom autograd.Function whose backward forgets the sigmoid", '''
class _Decode(torch.autograd.Function):
    @staticmethod
    def forward(ctx, p, grid, anchor_grid, stride):
        s = p.sigmoid()
        ctx.save_for_backward(s, anchor_grid)
        ctx.stride = stride
        return torch.cat([(s[..., 0:2] * 2 - 0.5 + grid) * stride, (s[..., 2:4] * 2) ** 2 * anchor_grid,
                          s[..., 4:]], -1)

    @staticmethod
    def backward(ctx, g):
        s, a = ctx.saved_tensors
        dp = torch.cat([g[..., 0:2] * 2 * ctx.stride, g[..., 2:4] * 8 * s[..., 2:4] * a, g[..., 4:]], -1)
        return dp, None, None, None

def custom_function_wrong_backward(p, grid, anchor_grid, stride):
    return _Decode.apply(p, grid, anchor_grid, stride)
'''),
]


# --------------------------------------------------------------------------- the decode, mutated
#: The reference decode, exactly the source notebook's solution cell (tests/test_hidden_a01.py checks).
DECODE_SOURCE = """def fixed_sigmoid_decode(p, grid, anchor_grid, stride):
    s = p.sigmoid()
    centre = (s[..., 0:2] * 2 - 0.5 + grid) * stride
    size = (s[..., 2:4] * 2) ** 2 * anchor_grid
    return torch.cat([centre, size, s[..., 4:]], dim=-1)
"""

_CPU = "" if torch.cuda.is_available() else "on a grader without a GPU the float16 cases do not run"

#: Wrong (and equivalent) variants of the decode: the mutants of ``fixed_sigmoid_decode`` and, those
#: named in :data:`DECODE_FAMILY`, the decodes that ``judge_fix`` is also tested on.
DECODE_MUTANTS: tuple[Mutant, ...] = (
    Mutant("+ 0.5 instead of - 0.5", "- 0.5", "+ 0.5"),
    Mutant("the centre not doubled", "(s[..., 0:2] * 2 - 0.5", "(s[..., 0:2] - 0.5"),
    Mutant("no grid offset", " + grid)", ")"),
    Mutant("the grid's x and y swapped", " + grid)", " + grid.flip(-1))"),
    Mutant("no stride", ") * stride\n", ")\n"),
    Mutant("the stride squared", "* stride\n", "* stride * stride\n"),
    Mutant("a hard-coded stride 8", "* stride\n", "* 8\n"),
    Mutant("the size cubed", "** 2", "** 3"),
    Mutant("squared before doubling", "(s[..., 2:4] * 2) ** 2", "s[..., 2:4] * 2 ** 2"),
    Mutant("no anchors", " * anchor_grid", ""),
    Mutant("anchors rebuilt for three anchors", "* anchor_grid\n",
           "* decode_constants(p.shape[2], p.shape[3], 3, dtype=p.dtype, device=p.device)[1]\n"),
    Mutant("off by one: the classes from column 5", "s[..., 4:]", "s[..., 5:]"),
    Mutant("the objectness column only", "s[..., 4:]", "s[..., 4:5]"),
    Mutant("raw logits for the scores", "s[..., 4:]]", "p[..., 4:]]"),
    Mutant("the whole sigmoid detached", "s = p.sigmoid()", "s = p.sigmoid().detach()"),
    Mutant("the sigmoid of p.data", "s = p.sigmoid()", "s = p.data.sigmoid()"),
    Mutant("the scores detached", "s[..., 4:]]", "s[..., 4:].detach()]"),
    Mutant("the scores through .data", "s[..., 4:]]", "s.data[..., 4:]]"),
    Mutant("the centre from a detached sigmoid", "(s[..., 0:2] * 2", "(s[..., 0:2].detach() * 2"),
    Mutant("the size under torch.no_grad()", "    size = (s[..., 2:4] * 2) ** 2 * anchor_grid\n",
           "    with torch.no_grad():\n        size = (s[..., 2:4] * 2) ** 2 * anchor_grid\n"),
    Mutant("the centre's x and y swapped", "s[..., 0:2]", "s[..., 0:2].flip(-1)"),
    Mutant("size before centre", "[centre, size,", "[size, centre,"),
    Mutant("the sigmoid in half precision", "s = p.sigmoid()", "s = p.half().sigmoid().to(p.dtype)"),
    Mutant("a float32 result", "], dim=-1)", "], dim=-1).float()"),
    Mutant("joined on the wrong dim", "dim=-1", "dim=0"),
    Mutant("writes into the sigmoid after all", "    return torch.cat([centre, size, s[..., 4:]], dim=-1)",
           "    s[..., 0:2] = centre\n    s[..., 2:4] = size\n    return s"),
    Mutant("the sigmoid in place on p", "s = p.sigmoid()", "s = p.sigmoid_()"),
    Mutant("CPU zeros added to the result", "], dim=-1)", "], dim=-1) + torch.zeros(p.shape, dtype=p.dtype)"),
    Mutant("the offset as a CPU tensor", "- 0.5", "- torch.tensor([0.5, 0.5], dtype=p.dtype)"),
    Mutant("the grid rebuilt on the CPU", " + grid)",
           " + decode_constants(p.shape[2], p.shape[3], p.shape[1], dtype=p.dtype)[0])"),
    Mutant("the offset as a float32 tensor (float16 becomes float32)", "- 0.5",
           "- torch.full((2,), 0.5, device=p.device)"),
    Mutant("dim=4", "dim=-1", "dim=4", equivalent="p always has five dims"),
    Mutant("the sigmoid by its formula", "s = p.sigmoid()", "s = 1 / (1 + torch.exp(-p))",
           equivalent="the same function, to rounding, for the logits of the task"),
    Mutant("4 s^2", "(s[..., 2:4] * 2) ** 2", "4 * s[..., 2:4] ** 2", equivalent="(2s)^2 = 4s^2"),
    Mutant(".square()", "(s[..., 2:4] * 2) ** 2", "(s[..., 2:4] * 2).square()", equivalent="the same square"),
    Mutant("2 (s - 0.25)", "s[..., 0:2] * 2 - 0.5", "2 * (s[..., 0:2] - 0.25)", equivalent="the same affine map"),
    Mutant(":2", "s[..., 0:2]", "s[..., :2]", equivalent="the same slice"),
    Mutant("the offset as a 0-dim CPU tensor", "- 0.5", "- torch.tensor(0.5, dtype=p.dtype)",
           equivalent="0-dim CPU tensors mix with tensors of any device, as on a GPU"),
    Mutant("the offset as a 0-dim float32 CPU tensor", "- 0.5", "- torch.tensor(0.5)",
           equivalent="a 0-dim tensor neither moves nor promotes p (float16 stays float16)"),
    Mutant("the scores cloned", "s[..., 4:]]", "s[..., 4:].clone()]", equivalent="a copy of the same values"),
    Mutant("float(stride)", "* stride\n", "* float(stride)\n", equivalent="stride is a float"),
    Mutant("zeros made on p's device", "], dim=-1)", "], dim=-1) + torch.zeros_like(p)",
           equivalent="zeros_like keeps p's device and dtype"),
)

#: The decode mutants judge_fix is also tested on: each outcome holds whatever the random input,
#: upstream weights and style of reference (no value-only mistakes: their gradient is right).
DECODE_FAMILY = (
    "the centre not doubled", "no stride", "the stride squared", "the size cubed", "squared before doubling",
    "no anchors", "off by one: the classes from column 5", "the objectness column only",
    "raw logits for the scores", "the whole sigmoid detached", "the sigmoid of p.data", "the scores detached",
    "the scores through .data", "the centre from a detached sigmoid", "the size under torch.no_grad()",
    "the centre's x and y swapped", "size before centre", "the sigmoid in half precision",
    "writes into the sigmoid after all", "the sigmoid in place on p",
    "the sigmoid by its formula", "4 s^2", ".square()", "2 (s - 0.25)", "the scores cloned",
)


def _family() -> list[tuple[str, str, str]]:
    by_name = {m.name: m for m in DECODE_MUTANTS}
    return [("fixed_sigmoid_decode", f"a classmate's fixed_sigmoid_decode: {name}",
             apply(DECODE_SOURCE, by_name[name])) for name in DECODE_FAMILY]


DECODES += _family()


# --------------------------------------------------------------------------- the checks

_NODES = re.compile(r"^Sigmoid(Backward0)?$")


class ReproduceSigmoidError(Check):
    """``reproduce_sigmoid_error()``: no input; returns the RuntimeError that backward raised after two
    slice writes into a sigmoid's output of a detector-shaped tensor (5 dims, at least 5 outputs; the
    task suggests (2, 3, 8, 8, 7) float32, other shapes are right too). Called twice. The probe reports
    the type, the message and the traceback's frames (plain data); the judge reads them."""
    assignment, grade_id, function = ASSIGNMENT, "reproduce_sigmoid_error_tests", "reproduce_sigmoid_error"
    draws = ("repeated calls",)

    def cases(self):
        return [{"call": k, "label": f"reproduce_sigmoid_error(), call {k}"} for k in (1, 2)]

    @staticmethod
    def probe(ns, case):
        import os

        err = student(ns, "reproduce_sigmoid_error")()
        frames, tb = [], getattr(err, "__traceback__", None) if isinstance(err, BaseException) else None
        while tb is not None and len(frames) < 200:
            code = tb.tb_frame.f_code
            frames.append([os.path.realpath(code.co_filename), code.co_name])
            tb = tb.tb_next
        return {"type": type(err).__name__, "mro": [c.__name__ for c in type(err).__mro__],
                "message": str(err) if isinstance(err, BaseException) else repr(err)[:200],
                "frames": frames}

    def judge(self, case, r):
        hint = "catch the exception with `except RuntimeError as err:` and `return err` (return, not raise)."
        check_true("RuntimeError" in r["mro"], "reproduce_sigmoid_error() has the wrong type",
                   expected="RuntimeError", got=f"{r['type']}: {r['message'][:120]}", hint=hint)
        msg = r["message"]
        check_true("modified by an inplace operation" in msg, "it is not the in-place error",
                   expected="a message containing 'modified by an inplace operation'", got=msg[:200],
                   hint="backward must fail because y was written after sigmoid saved it.")
        fields = match_version_error(msg)
        check_true(fields is not None, "the error is not the 'modified by an inplace operation' error",
                   got=msg[:200], hint="write twice into slices of y = x.sigmoid(), then call backward.")
        check_true(fields["node"] is not None and bool(_NODES.match(fields["node"]))
                   and re.search(r"output 0 of Sigmoid(Backward0)?,", msg) is not None,
                   "the saved tensor is not named as an output of the sigmoid",
                   expected="'output 0 of Sigmoid' (or SigmoidBackward0)", got=msg[:300],
                   hint="the tensor you write into must be the sigmoid's output itself, and every other "
                        "op you use on its slices must not save them (multiply by 2 before any pow).")
        check_equal((fields["version_now"], fields["version_saved"]), (2, 0),
                    "(version now, version when saved) in the message",
                    hint="exactly two slice assignments into the sigmoid output, nothing else in place.")
        check_true(len(fields["shape"]) == 5 and fields["shape"][-1] >= 5,
                   "the tensor is not detector-shaped", expected="5 dims (batch, anchors, ny, nx, outputs>=5)",
                   got=str(fields["shape"]), hint="make p of shape (2, 3, 8, 8, 7), as the task says.")
        check_true(from_backward(r["frames"]), "this RuntimeError was not raised by autograd's backward",
                   hint="don't build the error yourself: call .backward() and return what it raised.")


class PredictVersions(Check):
    """``predict_versions()``: no input; returns one int per line of
    :data:`autograder.saved_tensors.VERSION_PROGRAM` (list or tuple), the ``_version`` after that line.
    The truth is the program, run here (the visible test runs it too and says which lines are wrong)."""
    assignment, grade_id, function = ASSIGNMENT, "predict_versions_tests", "predict_versions"
    draws = ()

    def cases(self):
        return [{"label": "predict_versions()"}]

    @staticmethod
    def probe(ns, case):
        return {"pred": student(ns, "predict_versions")()}

    def judge(self, case, r):
        pred, truth = r["pred"], run_version_program()
        check_type(pred, (list, tuple), "predict_versions()", hint="return a list of ints, e.g. [0, 1, ...].")
        check_equal(len(pred), len(truth), "len(predict_versions())", hint="one number per line of the program.")
        check_true(all(isinstance(v, int) and not isinstance(v, bool) for v in pred),
                   "predict_versions() must hold ints only", got=repr(pred),
                   hint="write each prediction as an int literal, e.g. 3 (not '3' or 3.0).")
        check_equal(pred[0], 0, "your prediction for line 1", hint="a brand-new tensor starts at version 0.")
        wrong = [i + 1 for i, (g, t) in enumerate(zip(pred, truth)) if g != t]
        check_true(not wrong, "some predicted versions are wrong",
                   expected="the values printed by the program", got=f"wrong at line(s) {wrong}",
                   hint="run the program cell by cell and explain each number you did not predict.")


class ReadErrorMessage(Check):
    """``read_error_message(err)``: ``err`` is a version-counter error, the exception or its text
    (``str(err)``, with or without PyTorch's " Hint: ..." tail). Cases span what the task allows:
    tensor types of every float dtype on the CPU and CUDA (legacy names such as ``torch.FloatTensor``,
    ``torch.cuda.HalfTensor``, and backend names without the ``torch.`` prefix, such as
    ``CPUBFloat16Type``, ``CUDABFloat16Type``, ``CPUBoolType``), integer, bool and complex saved
    tensors; shapes of rank 0 to 6 (a 0-dim tensor prints an empty shape, ``[torch.FloatTensor []]``); versions of 1 to 3 digits, the
    saved one 0 or not; node names with ``::`` or the old ``...Backward0`` spelling, or no "which is
    output 0 of" part at all, or a saved tensor that is another output of its node ("output 1 of
    LinalgEigh"). Live errors (the exception object from backward, made in the probe, and
    the same scenario rerun here for the truth), live messages made here, and messages written here
    from the installed PyTorch's own wording. Returns a dict with exactly the five keys."""
    assignment, grade_id, function = ASSIGNMENT, "read_error_message_tests", "read_error_message"
    draws = ("float64", "float32", "float16", "bfloat16", "int64", "int32", "bool", "complex64", "0-dim", "GPU")
    probe_helpers = (provoke,)

    SEED_TEXT = ("one of the variables needed for gradient computation has been modified by an inplace "
                 "operation: [torch.cuda.HalfTensor [1, 3, 128, 128, 47]], which is output 0 of "
                 "SigmoidBackward0, is at version 2; expected version 0 instead.")

    def _live_specs(self) -> list[dict]:
        cpu = "cpu"
        specs = [
            # demo_err's scenario: the visible test's first input
            dict(saved="output", op="sigmoid", shape=[2, 3, 8, 8, 7], dtype="float32", device=cpu, writes=2),
            dict(saved="output", op="sigmoid", shape=[1, 3, 5, 6, 9], dtype="float64", device=cpu, writes=2),
            dict(saved="output", op="tanh", shape=[4, 7], dtype="float32", device=cpu, writes=3),
            dict(saved="output", op="exp", shape=[2, 2, 2], dtype="float16", device=cpu, writes=1, style="method"),
            dict(saved="output", op="relu", shape=[12], dtype="bfloat16", device=cpu, writes=4),
            dict(saved="output", op="sigmoid", shape=[], dtype="float32", device=cpu, writes=1, style="method"),
            dict(saved="output", op="sqrt", shape=[1, 2, 1, 3, 1, 2], dtype="float64", device=cpu, writes=7,
                 style="no_grad"),
            dict(saved="output", op="exp", shape=[6], dtype="complex64", device=cpu, writes=2),
            dict(saved="output", op="reciprocal", shape=[3, 1, 2, 2], dtype="float32", device=cpu, writes=123,
                 style="no_grad"),
            dict(saved="input", shape=[3, 5], dtype="float32", device=cpu, writes=2),
            dict(saved="input", shape=[2, 3, 2, 2, 4], dtype="float64", device=cpu, pre=3, writes=2,
                 style="method"),
            dict(saved="input", shape=[9], dtype="float32", device=cpu, pre=1, writes=10, style="no_grad"),
            dict(saved="constant", shape=[2, 6], dtype="float32", device=cpu, writes=1),
            dict(saved="constant", shape=[4], dtype="int64", device=cpu, pre=2, writes=3),
            dict(saved="constant", shape=[2, 2, 3], dtype="int32", device=cpu, writes=1, style="no_grad"),
            dict(saved="constant", shape=[5], dtype="bool", device=cpu, writes=2),
            dict(saved="constant", shape=[], dtype="float64", device=cpu, pre=45, writes=100, style="no_grad"),
        ]
        gpus = sorted({str(d) for d, _ in test_configs() if d.type == "cuda"})
        for dev in gpus:
            specs += [dict(saved="output", op="sigmoid", shape=[1, 3, 8, 8, 47], dtype="float16", device=dev,
                           writes=2),
                      dict(saved="output", op="sigmoid", shape=[2, 3, 4, 4, 7], dtype="bfloat16", device=dev,
                           writes=2),
                      dict(saved="input", shape=[4, 4], dtype="float32", device=dev, pre=1, writes=3)]
        return specs

    def _written(self) -> list[tuple[str, tuple, str | None, int, int, bool]]:
        g = torch.Generator().manual_seed(101)
        types = ["torch.cuda.HalfTensor", "torch.cuda.FloatTensor", "torch.cuda.DoubleTensor", "CUDABFloat16Type",
                 "torch.FloatTensor", "torch.DoubleTensor", "torch.HalfTensor", "CPUBFloat16Type",
                 "torch.cuda.LongTensor", "CUDAComplexFloatType"]
        nodes = ["SigmoidBackward0", "Sigmoid", "torch::autograd::CopySlices", "TanhBackward0", "Relu",
                 "MulBackward0", None, "SoftmaxBackward0", None, "ExpBackward0"]
        out = []
        for k, t in enumerate(types):
            rank = k % 7
            shape = tuple(int(v) for v in torch.randint(1, 130, (rank,), generator=g))
            now = [2, 7, 13, 58, 100, 999, 1, 4, 256, 31][k]
            saved = [0, 0, 5, 0, 12, 998, 0, 3, 0, 30][k]
            out.append((t, shape, nodes[k], now, saved, k % 3 != 2))
        out.append(("torch.cuda.HalfTensor", (1, 3, 128, 128, 47), "SigmoidBackward0", 2, 0, False))
        return out

    def cases(self):
        cases = []
        for i, spec in enumerate(self._live_specs()):
            err, _ = provoke(spec)
            head = str(err).split(" Hint:")[0]
            if i == 0 or i % 3 == 1:
                cases.append({"kind": "live", "spec": spec, "label": f"the exception raised by backward: {head}"})
            else:
                as_exc = i % 3 == 2
                cases.append({"kind": "text", "message": str(err), "as": "exception" if as_exc else "text",
                              "label": f"{'RuntimeError' if as_exc else 'the message text'}: {head}"})
        for k, (t, shape, node, now, saved, hint) in enumerate(self._written()):
            msg = synth_message(t, shape, node, now, saved, hint)
            as_exc = k % 2 == 0
            cases.append({"kind": "text", "message": msg, "as": "exception" if as_exc else "text",
                          "label": f"{'RuntimeError' if as_exc else 'the message text'}: {msg.split(' Hint:')[0]}"})
        err = _second_output_error()
        cases.append({"kind": "text", "message": str(err), "as": "exception",
                      "label": f"RuntimeError: {str(err).split(' Hint:')[0]}"})
        cases.append({"kind": "text", "message": self.SEED_TEXT, "as": "text",
                      "label": f"the seed's message text: {self.SEED_TEXT}"})
        return cases

    @staticmethod
    def probe(ns, case):
        read = student(ns, "read_error_message")
        if case["kind"] == "live":
            err, _ = provoke(case["spec"])
        elif case["as"] == "exception":
            err = RuntimeError(case["message"])
        else:
            err = case["message"]
        return {"fields": read(err)}

    def judge(self, case, r):
        if case["kind"] == "live":
            err, facts = provoke(case["spec"])
            message = str(err)
            truth = match_version_error(message)
            assert truth is not None and truth["shape"] == facts["shape"] and \
                (truth["version_now"], truth["version_saved"]) == (facts["version_now"], facts["version_saved"]), \
                "the grader's experiment disagrees with its message"
        else:
            message = case["message"]
            truth = match_version_error(message)
        what = "read_error_message(err)"
        fields = r["fields"]
        check_type(fields, dict, what, hint="return a dict with the five keys of the table.")
        keys = ["node", "shape", "tensor_type", "version_now", "version_saved"]
        check_equal(sorted(fields), keys, f"the keys of {what}", hint="exactly the five keys of the table.")
        check_equal(fields["tensor_type"], truth["tensor_type"], f"{what}['tensor_type']",
                    hint="the text inside the first [ ], e.g. 'torch.DoubleTensor' or 'CPUBFloat16Type'.")
        shape = fields["shape"]
        check_true(isinstance(shape, tuple), f"{what}['shape'] is not a tuple", expected="a tuple of ints",
                   got=repr(shape), hint="tuple(int(d) for d in ...): the numbers in the inner [ ] "
                                         "(a 0-dim tensor prints [] and has shape ()).")
        check_equal(shape, truth["shape"], f"{what}['shape']",
                    hint="a tuple of ints: the numbers in the inner [ ] (a 0-dim tensor prints [] and has shape ()).")
        for key in ("version_now", "version_saved"):
            v = fields[key]
            check_true(isinstance(v, (int, float)) and not isinstance(v, bool) and v == truth[key],
                       f"{what}['{key}'] is not what was expected", expected=repr(truth[key]), got=repr(v),
                       hint="versions are ints, of any number of digits: int(...) of the digits after "
                            "'is at version' / 'expected version'.")
        check_equal(fields["node"], truth["node"], f"{what}['node']",
                    hint="the text between 'output 0 of ' and the next comma; it may contain '::'; "
                         "None when the message has no 'which is output ... of ...' part.")


class SavedBy(Check):
    """``saved_by(op)``: ``op`` is one differentiable PyTorch op of one tensor (it records a single
    node; no views), defined for positive values of any shape (the task's experiment uses a float64
    non-leaf with values in [0.5, 2)). Returns a set from {"input", "output"}. Ops cover all four
    answers: unary maths, activations, reductions, products of the tensor with itself or with a
    constant tensor, powers. The truth is the write-and-backward experiment, run here. A set or a
    frozenset (as the visible test accepts)."""
    assignment, grade_id, function = ASSIGNMENT, "saved_by_tests", "saved_by"
    draws = ()

    OPS = [
        # the visible test's three
        "torch.sigmoid", "lambda t: t ** 2", "lambda t: t + 1",
        # output
        "torch.tanh", "torch.exp", "torch.relu", "torch.sqrt", "lambda t: t.softmax(-1)", "torch.reciprocal",
        "torch.rsqrt", "torch.exp2", "torch.expm1", "lambda t: torch.log_softmax(t, -1)", "torch.tan",
        # input
        "lambda t: t.pow(2)", "lambda t: t * t", "torch.sin", "torch.cos", "torch.log", "torch.log1p",
        "torch.atan", "torch.erf", "lambda t: t ** 0.5", "torch.abs", "lambda t: torch.clamp(t, min=0.8)",
        "lambda t: torch.nn.functional.silu(t)", "lambda t: torch.nn.functional.softplus(t)",
        "lambda t: t.max(-1).values", "lambda t: torch.nn.functional.gelu(t)", "torch.sinh",
        # both
        "lambda t: t.norm()", "lambda t: t.prod()", "lambda t: torch.logsumexp(t, -1)",
        "lambda t: t.cumprod(-1)",
        # neither
        "lambda t: t * 3", "lambda t: t - 2", "torch.neg", "lambda t: t.sum()", "lambda t: t.mean()",
        "lambda t: t.cumsum(-1)", "lambda t: t * torch.tensor(3.0, dtype=t.dtype)", "lambda t: t / 4",
        "torch.sign",
    ]

    def cases(self):
        return [{"op": src, "label": f"op = {src}"} for src in self.OPS]

    @staticmethod
    def probe(ns, case):
        import math

        op = eval(case["op"], {"torch": torch, "math": math})
        return {"saved": student(ns, "saved_by")(op)}

    def judge(self, case, r):
        got = r["saved"]
        what = f"saved_by(<{case['op']}>)"
        check_type(got, (set, frozenset), what, hint="return a set such as {'output'}.")
        check_equal(set(got), saved_by_experiment(build_op(case["op"])), what,
                    hint="compare the grad_fn's _saved_* tensors with the input and the output "
                         "(same memory), or write into each and try backward.")


def _close(actual, expected64, tol, what, inputs, hint=""):
    a = actual.detach().to("cpu", torch.float64)
    bad = (a - expected64).abs() > tol["atol"] + tol["rtol"] * expected64.abs()
    if bool(bad.any()) or not bool(torch.isfinite(a).all()):
        i = int(((a - expected64).abs().nan_to_num(float("inf"))).flatten().argmax())
        idx = tuple(int(k) for k in torch.unravel_index(torch.tensor(i), a.shape))
        fail(f"{what} has wrong values", inputs=inputs,
             expected=f"{float(expected64.flatten()[i]):.6g} at index {idx}",
             got=f"{float(a.flatten()[i]):.6g} at index {idx} ({int(bad.sum())} of {a.numel()} wrong)",
             hint=hint)


class FixedSigmoidDecode(Check):
    """``fixed_sigmoid_decode(p, grid, anchor_grid, stride)``: ``p`` of shape (batch, anchors, ny, nx,
    outputs) with outputs >= 5, anchors 1..4, any batch/ny/nx >= 1, requires grad; ``grid`` and
    ``anchor_grid`` from ``decode_constants``; ``stride`` a float (8, 16 or 32). In float64 and float32
    on the CPU, and float32 and float16 on a GPU when the grader has one (``test_configs()``). Values
    and the gradient (random upstream weights) against a float64 out-of-place reference made here.

    Plus, on every grader, forward and backward on the ``meta`` device (p and the constants moved
    there, float32 and float16): a device other than the CPU, as a GPU is, with no values. A tensor the
    function creates on the CPU (``torch.zeros(...)`` without ``device=``, ``torch.tensor`` of a
    non-scalar) fails there exactly as on a GPU; 0-dim CPU tensors and Python numbers are allowed, as
    on a GPU. Only that mistake, and the result's shape/dtype/device, are judged on meta; an error
    meta cannot run for other reasons (``.item()``, data-dependent code) is left to the CPU cases."""
    assignment, grade_id, function = ASSIGNMENT, "fixed_sigmoid_decode_tests", "fixed_sigmoid_decode"
    draws = ("float64", "float32", "float16", "GPU", "meta")

    SHAPES = [((2, 3, 8, 8, 7), 8.0), ((1, 1, 1, 1, 5), 32.0), ((3, 4, 5, 3, 6), 16.0), ((1, 2, 3, 9, 47), 8.0),
              ((2, 3, 2, 4, 85), 32.0), ((1, 3, 6, 1, 5), 16.0)]
    META = [((2, 3, 4, 4, 7), 8.0, torch.float32), ((1, 3, 8, 8, 85), 32.0, torch.float16)]
    DEVICE_HINT = ("your function creates a tensor on the CPU while its input is on another device; on a GPU "
                   "this fails — create it with device=p.device")

    def cases(self):
        cases, seed = [], 10
        for device, dtype in test_configs():
            for shape, stride in self.SHAPES:
                seed += 1
                gen = torch.Generator().manual_seed(seed)
                p = torch.randn(shape, generator=gen, dtype=torch.float64) * 2
                w = torch.randn(shape, generator=gen, dtype=torch.float64)
                grid, anchor_grid, _ = decode_constants(shape[2], shape[3], shape[1], dtype=torch.float64)
                dt = str(dtype).replace("torch.", "")
                cases.append({"p": p, "w": w, "grid": grid, "anchor_grid": anchor_grid, "stride": stride,
                              "device": str(device), "dtype": dt,
                              "label": f"p {dt} {shape} on {device.type}, stride {stride:g}"})
        for shape, stride, dtype in self.META:
            seed += 1
            gen = torch.Generator().manual_seed(seed)
            p = torch.randn(shape, generator=gen, dtype=torch.float64) * 2
            grid, anchor_grid, _ = decode_constants(shape[2], shape[3], shape[1], dtype=torch.float64)
            dt = str(dtype).replace("torch.", "")
            cases.append({"p": p, "w": torch.ones(shape, dtype=torch.float64), "grid": grid,
                          "anchor_grid": anchor_grid, "stride": stride, "device": "meta", "dtype": dt,
                          "label": f"p {dt} {shape} on the meta device (not the CPU, as on a GPU), "
                                   f"stride {stride:g}"})
        return cases

    @staticmethod
    def probe(ns, case):
        fn = student(ns, "fixed_sigmoid_decode")
        device, dtype = torch.device(case["device"]), getattr(torch, case["dtype"])
        p = case["p"].to(device, dtype).requires_grad_()
        args = (p, case["grid"].to(device, dtype), case["anchor_grid"].to(device, dtype), float(case["stride"]))
        if device.type == "meta":  # no values: an error is data, judged in the grader
            try:
                out = fn(*args)
            except Exception as err:  # noqa: BLE001
                return {"type": "error", "forward_error": {"type": type(err).__name__, "message": str(err)[:400]}}
        else:
            out = fn(*args)
        r = {"type": type(out).__name__}
        if not isinstance(out, torch.Tensor):
            return r
        r.update(out=out, shape=list(out.shape), dtype=str(out.dtype), device=out.device.type,
                 requires_grad=bool(out.requires_grad), backward_error=None, grad=None)
        if out.requires_grad and tuple(out.shape) == tuple(case["w"].shape):
            try:
                out.backward(case["w"].to(out.device, out.dtype))
            except Exception as err:  # noqa: BLE001 - reported as data, judged in the grader
                r["backward_error"] = {"type": type(err).__name__, "message": str(err)[:400]}
            r["grad"] = p.grad
        if device.type == "meta":  # meta tensors hold no values to return
            r.update(out=None, grad=None)
        return r

    def _judge_meta(self, case, r, what):
        """Meta: the CPU-tensor mistake and the result's shape/dtype/device only."""
        inputs, shape, dtype = case["label"], tuple(case["p"].shape), getattr(torch, case["dtype"])

        def on_cpu(err):
            m = err["message"].lower()
            return "device" in m and "cpu" in m and "meta" in m

        for key, when in (("forward_error", "raised"), ("backward_error", "raised in backward")):
            err = r.get(key)
            if err is not None and on_cpu(err):
                fail(f"{what} {when} {err['type']} when p is not on the CPU", inputs=inputs,
                     detail=err["message"][:300], hint=self.DEVICE_HINT)
        if r.get("forward_error") is not None or "shape" not in r:
            return  # meta cannot run it for another reason (or no tensor): the CPU cases judge that
        check_true(tuple(r["shape"]) == shape and r["dtype"] == str(dtype) and r["device"] == "meta",
                   f"{what} returned the wrong shape/dtype/device", inputs=inputs,
                   expected=f"{shape} {dtype} on meta (p's device)",
                   got=f"{tuple(r['shape'])} {r['dtype']} on {r['device']}",
                   hint="keep p's shape, dtype and device: a float32 constant tensor turns float16 into "
                        "float32, and new tensors need device=p.device.")

    def judge(self, case, r):
        dtype = getattr(torch, case["dtype"])
        inputs, shape = case["label"], tuple(case["p"].shape)
        what = "fixed_sigmoid_decode(p, grid, anchor_grid, stride)"
        if case["device"] == "meta":
            return self._judge_meta(case, r, what)
        check_true("out" in r, f"{what} has the wrong type", expected="Tensor",
                   got=r["type"], hint="return the decoded tensor.")
        out = r["out"]
        device = case["device"].split(":")[0]
        check_true(tuple(r["shape"]) == shape and r["dtype"] == str(dtype) and r["device"] == device,
                   f"{what} returned the wrong shape/dtype/device", inputs=inputs,
                   expected=f"{shape} {dtype} on {device}",
                   got=f"{tuple(r['shape'])} {r['dtype']} on {r['device']}",
                   hint="keep p's shape, dtype and device: build every piece from p.sigmoid().")
        p = case["p"].to(dtype).double().requires_grad_()  # the input the student got, in float64
        w = case["w"].to(dtype).double()
        expected = reference_decode(p, case["grid"], case["anchor_grid"], float(case["stride"]))
        expected.backward(w)
        tol = tolerances(dtype)
        _close(out, expected.detach(), tol, "fixed_sigmoid_decode's values", inputs,
               hint="the same numbers as broken_decode: centre (2s - 0.5 + grid) * stride, size (2s)^2 * anchor, "
                    "the rest s.")
        check_true(r["requires_grad"], "the result does not require grad", inputs=inputs,
                   hint="no torch.no_grad() and no .detach() on the way from p to the result.")
        err = r["backward_error"]
        if err is not None:
            fail(f"backward through fixed_sigmoid_decode raised {err['type']}", inputs=inputs,
                 detail=err["message"][:300],
                 hint="nothing may write into the sigmoid's output: build the result with torch.cat "
                      "(or write into y = p.sigmoid().clone()).")
        check_true(isinstance(r["grad"], torch.Tensor), "no gradient reaches p through fixed_sigmoid_decode",
                   inputs=inputs, expected="p.grad after backward", got="p.grad is None",
                   hint="every piece must come from p.sigmoid() by differentiable ops.")
        check_true(tuple(r["grad"].shape) == shape, "p.grad has the wrong shape", inputs=inputs,
                   expected=str(shape), got=str(tuple(r["grad"].shape)),
                   hint="don't replace p or its .grad inside the function.")
        _close(r["grad"], p.grad, tol, "the gradient through fixed_sigmoid_decode", inputs,
               hint="every piece must come from p.sigmoid() by differentiable ops; no .data, "
                    ".detach(), no_grad or saved_tensors_hooks.")


class JudgeFix(Check):
    """``judge_fix(decode)``: ``decode`` has ``broken_decode``'s signature; it may be right in any
    style, raise any Exception (forward or backward), return a tensor without a gradient path, or
    return a silently wrong gradient (.data, .detach(), no_grad, identity hooks, gradient hooks,
    custom Functions, wrong factors). Each outcome is unambiguous for any input and upstream gradient.
    The decodes are shipped as source text; the truth is the task's procedure (:func:`judge_decode`),
    run here on the same source."""
    assignment, grade_id, function = ASSIGNMENT, "judge_fix_tests", "judge_fix"
    draws = ()

    def cases(self):
        return [{"source": src, "name": name, "label": f"decode = {name} ({about})"}
                for name, about, src in DECODES]

    @staticmethod
    def probe(ns, case):
        import math

        env = {"torch": torch, "math": math, "__name__": "decode_case"}
        exec(case["source"], env)
        return {"verdict": student(ns, "judge_fix")(env[case["name"]])}

    def judge(self, case, r):
        truth = judge_decode(build_decode(case["source"], case["name"]))
        got = r["verdict"]
        check_type(got, str, f"judge_fix({case['name']})",
                   hint="return one of 'error', 'no_gradient', 'wrong_gradient', 'correct'.")
        check_equal(got, truth, f"judge_fix({case['name']})",
                    hint="run it on a float64 leaf, call backward with random upstream weights inside "
                         "try/except Exception, check requires_grad and p.grad, and compare p.grad with an "
                         "out-of-place reference (torch.allclose).")


# --------------------------------------------------------------------------- mutation testing
# Plausible wrong variants of each reference solution (``python -m instructor.hidden.mutation
# 01_version_counter``): each must fail a check, except those marked equivalent (they must pass).

_PREDICTED = [0, 1, 2, 4, 4, 5, 5, 6, 7, 7, 0, 2]


def _one_off(i: int, delta: int) -> Mutant:
    wrong = list(_PREDICTED)
    wrong[i] += delta
    return Mutant(f"line {i + 1} off by {delta:+d}", f"return {_PREDICTED}", f"return {wrong}")


_READ_RE = 'r"\\[([\\w.]+) \\[([\\d, ]*)\\]\\](?:, which is output \\d+ of ([^,]+),)?"'

MUTANTS = {
    "reproduce_sigmoid_error": Target(checks=("reproduce_sigmoid_error_tests",), mutants=(
        Mutant("raises instead of returning", "        return err", "        raise err"),
        Mutant("returns the message", "        return err", "        return str(err)"),
        Mutant("a new RuntimeError of the same text", "        return err", "        return RuntimeError(str(err))"),
        Mutant("drops the traceback", "        return err", "        return err.with_traceback(None)"),
        Mutant("catches ValueError", "except RuntimeError as err", "except ValueError as err"),
        Mutant("four outputs (not detector-shaped)", "torch.randn(2, 3, 8, 8, 7,", "torch.randn(2, 3, 8, 8, 4,"),
        Mutant("four dims", "torch.randn(2, 3, 8, 8, 7,", "torch.randn(3, 8, 8, 7,"),
        Mutant("p needs no grad", ", requires_grad=True", ""),
        Mutant("backward of a detached result", "y.sum().backward()", "y.detach().sum().backward()"),
        Mutant("backward of a non-scalar", "y.sum().backward()", "y.backward()"),
        Mutant("the decode under no_grad", "    y = broken_decode(p, GRID, ANCHOR_GRID, STRIDE)\n",
               "    with torch.no_grad():\n        y = broken_decode(p, GRID, ANCHOR_GRID, STRIDE)\n"),
        Mutant("a third write", "    y = broken_decode(p, GRID, ANCHOR_GRID, STRIDE)\n",
               "    y = broken_decode(p, GRID, ANCHOR_GRID, STRIDE)\n    y[..., 4:5] = y[..., 4:5] * 1\n"),
        Mutant("one write only", "    y = broken_decode(p, GRID, ANCHOR_GRID, STRIDE)\n",
               "    y = p.sigmoid()\n    y[..., 0:2] = (y[..., 0:2] * 2 - 0.5 + GRID) * STRIDE\n"),
        Mutant("the clone fix (no error)", "broken_decode(p,", "fix_clone(p,"),
        Mutant("writes through .data (no error)", "    y = broken_decode(p, GRID, ANCHOR_GRID, STRIDE)\n",
               "    y = p.sigmoid()\n    y.data[..., 0:2] = y.data[..., 0:2] * 2\n    y.data[..., 2:4] = y.data[..., 2:4] * 2\n"),
        Mutant("tanh instead of sigmoid", "    y = broken_decode(p, GRID, ANCHOR_GRID, STRIDE)\n",
               "    y = p.tanh()\n    y[..., 0:2] = y[..., 0:2] * 2\n    y[..., 2:4] = y[..., 2:4] * 2\n"),
        Mutant("pow on the slices (saves a view)", "    y = broken_decode(p, GRID, ANCHOR_GRID, STRIDE)\n",
               "    y = p.sigmoid()\n    y[..., 0:2] = y[..., 0:2] ** 2\n    y[..., 2:4] = y[..., 2:4] ** 2\n"),
        Mutant("constants of another grid", "torch.randn(2, 3, 8, 8, 7,", "torch.randn(2, 3, 4, 4, 7,"),
        Mutant("a cached sigmoid output (the second call writes into it again)",
               "    y = broken_decode(p, GRID, ANCHOR_GRID, STRIDE)\n",
               "    y = reproduce_sigmoid_error.__dict__.setdefault('y', p.sigmoid())\n"
               "    y[..., 0:2] = (y[..., 0:2] * 2 - 0.5 + GRID) * STRIDE\n"
               "    y[..., 2:4] = (y[..., 2:4] * 2) ** 2 * ANCHOR_GRID\n"),
        Mutant("catches Exception", "except RuntimeError as err", "except Exception as err",
               equivalent="the error is a RuntimeError"),
        Mutant("a non-leaf p", "broken_decode(p,", "broken_decode(p * 1,",
               equivalent="the sigmoid's output is written either way"),
        Mutant("torch.autograd.grad", "y.sum().backward()", "torch.autograd.grad(y.sum(), p)",
               equivalent="the same engine raises the same error"),
        Mutant("float64", "requires_grad=True)", "requires_grad=True, dtype=torch.float64)",
               equivalent="any float dtype is right"),
        Mutant("another detector shape", "torch.randn(2, 3, 8, 8, 7,", "torch.randn(1, 3, 8, 8, 85,",
               equivalent="other detector shapes are right"),
        Mutant("backward through the scores only", "y.sum().backward()", "y[..., 4:].sum().backward()",
               equivalent="the gradient still reaches the sigmoid"),
    )),
    "predict_versions": Target(checks=("predict_versions_tests",), mutants=(
        *(_one_off(i, 1) for i in range(len(_PREDICTED))),
        _one_off(3, -1),   # a[1] += 1 counted as one write
        _one_off(8, -1),   # unsqueeze_ counted as no write (no number changes)
        _one_off(10, 7),   # a = a * 1 thought to keep a's count
        Mutant("one number short", f"return {_PREDICTED}", f"return {_PREDICTED[:-1]}"),
        Mutant("one number too many", f"return {_PREDICTED}", f"return {_PREDICTED + [2]}"),
        Mutant("strings", f"return {_PREDICTED}", f"return [str(v) for v in {_PREDICTED}]"),
        Mutant("floats", f"return {_PREDICTED}", f"return [float(v) for v in {_PREDICTED}]"),
        Mutant("a bool for a 1", f"return {_PREDICTED}", f"return {[0, True] + _PREDICTED[2:]}"),
        Mutant("reversed", f"return {_PREDICTED}", f"return {_PREDICTED[::-1]}"),
        Mutant("a dict", f"return {_PREDICTED}", f"return dict(enumerate({_PREDICTED}))"),
        Mutant("a tensor", f"return {_PREDICTED}", f"return torch.tensor({_PREDICTED})"),
        Mutant("a tuple", f"return {_PREDICTED}", f"return tuple({_PREDICTED})",
               equivalent="a list or a tuple is asked for"),
        Mutant("runs the program", f"return {_PREDICTED}",
               "from autograder.saved_tensors import VERSION_PROGRAM\n    env, out = {'torch': torch}, []\n"
               "    for st, w in VERSION_PROGRAM:\n        exec(st, env)\n        out.append(int(eval(w, env)._version))\n"
               "    return out", equivalent="the program's own versions are the answer"),
    )),
    "read_error_message": Target(checks=("read_error_message_tests",), mutants=(
        Mutant("no dots in the type", r"\[([\w.]+) \[", r"\[(\w+) \["),
        Mutant("torch.* types only", r"\[([\w.]+) \[", r"\[(torch\.[\w.]+) \["),
        Mutant("no 0-dim shape", r"\[([\d, ]*)\]", r"\[([\d, ]+)\]"),
        Mutant("no spaces in the shape", r"\[([\d, ]*)\]", r"\[([\d,]*)\]"),
        Mutant("one-digit versions", r"is at version (\d+); expected version (\d+)",
               r"is at version (\d); expected version (\d)"),
        Mutant("node names are words", r"of ([^,]+),)?", r"of (\w+),)?"),
        Mutant("the node part required", r"of ([^,]+),)?", r"of ([^,]+),)"),
        Mutant("output 0 only", r"which is output \d+ of", r"which is output 0 of"),
        Mutant("'' instead of None for no node", '"node": m.group(3)', '"node": m.group(3) or ""'),
        Mutant("node stripped (None breaks)", '"node": m.group(3)', '"node": m.group(3).strip()'),
        Mutant("the Backward0 suffix dropped", '"node": m.group(3)',
               '"node": m.group(3) and m.group(3).replace("Backward0", "")'),
        Mutant("version_now as a string", '"version_now": int(m.group(4))', '"version_now": m.group(4)'),
        Mutant("versions swapped", '"version_now": int(m.group(4)), "version_saved": int(m.group(5))',
               '"version_now": int(m.group(5)), "version_saved": int(m.group(4))'),
        Mutant("the saved version is always 0", '"version_saved": int(m.group(5))', '"version_saved": 0'),
        Mutant("shape as a list", "shape = tuple(", "shape = list("),
        Mutant("shape as strings", "tuple(int(s) for s", "tuple(s.strip() for s"),
        Mutant("no filter for the empty shape", ' if s.strip())', ')'),
        Mutant("at most four dims", 'if s.strip())\n', 'if s.strip())[:4]\n'),
        Mutant("only the exception's args", "str(err))", "err.args[0])"),
        Mutant("re.match", "re.search(", "re.match("),
        Mutant("the last part of the type", '"tensor_type": m.group(1)', '"tensor_type": m.group(1).split(".")[-1]'),
        Mutant("the type without 'torch.'", '"tensor_type": m.group(1)', '"tensor_type": m.group(1).replace("torch.", "")'),
        Mutant("an extra key", '"version_saved": int(m.group(5))}', '"version_saved": int(m.group(5)), "text": str(err)}'),
        Mutant("cached by the exception type", "def read_error_message(err):\n",
               "def read_error_message(err, _seen={}):\n    return _seen.setdefault(type(err), _read(err))\n\n"
               "def _read(err):\n"),
        Mutant("split on ', '", 'm.group(2).split(",")', 'm.group(2).split(", ")',
               equivalent="int() ignores the spaces either way"),
        Mutant("one space before 'is at'", r'r"\s*is at version', r'r" is at version',
               equivalent="PyTorch writes exactly one space there"),
        Mutant("the text before ' Hint:'", "str(err))", 'str(err).split(" Hint:")[0])',
               equivalent="the fields are all before the hint"),
    )),
    "saved_by": Target(checks=("saved_by_tests",), mutants=(
        Mutant("a sorted list", "    return found", "    return sorted(found)"),
        Mutant("output only", '("input", "output")', '("output",)'),
        Mutant("input only", '("input", "output")', '("input",)'),
        Mutant("roles swapped", '(x if role == "input" else y)', '(y if role == "input" else x)'),
        Mutant("writes through .data (no version bump)", "(x if role == \"input\" else y).mul_(1.0)",
               "(x if role == \"input\" else y).data.mul_(1.0)"),
        Mutant("backward of a non-scalar", "y.sum().backward()", "y.backward()"),
        Mutant("None for an empty set", "    return found", "    return found or None"),
        Mutant("stops at the first role found", "found.add(role)", "found.add(role)\n                break"),
        Mutant("cached by the op's type", "    return found", "    return saved_by.__dict__.setdefault(type(op), found)"),
        Mutant("cached by the op's name", "    return found",
               "    return saved_by.__dict__.setdefault(getattr(op, '__name__', ''), found)"),
        Mutant("any RuntimeError counts, non-scalar backward", "y.sum().backward()\n        except RuntimeError as err:\n"
               "            if \"modified by an inplace operation\" in str(err):\n                found.add(role)",
               "y.backward()\n        except RuntimeError as err:\n                found.add(role)"),
        Mutant("attribute names instead of the experiment", "    found = set()\n",
               "    y = op((torch.rand(5, dtype=torch.float64) + 0.5).requires_grad_().clone())\n"
               "    n = dir(y.grad_fn)\n"
               "    return {'output'} if '_saved_result' in n else ({'input'} if '_saved_self' in n else set())\n"
               "    found = set()\n"),
        Mutant("the names swapped", "found.add(role)", "found.add({'input': 'output', 'output': 'input'}[role])"),
        Mutant("a tuple", "    return found", "    return tuple(found)"),
        Mutant("the write before the op", "        y = op(x)\n        with torch.no_grad():\n            (x if role == \"input\" else y).mul_(1.0)\n",
               "        with torch.no_grad():\n            x.mul_(1.0)\n        y = op(x)\n"),
        Mutant("both written in each round", '(x if role == "input" else y).mul_(1.0)', "x.mul_(1.0)\n            y.mul_(1.0)"),
        Mutant("the message test negated", '"modified by an inplace operation" in str(err)',
               '"modified by an inplace operation" not in str(err)'),
        Mutant("found reset in each round", "    for role in (\"input\", \"output\"):\n",
               "    for role in (\"input\", \"output\"):\n        found = set()\n"),
        Mutant("returns after the first round", "                found.add(role)\n",
               "                found.add(role)\n        return found\n"),
        Mutant("the op on a detached input", "        y = op(x)\n", "        y = op(x.detach())\n"),
        Mutant("the op run under no_grad", "        y = op(x)\n", "        with torch.no_grad():\n            y = op(x)\n"),
        Mutant("set of the first letters", "    return found", "    return {r[0] for r in found}"),
        Mutant("the write under grad mode", "        with torch.no_grad():\n            (x if", "        if True:\n            (x if",
               equivalent="a non-leaf may be written with grad on; the bump is the same"),
        Mutant("the experiment in float32", "dtype=torch.float64", "dtype=torch.float32",
               equivalent="the version check does not depend on the dtype"),
        Mutant("a frozenset", "    return found", "    return frozenset(found)",
               equivalent="the visible test accepts a frozenset"),
        Mutant("add_(0.0)", ".mul_(1.0)", ".add_(0.0)", equivalent="any in-place write bumps the version"),
        Mutant("writes through detach()", '(x if role == "input" else y).mul_(1.0)',
               '(x if role == "input" else y).detach().mul_(1.0)',
               equivalent="detach() shares the version counter"),
        Mutant("any RuntimeError counts", "            if \"modified by an inplace operation\" in str(err):\n"
               "                found.add(role)", "            found.add(role)",
               equivalent="backward of these ops fails for no other reason"),
        Mutant("'inplace' only", '"modified by an inplace operation"', '"inplace"', equivalent="the same message"),
        Mutant("mean instead of sum", "y.sum().backward()", "y.mean().backward()", equivalent="any scalar loss"),
    )),
    "fixed_sigmoid_decode": Target(checks=("fixed_sigmoid_decode_tests",), mutants=DECODE_MUTANTS),
    "judge_fix": Target(checks=("judge_fix_tests",), mutants=(
        Mutant("catches RuntimeError only", "except Exception:", "except RuntimeError:"),
        Mutant("catches RuntimeError and ValueError", "except Exception:", "except (RuntimeError, ValueError):"),
        Mutant("no requires_grad check", "        if not out.requires_grad:\n            return \"no_gradient\"\n", ""),
        Mutant("no p.grad check", "    if leaf.grad is None:\n        return \"no_gradient\"\n", ""),
        Mutant("p.grad None called wrong", "    if leaf.grad is None:\n        return \"no_gradient\"",
               "    if leaf.grad is None:\n        return \"wrong_gradient\""),
        Mutant("grad_fn instead of requires_grad", "if not out.requires_grad:", "if out.grad_fn is None:",
               equivalent="they differ only for a decode returning a leaf that needs grad (p itself), which the "
                          "hidden decodes leave out: the task does not settle it, and a correct style checks grad_fn"),
        Mutant("no gradient called an error", "            return \"no_gradient\"\n        out.backward",
               "            return \"error\"\n        out.backward"),
        Mutant("an error called no gradient", "        return \"error\"", "        return \"no_gradient\""),
        Mutant("exact comparison", "torch.allclose(leaf.grad, ref_leaf.grad)", "torch.equal(leaf.grad, ref_leaf.grad)"),
        Mutant("a loose rtol", "torch.allclose(leaf.grad, ref_leaf.grad)",
               "torch.allclose(leaf.grad, ref_leaf.grad, rtol=1e-2)"),
        Mutant("verdicts swapped", '"correct" if torch.allclose', '"wrong_gradient" if torch.allclose'),
        Mutant("upstream weights all ones", "weights = torch.randn_like(p)", "weights = torch.ones_like(p)"),
        Mutant("the reference without the weights", "s[..., 4:]], -1).backward(weights)", "s[..., 4:]], -1).sum().backward()"),
        Mutant("the candidate without the weights", "out.backward(weights)", "out.sum().backward()"),
        Mutant("the reference leaf reused", "    leaf = p.clone().requires_grad_()\n", "    leaf = ref_leaf\n"),
        Mutant("a detached input", "decode(leaf, *consts)", "decode(leaf.detach(), *consts)"),
        Mutant("backward outside the try", "        out.backward(weights)\n    except Exception:\n        return \"error\"\n",
               "    except Exception:\n        return \"error\"\n    out.backward(weights)\n"),
        Mutant("five outputs instead of seven", "torch.randn(2, 3, 4, 5, 7,", "torch.randn(2, 3, 4, 5, 5,"),
        Mutant("the reference cubes the size", "s[..., 2:4] * 2) ** 2 * consts[1]", "s[..., 2:4] * 2) ** 3 * consts[1]"),
        Mutant("cached by the decode's name", "def judge_fix(decode):\n",
               "def judge_fix(decode, _seen={}):\n    if decode.__name__ not in _seen:\n"
               "        _seen[decode.__name__] = _judge_fix(decode)\n    return _seen[decode.__name__]\n\n"
               "def _judge_fix(decode):\n"),
        Mutant("the reference's scores detached", "               s[..., 4:]], -1)", "               s[..., 4:].detach()], -1)"),
        Mutant("the candidate gets float32", "decode(leaf, *consts)", "decode(leaf.float(), *consts)"),
        Mutant("catches BaseException", "except Exception:", "except BaseException:",
               equivalent="no candidate raises outside Exception"),
        Mutant("positive upstream weights", "weights = torch.randn_like(p)", "weights = torch.rand_like(p)",
               equivalent="any distinct random weights tell the candidates apart"),
        Mutant("allclose the other way round", "torch.allclose(leaf.grad, ref_leaf.grad)",
               "torch.allclose(ref_leaf.grad, leaf.grad)",
               equivalent="gradients differ by rounding or by far more than the tolerance"),
        Mutant("a fixed seed", "    p = torch.randn(", "    torch.manual_seed(3)\n    p = torch.randn(",
               equivalent="every outcome holds for any input"),
    )),
}
