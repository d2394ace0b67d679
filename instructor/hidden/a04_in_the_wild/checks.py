"""Assignment 4's checks: one :class:`~instructor.hidden.Check` per graded test cell (probe, judge,
cases), with the helpers their judges use."""
from __future__ import annotations

import copy

import torch

from autograder.checks import check_equal, check_true, fail, tolerances
from autograder.wild import build_model, d_loss, g_loss, make_gan, saved_bytes

from .. import Check, configs_with_half_on_cpu
from ..a01_version_counter.references import from_backward, match_version_error
from .references import ReferenceSigmoidInPlace, gradients, reference_safe_inplace, set_inplace, wrong_order_error

ASSIGNMENT = "04_in_the_wild"


def _dname(dtype) -> str:
    return str(dtype).replace("torch.", "")


def _close(actual, expected64, dtype, what, inputs, hint="", scale=1.0):
    """``actual`` (any dtype) against a float64 ``expected64``, tolerances of ``dtype``."""
    if not isinstance(actual, torch.Tensor):
        fail(f"{what} is missing", inputs=inputs, expected=f"a tensor of shape {tuple(expected64.shape)}",
             got=repr(actual)[:100], hint=hint)
    if tuple(actual.shape) != tuple(expected64.shape):
        fail(f"{what} has the wrong shape", inputs=inputs, expected=str(tuple(expected64.shape)),
             got=str(tuple(actual.shape)), hint=hint)
    tol = tolerances(dtype)
    a = actual.detach().to("cpu", torch.float64)
    atol = tol["atol"] * max(1.0, scale)
    bad = (a - expected64).abs() > atol + tol["rtol"] * expected64.abs()
    if bool(bad.any()) or not bool(torch.isfinite(a).all()):
        i = int((a - expected64).abs().nan_to_num(float("inf")).flatten().argmax())
        fail(f"{what} has wrong values", inputs=inputs,
             expected=f"{float(expected64.flatten()[i]):.6g} (element {i})",
             got=f"{float(a.flatten()[i]):.6g} (element {i}; {int(bad.sum())} of {a.numel()} wrong)", hint=hint)


#: A meta case's label: what the student is told about the ``meta`` device.
META = "on the meta device (shapes and dtypes, no data: it stands in for a GPU)"
CPU_HINT = ("make new tensors on the input's device (device=x.device, torch.ones_like, torch.empty_like), or use "
            "plain numbers: they (and 0-dim tensors) mix with any device.")
_DEVICE_MIX = ("is not on the expected device", "to be on the same device", "found at least two devices")


def _is_device_mix(text: str) -> bool:
    return any(m in text for m in _DEVICE_MIX)


def _fail_cpu_tensor(what: str, where: str, detail: str):
    """A meta case met a tensor made on the CPU: on a GPU the same code fails (or lands on the CPU)."""
    fail(f"{what} creates a tensor on the CPU while its input is on another device; on a GPU this fails",
         inputs=where, detail=detail[:300], hint=CPU_HINT)


def _raised(r, what, inputs, hint):
    if isinstance(r, dict) and "raised" in r:
        e = r["raised"]
        fail(f"{what} raised {e['type']}", inputs=inputs, detail=e["message"][:500], hint=hint)


# =========================================================================== 1. the GAN step

class ReproduceGanError(Check):
    """``reproduce_gan_error()``: no input. Must return the RuntimeError raised by autograd's backward
    in the wrong loop: the version-counter message (any "which is output" part or none, any node name)
    whose tensor has the shape of the transpose of ``make_gan(seed=0)``'s last discriminator weight
    (measured here on the same loop: the first saved tensor G's backward meets in D) and whose version
    is exactly one past the saved one (one optimizer step in between)."""
    assignment, grade_id, function = ASSIGNMENT, "reproduce_gan_error_tests", "reproduce_gan_error"
    draws = ()

    def cases(self):
        return [{"label": "reproduce_gan_error()"}]

    @staticmethod
    def probe(ns, case):
        import traceback

        err = student(ns, "reproduce_gan_error")()
        r = {"type": type(err).__name__, "is_runtime_error": isinstance(err, RuntimeError)}
        if isinstance(err, BaseException):
            r["message"] = str(err)
            r["frames"] = [[f.filename, f.name] for f in traceback.extract_tb(err.__traceback__)]
        return r

    def judge(self, case, r):
        what = "reproduce_gan_error()"
        check_true(r["is_runtime_error"], f"{what} has the wrong type", expected="RuntimeError", got=r["type"],
                   hint="catch it with `except RuntimeError as err:` and `return err` (return, not raise).")
        fields = match_version_error(r["message"])
        check_true(fields is not None, f"{what} is not the version-counter error", got=r["message"][:300],
                   expected="'... modified by an inplace operation: [...] ... is at version N; expected version N-1'",
                   hint="step D's optimizer after loss_d.backward(retain_graph=True), then call loss_g.backward() "
                        "on the loss built from the same D output.")
        check_true(from_backward(r.get("frames", [])), f"{what} did not come out of autograd's backward",
                   hint="return the exception that loss_g.backward() raised, not one you built yourself.")
        truth = match_version_error(wrong_order_error())
        check_true(fields["shape"] == truth["shape"], "the tensor in the message is not D's last weight",
                   expected=f"{list(truth['shape'])}: the transpose of D's last weight, the first tensor G's backward "
                            "needs on its way through D",
                   got=str(list(fields["shape"])),
                   hint="use make_gan(seed=0) and make D's optimizer step before G's backward through D.")
        check_true(fields["version_now"] == fields["version_saved"] + 1, "the versions are not N and N-1",
                   expected="is at version N; expected version N-1 (one opt_d.step() in between)",
                   got=f"is at version {fields['version_now']}; expected version {fields['version_saved']}",
                   hint="exactly one opt_d.step() between the forward pass and loss_g.backward().")


