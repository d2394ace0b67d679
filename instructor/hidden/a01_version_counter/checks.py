"""Assignment 1's checks: one :class:`~instructor.hidden.Check` per graded test cell (probe, judge,
cases), with the helpers their judges use."""
from __future__ import annotations

import re

import torch

from autograder.checks import check_equal, check_true, check_type, fail, tolerances
from autograder.runtime import test_configs
from autograder.saved_tensors import decode_constants, measure_version_program, wrong_steps

from .. import Check
from .cases import DECODES, second_output_error, synth_message
from .references import (build_decode, build_op, from_backward, judge_decode, match_version_error, provoke,
                         reference_decode, run_version_program, saved_by_experiment)

ASSIGNMENT = "01_version_counter"


# --------------------------------------------------------------------------- the checks

_NODES = re.compile(r"^Sigmoid(Backward0)?$")


class ReproduceSigmoidError(Check):
    """``reproduce_sigmoid_error()``: no input; returns the RuntimeError that backward raised after two
    slice writes into a sigmoid's output of a detector-shaped tensor (5 dims, at least 5 outputs; the
    task suggests (2, 3, 8, 8, 7) float32, other shapes are right too). Called once per case, and twice
    in a row in a third case whose two results are compared: the text says each call returns its own
    error, so the same exception object twice (a cached error) fails. The probe reports the type, the
    message and the traceback's frames (plain data); the judge reads them."""
    assignment, grade_id, function = ASSIGNMENT, "reproduce_sigmoid_error_tests", "reproduce_sigmoid_error"
    draws = ("repeated calls",)

    def cases(self):
        return ([{"call": k, "label": f"reproduce_sigmoid_error(), call {k}"} for k in (1, 2)]
                + [{"call": "pair", "label": "reproduce_sigmoid_error() called twice in a row, the two errors compared"}])

    @staticmethod
    def probe(ns, case):
        import os

        def report(err):
            frames, tb = [], getattr(err, "__traceback__", None) if isinstance(err, BaseException) else None
            while tb is not None and len(frames) < 200:
                code = tb.tb_frame.f_code
                frames.append([os.path.realpath(code.co_filename), code.co_name])
                tb = tb.tb_next
            return {"type": type(err).__name__, "mro": [c.__name__ for c in type(err).__mro__],
                    "message": str(err) if isinstance(err, BaseException) else repr(err)[:200],
                    "frames": frames}

        fn = student(ns, "reproduce_sigmoid_error")
        if case["call"] == "pair":
            first, second = fn(), fn()
            return {"pair": [report(first), report(second)], "same_object": first is second}
        return report(fn())

    def judge(self, case, r):
        if case["call"] == "pair":
            for one in r["pair"]:
                self.judge_one(one)
            check_true(not r["same_object"], "reproduce_sigmoid_error() returned the same exception object twice",
                       inputs=case["label"], expected="a new RuntimeError from each call's own backward",
                       got="the second call returned the first call's error (`first is second`)",
                       hint="make p, run the decode and call backward inside the function, every call: no "
                            "error kept from an earlier call (no global, no cache).")
            return
        self.judge_one(r)

    @staticmethod
    def judge_one(r):
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
        steps = wrong_steps(pred, measure_version_program())   # one message per wrong step, not per later line
        check_true(not steps, f"{len(steps)} step(s) of your predictions are wrong",
                   expected="the values printed by the program", got=steps[0] if steps else "",
                   detail="\n".join(steps[1:]),
                   hint="run the program cell by cell and explain each step you did not predict: how many "
                        "in-place operations does that line run, and on which counter?")


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
        err = second_output_error()
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
    """``saved_by(op)``: ``op`` is any differentiable function of one tensor (the task text: "a function
    of one tensor"), one op or several composed (no views), defined for positive values of any shape
    (the task's experiment uses a float64 non-leaf with values in [0.5, 2)). Returns a set from
    {"input", "output"}: whether backward through the whole function needs the input, its output.
    Ops cover all four answers: unary maths, activations, reductions, products of the tensor with
    itself or with a constant tensor, powers, and compositions whose last node alone gives another
    answer (``t ** 2 + 1``: the add saves nothing, the square saves the input) or whose first node does
    (``t.tanh().sqrt()``). The truth is the write-and-backward experiment, run here. A set or a
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
        # composed: the answer is the whole function's, not its last (or first) node's
        "lambda t: t ** 2 + 1", "lambda t: (t ** 2).exp()", "lambda t: t.exp() + t.sin()",
        "lambda t: torch.log(t).mean()", "lambda t: t.sigmoid() * 2", "lambda t: (t + 1).tanh()",
        "lambda t: t.tanh().sqrt()",
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
