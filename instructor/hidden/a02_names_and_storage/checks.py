"""Assignment 2's checks: one :class:`~instructor.hidden.Check` per graded test cell (probe, judge,
cases), with the helper its probes ship (``_run_model``) and the helpers its judges use."""
from __future__ import annotations

import random

import torch

from autograder import course_device, test_configs
from autograder.checks import check_close, check_tensor, check_true, check_type, fail

from .. import Check
from .cases import (NO_CHANGE_FIXED, NO_CHANGE_TEMPLATES, REBIND_FIXED, REBIND_TEMPLATES, UNTRACKED_FIXED,
                    UNTRACKED_TEMPLATES, VIEW_FIXED, VIEW_TEMPLATES, classify_configs, expand_templates, meta_case,
                    model_case, statement_case)
from .references import CATEGORIES, classify, measure, model_reference

ASSIGNMENT = "02_names_and_storage"


_HINTS = {
    ("in-place", "untracked-write"):
        "x0._version went up: autograd was told about this write, so it is in-place even though the contents "
        "changed. Compare x0._version before/after first; only an unchanged version with changed contents is an "
        "untracked write.",
    ("untracked-write", "in-place"):
        "the original tensor's values (or memory, or shape) changed while x0._version stayed put. Keep a copy of "
        "the values (x.detach().clone()) before running the statement and compare it with torch.equal afterwards.",
    ("untracked-write", "no-change"):
        "x still names the same object and its version is unchanged, but its contents are not: compare the "
        "values, the shape and the storage address of x0 before and after.",
    ("untracked-write", "new-view"):
        "before asking what x names now, check whether the OLD tensor x0 changed: its values, shape or storage.",
    ("untracked-write", "new-tensor"):
        "before asking what x names now, check whether the OLD tensor x0 changed: its values, shape or storage.",
    ("in-place", "no-change"):
        "x0._version went up even if the values look the same (e.g. multiplying by 1): autograd counts writes, "
        "not changes. Check the version before anything else.",
    ("no-change", "in-place"):
        "same object, same storage, same version, same values: nothing was written. A statement like "
        "x = x.contiguous() just hands back the same object.",
    ("no-change", "untracked-write"):
        "x0's version, storage address, shape and values are all as before: a write that changed nothing "
        "(or a change made only to another object) is not a change of x0. Compare with torch.equal.",
    ("no-change", "new-tensor"):
        "x still names the very same object (x_after is x_before); keep a reference to the old object, "
        "or ids can be reused by a new object after the old one is freed.",
    ("no-change", "new-view"):
        "x still names the very same object: test `scope['x'] is x0` before comparing storage addresses.",
    ("new-view", "in-place"):
        "x now names a different object (compare with `is`, keeping a reference to the old one), "
        "which shares the old storage, and nothing was written.",
    ("new-view", "no-change"):
        "x now names a different object (`scope['x'] is x0` is False) that shares x0's storage.",
    ("new-view", "new-tensor"):
        "the new object shares the old one's memory: compare x.untyped_storage().data_ptr() before and after "
        "(not x.data_ptr(), which moves for a view that starts further in).",
    ("new-tensor", "new-view"):
        "the new object has memory of its own: its untyped_storage().data_ptr() differs from the old one's.",
    ("new-tensor", "in-place"):
        "x names a new object and the old tensor's version is unchanged: the name was rebound, nothing written.",
    ("new-tensor", "no-change"):
        "x names another object now (compare with `is`, keeping a reference to the old one).",
    ("in-place", "new-tensor"):
        "the original tensor's _version went up: it was written in place. Keep a reference to it (x0 = x) "
        "and read x0._version after the statement, even if x was rebound.",
    ("in-place", "new-view"):
        "the original tensor's _version went up: it was written in place (a write through a view counts too). "
        "Check x0._version before anything else.",
}


#: What every classify cell draws: ``test_configs()`` (float64 and float32 on the CPU; float32 and float16
#: on a GPU grader's CUDA) and float16 / bfloat16 on the CPU (``classify_configs``). The task's text names each.
CLASSIFY_DRAWS = ("float64", "float32", "float16", "bfloat16", "GPU")