class TrainStep(Check):
    """``train_step(G, D, opt_g, opt_d, real, z)``: ``G``, ``D`` from ``make_gan`` (any seed, latent
    1-4, hidden 4-32), in float64/float32 on the CPU (float16/bfloat16 too, on two set-ups) and
    float32/float16 on a GPU; ``opt_g``/``opt_d``
    SGD over each network's parameters (any lr); ``real`` (n, 2) and ``z`` (n, latent), n 1-64, on
    the same device and dtype. Called twice in a row (repeated calls). The DCGAN order: one D step
    on real (label 1) and detached fakes (label 0), then one G step with label 1 through the updated
    D; returns ``(loss_d, loss_g)`` as numbers. The probe's optimizers record the gradients they see
    at each ``step()``; the judge replays the reference step in float64."""
    assignment, grade_id, function = ASSIGNMENT, "train_step_tests", "train_step"
    draws = ("float64", "float32", "float16", "bfloat16", "GPU", "repeated calls")

    SETUPS = [  # (seed, latent, hidden, batch, lr)
        (0, 2, 16, 64, 0.1), (3, 2, 16, 1, 0.5), (7, 3, 8, 17, 0.05), (11, 1, 4, 5, 1.0), (5, 4, 32, 32, 0.2)]
    HALF_ON_CPU = (0, 1)  # the set-ups also drawn in float16/bfloat16 on the CPU

    def cases(self):
        cases, seed = [], 400
        for device, dtype in configs_with_half_on_cpu():
            half_on_cpu = device.type == "cpu" and dtype in (torch.float16, torch.bfloat16)
            for k, (gseed, latent, hidden, n, lr) in enumerate(self.SETUPS):
                if half_on_cpu and k not in self.HALF_ON_CPU:
                    continue
                seed += 1
                g = torch.Generator().manual_seed(seed)
                reals = [torch.randn(n, 2, generator=g, dtype=torch.float64) * 1.5 for _ in range(2)]
                zs = [torch.randn(n, latent, generator=g, dtype=torch.float64) for _ in range(2)]
                dt = _dname(dtype)
                cases.append({"seed": gseed, "latent": latent, "hidden": hidden, "lr": lr, "reals": reals,
                              "zs": zs, "device": str(device), "dtype": dt,
                              "label": f"make_gan(seed={gseed}, latent={latent}, hidden={hidden}) in {dt} on "
                                       f"{device.type}, batch {n}, SGD lr={lr}, two calls in a row"})
        return cases

    @staticmethod
    def probe(ns, case):
        from autograder.wild import make_gan

        step = student(ns, "train_step")
        device, dtype = torch.device(case["device"]), getattr(torch, case["dtype"])
        G, D = make_gan(case["seed"], latent=case["latent"], hidden=case["hidden"], dtype=torch.float64)
        G, D = G.to(device, dtype), D.to(device, dtype)
        log = []

        class Recording(torch.optim.SGD):
            def __init__(self, params, who):
                self.who, self.watched = who, list(params)
                super().__init__(self.watched, lr=case["lr"])

            def step(self, closure=None):
                log.append({"who": self.who, "grads": [None if p.grad is None else p.grad.detach().clone()
                                                        for p in self.watched]})
                return super().step(closure)

        opt_g, opt_d = Recording(G.parameters(), "g"), Recording(D.parameters(), "d")
        returned = []
        for real, z in zip(case["reals"], case["zs"]):
            out = step(G, D, opt_g, opt_d, real.to(device, dtype), z.to(device, dtype))
            try:
                returned.append([float(v) for v in out])
            except Exception:  # noqa: BLE001 - reported as data
                returned.append(type(out).__name__)
            log.append({"who": "end of call"})
        return {"log": log, "returned": returned, "G": [p.detach() for p in G.parameters()],
                "D": [p.detach() for p in D.parameters()]}

    def reference(self, case):
        dtype = getattr(torch, case["dtype"])
        G, D = make_gan(case["seed"], latent=case["latent"], hidden=case["hidden"], dtype=torch.float64)
        with torch.no_grad():
            for p in list(G.parameters()) + list(D.parameters()):
                p.copy_(p.to(dtype).double())
        log = []
        opt_g = torch.optim.SGD(G.parameters(), lr=case["lr"])
        opt_d = torch.optim.SGD(D.parameters(), lr=case["lr"])
        losses = []
        for real, z in zip(case["reals"], case["zs"]):
            real, z = real.to(dtype).double(), z.to(dtype).double()
            fake = G(z)
            opt_d.zero_grad()
            loss_d = d_loss(D(real), D(fake.detach()))
            loss_d.backward()
            log.append({"who": "d", "grads": [p.grad.clone() for p in D.parameters()]})
            opt_d.step()
            opt_g.zero_grad()
            loss_g = g_loss(D(fake))
            loss_g.backward()
            log.append({"who": "g", "grads": [p.grad.clone() for p in G.parameters()]})
            opt_g.step()
            losses.append([loss_d.item(), loss_g.item()])
            log.append({"who": "end of call"})
        return log, losses, [p.detach() for p in G.parameters()], [p.detach() for p in D.parameters()]

    def judge(self, case, r):
        dtype = getattr(torch, case["dtype"])
        where = case["label"]
        ref_log, ref_losses, ref_g, ref_d = self.reference(case)
        got_order = [e["who"] for e in r["log"]]
        want_order = [e["who"] for e in ref_log]
        names = {"d": "opt_d.step()", "g": "opt_g.step()", "end of call": "| return"}
        check_true(got_order == want_order, "the optimizers did not step in the expected order", inputs=where,
                   expected=" ".join(names[w] for w in want_order),
                   got=" ".join(names.get(w, w) for w in got_order),
                   hint="one opt_d.step(), then one opt_g.step(), per call: D first, then G against the updated D.")
        net = {"d": "D", "g": "G"}
        for k, (got, want) in enumerate(zip(r["log"], ref_log)):
            if want["who"] == "end of call":
                continue
            call = 1 + sum(e["who"] == "end of call" for e in ref_log[:k])
            who = net[want["who"]]
            for j, (gg, gw) in enumerate(zip(got["grads"], want["grads"])):
                if gg is None:
                    fail(f"no gradient reached {who} at its optimizer step (call {call}, parameter {j})",
                         inputs=where, expected=f"{who}'s gradient of its loss", got="p.grad is None",
                         hint="G's loss must flow from D's output back into G: no fake.detach(), .data or "
                              "torch.no_grad() on the path from G(z) to D(fake) in the G step."
                         if who == "G" else "call loss_d.backward() before opt_d.step().")
                _close(gg, gw, dtype, f"the gradient {who} steps with (call {call}, parameter {j})", where,
                       scale=float(gw.abs().max()),
                       hint="D's gradient: loss_d only (real=1, fake.detach()=0), zeroed before; G's gradient: "
                            "loss_g = BCE(D(fake), 1) through the D *after* its step, zeroed before. A stale graph "
                            "(retain_graph=True), .data writes or a gradient left over from the other loss all "
                            "change these numbers without any error."
                       if who == "D" else
                            "G's gradient: opt_g.zero_grad(), then loss_g = BCE(D(fake), 1) with a NEW forward "
                            "pass D(fake) after opt_d.step(), then loss_g.backward(). A stale graph "
                            "(retain_graph=True) or .data writes change it without any error.")
        for name, got, want in (("G", r["G"], ref_g), ("D", r["D"], ref_d)):
            for j, (pg, pw) in enumerate(zip(got, want)):
                _close(pg, pw, dtype, f"{name}'s parameter {j} after two calls", where,
                       hint="exactly one SGD step of each optimizer per call, with the gradients above.")
        for k, (got, want) in enumerate(zip(r["returned"], ref_losses)):
            check_true(isinstance(got, list) and len(got) == 2, f"train_step's return value (call {k + 1})",
                       inputs=where, expected="(loss_d, loss_g): two numbers", got=repr(got)[:100],
                       hint="return loss_d.item(), loss_g.item().")
            _close(torch.tensor(got, dtype=torch.float64), torch.tensor(want, dtype=torch.float64), dtype,
                   f"(loss_d, loss_g) returned by call {k + 1}", where,
                   hint="loss_d before D's step; loss_g computed with the updated D.")


