"""Assignment 1 (the version counter): reference experiments and the checks its hidden tests call.

Everything a test needs to know about PyTorch is found out here *by experiment* on the installed
version, never read from a table: which tensors an op saves (write into them and see whether
backward refuses), what ``_version`` becomes after each line of a program (run it), what the
"modified by an inplace operation" message says for a given scenario (provoke it), and what the
right gradient is (an out-of-place decode in float64 on the CPU).

Sections: the message (regex, provoking it), the version program, saved tensors, the box decode
(constants, reference, fix candidates), and the ``check_*`` functions used by the test cells.
"""
from __future__ import annotations

import os
import re
from typing import Any, Callable

import torch

from .checks import call_student, check_equal, check_true, check_type, describe, fail, tolerances
from .runtime import test_configs

__all__ = [
    "VERSION_ERROR_RE", "match_version_error", "came_from_backward", "provoke_version_error",
    "VERSION_PROGRAM", "version_program_text", "run_version_program",
    "saved_by_experiment", "SAVE_OPS",
    "decode_constants", "inplace_decode", "reference_decode", "decode_outcome", "judge_decode",
    "FIX_CANDIDATES",
    "check_reproduced_error", "check_version_predictions", "check_error_reader", "check_saved_by",
    "check_fixed_decode", "check_fix_judge",
]

# --------------------------------------------------------------------------- the message

#: PyTorch's version-counter message. Tolerant of the wordings seen across versions: the node is
#: printed as "Sigmoid" (2.13) or "SigmoidBackward0" (older); the "which is output N of ..." part is
#: absent when the saved tensor has no grad_fn (a leaf).
VERSION_ERROR_RE = re.compile(
    r"modified by an inplace operation: \[(?P<type>[\w.]+) \[(?P<shape>[\d, ]*)\]\]"
    r"(?:, which is output (?P<index>\d+) of (?P<node>[\w:]+),)?"
    r"\s*is at version (?P<now>\d+); expected version (?P<saved>\d+) instead")


def match_version_error(err: BaseException | str) -> dict | None:
    """The message's fields, or None if it is not the version-counter error."""
    m = VERSION_ERROR_RE.search(str(err))
    if m is None:
        return None
    return {"tensor_type": m["type"],
            "shape": tuple(int(s) for s in m["shape"].replace(" ", "").split(",") if s),
            "node": m["node"], "version_now": int(m["now"]), "version_saved": int(m["saved"])}


_TORCH_DIR = os.path.dirname(os.path.realpath(torch.__file__))


def came_from_backward(err: BaseException) -> bool:
    """True if ``err`` was raised through autograd's backward (its traceback passes through
    ``torch/autograd``'s ``backward``/``grad``), i.e. it was not built and raised by hand."""
    tb = err.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        path = os.path.realpath(code.co_filename)
        if (path.startswith(_TORCH_DIR) and f"{os.sep}autograd{os.sep}" in path
                and code.co_name in {"backward", "grad", "_engine_run_backward"}):
            return True
        tb = tb.tb_next
    return False


def _node_names(t: torch.Tensor) -> set[str]:
    """The spellings a message may use for ``t``'s grad_fn: SigmoidBackward0, Sigmoid, and
    ``node.name()`` (e.g. torch::autograd::CopySlices)."""
    node = t.grad_fn
    if node is None:
        return set()
    cls = type(node).__name__
    return {cls, re.sub(r"Backward\d*$", "", cls), node.name()}


_UNARY = {"sigmoid": torch.sigmoid, "tanh": torch.tanh, "exp": torch.exp, "relu": torch.relu}


def provoke_version_error(op: str = "sigmoid", shape=(1, 3, 4, 4, 7), dtype=torch.float32,
                          device="cpu", writes: int = 2, saved: str = "output"):
    """Make backward raise the version-counter error; return ``(err, truth)``.

    ``saved="output"``: ``y = op(x)`` then ``writes`` slice assignments into ``y``.
    ``saved="input"``: ``y = h ** 2`` with ``h = x * 2`` (pow saves ``h``), then writes into ``h``.
    ``saved="constant"``: ``y = x * c`` with ``c`` a tensor that does not require grad (mul saves
    it; it is a leaf, so the message names no op), then writes into ``c``.
    ``truth`` holds what the message must say, measured on the tensors themselves.
    """
    x = torch.rand(shape, dtype=dtype, device=device, requires_grad=True)
    if saved == "output":
        y = _UNARY[op](x)
        target = y
    elif saved == "input":
        target = x * 2
        y = target ** 2
    else:
        target = torch.rand(shape, dtype=dtype, device=device)
        y = x * target
    truth = {"tensor_type": target.type(), "shape": tuple(target.shape), "node_names": _node_names(target),
             "version_saved": target._version}
    for k in range(writes):
        idx = (..., slice(k % target.shape[-1], k % target.shape[-1] + 1))
        target[idx] = target[idx] * 0.5
    truth["version_now"] = target._version
    truth["node_names"] |= _node_names(target)  # a saved input is named by its grad_fn *now*
    try:
        y.sum().backward()
    except RuntimeError as err:
        return err, truth
    raise AssertionError(f"backward did not fail for {op}/{saved}: the experiment is broken")