class _ClassifyCheck(Check):
    """``classify_update(statement, device=None, dtype=None)``: any statement about ``x`` (and
    ``torch``) that leaves ``x`` naming a tensor and does not raise, on a fresh ``make_x(device, dtype)``
    for every device and dtype of ``test_configs()`` and float16 / bfloat16 on the CPU (``None``:
    the course device and float32). Returns one of the five category strings. Each cell draws its
    statements from its own theme (below), with seeded random constants, indices and shapes; the
    category of every case is measured here, in the grader."""
    function = "classify_update"
    VISIBLE: tuple = ()          # (statement, category the notebook states), as in the visible test
    FIXED: list = []
    TEMPLATES: list = []
    SEED = 0
    PER_TEMPLATE = 2
    DEFAULTS: tuple = ()         # statements also tried with device=None, dtype=None

    def statements(self) -> list[str]:
        rng = random.Random(self.SEED)
        pool = list(self.FIXED)
        for s in expand_templates(self.TEMPLATES, rng, self.PER_TEMPLATE):
            if s not in pool:
                pool.append(s)
        return pool

    def cases(self):
        device = str(course_device())
        cases = [statement_case(s, device, "float32") for s, _ in self.VISIBLE]
        cases += [statement_case(s, None, None) for s in self.DEFAULTS]
        for dev, dt in classify_configs():
            for s in self.statements():
                try:
                    classify(s, dev, getattr(torch, dt))
                except Exception:  # noqa: BLE001 - an op this device / dtype lacks: not a case here
                    continue
                cases.append(statement_case(s, dev, dt))
        return cases

    @staticmethod
    def probe(ns, case):
        fn = student(ns, "classify_update")
        if case["device"] is None:
            return fn(case["statement"])
        return fn(case["statement"], device=torch.device(case["device"]), dtype=getattr(torch, case["dtype"]))

    def judge(self, case, got):
        statement = case["statement"]
        device = torch.device(case["device"]) if case["device"] is not None else course_device()
        dtype = getattr(torch, case["dtype"]) if case["dtype"] is not None else torch.float32
        what = f"classify_update({statement!r})"
        inputs = f"x = make_x({str(device)!r}, {dtype})"
        check_type(got, str, what, hint=f"return one of {CATEGORIES}.")
        if got not in CATEGORIES:
            fail(f"{what} returned an unknown category", inputs=inputs, got=repr(got),
                 expected=" or ".join(map(repr, CATEGORIES)), hint="spell the category exactly as in the table.")
        facts = measure(statement, device, dtype)
        if got != facts.category:
            fail(f"{what} gave the wrong category", inputs=inputs, expected=repr(facts.category), got=repr(got),
                 detail=facts.text(),
                 hint=_HINTS.get((facts.category, got), "apply the rules of the table in order, on measurements."))


class ClassifyRebindVsInplace(_ClassifyCheck):
    """Rebind or write: in-place writes that leave ``x`` naming ``x0`` (operators, ``*_`` methods,
    ``out=``, slice and mask assignment, metadata writes like ``t_``), and rebinds to new tensors."""
    __doc__ = _ClassifyCheck.__doc__ + "\n\n    " + __doc__
    assignment, grade_id = ASSIGNMENT, "classify_update_rebind_vs_inplace_tests"
    draws = CLASSIFY_DRAWS
    VISIBLE = (("x = x + 1", "new-tensor"), ("x += 1", "in-place"), ("x[0] = 1", "in-place"),
               ("x = x.add_(1)", "in-place"), ("x[0] += 1", "in-place"), ("x.t_()", "in-place"))
    FIXED, TEMPLATES, SEED, PER_TEMPLATE = REBIND_FIXED, REBIND_TEMPLATES, 2001, 1
    DEFAULTS = ("x = x + 1", "x += 1")


class ClassifyNewView(_ClassifyCheck):
    """New views of ``x0``'s storage (slices, views, reshapes, transposes, expand, detach, dtype
    views) and look-alikes that copy or hand back ``x`` itself."""
    __doc__ = _ClassifyCheck.__doc__ + "\n\n    " + __doc__
    assignment, grade_id = ASSIGNMENT, "classify_update_new_view_tests"
    draws = CLASSIFY_DRAWS
    VISIBLE = (("x = x[:]", "new-view"), ("x = x[1:]", "new-view"))
    FIXED, TEMPLATES, SEED, PER_TEMPLATE = VIEW_FIXED, VIEW_TEMPLATES, 2002, 1
    DEFAULTS = ("x = x[:]",)