# =========================================================================== 2. inplace=True layers

class SafeInplace(Check):
    """``safe_inplace(model)``: ``model`` an ``nn.Sequential`` from ``build_model`` (first module a
    Linear; then Linears, LayerNorms, Tanh, Sigmoid and the activations that take ``inplace=``,
    in any order, repeated ones too, ending in any of them: the task text says so), its activations in
    place or not as handed over; float64/float32 on the CPU (float16/bfloat16 too, on six models, three
    of them with ELU, CELU or SELU, whose decision an experiment run in half precision gets wrong:
    ``torch.allclose`` then sees rounding as a different gradient), float32/float16 on a GPU. Returns an
    ``nn.Sequential`` of the same modules with exactly the activations that pass the left-to-right
    experiment in place. The truth is that experiment,
    run here in float64; the returned model's backward and gradients (random upstream weights) are
    checked against the all-out-of-place model, and the bytes autograd saves for backward in the
    returned model are measured in the probe (``saved_bytes``, on the case's device and dtype) against the
    same model built all out of place: fewer where the experiment's choice saves memory, never more."""
    assignment, grade_id, function = ASSIGNMENT, "safe_inplace_tests", "safe_inplace"
    draws = ("float64", "float32", "float16", "bfloat16", "GPU")

    SPECS = [  # (spec, preset flags: None = all out of place)
        (["linear", "relu", "linear", "sigmoid", "relu", "linear", "relu"], None),   # the visible test's
        (["linear", "leaky_relu", "relu", "linear"], None),                           # keep earlier decisions
        (["linear", "tanh", "elu", "linear", "elu", "linear"], None),
        (["linear", "relu", "relu", "linear"], "all"),                               # handed over in place
        (["linear", "layernorm", "leaky_relu", "linear", "sigmoid", "hardtanh", "linear"], "all"),
        (["linear", "silu", "linear", "mish", "linear", "hardswish", "linear"], None),
        (["linear", "selu", "celu", "linear", "relu6", "tanh", "leaky_relu", "linear"], "all"),
        (["linear", "sigmoid", "elu", "leaky_relu", "linear", "relu"], None),        # ends in an activation
        (["linear", "celu", "linear", "elu", "layernorm", "relu"], None),            # LayerNorm, then the end
    ]
    #: the models also drawn in float16/bfloat16 on the CPU: 2, 6 and 8 hold ELU/CELU/SELU, which an
    #: experiment in the model's own half precision decides wrongly (rounding fails torch.allclose)
    HALF_ON_CPU = (2, 3, 4, 5, 6, 8)

    def cases(self):
        cases, seed = [], 500
        for device, dtype in configs_with_half_on_cpu():
            half_on_cpu = device.type == "cpu" and dtype in (torch.float16, torch.bfloat16)
            for k, (spec, preset) in enumerate(self.SPECS):
                if half_on_cpu and k not in self.HALF_ON_CPU:
                    continue
                seed += 1
                in_f, width = (8, 16) if k % 2 == 0 else (5, 12)
                g = torch.Generator().manual_seed(seed)
                x = torch.randn(6, in_f, generator=g, dtype=torch.float64)
                w = torch.randn(6, width, generator=g, dtype=torch.float64)
                flags = [preset == "all"] * len(spec)
                dt = _dname(dtype)
                cases.append({"spec": spec, "in_features": in_f, "width": width, "seed": seed, "preset": flags,
                              "x": x, "w": w, "device": str(device), "dtype": dt,
                              "label": f"build_model({spec}) in {dt} on {device.type}"
                                       + (", handed over with every activation in place" if preset else "")})
        return cases

    @staticmethod
    def probe(ns, case):
        from autograder.wild import build_model, saved_bytes

        device, dtype = torch.device(case["device"]), getattr(torch, case["dtype"])
        model = build_model(case["spec"], case["in_features"], case["width"], case["seed"], dtype=dtype,
                            device=device)
        for m, f in zip(model, case["preset"]):
            if hasattr(m, "inplace"):
                m.inplace = f
        out = student(ns, "safe_inplace")(model)
        if not isinstance(out, torch.nn.Sequential):
            return {"type": type(out).__name__}
        r = {"type": "Sequential", "modules": [type(m).__name__ for m in out],
             "flags": [getattr(m, "inplace", None) for m in out]}
        x = case["x"].to(device, dtype).requires_grad_()
        try:  # what autograd keeps for backward: the returned model against the same model all out of place
            plain = build_model(case["spec"], case["in_features"], case["width"], case["seed"], dtype=dtype,
                                device=device)
            r["saved_bytes"] = [saved_bytes(out, x), saved_bytes(plain, x)]
        except Exception as err:  # noqa: BLE001 - reported as data
            r["saved_bytes_error"] = f"{type(err).__name__}: {str(err)[:300]}"
        try:
            out.zero_grad(set_to_none=True)
            (out(x) * case["w"].to(device, dtype)).sum().backward()
            r["grads"] = [p.grad for p in out.parameters()] + [x.grad]
        except Exception as err:  # noqa: BLE001 - reported as data
            r["backward_error"] = f"{type(err).__name__}: {str(err)[:300]}"
        return r

    def judge(self, case, r):
        dtype = getattr(torch, case["dtype"])
        where = case["label"]
        what = "safe_inplace(model)"
        check_true(r["type"] == "Sequential", f"{what} has the wrong type", inputs=where,
                   expected="the nn.Sequential (the same one, changed, or a copy)", got=r["type"],
                   hint="end with `return model`.")
        model = build_model(case["spec"], case["in_features"], case["width"], case["seed"], dtype=torch.float64)
        with torch.no_grad():
            for p in model.parameters():
                p.copy_(p.to(dtype).double())
        names = [type(m).__name__ for m in model]
        check_equal(r["modules"], names, f"the modules of {what}", inputs=where,
                    hint="keep every module; only change the activations' .inplace attribute.")
        truth = [getattr(m, "inplace", None) for m in reference_safe_inplace(copy.deepcopy(model))]
        x, w = case["x"].to(dtype).double(), case["w"].to(dtype).double()
        if "backward_error" in r:
            bad = [f"{k} ({names[k]})" for k, (f, t) in enumerate(zip(r["flags"], truth)) if f and not t]
            fail(f"backward through the model {what} returned failed", inputs=where, detail=r["backward_error"],
                 expected="backward runs", hint=f"these activations may not run in place: {', '.join(bad) or '?'}; "
                                                "an in-place activation must not overwrite a tensor another "
                                                "layer saved for backward (Tanh and Sigmoid save their output).")
        ref_grads = gradients(set_inplace(copy.deepcopy(model), [False] * len(names)), x, w)
        for j, (gg, gw) in enumerate(zip(r["grads"], ref_grads)):
            label = f"parameter {j}" if j < len(ref_grads) - 1 else "the input x"
            _close(gg, gw, dtype, f"the gradient of {label} through {what}'s result", where,
                   scale=float(gw.abs().max()),
                   hint="in place must not change the gradient: compare with the all-out-of-place model.")
        if r["flags"] == truth:
            check_true("saved_bytes" in r, f"the saved tensors of {what} could not be measured", inputs=where,
                       detail=r.get("saved_bytes_error", ""), hint="return the nn.Sequential itself.")
            mine, plain = r["saved_bytes"]
            base64 = saved_bytes(set_inplace(copy.deepcopy(model), [False] * len(names)), x)
            best64 = saved_bytes(set_inplace(copy.deepcopy(model), [bool(f) for f in truth]), x)
            saves = best64 < base64
            check_true(mine < plain if saves else mine <= plain, f"{what} keeps more for backward than it should",
                       inputs=where, expected=f"fewer saved bytes than the all-out-of-place model ({plain})"
                       if saves else f"no more than the all-out-of-place model ({plain})", got=f"{mine} bytes",
                       hint="only the .inplace flags change: no hooks, no copies, no extra modules.")
        if r["flags"] != truth:
            base = saved_bytes(set_inplace(copy.deepcopy(model), [False] * len(names)), x)
            mine = saved_bytes(set_inplace(copy.deepcopy(model), [bool(f) for f in r["flags"]]), x)
            best = saved_bytes(set_inplace(copy.deepcopy(model), [bool(f) for f in truth]), x)
            fmt = lambda fl: [k for k, f in enumerate(fl) if f]  # noqa: E731
            fail(f"{what} put the wrong activations in place", inputs=where,
                 expected=f"in place: modules {fmt(truth)} (saved for backward: {best} bytes, all out of place: "
                          f"{base} bytes, in float64)",
                 got=f"in place: modules {fmt(r['flags'])} ({mine} bytes)",
                 hint="reset every activation to out of place first; then, left to right, put one in place and "
                      "keep it only if backward runs and every gradient equals the out-of-place model's "
                      "(keep the earlier decisions while you test the next).")