# --------------------------------------------------------------------------- the version program

#: (statement, tensor whose ``_version`` is reported after it). Shown in the notebook; the test
#: runs it to get the truth.
VERSION_PROGRAM = [
    ("a = torch.zeros(6)", "a"),
    ("a += 1", "a"),
    ("a[0] = 7.0", "a"),
    ("v = a[2:5]", "v"),
    ("v.mul_(3)", "a"),
    ("a.data.add_(1)", "a"),
    ("a.detach().zero_()", "a"),
    ("b = a + 1", "b"),
    ("a = a * 1", "a"),
    ("a.sigmoid_().add_(1)", "a"),
]


def version_program_text() -> str:
    width = max(len(s) for s, _ in VERSION_PROGRAM)
    return "\n".join(f"{s:<{width}}   # line {i}: {w}._version ?" for i, (s, w) in enumerate(VERSION_PROGRAM, 1))


def run_version_program() -> list[int]:
    """Execute :data:`VERSION_PROGRAM` and read the versions (the truth, on this PyTorch)."""
    env: dict[str, Any] = {"torch": torch}
    out = []
    for statement, watched in VERSION_PROGRAM:
        exec(statement, env)  # noqa: S102 - our own fixed program
        out.append(int(eval(watched, env)._version))  # noqa: S307
    return out


# --------------------------------------------------------------------------- saved tensors

#: Ops the hidden tests classify: (label, function of one tensor).
SAVE_OPS = [
    ("sigmoid", torch.sigmoid), ("tanh", torch.tanh), ("exp", torch.exp), ("relu", torch.relu),
    ("sqrt", torch.sqrt), ("softmax", lambda t: t.softmax(-1)), ("pow 2", lambda t: t.pow(2)),
    ("t * t", lambda t: t * t), ("sin", torch.sin), ("log", torch.log), ("t * 3", lambda t: t * 3),
    ("t + 1", lambda t: t + 1), ("neg", torch.neg), ("t - 2", lambda t: t - 2),
    ("norm", lambda t: t.norm()), ("cos", torch.cos), ("reciprocal", torch.reciprocal),
]


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

_ANCHORS = [(10.0, 13.0), (16.0, 30.0), (33.0, 23.0), (30.0, 61.0)]


def decode_constants(ny: int, nx: int, na: int = 3, stride: float = 8.0, device="cpu",
                     dtype=torch.float32):
    """``grid`` (1, 1, ny, nx, 2) of (column, row) offsets, ``anchor_grid`` (1, na, 1, 1, 2) in
    pixels, and the stride (a float), in ``dtype`` on ``device``."""
    rows, cols = torch.meshgrid(torch.arange(ny), torch.arange(nx), indexing="ij")
    grid = torch.stack((cols, rows), -1).view(1, 1, ny, nx, 2).to(device, dtype)
    anchor_grid = torch.tensor(_ANCHORS[:na]).view(1, na, 1, 1, 2).to(device, dtype)
    return grid, anchor_grid, float(stride)


def inplace_decode(p, grid, anchor_grid, stride):
    """The bug: decode by writing into the sigmoid's saved output."""
    y = p.sigmoid()
    y[..., 0:2] = (y[..., 0:2] * 2 - 0.5 + grid) * stride
    y[..., 2:4] = (y[..., 2:4] * 2) ** 2 * anchor_grid
    return y


def reference_decode(p, grid, anchor_grid, stride):
    """The same numbers, out of place (safe to differentiate)."""
    s = p.sigmoid()
    centre = (s[..., 0:2] * 2 - 0.5 + grid) * stride
    size = (s[..., 2:4] * 2) ** 2 * anchor_grid
    return torch.cat([centre, size, s[..., 4:]], dim=-1)


