"""Assignment 4 (in-place in the wild): hidden checks, as probes (sandbox) and judges (grader).

The references live here (never in the student package): the GAN step in the DCGAN order, the
in-place decision made by experiment, the in-place sigmoid as an ``autograd.Function`` and the
inference-tensor fix. Every truth is found out in the grader on the installed PyTorch: the GAN
reference step runs in float64 on the CPU from the same (dtype-rounded) weights and batches, the
in-place decision by running forward and backward with each activation in place, the saved bytes
with ``saved_tensors_hooks``.
"""
from __future__ import annotations

import copy

import torch
from torch import nn

from autograder.checks import check_equal, check_true, fail, tolerances
from autograder.wild import build_model, d_loss, g_loss, make_gan, saved_bytes

from . import Check, configs_with_half_on_cpu
from .a01_version_counter import from_backward, match_version_error
try:
    from .mutation import Mutant, Target
except ImportError:  # mutation testing not installed in this checkout: the checks work without it
    from collections import namedtuple

    Mutant = lambda name, old, new, equivalent="", count=1: (name, old, new, equivalent, count)  # noqa: E731
    Target = namedtuple("Target", "checks mutants")

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


def reference_train_step(G, D, opt_g, opt_d, real, z):
    """The DCGAN order: D's step on real and detached fakes, then G's step through the *updated* D."""
    fake = G(z)
    opt_d.zero_grad()
    loss_d = d_loss(D(real), D(fake.detach()))
    loss_d.backward()
    opt_d.step()
    opt_g.zero_grad()
    loss_g = g_loss(D(fake))
    loss_g.backward()
    opt_g.step()
    return loss_d.item(), loss_g.item()


def wrong_order_error(seed: int = 0):
    """The error of the wrong loop (D's step before G's backward through the same D output), here."""
    from autograder.wild import make_optimizers, ring_data

    G, D = make_gan(seed)
    opt_g, opt_d = make_optimizers(G, D)
    real, z = ring_data(64, seed=1), torch.randn(64, 2, generator=torch.Generator().manual_seed(2))
    d_fake = D(G(z))
    loss_d, loss_g = d_loss(D(real), d_fake), g_loss(d_fake)
    opt_d.zero_grad()
    loss_d.backward(retain_graph=True)
    opt_d.step()
    opt_g.zero_grad()
    try:
        loss_g.backward()
    except RuntimeError as err:
        return err
    raise AssertionError("the wrong GAN loop did not fail: the experiment is broken")


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


def set_inplace(model: nn.Module, flags) -> nn.Module:
    for m, f in zip(model, flags):
        if hasattr(m, "inplace"):
            m.inplace = bool(f)
    return model


def gradients(model, x, w):
    """Gradients of ``(model(x) * w).sum()`` w.r.t. every parameter and ``x`` (a fresh leaf)."""
    leaf = x.detach().clone().requires_grad_()
    model.zero_grad(set_to_none=True)
    (model(leaf) * w).sum().backward()
    return [p.grad.clone() for p in model.parameters()] + [leaf.grad.clone()]


def reference_safe_inplace(model):
    """On a float64 copy, left to right: put each activation in place, keep it if backward still runs
    and the gradients are those of the all-out-of-place model (earlier decisions kept); then copy the
    decisions onto ``model``."""
    trial = copy.deepcopy(model).to("cpu", torch.float64)
    for m in trial:
        if hasattr(m, "inplace"):
            m.inplace = False
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, trial[0].in_features, generator=g, dtype=torch.float64)
    w = torch.randn(4, trial(x).shape[-1], generator=g, dtype=torch.float64)
    ref = gradients(trial, x, w)
    for m in trial:
        if hasattr(m, "inplace"):
            m.inplace = True
            try:
                ok = all(torch.allclose(a, b) for a, b in zip(gradients(trial, x, w), ref))
            except RuntimeError:
                ok = False
            m.inplace = ok
    for m, decided in zip(model, trial):
        if hasattr(m, "inplace"):
            m.inplace = decided.inplace
    return model