class ClassifyNoChange(_ClassifyCheck):
    """Statements that hand back ``x`` itself or touch only other objects (including writes through
    ``.data`` that change nothing), statements whose answer depends on the dtype or device
    (``x = x.half()``, ``x = x.cpu()``), and look-alike views."""
    __doc__ = _ClassifyCheck.__doc__ + "\n\n    " + __doc__
    assignment, grade_id = ASSIGNMENT, "classify_update_no_change_tests"
    draws = CLASSIFY_DRAWS
    VISIBLE = (("x = x.contiguous()", "no-change"), ("x.requires_grad_()", "no-change"))
    FIXED, TEMPLATES, SEED, PER_TEMPLATE = NO_CHANGE_FIXED, NO_CHANGE_TEMPLATES, 2003, 1
    DEFAULTS = ("x = x.contiguous()", "x = x.float()", "x = x.double()", "x = x.cpu()")


class ClassifyUntrackedAndVersion(_ClassifyCheck):
    """Writes autograd was not told about (values changed a lot or by a tiny amount, lost in half
    precision; shape changes; storage moved with equal values; dtype-dependent no-ops), and writes it
    was told about though no value changed, through another object, or before ``x`` is rebound."""
    __doc__ = _ClassifyCheck.__doc__ + "\n\n    " + __doc__
    assignment, grade_id = ASSIGNMENT, "classify_update_untracked_and_version_tests"
    draws = CLASSIFY_DRAWS
    VISIBLE = (("x.data += 1", "untracked-write"), ("x.detach().add_(1)", "in-place"), ("x *= 1", "in-place"),
               ("x.data = x.data.clone()", "untracked-write"))
    FIXED, TEMPLATES, SEED, PER_TEMPLATE = UNTRACKED_FIXED, UNTRACKED_TEMPLATES, 2004, 2
    DEFAULTS = ("x.data += 1", "x.data += 1e-5")


def _run_model(ns, case):
    """Call the student's fixed_model on fresh leaves; what autograd gives back (probe side)."""
    fn = student(ns, "fixed_model")
    device, dtype = torch.device(case["device"]), getattr(torch, case["dtype"])

    def leaves():
        return (case["x"].to(device, dtype).requires_grad_(), case["w"].to(device, dtype).requires_grad_())

    x, w = leaves()
    if device.type == "meta":                # a stand-in for a GPU: which device each tensor is on
        try:
            out = fn(x, w)
        except Exception as err:  # noqa: BLE001 - judged: a device mismatch, or an op meta lacks
            return {"meta": True, "error": f"{type(err).__name__}: {err}"[:800]}
        return {"meta": True, "error": None, "is_tensor": isinstance(out, torch.Tensor),
                "type": type(out).__name__, "device": str(out.device) if isinstance(out, torch.Tensor) else None}
    out = fn(x, w)
    res = {"is_tensor": isinstance(out, torch.Tensor), "type": type(out).__name__, "out": out}
    if not isinstance(out, torch.Tensor):
        return res
    res["requires_grad"] = bool(out.requires_grad)
    res["device"] = str(out.device)
    try:
        up = case["upstream"].to(out.device, out.dtype)
        res["grads"] = list(torch.autograd.grad((out * up).sum(), (x, w), allow_unused=True))
    except Exception as err:  # noqa: BLE001 - reported to the judge
        res["backward_error"] = f"{type(err).__name__}: {err}"
        try:
            from autograder.inplace import why_backward_fails

            res["report"] = why_backward_fails(fn, *leaves())
        except Exception:  # noqa: BLE001 - feedback only
            res["report"] = None
    if case.get("saved_writes"):
        from autograder.inplace import InplaceOnSavedError, assert_no_inplace_on_saved

        try:
            assert_no_inplace_on_saved(fn, *leaves())
            res["saved_writes"] = None
        except InplaceOnSavedError as err:
            res["saved_writes"] = str(err)
    return res


CPU_TENSOR_ON_GPU = ("your function creates a tensor on the CPU while its input is on another device; "
                     "on a GPU this fails — create it with device=x.device")