# =========================================================================== 3. a custom Function

#: Functions of ``t`` built on the student's Function ``Fn``, as source text: the gradient must be
#: right for the result *and* for every later use of the tensor written in place.
COMPOSITIONS = [
    ("lambda t: Fn.apply(t.clone())", "Fn.apply(t.clone())"),
    ("lambda t: (lambda h: Fn.apply(h) + h)(t * 2)", "h = t * 2; Fn.apply(h) + h (h used after the call)"),
    ("lambda t: (lambda h: Fn.apply(h) * h.exp())(t - 1)", "h = t - 1; Fn.apply(h) * h.exp()"),
    ("lambda t: (lambda h: (Fn.apply(h[:, 1:3]), h)[1])(t * 1)", "h = t * 1; Fn.apply(h[:, 1:3]); h (a view)"),
    ("lambda t: Fn.apply(t.clone()).pow(3).cumsum(-1)", "Fn.apply(t.clone()).pow(3).cumsum(-1)"),
]


def build_composition(source: str, fn):
    return eval(source, {"torch": torch, "Fn": fn})  # noqa: S307 - the grader's own text


class SigmoidInPlace(Check):
    """``SigmoidInPlace``: an ``autograd.Function`` whose ``apply(x)`` overwrites ``x`` (a non-leaf, or a
    view of one, any shape) with ``sigmoid(x)`` and returns it, with the gradient right for the result
    and for every later use of ``x``; on a leaf that requires grad it must raise (PyTorch's leaf rule).
    The write may be ``x.sigmoid_()`` or go through ``x.data``: with ``ctx.mark_dirty(x)`` both are right
    (the task text says either is fine). Gradients are checked on compositions in float64
    (``torch.autograd.gradcheck`` in the probe, and the Jacobian against the reference's, computed
    here), values and in-place-ness on every ``test_configs()`` pair (float32/float16 on a GPU) and in
    float16/bfloat16 on the CPU. Two cases run forward and backward on the ``meta`` device (float32,
    float16): a tensor made on the CPU in forward or backward (``torch.ones(y.shape)``) meets ``x`` there
    and raises the device mismatch a GPU would; only that mismatch and the result's device, dtype and
    in-place-ness are judged on meta."""
    assignment, grade_id, function = ASSIGNMENT, "sigmoid_inplace_tests", "SigmoidInPlace"
    draws = ("float64", "float32", "float16", "bfloat16", "GPU", "meta", "view", "leaf")
    #: Writes into ``y`` after ``apply`` (source text), each with its out-of-place twin: backward must
    #: then refuse with the version-counter error or give the gradient of the twin, never another one.
    WRITES = [("lambda y: y.mul_(3)", "lambda y: y * 3"), ("lambda y: y.add_(1)", "lambda y: y + 1")]

    def cases(self):
        cases, g = [], torch.Generator().manual_seed(600)
        for src, about in COMPOSITIONS:
            cases.append({"kind": "gradcheck", "source": src, "x": torch.randn(3, 4, generator=g, dtype=torch.float64),
                          "label": f"gradcheck in float64 of {about}"})
        for device, dtype in configs_with_half_on_cpu():
            for shape in [(5,), (2, 3, 4)]:
                dt = _dname(dtype)
                cases.append({"kind": "inplace", "x": torch.randn(*shape, generator=g, dtype=torch.float64) * 3,
                              "w": torch.randn(*shape, generator=g, dtype=torch.float64), "device": str(device),
                              "dtype": dt, "label": f"h = x * 1 ({dt} {shape} on {device.type}); y = "
                                                    "SigmoidInPlace.apply(h); (y * w).sum().backward()"})
        cases.append({"kind": "leaf", "x": torch.randn(4, generator=g, dtype=torch.float64),
                      "label": "SigmoidInPlace.apply(leaf) on a leaf that requires grad"})
        for write, plain in self.WRITES:  # the first rule: the caller writes into y after apply
            cases.append({"kind": "written", "write": write, "plain": plain,
                          "x": torch.randn(3, 4, generator=g, dtype=torch.float64),
                          "w": torch.randn(3, 4, generator=g, dtype=torch.float64),
                          "label": f"h = x * 1 (float64 (3, 4)); y = SigmoidInPlace.apply(h); {write[10:]} "
                                   "(a write into y after apply); (y * w).sum().backward()"})
        for dtype, shape in ((torch.float32, (2, 3, 4)), (torch.float16, (5,))):
            dt = _dname(dtype)
            cases.append({"kind": "inplace", "x": torch.randn(*shape, generator=g, dtype=torch.float64),
                          "w": torch.randn(*shape, generator=g, dtype=torch.float64), "device": "meta", "dtype": dt,
                          "label": f"h = x * 1 ({dt} {shape} {META}); y = SigmoidInPlace.apply(h); "
                                   "(y * w).sum().backward()"})
        return cases

    @staticmethod
    def probe(ns, case):
        Fn = student(ns, "SigmoidInPlace")
        if case["kind"] == "gradcheck":
            f = eval(case["source"], {"torch": torch, "Fn": Fn})
            x = case["x"].clone().requires_grad_()
            r = {"values": f(x).detach()}
            r["jacobian"] = torch.autograd.functional.jacobian(f, case["x"].clone())
            r["gradcheck"] = bool(torch.autograd.gradcheck(f, (x,), raise_exception=False))
            return r
        if case["kind"] == "leaf":
            leaf = case["x"].clone().requires_grad_()
            try:
                Fn.apply(leaf)
            except RuntimeError as err:
                return {"raised": str(err)[:300]}
            return {"raised": None}
        if case["kind"] == "written":
            x = case["x"].clone().requires_grad_()
            y = Fn.apply(x * 1)
            eval(case["write"])(y)  # the caller writes into the result, as section 3's first rule shows
            try:
                (y * case["w"]).sum().backward()
            except RuntimeError as err:
                return {"raised": str(err)[:400], "grad": None}
            return {"raised": None, "grad": x.grad}
        device, dtype = torch.device(case["device"]), getattr(torch, case["dtype"])
        meta = device.type == "meta"  # no data: an error is reported as data, nothing with values returned
        x = case["x"].to(device, dtype).requires_grad_()
        h = x * 1
        before = h._version
        try:
            y = Fn.apply(h)
        except Exception as err:  # noqa: BLE001
            if not meta or (isinstance(err, NotImplementedError) and "meta" not in str(err)):
                raise
            return {"meta_error": {"when": "forward", "type": type(err).__name__, "message": str(err)[:400]}}
        is_tensor = isinstance(y, torch.Tensor)
        r = {"same_object": y is h, "same_memory": is_tensor and y.data_ptr() == h.data_ptr(),
             "version_bumped": h._version > before, "h": None if meta else h.detach(),
             "y": y.detach() if is_tensor and not meta else None,
             "y_where": [y.device.type, str(y.dtype), list(y.shape)] if is_tensor else None}
        try:
            (y * case["w"].to(device, dtype)).sum().backward()
        except Exception as err:  # noqa: BLE001
            if not meta:
                raise
            r["meta_error"] = {"when": "backward", "type": type(err).__name__, "message": str(err)[:400]}
            return r
        r["grad"] = None if meta else x.grad
        r["grad_where"] = None if x.grad is None else [x.grad.device.type, str(x.grad.dtype), list(x.grad.shape)]
        return r

    def _judge_written(self, case, r):
        """A write into ``y`` after ``apply``: the version-counter error, or the right gradient."""
        where, write = case["label"], case["write"][10:]
        if r["raised"] is not None:
            check_true(match_version_error(r["raised"]) is not None,
                       f"backward after {write} raised another error than the version-counter one", inputs=where,
                       expected="'... modified by an inplace operation ... is at version N; expected version M'",
                       got=r["raised"][:300], hint="keep y with ctx.save_for_backward(x) after the write.")
            return
        x = case["x"].clone().requires_grad_()
        (eval(case["plain"])(x.sigmoid()) * case["w"]).sum().backward()  # noqa: S307 - the grader's own text
        _close(r["grad"], x.grad, torch.float64, f"the gradient after {write}", where,
               hint="a write into y after apply must make backward refuse (or leave the gradient right): keep y "
                    "with ctx.save_for_backward(x), which autograd version-checks, never as a ctx attribute "
                    "(ctx.y = x): backward then reads the written values, a silently wrong gradient (section 3, "
                    "first rule).")

    def _judge_meta(self, case, r):
        """Meta: a tensor made on the CPU (forward or backward), and where the result and gradient live."""
        where, dt, shape = case["label"], case["dtype"], list(case["x"].shape)
        err = r.get("meta_error")
        if err is not None and _is_device_mix(err["message"]):
            _fail_cpu_tensor(f"SigmoidInPlace's {err['when']}", where, err["message"])
        if err is not None:
            return  # what meta cannot run (reading values) is judged on the CPU cases
        check_true(r["same_object"] and r["version_bumped"], "SigmoidInPlace.apply(h) did not work in place",
                   inputs=where, expected="y is h, h._version bumped",
                   got=f"y is h: {r['same_object']}, version bumped: {r['version_bumped']}",
                   hint="forward: x.sigmoid_(); ctx.mark_dirty(x); return x (the same tensor).")
        check_true(r["grad_where"] == ["meta", f"torch.{dt}", shape],
                   "the gradient through SigmoidInPlace is not on x's device, or has the wrong dtype or shape",
                   inputs=where, expected=f"torch.{dt} {tuple(shape)} on meta (x's device)",
                   got="no gradient" if r["grad_where"] is None else
                   f"{r['grad_where'][1]} {tuple(r['grad_where'][2])} on {r['grad_where'][0]}",
                   hint="backward returns grad * y * (1 - y): built from grad and the saved y, on their device.")

    def judge(self, case, r):
        where = case["label"]
        if case["kind"] == "gradcheck":
            f = build_composition(case["source"], ReferenceSigmoidInPlace)
            x = case["x"].clone()
            _close(r["values"], f(x.clone()).detach(), torch.float64, "the values of the composition", where,
                   hint="forward: x.sigmoid_() (in place), then return x.")
            jac = torch.autograd.functional.jacobian(f, x.clone())
            _close(r["jacobian"], jac, torch.float64, "the Jacobian autograd computes through SigmoidInPlace",
                   where, hint="ctx.mark_dirty(x) tells autograd x was overwritten: without it any later use of x "
                               "(h + y, h.exp(), a view's base) gets a silently wrong gradient. Backward: "
                               "grad * y * (1 - y) with y the saved output.")
            check_true(r["gradcheck"], "torch.autograd.gradcheck fails", inputs=where,
                       hint="compare backward's formula with finite differences: d sigmoid = y * (1 - y).")
            return
        if case["kind"] == "written":
            return self._judge_written(case, r)
        if case["kind"] == "leaf":
            check_true(r["raised"] is not None and "leaf" in r["raised"],
                       "SigmoidInPlace.apply on a leaf that requires grad did not raise", inputs=where,
                       expected="RuntimeError: a leaf Variable that requires grad ... in-place operation",
                       got=repr(r["raised"]),
                       hint="ctx.mark_dirty(x) makes PyTorch apply its leaf rule; without it the leaf is "
                            "overwritten silently.")
            return
        if case["device"] == "meta":
            return self._judge_meta(case, r)
        dtype = getattr(torch, case["dtype"])
        x = case["x"].to(dtype).double()
        check_true(r["same_object"] and r["same_memory"] and r["version_bumped"],
                   "SigmoidInPlace.apply(h) did not work in place", inputs=where,
                   expected="y is h, h's memory overwritten, h._version bumped",
                   got=f"y is h: {r['same_object']}, same memory: {r['same_memory']}, version bumped: "
                       f"{r['version_bumped']}",
                   hint="forward: x.sigmoid_(); ctx.mark_dirty(x); return x (the same tensor).")
        _close(r["h"], x.sigmoid(), dtype, "h after SigmoidInPlace.apply(h)", where, hint="sigmoid_ in place.")
        w = case["w"].to(dtype).double()
        s = x.sigmoid()
        _close(r["grad"], w * s * (1 - s), dtype, "the gradient through SigmoidInPlace", where,
               hint="backward: grad * y * (1 - y), with y saved by ctx.save_for_backward after the write.")