class SafeInplace(Check):
    """``safe_inplace(model)``: ``model`` an ``nn.Sequential`` from ``build_model`` (first module a
    Linear; then Linears, LayerNorms, Tanh, Sigmoid and the activations that take ``inplace=``,
    in any order, repeated ones too), its activations in place or not as handed over; float64/float32
    on the CPU (float16/bfloat16 too, on three models), float32/float16 on a GPU. Returns an
    ``nn.Sequential`` of the same modules with exactly the activations that pass the left-to-right
    experiment in place. The truth is that experiment,
    run here in float64; the returned model's backward and gradients (random upstream weights) are
    checked against the all-out-of-place model, and the bytes autograd saves for backward in the
    returned model are measured in the probe (``saved_bytes``, on the case's device and dtype) against the
    same model built all out of place: fewer where the experiment's choice saves memory, never more."""
    assignment, grade_id, function = ASSIGNMENT, "safe_inplace_tests", "safe_inplace"
    draws = ("float64", "float32", "float16", "bfloat16", "GPU")

    SPECS = [  # (spec, preset flags: None = all out of place)
        (["linear", "relu", "linear", "sigmoid", "relu", "linear"], None),           # the visible test's
        (["linear", "leaky_relu", "relu", "linear"], None),                           # keep earlier decisions
        (["linear", "tanh", "elu", "linear", "elu", "linear"], None),
        (["linear", "relu", "relu", "linear"], "all"),                               # handed over in place
        (["linear", "layernorm", "leaky_relu", "linear", "sigmoid", "hardtanh", "linear"], "all"),
        (["linear", "silu", "linear", "mish", "linear", "hardswish", "linear"], None),
        (["linear", "selu", "celu", "linear", "relu6", "tanh", "leaky_relu", "linear"], "all"),
        (["linear", "sigmoid", "elu", "leaky_relu", "linear", "relu"], None),
    ]
    HALF_ON_CPU = (3, 4, 5)  # the models also drawn in float16/bfloat16 on the CPU

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