def _is_device_mismatch(error: str) -> bool:
    low = error.lower()
    return "device" in low and "meta" in low and "cpu" in low


def _judge_meta(case: dict, r: dict) -> None:
    """The ``meta`` case: no tensor of the CPU may meet the inputs' device (Python numbers and 0-dim CPU
    tensors may: CUDA allows them too), and the output stays on the inputs' device. An error of another
    kind (an op the value-less meta device lacks, e.g. ``.item()``) is not judged here."""
    where = case["label"]
    if r.get("error"):
        if _is_device_mismatch(r["error"]):
            fail(CPU_TENSOR_ON_GPU, inputs=where, detail=r["error"][:400],
                 hint="pass device=x.device (and dtype=x.dtype) to torch.zeros / torch.full / torch.tensor / "
                      "torch.arange, or use torch.zeros_like(x) or a plain Python number.")
        return
    if r.get("is_tensor") and torch.device(r["device"]).type != "meta":
        fail("fixed_model(x, w) returns a tensor on another device than its input", inputs=where,
             expected="a tensor on the inputs' device (meta)", got=f"a tensor on {r['device']}",
             hint="do not move the result (.cpu(), .to('cpu')) and create new tensors with device=x.device.")


FLOAT64_TOL = dict(rtol=1e-10, atol=1e-12)


def _check_values(got, ref: torch.Tensor, dtype: torch.dtype, what: str, where: str, hint: str) -> None:
    """Values against the float64 reference, in the input's dtype. Float64 math done in float64 agrees with
    the reference to ~1e-15, so a float64 case allows 1e-10: a float32 constant (``torch.tensor(0.1)``) or a
    float32 detour, off by ~1e-9, is told apart from a wrong formula and named."""
    if dtype == torch.float64 and isinstance(got, torch.Tensor) and tuple(got.shape) == tuple(ref.shape):
        check_close(got, ref.to(torch.float32), what, inputs=where, hint=hint)
        diff = float((got.detach().double() - ref).abs().max()) if got.numel() else 0.0
        check_true(torch.allclose(got.detach().double(), ref, **FLOAT64_TOL),
                   f"{what} is only float32-accurate on float64 inputs", inputs=where,
                   expected="agreement with the float64 reference to about 1e-10",
                   got=f"a largest difference of {diff:.2g}",
                   hint="some of the math ran in float32: a constant made with torch.tensor(0.1) or torch.full(..., 0.1) "
                        "without dtype=x.dtype, or a .float() detour. Use a Python number or dtype=x.dtype.")
        return
    check_close(got, ref.to(dtype), what, inputs=where, hint=hint)


def _judge_output(case: dict, r: dict) -> torch.Tensor:
    """Type, shape, dtype, device, values and requires_grad of the output: shared by both cells."""
    dtype, where = getattr(torch, case["dtype"]), case["label"]
    n = case["x"].shape[0]
    if not r["is_tensor"]:
        fail("fixed_model(x, w) has the wrong type", inputs=where, expected="Tensor", got=r["type"],
             hint="return the decoded tensor (n, 4).")
    out = r["out"]
    check_tensor(out, "fixed_model(x, w)", shape=(n, 4), dtype=dtype)
    if torch.device(r["device"]).type != torch.device(case["device"]).type:
        fail("fixed_model(x, w) is on the wrong device", inputs=where, expected=case["device"], got=r["device"],
             hint="create new tensors with device=x.device (or use torch.zeros_like/ones_like).")
    ref, _, _ = model_reference(case)
    _check_values(out, ref, dtype, "fixed_model(x, w)", where,
                  hint="compute the same values as leaky_model: relu(x @ w + 0.1), sigmoid, then decode both halves.")
    check_true(r["requires_grad"], "fixed_model(x, w) is cut off from autograd", inputs=where,
               expected="an output with requires_grad=True", got="requires_grad=False",
               hint="no torch.no_grad(), .detach() or .data: gradients must flow back to x and w.")
    if "backward_error" in r:
        fail("backward through fixed_model(x, w) failed", inputs=where,
             detail=(r.get("report") or r["backward_error"])[:1500],
             hint="an in-place write still modifies a tensor autograd saved: build the result from new tensors "
                  "(torch.cat) instead of writing into y.")
    return out