def _decode_case(shape, device, dtype, seed=1):
    gen = torch.Generator().manual_seed(seed)
    p64 = torch.randn(shape, generator=gen, dtype=torch.float64) * 2
    w64 = torch.randn(shape, generator=gen, dtype=torch.float64)
    consts64 = decode_constants(shape[2], shape[3], shape[1], dtype=torch.float64)
    p_ref = p64.clone().requires_grad_()
    out_ref = reference_decode(p_ref, *consts64)
    out_ref.backward(w64)
    consts = decode_constants(shape[2], shape[3], shape[1], device=device, dtype=dtype)
    return p64, w64, consts, out_ref.detach(), p_ref.grad


def decode_outcome(decode: Callable, p: torch.Tensor, w: torch.Tensor, consts) -> dict:
    """Run ``decode`` and its backward on a fresh leaf copy of ``p``; report what happened."""
    leaf = p.detach().clone().requires_grad_()
    try:
        out = decode(leaf, *consts)
    except Exception as err:  # noqa: BLE001
        return {"status": "error", "where": "forward", "error": err}
    if not isinstance(out, torch.Tensor):
        return {"status": "error", "where": "forward", "error": TypeError(f"returned {describe(out)}")}
    if not out.requires_grad:
        return {"status": "no_gradient", "out": out, "grad": None}
    try:
        out.backward(w.to(out.device, out.dtype))
    except Exception as err:  # noqa: BLE001
        return {"status": "error", "where": "backward", "error": err, "out": out}
    if leaf.grad is None:
        return {"status": "no_gradient", "out": out, "grad": None}
    return {"status": "ran", "out": out, "grad": leaf.grad}


def judge_decode(decode: Callable, shape=(2, 3, 4, 5, 7)) -> str:
    """The truth for the fix-judging question, in float64 on the CPU."""
    p, w, consts, out_ref, grad_ref = _decode_case(shape, "cpu", torch.float64)
    res = decode_outcome(decode, p, w, consts)
    if res["status"] != "ran":
        return res["status"]
    return "correct" if torch.allclose(res["grad"], grad_ref, rtol=1e-6, atol=1e-8) else "wrong_gradient"


def _fix_clone(p, grid, anchor_grid, stride):
    y = p.sigmoid().clone()
    y[..., 0:2] = (y[..., 0:2] * 2 - 0.5 + grid) * stride
    y[..., 2:4] = (y[..., 2:4] * 2) ** 2 * anchor_grid
    return y


def _fix_where(p, grid, anchor_grid, stride):
    s = p.sigmoid()
    col = torch.arange(s.shape[-1], device=s.device)
    pad = s.shape[-1] - 2
    g = torch.nn.functional.pad(grid, (0, pad))
    a = torch.nn.functional.pad(anchor_grid, (2, pad - 2))
    centre = (s * 2 - 0.5 + g) * stride
    size = (s * 2) ** 2 * a
    return torch.where(col < 2, centre, torch.where(col < 4, size, s))


def _silent_data(p, grid, anchor_grid, stride):
    y = p.sigmoid()
    y.data[..., 0:2] = (y.data[..., 0:2] * 2 - 0.5 + grid) * stride
    y.data[..., 2:4] = (y.data[..., 2:4] * 2) ** 2 * anchor_grid
    return y


def _silent_hooks(p, grid, anchor_grid, stride):
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        return inplace_decode(p, grid, anchor_grid, stride)


def _silent_detach(p, grid, anchor_grid, stride):
    s = p.sigmoid()
    d = s.detach()
    return torch.cat([(d[..., 0:2] * 2 - 0.5 + grid) * stride, (d[..., 2:4] * 2) ** 2 * anchor_grid,
                      s[..., 4:]], -1)


def _silent_no_grad_pieces(p, grid, anchor_grid, stride):
    s = p.sigmoid()
    with torch.no_grad():
        centre = (s[..., 0:2] * 2 - 0.5 + grid) * stride
        size = (s[..., 2:4] * 2) ** 2 * anchor_grid
    return torch.cat([centre, size, s[..., 4:]], -1)


def _no_grad_all(p, grid, anchor_grid, stride):
    with torch.no_grad():
        return inplace_decode(p, grid, anchor_grid, stride)


def _no_grad_writes(p, grid, anchor_grid, stride):
    y = p.sigmoid()
    with torch.no_grad():
        y[..., 0:2] = (y[..., 0:2] * 2 - 0.5 + grid) * stride
        y[..., 2:4] = (y[..., 2:4] * 2) ** 2 * anchor_grid
    return y