class ReferenceSigmoidInPlace(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.sigmoid_()
        ctx.mark_dirty(x)
        ctx.save_for_backward(x)
        return x

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * y * (1 - y)


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


def reference_to_autograd(t):
    return t.clone()


class ToAutograd(Check):
    """``to_autograd(t)``: ``t`` an inference tensor (made under ``torch.inference_mode()``), any
    shape (0-dim and non-contiguous too), any dtype: float64/float32/float16/bfloat16 and int64, int32,
    uint8, bool, complex64 on the CPU, float32/float16 on a GPU; called outside inference mode. Returns
    a normal tensor (not an inference tensor, not requiring grad) with ``t``'s values (exactly), dtype
    and device, that autograd can save and that can be written in place; ``t`` stays unchanged.
    Arithmetic changes a bool's dtype (``t * 1`` is int64): the bool cases catch it.

    Three cases put ``t`` on the ``meta`` device (shapes and dtypes, no data), where a copy made into a
    tensor allocated on the CPU (``torch.empty(t.shape, dtype=t.dtype).copy_(t)``, ``torch.zeros(...) + t``)
    shows on a CPU-only grader: the probe records every operation that mixes a CPU tensor with a meta one
    (a ``TorchDispatchMode``: a CPU destination of a copy, or a CPU tensor of one or more dims next to a
    meta one). A round trip through the CPU that ends on ``t``'s device is right; meta cannot run it
    (no data to copy out), so it is judged on the CPU cases only."""
    assignment, grade_id, function = ASSIGNMENT, "to_autograd_tests", "to_autograd"
    draws = ("float64", "float32", "float16", "bfloat16", "int64", "int32", "uint8", "bool", "complex64",
             "0-dim", "non-contiguous", "GPU", "meta")

    SHAPES = [((3,), False), ((), False), ((4, 5), True), ((2, 3, 4), False)]
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
        shape_text = f"0-dim {shape}" if shape == () else f"{shape}"
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
                if isinstance(err, NotImplementedError) and "meta" not in str(err):
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


# =========================================================================== mutants

MUTANTS = {
    "reproduce_gan_error": Target(checks=("reproduce_gan_error_tests",), mutants=(
        Mutant("no retain_graph: the other error", "loss_d.backward(retain_graph=True)", "loss_d.backward()"),
        Mutant("an exception built by hand", "return err", "return RuntimeError(str(err))"),
        Mutant("no D step: no error at all", "    opt_d.step()\n", "    pass\n"),
        Mutant("G's optimizer steps instead", "    opt_d.step()\n", "    opt_g.step()\n"),
        Mutant("the message text instead of the exception", "return err", "return str(err)"),
        Mutant("raised instead of returned", "return err", "raise err"),
        Mutant("two D steps", "    opt_d.step()\n", "    opt_d.step()\n    opt_d.step()\n"),
        Mutant("returns the first argument", "return err", "return err.args[0]"),
        Mutant("the correct order", "    opt_d.step()\n", "    pass\n    loss_g = g_loss(D(G(z)))\n"),
        Mutant("detaching G's output changes nothing", "d_fake = D(fake)", "d_fake = D(fake.detach())",
               equivalent="the backward still reaches D's written weight first"),
        Mutant("another hidden width", "make_gan(seed=0)", "make_gan(seed=0, hidden=8)"),
        Mutant("the error swallowed", "        return err\n", "        pass\n"),
        Mutant("G's backward before D's step: no error", "    opt_d.step()\n    opt_g.zero_grad()\n    try:\n        loss_g.backward()\n",
               "    opt_g.zero_grad()\n    try:\n        loss_g.backward()\n        opt_d.step()\n"),
        Mutant("a second D output for G's loss", "loss_g = g_loss(d_fake)", "loss_g = g_loss(D(fake))",
               equivalent="it is still built before D's step: the same saved weight, the same versions"),
        Mutant("no zero_grad", "    opt_d.zero_grad()\n", "",
               equivalent="the first step's gradients start at None either way"),
        Mutant("another seed for the batch", "ring_data(64)", "ring_data(64, seed=5)",
               equivalent="the message names the same weight and versions whatever the data"),
        Mutant("a batch of one", "ring_data(64), torch.randn(64, 2)", "ring_data(1), torch.randn(1, 2)",
               equivalent="the weight's shape does not depend on the batch"),
        Mutant("G's optimizer steps too, before the backward", "    opt_d.step()\n", "    opt_d.step()\n    opt_g.step()\n",
               equivalent="backward meets D's written weight before any of G's"),
        Mutant("the exception's class instead of the exception", "return err", "return type(err)"),
        Mutant("the traceback dropped by re-creating it", "return err", "return err.with_traceback(None)"),
        Mutant("the error printed, not returned", "        return err\n", "        print(err)\n"),
        Mutant("D's weights written through .data", "    opt_d.step()\n",
               "    for p in D.parameters():\n        p.data -= 0.1 * p.grad\n"),
        Mutant("D's step written by hand under no_grad", "    opt_d.step()\n",
               "    with torch.no_grad():\n        for p in D.parameters():\n            p -= 0.1 * p.grad\n",
               equivalent="an in-place write under no_grad bumps the version like the optimizer's"),
        Mutant("G's loss on D's output for the real points", "loss_g = g_loss(d_fake)", "loss_g = g_loss(D(real))",
               equivalent="that output too was built before D's step: the same weight, the same versions"),
        Mutant("the error's cause returned", "return err", "return err.__cause__"),
        Mutant("D's step moved before the forward pass", "    fake = G(z)\n    d_fake = D(fake)\n    loss_d = d_loss(D(real), d_fake)\n    loss_g = g_loss(d_fake)\n    opt_d.zero_grad()\n    loss_d.backward(retain_graph=True)\n    opt_d.step()\n",
               "    opt_d.step()\n    fake = G(z)\n    d_fake = D(fake)\n    loss_d = d_loss(D(real), d_fake)\n    loss_g = g_loss(d_fake)\n    opt_d.zero_grad()\n    loss_d.backward(retain_graph=True)\n"),
        Mutant("D's last layer frozen", "    opt_g, opt_d = make_optimizers(G, D)\n",
               "    D[-1].requires_grad_(False)\n    opt_g, opt_d = make_optimizers(G, D)\n"),
        Mutant("any exception caught, a ValueError returned", "except RuntimeError as err:\n        return err",
               "except RuntimeError as err:\n        return ValueError(str(err))"),
    )),
    "train_step": Target(checks=("train_step_tests",), mutants=(
        Mutant("no detach in D's loss (G's graph freed)", "D(fake.detach())", "D(fake)"),
        Mutant("no opt_d.zero_grad()", "    opt_d.zero_grad()\n", ""),
        Mutant("no opt_g.zero_grad()", "    opt_g.zero_grad()\n", ""),
        Mutant("detach in G's loss", "loss_g = g_loss(D(fake))", "loss_g = g_loss(D(fake.detach()))"),
        Mutant("G's label 0", "loss_g = g_loss(D(fake))", "loss_g = d_loss(D(fake)[:0], D(fake))"),
        Mutant("real and fake swapped in D's loss", "d_loss(D(real), D(fake.detach()))", "d_loss(D(fake.detach()), D(real))"),
        Mutant("no D step", "    opt_d.step()\n", ""),
        Mutant("no G step", "    opt_g.step()\n", ""),
        Mutant("losses swapped", "return loss_d.item(), loss_g.item()", "return loss_g.item(), loss_d.item()"),
        Mutant("G's output detached at the source", "fake = G(z)", "fake = G(z).detach()"),
        Mutant("G against the old D (stale graph)", "    opt_d.step()\n    opt_g.zero_grad()\n    loss_g = g_loss(D(fake))\n    loss_g.backward()\n",
               "    opt_g.zero_grad()\n    loss_g = g_loss(D(fake))\n    loss_g.backward()\n    opt_d.step()\n"),
        Mutant("D's loss reported after its step", "return loss_d.item(), loss_g.item()",
               "return d_loss(D(real), D(fake)).item(), loss_g.item()"),
        Mutant("D's loss halved", "loss_d = d_loss(D(real), D(fake.detach()))",
               "loss_d = 0.5 * d_loss(D(real), D(fake.detach()))"),
        Mutant("two G steps", "    opt_g.step()\n", "    opt_g.step()\n    opt_g.step()\n"),
        Mutant("two D steps", "    opt_d.step()\n", "    opt_d.step()\n    opt_d.step()\n"),
        Mutant("the fake term of D's loss under no_grad", "    loss_d = d_loss(D(real), D(fake.detach()))\n",
               "    with torch.no_grad():\n        d_f = D(fake)\n    loss_d = d_loss(D(real), d_f)\n"),
        Mutant("the saturating minimax loss for G", "loss_g = g_loss(D(fake))",
               "loss_g = -torch.nn.functional.binary_cross_entropy_with_logits(D(fake), torch.zeros(len(z), 1, "
               "dtype=z.dtype, device=z.device))"),
        Mutant("D's gradient zeroed after its backward", "    opt_d.zero_grad()\n    loss_d = d_loss(D(real), D(fake.detach()))\n    loss_d.backward()\n",
               "    loss_d = d_loss(D(real), D(fake.detach()))\n    loss_d.backward()\n    opt_d.zero_grad()\n"),
        Mutant("G's gradient zeroed after its backward", "    opt_g.zero_grad()\n    loss_g = g_loss(D(fake))\n    loss_g.backward()\n",
               "    loss_g = g_loss(D(fake))\n    loss_g.backward()\n    opt_g.zero_grad()\n"),
        Mutant("G's step first, through the old D", "    opt_d.zero_grad()\n    loss_d = d_loss(D(real), D(fake.detach()))\n"
               "    loss_d.backward()\n    opt_d.step()\n    opt_g.zero_grad()\n    loss_g = g_loss(D(fake))\n    loss_g.backward()\n"
               "    opt_g.step()\n",
               "    opt_g.zero_grad()\n    loss_g = g_loss(D(fake))\n    loss_g.backward()\n    opt_g.step()\n"
               "    opt_d.zero_grad()\n    loss_d = d_loss(D(real), D(fake.detach()))\n    loss_d.backward()\n    opt_d.step()\n"),
        Mutant("D trained on real points only", "loss_d = d_loss(D(real), D(fake.detach()))",
               "loss_d = g_loss(D(real))"),
        Mutant("the two losses summed into one backward", "    loss_d.backward()\n", "    (loss_d + 0 * g_loss(D(fake))).backward()\n"),
        Mutant("zero_grad keeps zeros instead of None", "opt_d.zero_grad()", "opt_d.zero_grad(set_to_none=False)",
               equivalent="plain SGD steps the same with zero or no gradient"),
        Mutant("both optimizers zeroed first", "    fake = G(z)\n    opt_d.zero_grad()\n", "    opt_g.zero_grad()\n    fake = G(z)\n    opt_d.zero_grad()\n",
               equivalent="D's backward on fake.detach() leaves G's gradients at zero"),
        Mutant("D frozen during G's backward", "    loss_g = g_loss(D(fake))\n    loss_g.backward()\n",
               "    D.requires_grad_(False)\n    loss_g = g_loss(D(fake))\n    loss_g.backward()\n    D.requires_grad_(True)\n",
               equivalent="G's gradient is the same; D's gradient from loss_g is zeroed before D's next step anyway"),
        Mutant("a fresh G(z) for G's loss", "loss_g = g_loss(D(fake))", "loss_g = g_loss(D(G(z)))",
               equivalent="G has not stepped yet: G(z) is the same fake"),
    )),
    "safe_inplace": Target(checks=("safe_inplace_tests",), mutants=(
        Mutant("flags handed over are kept", "            m.inplace = False\n", "            pass\n"),
        Mutant("decided on the copy only", "            m.inplace = decided.inplace\n", "            pass\n"),
        Mutant("every activation in place", "            m.inplace = ok\n", "            m.inplace = True\n"),
        Mutant("none in place", "            m.inplace = ok\n", "            m.inplace = False\n"),
        Mutant("decision inverted", "            m.inplace = ok\n", "            m.inplace = not ok\n"),
        Mutant("each tried alone, earlier decisions dropped", "            m.inplace = ok\n",
               "            m.inplace = False\n            m.ok = ok\n    for m in trial:\n        if hasattr(m, 'ok'):\n            m.inplace = m.ok\n"),
        Mutant("right to left", "    for m in trial:\n        if hasattr(m, \"inplace\"):\n            m.inplace = True",
               "    for m in reversed(trial):\n        if hasattr(m, \"inplace\"):\n            m.inplace = True"),
        Mutant("returns nothing", "    return model", "    return None"),
        Mutant("returns a new model", "    return model", "    return torch.nn.Sequential(*list(model)[:-1])"),
        Mutant("any error counts as unsafe, gradients not compared", "all(torch.allclose(a, b) for a, b in zip(gradients(trial, x, w), ref))",
               "(gradients(trial, x, w) is not None)",
               equivalent="none of these activations gives a wrong gradient without an error"),
        Mutant("only the first activation considered", "            m.inplace = ok\n",
               "            m.inplace = ok\n            break\n"),
        Mutant("experiments on the model itself", 'trial = copy.deepcopy(model).to("cpu", torch.float64)',
               'trial = model.to("cpu", torch.float64)'),
        Mutant("returns the float64 trial copy", "    return model", "    return trial"),
        Mutant("stops at the first unsafe activation", "            m.inplace = ok\n",
               "            m.inplace = ok\n            if not ok:\n                break\n"),
        Mutant("a failed activation left in place", "            m.inplace = ok\n", "            m.inplace = m.inplace or ok\n"),
        Mutant("a failing backward counted safe", "            except RuntimeError:\n                ok = False\n",
               "            except RuntimeError:\n                ok = True\n"),
        Mutant("no zero_grad between the experiments", "        model.zero_grad(set_to_none=True)\n", ""),
        Mutant("the input not a leaf that requires grad", "leaf = x.detach().clone().requires_grad_()",
               "leaf = x.detach().clone()"),
        Mutant("decisions copied one module late", "for m, decided in zip(model, trial):",
               "for m, decided in zip(model, list(trial)[1:] + [trial[0]]):"),
        Mutant("a model handed over in place is tried as it is", "            m.inplace = False\n",
               "            m.inplace = m.inplace\n"),
        Mutant("gradients compared without the input's", " + [leaf.grad.clone()]", "",
               equivalent="an in-place activation that changes the input's gradient changes a weight's too"),
        Mutant("other upstream weights", "w = torch.randn(4, trial(x).shape[-1], generator=g, dtype=torch.float64)",
               "w = torch.ones(4, trial(x).shape[-1], dtype=torch.float64)",
               equivalent="an unsafe activation errors or changes the gradient for any upstream weights"),
        Mutant("any exception counts as unsafe", "except RuntimeError:", "except Exception:",
               equivalent="backward's in-place errors are RuntimeErrors"),
        Mutant("a forward hook that keeps an extra graph (memory only)", "    return model",
               "    model.register_forward_hook(lambda m, i, o: setattr(m, 'kept', o.exp()))\n    return model"),
        Mutant("exact equality where a tolerance is needed", "torch.allclose(a, b)", "torch.equal(a, b)"),
    )),
    "sigmoid_inplace": Target(checks=("sigmoid_inplace_tests",), mutants=(
        Mutant("no mark_dirty", "        ctx.mark_dirty(x)\n", ""),
        Mutant("backward without (1 - y)", "grad * y * (1 - y)", "grad * y"),
        Mutant("backward sign", "grad * y * (1 - y)", "-grad * y * (1 - y)"),
        Mutant("out of place", "x.sigmoid_()", "x = x.sigmoid()"),
        Mutant("returns a copy", "        return x\n", "        return x.clone()\n"),
        Mutant("save_for_backward called before the write", "        x.sigmoid_()\n        ctx.mark_dirty(x)\n        ctx.save_for_backward(x)\n",
               "        ctx.save_for_backward(x)\n        x.sigmoid_()\n        ctx.mark_dirty(x)\n",
               equivalent="a custom Function's saved tensors are packed when forward returns, after the write"),
        Mutant("the input's old values saved", "        x.sigmoid_()\n", "        ctx.old = x.clone()\n        x.sigmoid_()\n"
               "        x.copy_(ctx.old)\n        x.sigmoid_()\n", equivalent="the same final values"),
        Mutant("backward from the saved input", "return grad * y * (1 - y)", "return grad * y.exp() / (1 + y.exp()) ** 2"),
        Mutant("backward on the wrong tensor", "return grad * y * (1 - y)", "return grad * y.sigmoid() * (1 - y.sigmoid())"),
        Mutant("exp instead of sigmoid", "x.sigmoid_()", "x.exp_()"),
        Mutant("gradient passed through", "return grad * y * (1 - y)", "return grad"),
        Mutant("saves a clone of the output", "ctx.save_for_backward(x)", "ctx.save_for_backward(x.clone())",
               equivalent="the clone holds the same values; only memory differs"),
        Mutant("sigmoid applied twice", "x.sigmoid_()", "x.sigmoid_().sigmoid_()"),
        Mutant("backward with (1 + y)", "grad * y * (1 - y)", "grad * y * (1 + y)"),
        Mutant("backward without y", "grad * y * (1 - y)", "grad * (1 - y)"),
        Mutant("backward returns an extra None", "return grad * y * (1 - y)", "return grad * y * (1 - y), None",
               equivalent="autograd ignores trailing None gradients"),
        Mutant("backward returns two gradients", "return grad * y * (1 - y)", "return grad * y * (1 - y), grad"),
        Mutant("mark_dirty on a clone", "ctx.mark_dirty(x)", "ctx.mark_dirty(x.clone())"),
        Mutant("returns a view of the written input", "        return x\n", "        return x.view_as(x)\n"),
        Mutant("tanh instead of sigmoid", "x.sigmoid_()", "x.tanh_()"),
        Mutant("backward squares the incoming gradient", "grad * y * (1 - y)", "grad ** 2 * y * (1 - y)"),
        Mutant("the write into a clone", "        x.sigmoid_()\n", "        x = x.clone().sigmoid_()\n"),
        Mutant("backward scaled by the output's mean", "grad * y * (1 - y)", "grad * y.mean() * (1 - y)"),
        Mutant("mark_dirty before the write", "        x.sigmoid_()\n        ctx.mark_dirty(x)\n",
               "        ctx.mark_dirty(x)\n        x.sigmoid_()\n", equivalent="mark_dirty only records which input forward wrote"),
        Mutant("the saved output detached in backward", "(y,) = ctx.saved_tensors", "y = ctx.saved_tensors[0].detach()",
               equivalent="first-order gradients do not differentiate through y"),
        Mutant("the derivative rewritten", "grad * y * (1 - y)", "grad * (y - y * y)",
               equivalent="the same derivative, y - y**2 = y (1 - y)"),
        Mutant("the output kept on ctx, backward still reads saved_tensors", "        ctx.save_for_backward(x)\n        return x\n",
               "        ctx.y = x\n        return x\n"),
        Mutant("backward makes its ones on the CPU", "grad * y * (1 - y)",
               "grad * y * (torch.ones(y.shape, dtype=y.dtype) - y)"),
        Mutant("the write through .data", "        x.sigmoid_()\n", "        x.data.sigmoid_()\n",
               equivalent="ctx.mark_dirty(x) records the write either way (the text says either is fine)"),
        Mutant("backward's ones made like y", "grad * y * (1 - y)", "grad * y * (torch.ones_like(y) - y)",
               equivalent="ones_like keeps y's device and dtype"),
        Mutant("the output kept on ctx and read from it", "        ctx.save_for_backward(x)\n        return x\n\n"
               "    @staticmethod\n    def backward(ctx, grad):\n        (y,) = ctx.saved_tensors\n",
               "        ctx.y = x\n        return x\n\n    @staticmethod\n    def backward(ctx, grad):\n        y = ctx.y\n",
               equivalent="forward's output, the same values at backward (no version check: nothing writes it later here)"),
    )),
    "to_autograd": Target(checks=("to_autograd_tests",), mutants=(
        Mutant("the inference tensor itself", "return t.clone()", "return t"),
        Mutant("detach", "return t.clone()", "return t.detach()"),
        Mutant("a view", "return t.clone()", "return t.view_as(t)"),
        Mutant("clone inside inference_mode", "return t.clone()",
               "with torch.inference_mode():\n        return t.clone()"),
        Mutant("a leaf that requires grad", "return t.clone()", "return t.clone().requires_grad_()"),
        Mutant("float32", "return t.clone()", "return t.clone().float()"),
        Mutant("moved to the CPU", "return t.clone()", "return torch.tensor(t.tolist())"),
        Mutant("a zero tensor", "return t.clone()", "return torch.zeros_like(t)"),
        Mutant("values changed", "return t.clone()", "return t.clone() * 1.0001"),
        Mutant("clone under no_grad", "return t.clone()", "with torch.no_grad():\n        return t.clone()",
               equivalent="no_grad makes normal tensors"),
        Mutant("copy through empty_like", "return t.clone()", "return torch.empty_like(t).copy_(t)",
               equivalent="a fresh normal tensor with t's values"),
        Mutant("made contiguous", "return t.clone()", "return t.contiguous()"),
        Mutant("flattened copy", "return t.clone()", "return t.clone().reshape(-1)"),
        Mutant("transposed copy", "return t.clone()", "return t.clone().t()"),
        Mutant("through NumPy, sharing memory", "return t.clone()", "return torch.from_numpy(t.cpu().numpy())"),
        Mutant("rounded to float16 and back", "return t.clone()", "return t.clone().half().to(t.dtype)"),
        Mutant("copied into a new float32 tensor", "return t.clone()", "return torch.empty(t.shape).copy_(t)"),
        Mutant("a product with one outside inference mode (bool becomes int64)", "return t.clone()", "return t * 1"),
        Mutant("t + 0 (bool becomes int64)", "return t.clone()", "return t + 0"),
        Mutant("a buffer made on the CPU", "return t.clone()", "return torch.empty(t.shape, dtype=t.dtype).copy_(t)"),
        Mutant("zeros made on the CPU, plus t", "return t.clone()",
               "return torch.zeros(t.shape, dtype=t.dtype) + t"),
        Mutant("float64 for every non-float dtype", "return t.clone()",
               "return t.clone() if t.dtype.is_floating_point else t.clone().double()"),
        Mutant("a round trip through the CPU", "return t.clone()", "return t.cpu().clone().to(t.device)",
               equivalent="the copy ends on t's device with t's values (meta cannot run it: judged on the CPU)"),
        Mutant("a buffer made on t's device", "return t.clone()",
               "return torch.empty(t.shape, dtype=t.dtype, device=t.device).copy_(t)",
               equivalent="a fresh normal tensor on t's device with t's values"),
        Mutant("a copy made by to()", "return t.clone()", "return t.to(t.dtype, copy=True)",
               equivalent="a fresh normal tensor with t's values"),
        Mutant("clone then detach", "return t.clone()", "return t.clone().detach()",
               equivalent="a normal tensor with t's values; detach() of a normal tensor is normal"),
    )),
}