class FixedModelForward(Check):
    """``fixed_model(x, w)``: leaves ``x`` (n, 3) and ``w`` (3, 4) requiring grad (n >= 1, any values),
    float64 / float32 on the CPU (float16 too), and on a GPU grader float32 / float16 on CUDA. Returns
    an (n, 4) tensor of the input's dtype and device, equal to ``leaky_model``'s values (float64 inputs:
    to float64 accuracy), still in the graph, through which backward works (the visible test:
    ``out.sum().backward()``). Also on the ``meta`` device (float32, float16), the CPU grader's stand-in
    for a GPU: no tensor made on the CPU may meet the inputs (Python numbers and 0-dim CPU tensors may, as
    on CUDA), and the output stays on the inputs' device."""
    assignment, grade_id, function = ASSIGNMENT, "fixed_model_forward_tests", "fixed_model"
    probe_helpers = (_run_model,)
    draws = ("float64", "float32", "float16", "GPU", "meta")

    def cases(self):
        cases = [model_case(course_device(), "float64", seed=0, upstream="ones")]        # the visible test
        for device, dtype in test_configs():
            cases.append(model_case(device, str(dtype).replace("torch.", ""), seed=3, upstream="ones"))
        cases += [model_case("cpu", "float64", seed=4, n=1, upstream="ones"),
                  model_case("cpu", "float32", seed=5, n=8, scale=3.0, upstream="ones"),
                  model_case("cpu", "float16", seed=6, n=5, upstream="ones"),
                  meta_case("float32", seed=10), meta_case("float16", seed=11)]
        return cases

    @staticmethod
    def probe(ns, case):
        return _run_model(ns, case)

    def judge(self, case, r):
        if case["device"] == "meta":
            return _judge_meta(case, r)
        _judge_output(case, r)


class FixedModelGradients(Check):
    """``fixed_model(x, w)`` as above; additionally the gradients with respect to ``x`` and ``w`` for
    an upstream gradient that weighs every output differently must match the float64 reference
    (silent fixes — ``.data``, ``.detach()``, ``torch.no_grad()``, saved-tensor hooks — fail here), and
    the forward pass must not write into any tensor autograd saved for backward. The ``meta`` case
    (float64) as in the forward cell."""
    assignment, grade_id, function = ASSIGNMENT, "fixed_model_gradients_tests", "fixed_model"
    probe_helpers = (_run_model,)
    draws = ("float64", "float32", "float16", "GPU", "meta")

    def cases(self):
        cases = [model_case(course_device(), "float64", seed=0, saved_writes=True)]      # the visible test
        for device, dtype in test_configs():
            for seed in (1, 2):
                cases.append(model_case(device, str(dtype).replace("torch.", ""), seed=seed, saved_writes=True))
        cases += [model_case("cpu", "float64", seed=7, n=1, saved_writes=True),
                  model_case("cpu", "float64", seed=8, n=9, scale=2.5, saved_writes=True),
                  model_case("cpu", "float16", seed=9, n=5, saved_writes=True),
                  meta_case("float64", seed=12)]
        return cases

    @staticmethod
    def probe(ns, case):
        return _run_model(ns, case)

    def judge(self, case, r):
        if case["device"] == "meta":
            return _judge_meta(case, r)
        _judge_output(case, r)
        dtype, where = getattr(torch, case["dtype"]), case["label"]
        _, gx_ref, gw_ref = model_reference(case)
        grads = r.get("grads")
        check_type(grads, list, "the gradients of fixed_model(x, w)")
        for name, g, g_ref in zip(("x", "w"), grads, (gx_ref, gw_ref)):
            check_true(g is not None, f"no gradient reaches {name}", inputs=where,
                       hint="every input must stay connected to the output (no .detach()).")
            _check_values(g, g_ref, dtype, f"gradient of fixed_model with respect to {name}", where,
                          hint="forward values are right but the gradient is wrong: something hid a write from "
                               "autograd (.data, a saved_tensors_hooks trick, .detach()). Compute each piece as a "
                               "new tensor.")
        if r.get("saved_writes"):
            fail("fixed_model writes into a tensor autograd saved for backward", inputs=where,
                 detail=str(r["saved_writes"])[:800],
                 hint="compute each piece as a new tensor and join them with torch.cat.")