def _detach_writes(p, grid, anchor_grid, stride):
    y = p.sigmoid()
    d = y.detach()
    d[..., 0:2] = (y[..., 0:2] * 2 - 0.5 + grid) * stride
    d[..., 2:4] = (y[..., 2:4] * 2) ** 2 * anchor_grid
    return y


def _allow_mutation_forward_only(p, grid, anchor_grid, stride):
    with torch.autograd.graph.allow_mutation_on_saved_tensors():
        return inplace_decode(p, grid, anchor_grid, stride)


#: Decodes the fix-judging question is tested on (hidden); the truth is :func:`judge_decode`'s.
FIX_CANDIDATES = {
    "in-place (the bug)": inplace_decode, "out-of-place cat": reference_decode, "clone first": _fix_clone,
    "torch.where": _fix_where, ".data writes": _silent_data, "identity hooks": _silent_hooks,
    "detach before the maths": _silent_detach, "no_grad pieces": _silent_no_grad_pieces,
    "no_grad everything": _no_grad_all, "no_grad writes": _no_grad_writes, "detach writes": _detach_writes,
    "allow_mutation without backward inside": _allow_mutation_forward_only,
}

# --------------------------------------------------------------------------- checks for the tests

_NODES = re.compile(r"^Sigmoid(Backward0)?$")


def check_reproduced_error(fn: Callable) -> None:
    """Hidden checks of ``reproduce_sigmoid_error``: a real backward error with the seed's numbers."""
    for attempt in (1, 2):
        err = call_student(fn)
        check_type(err, RuntimeError, "reproduce_sigmoid_error()",
                   hint="catch the exception with `except RuntimeError as err:` and `return err`.")
        fields = match_version_error(err)
        check_true(fields is not None, "the error is not the 'modified by an inplace operation' error",
                   got=str(err)[:200], hint="write twice into slices of y = x.sigmoid(), then call backward.")
        check_true(fields["node"] is not None and bool(_NODES.match(fields["node"])),
                   "the saved tensor is not named as an output of the sigmoid",
                   expected="'output 0 of Sigmoid' (or SigmoidBackward0)", got=str(fields["node"]),
                   hint="the tensor you write into must be the sigmoid's output itself, and every other "
                        "op you use on its slices must not save them (multiply by 2 before any pow).")
        check_equal((fields["version_now"], fields["version_saved"]), (2, 0),
                    "(version now, version when saved) in the message",
                    hint="exactly two slice assignments into the sigmoid output, nothing else in place.")
        check_true(len(fields["shape"]) == 5 and fields["shape"][-1] >= 5,
                   "the tensor is not detector-shaped", expected="5 dims (batch, anchors, ny, nx, outputs>=5)",
                   got=str(fields["shape"]))
        check_true(came_from_backward(err), "this RuntimeError was not raised by autograd's backward",
                   hint="don't build the error yourself: call .backward() and return what it raised.")


def check_version_predictions(fn: Callable) -> None:
    got = call_student(fn)
    check_type(got, (list, tuple), "predict_versions()", hint="return a list of ints, one per line.")
    truth = run_version_program()
    check_equal(len(got), len(truth), "the number of predictions", hint="one number per line of the program.")
    wrong = [i + 1 for i, (g, t) in enumerate(zip(got, truth)) if g != t]
    check_true(not wrong, "some predicted versions are wrong",
               expected="the values printed by the program", got=f"wrong at line(s) {wrong}",
               hint="run the program cell by cell and explain each number you did not predict.")


def _check_fields(fields: Any, err: BaseException, truth: dict, label: str) -> None:
    check_type(fields, dict, f"read_error_message(<{label}>)")
    need = {"tensor_type", "shape", "node", "version_now", "version_saved"}
    check_true(need <= set(fields), f"read_error_message(<{label}>) misses keys",
               expected=str(sorted(need)), got=str(sorted(fields)))
    msg = str(err).split(" Hint:")[0]
    for key in ("tensor_type", "version_now", "version_saved"):
        check_equal(fields[key], truth[key], f"['{key}'] for the {label} error", inputs=msg,
                    hint="versions are ints; the type is the text inside the first [ ], e.g. 'torch.DoubleTensor'.")
    check_equal(tuple(fields["shape"]) if isinstance(fields["shape"], (list, tuple)) else fields["shape"],
                truth["shape"], f"['shape'] for the {label} error", inputs=msg,
                hint="a tuple of ints: the numbers in the inner [ ].")
    check_type(fields["shape"], tuple, f"['shape'] for the {label} error")
    if truth["node_names"]:
        ok = fields["node"] in truth["node_names"] and f"of {fields['node']}," in msg
        check_true(ok, f"['node'] for the {label} error is wrong", inputs=msg,
                   expected="the op name after 'output 0 of'", got=repr(fields["node"]))
    else:
        check_equal(fields["node"], None, f"['node'] for the {label} error (no 'which is output' part)",
                    inputs=msg, hint="when the message names no op, return None.")