# =========================================================================== 4. inference_mode

class ToAutograd(Check):
    """``to_autograd(t)``: ``t`` an inference tensor (made under ``torch.inference_mode()``), any
    shape (0-dim, empty and non-contiguous too), any dtype: float64/float32/float16/bfloat16 and int64, int32,
    uint8, bool, complex64 on the CPU, float32/float16 on a GPU; called outside inference mode. Returns
    a normal tensor (not an inference tensor, not requiring grad) with ``t``'s values (exactly), dtype
    and device, that autograd can save and that can be written in place; ``t`` stays unchanged.
    Arithmetic changes a bool's dtype (``t * 1`` is int64): the bool cases catch it.

    Three cases put ``t`` on the ``meta`` device (shapes and dtypes, no data), where a copy made into a
    tensor allocated on the CPU (``torch.empty(t.shape, dtype=t.dtype).copy_(t)``, ``torch.zeros(...) + t``)
    shows on a CPU-only grader: the probe records every operation that mixes a CPU tensor with a meta one
    (a ``TorchDispatchMode``: a CPU destination of a copy, or a CPU tensor of one or more dims next to a
    meta one). A round trip through the CPU that ends on ``t``'s device is right; meta cannot run it
    (no data to copy out), so an error that says so (its message names meta: ``t.tolist()``, ``t.cpu()``,
    ``.item()``) is judged on the CPU cases only, as the text says; any other error fails the case."""
    assignment, grade_id, function = ASSIGNMENT, "to_autograd_tests", "to_autograd"
    draws = ("float64", "float32", "float16", "bfloat16", "int64", "int32", "uint8", "bool", "complex64",
             "0-dim", "empty", "non-contiguous", "GPU", "meta")

    SHAPES = [((3,), False), ((), False), ((4, 5), True), ((2, 3, 4), False), ((0, 3), False)]
    OTHER_DTYPES = (torch.int64, torch.int32, torch.uint8, torch.bool, torch.complex64)  # on the CPU
    META_CASES = [(torch.float32, (2, 3, 4), False), (torch.bool, (4, 5), True), (torch.float16, (), False)]

    @staticmethod
    def _values(shape, dtype, g) -> torch.Tensor:
        """Values of ``dtype`` (stored in it, so every copy is exact), varied enough to see a wrong one."""
        x = torch.randn(shape, generator=g, dtype=torch.float64)
        if dtype == torch.bool:
            return x > 0
        if dtype.is_complex:
            return torch.complex(x, torch.randn(shape, generator=g, dtype=torch.float64)).to(dtype)
        if not dtype.is_floating_point:
            return (x * 40).round().clamp(0 if dtype == torch.uint8 else -128, 127).to(dtype)
        return x  # float64; the probe rounds it to the case's dtype

    @staticmethod
    def _label(dtype, shape, transpose, where) -> str:
        shape_text = f"0-dim {shape}" if shape == () else f"empty {shape}" if 0 in shape else f"{shape}"
        return f"an inference tensor {_dname(dtype)} {shape_text}{' transposed' if transpose else ''} {where}"

    def cases(self):
        cases, g = [], torch.Generator().manual_seed(700)
        configs = [(d, t) for d, t in configs_with_half_on_cpu()]
        configs += [(torch.device("cpu"), t) for t in self.OTHER_DTYPES]
        for device, dtype in configs:
            for shape, transpose in self.SHAPES:
                cases.append({"x": self._values(shape, dtype, g),
                              "w": torch.randn(shape, generator=g, dtype=torch.float64), "transpose": transpose,
                              "device": str(device), "dtype": _dname(dtype),
                              "label": self._label(dtype, shape, transpose, f"on {device.type}")})
        for dtype, shape, transpose in self.META_CASES:
            cases.append({"x": self._values(shape, dtype, g), "w": torch.randn(shape, generator=g, dtype=torch.float64),
                          "transpose": transpose, "device": "meta", "dtype": _dname(dtype),
                          "label": self._label(dtype, shape, transpose, META)})
        return cases

    @staticmethod
    def probe(ns, case):
        device, dtype = torch.device(case["device"]), getattr(torch, case["dtype"])
        with torch.inference_mode():
            t = case["x"].to(device, dtype).clone()  # made inside: an inference tensor, of exactly dtype
            if case["transpose"]:
                t = t.t()
        fn = student(ns, "to_autograd")
        r = {"mixes": []}
        if device.type == "meta":
            from torch.utils._python_dispatch import TorchDispatchMode
            from torch.utils._pytree import tree_flatten

            mixes = r["mixes"]

            class Watch(TorchDispatchMode):  # every op that mixes a CPU tensor with a meta one
                def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                    kwargs = kwargs or {}
                    ts = [a for a in tree_flatten((args, kwargs))[0] if isinstance(a, torch.Tensor)]
                    if any(a.device.type == "meta" for a in ts):
                        cpu = [a for a in ts if a.device.type == "cpu"]
                        into_cpu = "copy_" in str(func) and ts[0].device.type == "cpu"
                        if into_cpu or any(a.dim() > 0 for a in cpu):
                            mixes.append(str(func))
                    return func(*args, **kwargs)

            try:
                with Watch():
                    out = fn(t)
            except Exception as err:  # noqa: BLE001 - reported as data, judged in the grader
                if "meta" not in str(err):  # only "a meta tensor has no data" is excused (the text says so)
                    raise
                r["meta_error"] = {"type": type(err).__name__, "message": str(err)[:400]}
                return r
        else:
            out = fn(t)
        if not isinstance(out, torch.Tensor):
            r["type"] = type(out).__name__
            return r
        meta = device.type == "meta"
        r.update(type="Tensor", is_inference=out.is_inference(), requires_grad=out.requires_grad,
                 dtype=str(out.dtype), device=out.device.type, shape=list(out.shape),
                 values=None if meta else out.detach().clone(), t_after=None if meta else t.clone())
        # autograd saves it: d/dw sum(exp(w) * out) (the real part for complex), w a float leaf
        wdt = dtype if dtype.is_floating_point else torch.float64
        w = case["w"].to(device, wdt)
        if case["transpose"]:
            w = w.t()
        leaf = w.clone().requires_grad_()
        try:
            y = leaf.exp() * out
            (y.real if y.is_complex() else y).sum().backward()
            r["grad"] = None if meta else leaf.grad
        except Exception as err:  # noqa: BLE001 - reported as data
            r["saved_error"] = str(err)[:300]
        try:  # and it can be written in place
            out.logical_not_() if out.dtype == torch.bool else out.add_(1)
            r["inplace_ok"] = True
        except Exception as err:  # noqa: BLE001
            r["inplace_error"] = str(err)[:300]
        r["t_after_write"] = None if meta else t.clone()
        return r

    def _judge_common(self, case, r, where, what, dev):
        dtype = getattr(torch, case["dtype"])
        check_true(r["type"] == "Tensor", f"{what} has the wrong type", inputs=where, expected="Tensor",
                   got=r["type"], hint="return a tensor.")
        check_true(r["dtype"] == str(dtype) and r["device"] == dev, f"{what} changed the dtype or device",
                   inputs=where, expected=f"{dtype} on {dev}", got=f"{r['dtype']} on {r['device']}",
                   hint="t.clone() keeps both; arithmetic does not (t * 1 turns a bool tensor into int64), "
                        "nor does a tensor made on the CPU.")
        check_true(tuple(r["shape"]) == tuple(case["x"].shape[::-1] if case["transpose"] else case["x"].shape),
                   f"{what} has the wrong shape", inputs=where, got=str(tuple(r["shape"])), hint="keep t's shape.")
        check_true(not r["is_inference"], f"{what} is still an inference tensor", inputs=where,
                   expected="out.is_inference() == False", got="True",
                   hint="t.detach() and views of t are inference tensors too; make a copy OUTSIDE "
                        "torch.inference_mode(): t.clone().")
        check_true(not r["requires_grad"], f"{what} requires grad", inputs=where, expected="requires_grad False",
                   got="True", hint="return a plain copy; the caller decides about gradients.")
        check_true("saved_error" not in r, f"autograd cannot save {what}", inputs=where,
                   detail=r.get("saved_error", ""), hint="return a normal tensor: t.clone() outside inference mode.")
        check_true(r.get("inplace_ok", False), f"{what} cannot be written in place", inputs=where,
                   detail=r.get("inplace_error", ""), hint="return a normal tensor that does not require grad.")

    def _judge_meta(self, case, r, where, what):
        if r["mixes"]:
            fail(f"{what} mixes t with a tensor made on the CPU: for t on a GPU the result lands on the CPU, or "
                 "the code fails", inputs=where, detail="CPU and meta tensors met in: " + ", ".join(r["mixes"][:4]),
                 hint="copy on t's device: t.clone() (or torch.empty_like(t).copy_(t)); never torch.empty(t.shape) "
                      "or torch.zeros(...) without device=t.device.")
        err = r.get("meta_error")
        if err is not None and _is_device_mix(err["message"]):
            _fail_cpu_tensor(what, where, err["message"])
        if err is not None:
            return  # meta cannot run it (a round trip through the CPU reads data): judged on the CPU cases
        self._judge_common(case, r, where, what, "meta")

    def _same(self, got, expected, dtype, what, where, hint):
        """Exact for integers, bool and complex (a copy); the dtype's tolerance for floats."""
        if dtype.is_floating_point:
            return _close(got, expected.double(), dtype, what, where, hint=hint)
        ok = isinstance(got, torch.Tensor) and got.dtype == expected.dtype and torch.equal(got.cpu(), expected)
        check_true(ok, f"{what} has wrong values", inputs=where, expected=str(expected.flatten()[:6].tolist()),
                   got=str(got.flatten()[:6].tolist()) if isinstance(got, torch.Tensor) else repr(got)[:100],
                   hint=hint)

    def judge(self, case, r):
        dtype = getattr(torch, case["dtype"])
        where, what = case["label"], "to_autograd(t)"
        if case["device"] == "meta":
            return self._judge_meta(case, r, where, what)
        self._judge_common(case, r, where, what, case["device"].split(":")[0])
        x = case["x"].to(dtype)  # exactly t's values
        wdt = dtype if dtype.is_floating_point else torch.float64
        w = case["w"].to(wdt).double()
        if case["transpose"]:
            x, w = x.t(), w.t()
        self._same(r["values"], x, dtype, f"the values of {what}", where, hint="same values as t.")
        leaf = w.clone().requires_grad_()
        y = leaf.exp() * (x.to(torch.complex128) if dtype.is_complex else x.double())
        (y.real if y.is_complex() else y).sum().backward()
        _close(r["grad"], leaf.grad, wdt, "the gradient through w.exp() * to_autograd(t)", where,
               hint="return a plain copy of t's values.")
        self._same(r["t_after"], x, dtype, "t after to_autograd(t)", where, hint="leave t unchanged.")
        self._same(r["t_after_write"], x, dtype, "t after writing into to_autograd(t)'s result", where,
                   hint="return a copy, not a tensor sharing t's memory.")