def check_error_reader(fn: Callable, device: torch.device) -> None:
    cases = [
        ("sigmoid float64", dict(op="sigmoid", shape=(1, 3, 5, 6, 9), dtype=torch.float64)),
        ("tanh, 3 writes", dict(op="tanh", shape=(4, 7), writes=3)),
        ("exp, 1 write", dict(op="exp", shape=(2, 2, 2), writes=1)),
        ("relu 1-D", dict(op="relu", shape=(12,), writes=4)),
        ("saved input of pow", dict(saved="input", shape=(3, 5), writes=2)),
        ("saved constant of mul", dict(saved="constant", shape=(2, 6), writes=1)),
    ]
    if device.type == "cuda":
        cases.append(("cuda float16 sigmoid", dict(op="sigmoid", shape=(1, 3, 8, 8, 47), dtype=torch.float16,
                                                   device=device)))
    for label, kw in cases:
        err, truth = provoke_version_error(**kw)
        _check_fields(call_student(fn, err), err, truth, label)


def check_saved_by(fn: Callable) -> None:
    for label, op in SAVE_OPS:
        truth = saved_by_experiment(op)
        got = call_student(fn, op)
        check_type(got, (set, frozenset), f"saved_by(<{label}>)", hint="return a set such as {'output'}.")
        check_equal(set(got), truth, f"saved_by(<{label}>)", inputs=label,
                    hint="compare the grad_fn's _saved_* tensors with the input and the output "
                         "(same storage), or write into each and try backward.")


def check_fixed_decode(fn: Callable, shapes=((2, 3, 4, 5, 7), (1, 2, 3, 3, 5))) -> None:
    """Values and gradient of the student's decode against a float64 out-of-place reference."""
    for device, dtype in test_configs():
        for shape in shapes:
            p, w, consts, out_ref, grad_ref = _decode_case(shape, device, dtype)
            inputs = f"p {str(dtype).replace('torch.', '')} {shape} on {device.type}"
            p_dev, w_dev = p.to(device, dtype), w.to(device, dtype)
            res = decode_outcome(lambda *a: call_student(fn, *a, name="fixed_sigmoid_decode"), p_dev, w_dev, consts)
            if res["status"] == "error":
                err = res["error"]
                if isinstance(err, AssertionError) and "fixed_sigmoid_decode" in str(err):
                    raise err
                fail(f"backward through fixed_sigmoid_decode raised {type(err).__name__}", inputs=inputs,
                     detail=str(err)[:300],
                     hint="nothing may write into the sigmoid's output: build the result with torch.cat "
                          "(or write into y = p.sigmoid().clone()).")
            out = res["out"]
            check_true(tuple(out.shape) == tuple(shape) and out.dtype == dtype and out.device.type == device.type,
                       "fixed_sigmoid_decode returned the wrong shape/dtype/device", inputs=inputs,
                       expected=f"{shape} {dtype} on {device.type}", got=describe(out))
            tol = tolerances(dtype)
            _close(out, out_ref, tol, "fixed_sigmoid_decode's values", inputs)
            check_true(res["status"] == "ran", "no gradient reaches p through fixed_sigmoid_decode", inputs=inputs,
                       hint="no torch.no_grad() and no .detach() on the way from p to the result.")
            _close(res["grad"], grad_ref, tol, "the gradient through fixed_sigmoid_decode", inputs,
                   hint="every piece must come from p.sigmoid() by differentiable ops; no .data, "
                        ".detach(), no_grad or saved_tensors_hooks.")


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


def check_fix_judge(fn: Callable) -> None:
    for label, decode in FIX_CANDIDATES.items():
        truth = judge_decode(decode)
        got = call_student(fn, decode, name="judge_fix")
        check_equal(got, truth, f"judge_fix(<{label}>)", inputs=label,
                    hint="run it on a float64 leaf, call backward with a random upstream gradient "
                         "inside try/except Exception, and compare p.grad with an out-of-place reference.")
