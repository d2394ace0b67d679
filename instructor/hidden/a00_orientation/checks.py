"""Assignment 0's checks: one :class:`~instructor.hidden.Check` per graded test cell, with the
helpers its probes ship into the sandbox and its judges use."""
from __future__ import annotations

import math

import torch

from autograder.checks import check_close, check_equal, check_tensor, check_true, check_type, fail

from .. import Check

ASSIGNMENT = "00_orientation"


#: The pieces a drawn function is built from: ``{e}`` is the expression so far (a name, a call or in
#: parentheses), ``{c}`` a drawn constant, ``v`` the function's argument. Smooth everywhere (no kink that
#: a float64 rounding could flip between the student's device and the grader's CPU), bounded growth (one
#: square at most), some mixing the elements (``cumsum``, ``flip``): no per-element formula written in
#: advance gives their gradients.
PIECES = ("{e}.sin()", "{e}.cos()", "{e}.tanh()", "{e}.sigmoid()", "torch.atan({e})",
          "torch.nn.functional.softplus({e})", "({e} * {c})", "({e} + {c})", "({e} * v.cos())", "({e} + v * v)",
          "{e}.cumsum(0)", "({e}.flip(0) * v)", "({e} * {e})")
_SQUARE = "({e} * {e})"
_FIRST = PIECES[:6] + (_SQUARE,)  # the first piece is never linear in v
#: The piece every drawn function holds once (never first): a factor autograd treats as a constant.
#: Its gradient is autograd's alone: a numerical derivative (finite differences, a complex step) also
#: differentiates ``v.detach()``, so an answer that avoids autograd fails every drawn function,
#: whatever other pieces are drawn (and the judge tells it so, see :func:`check_gradient`).
DETACHED = "({e} * (v.detach() + {c}))"


def draw_function(rng) -> str:
    """The source text of ``lambda v: ...``: 2 to 4 pieces, drawn with ``rng`` (a ``random.Random``),
    one of them (not the first) :data:`DETACHED`."""
    e, squared = "v", False
    n = rng.randint(2, 4)
    at = rng.randint(1, n - 1)
    for k in range(n):
        piece = DETACHED if k == at else rng.choice(
            [q for q in (_FIRST if k == 0 else PIECES) if not (squared and q == _SQUARE)])
        squared = squared or piece == _SQUARE
        c = round(rng.uniform(0.5, 2.5), 2)
        e = piece.format(e=e, c=c)
        if "{c}" in piece and rng.random() < 0.5:
            e = e.replace(f"* {c})", f"* -{c})").replace(f"+ {c})", f"- {c})")
    return f"lambda v: {e}"


def autograd_of(fn_source: str | None, default: str, values, at_sigmoid: bool = False):
    """d/dv sum(fn(v)) at v = values (or at sigmoid(values)), by autograd here in the grader, float64."""
    v = torch.tensor(values, dtype=torch.float64)
    v = (v.sigmoid() if at_sigmoid else v).requires_grad_(True)
    fn = eval(fn_source or default, {"torch": torch})  # noqa: S307 - the grader's own text
    (g,) = torch.autograd.grad(fn(v).sum(), v)
    return g


def function_cases(value_lists, default: str, seed: int, at_sigmoid: bool = False, fresh: int = 2) -> list[dict]:
    """Each list of values with the default function (the notebook's visible call) and with drawn ones:
    deterministic draws (seeded) and ``fresh`` more drawn *now*, at grading time, from the system's
    randomness, so that no answer can be prepared for them. A drawn function whose gradient equals the
    default's at the case's values is drawn again (a hard-coded default formula must fail every one)."""
    import random
    import secrets

    seeded, now = random.Random(seed), random.Random(secrets.randbits(64))
    cases = []
    for k, values in enumerate(value_lists):
        cases.append({"values": values, "fn": None, "label": f"values = {values} (fn left at its default)"})
        for rng, when in [(seeded, "")] + [(now, ", drawn when your work was graded")] * (fresh if k < fresh else 0):
            for _ in range(DRAWS):
                src = draw_function(rng)
                g, g0 = autograd_of(src, default, values, at_sigmoid), autograd_of(None, default, values, at_sigmoid)
                numeric = autograd_of(src.replace(".detach()", ""), default, values, at_sigmoid)
                if _differs(g, g0) and _differs(g, numeric):  # a numerical derivative fails this one too
                    break
            cases.append({"values": values, "fn": src, "label": f"values = {values}, fn = {src}{when}"})
    return cases


#: At most this many draws per case (an honest run needs one or two): where the comparison below is
#: defeated, the case keeps its last draw instead of looping until the cell's time runs out.
DRAWS = 50


def _differs(g: torch.Tensor, g0: torch.Tensor, tol: float = 1e-6) -> bool:
    """``g`` finite and not close to ``g0`` (as ``torch.allclose(g, g0, rtol=tol, atol=tol)`` would say),
    in plain Python floats: code that replaced ``torch.allclose`` in the same process cannot change it."""
    a, b = [float(x) for x in g.flatten().tolist()], [float(x) for x in g0.flatten().tolist()]
    if not all(math.isfinite(x) for x in a):
        return False
    if len(a) != len(b):
        return True
    return any(not abs(x - y) <= tol + tol * abs(y) for x, y in zip(a, b))


def call_with_fn(f, case):
    """The student's ``f(values)`` or ``f(values, fn)`` (fn built here from the case's source text); a
    signature without ``fn`` comes back as ``{"no_fn": message}`` (shipped helper). ``fn`` is handed over
    wrapped: ``calls`` counts its calls, and those whose result is part of autograd's graph (requires
    grad). Called, but never on a graph, means autograd never saw ``fn``: an error raised then comes
    back as ``{"no_autograd": message}`` (the student then reads that, not "not implemented yet"). The
    count only chooses the message; the values alone decide pass or fail."""
    values = list(case["values"])
    if case["fn"] is None:
        return {"grad": f(values)}
    inner = eval(case["fn"], {"torch": torch})
    calls = {"all": 0, "graph": 0}

    def fn(x):
        calls["all"] += 1
        out = inner(x)
        if isinstance(out, torch.Tensor) and out.requires_grad:
            calls["graph"] += 1
        return out

    try:
        return {"grad": f(values, fn), "calls": calls}
    except Exception as err:  # noqa: BLE001 - re-raised unless it tells what the student must read
        if isinstance(err, TypeError) and ("positional argument" in str(err) or "unexpected keyword" in str(err)):
            return {"no_fn": str(err)[:300]}
        if calls["all"] and not calls["graph"]:
            return {"no_autograd": f"{type(err).__name__}: {str(err)[:300]}", "calls": calls}
        raise


def check_gradient(r, case, name, default, default_text, at_sigmoid, hint):
    """The judge of both autograd questions: the student's gradient against autograd's, here."""
    from autograder import course_device

    what = f"{name}(values)" if case["fn"] is None else f"{name}(values, fn)"
    check_true("no_fn" not in r, f"{name} does not take the function to differentiate", inputs=case["label"],
               expected=f"def {name}(values, fn={default}): fn is the function to differentiate",
               got=r.get("no_fn"), hint=f"keep the notebook's first line, def {name}(values, fn={default}):, "
                                        f"and use fn in the body instead of {default_text}.")
    calls = r.get("calls") or {}
    no_autograd = bool(calls.get("all")) and not calls.get("graph")
    if "no_autograd" in r or no_autograd:
        expected = autograd_of(case["fn"], default, case["values"], at_sigmoid)
        if "no_autograd" in r or not (isinstance(r["grad"], torch.Tensor) and r["grad"].shape == expected.shape
                                      and torch.allclose(r["grad"].detach().cpu().double(), expected,
                                                         rtol=1e-10, atol=1e-12)):
            fail(f"{what} returned a gradient autograd did not compute", inputs=case["label"],
                 detail=r.get("no_autograd", ""),
                 expected="fn called on a tensor that requires grad, then .backward() or torch.autograd.grad",
                 got=f"fn called {calls.get('all', 0)} time(s), never on a tensor autograd tracks",
                 hint="use .backward()/torch.autograd.grad: make x with requires_grad=True, call fn(x).sum()"
                      ".backward() and return x.grad. A numerical derivative (finite differences, a complex "
                      "step) is not autograd's: fn may hold .detach(), which autograd alone honours.")
    g = r["grad"]
    expected = autograd_of(case["fn"], default, case["values"], at_sigmoid)
    check_tensor(g, what, shape=tuple(expected.shape), hint=hint)
    check_tensor(g, what, dtype=torch.float64, hint="make x with dtype=torch.float64, as the task says.")
    tol = dict(rtol=1e-10, atol=1e-12) if course_device().type == "cpu" else dict(rtol=1e-9, atol=1e-9)
    wrong = not torch.allclose(g.double(), expected, **tol)
    if wrong and case["fn"] is not None and torch.allclose(g.double(), autograd_of(None, default, case["values"],
                                                                                   at_sigmoid), rtol=1e-6, atol=1e-6):
        fail(f"{what} gave the gradient of the default {default_text}, not of the fn it was given",
             inputs=case["label"], hint=f"autograd must differentiate the fn it is given: {hint} A formula "
                                        "written by hand fits one function only.")
    check_close(g.double(), expected, what, inputs=case["label"], hint=hint, **tol)


class EnvironmentReport(Check):
    """``environment_report()``: no input. Its dict must hold the grader's torch version, the
    course device type and a real bool for CUDA (the sandbox sees the grader's GPUs and
    ``COURSE_DEVICE``). Every truth is computed here, in the grader, never taken from the sandbox."""
    assignment, grade_id, function = ASSIGNMENT, "environment_report_tests", "environment_report"
    #: the grader's environment is the input: on a GPU grader the truth is "cuda" (the text says so)
    draws = ("GPU",)

    def cases(self):
        return [{"label": "environment_report()"}]

    @staticmethod
    def probe(ns, case):
        return {"report": student(ns, "environment_report")()}

    def judge(self, case, r):
        report = r["report"]
        check_type(report, dict, "environment_report()")
        check_true(set(report) >= {"torch", "device", "cuda"}, "environment_report() misses keys",
                   expected="keys 'torch', 'device', 'cuda'", got=sorted(report),
                   hint="return a dict literal with those three keys.")
        check_equal(report["torch"], torch.__version__, "report['torch']", hint="use torch.__version__.")
        from autograder import course_device

        check_true(type(report["device"]) is str, "report['device'] is not a string", expected="'cuda' or 'cpu'",
                   got=repr(report["device"]), hint="a string: course_device().type gives 'cuda' or 'cpu'.")
        check_equal(report["device"], course_device().type, "report['device']",
                    hint="a string: course_device().type gives 'cuda' or 'cpu'.")
        check_true(type(report["cuda"]) is bool, "report['cuda'] is not a bool", got=repr(report["cuda"]),
                   hint="torch.cuda.is_available() returns a bool.")
        check_equal(report["cuda"], torch.cuda.is_available(), "report['cuda']")


class CubeSumGrad(Check):
    """``cube_sum_grad(values, fn=lambda x: x ** 3)``: ``values`` a list of 1 to 12 floats (any sign, zero
    included; several lists of the same length), ``fn`` the function to differentiate: left at its default
    (the cube) or a function of one float64 tensor built from torch operations, returning a tensor of its
    shape. Returns d/dx sum(fn(x)) as a float64 tensor of the same length on the course device (``DEVICE``),
    to float64 precision. *Computed by autograd* is judged by what autograd alone can give: besides the
    default, every list comes with functions drawn for it (some seeded, two drawn at grading time from the
    system's randomness), whose gradients the judge computes here. Each drawn function holds a factor
    ``v.detach()`` (:data:`DETACHED`), whose gradient autograd alone knows: a numerical derivative (finite
    differences, a complex step) fails every drawn function, whatever other ops are drawn. Nothing
    measured in the student's process (a count of backward passes, say) decides anything: an answer that
    writes 3 * x ** 2 fails on every drawn function, whatever else it runs. What is measured there (the
    calls of ``fn`` whose result autograd tracks) only picks the message of a wrong answer: "returned a
    gradient autograd did not compute", not "not implemented yet"."""
    assignment, grade_id, function = ASSIGNMENT, "cube_sum_grad_tests", "cube_sum_grad"
    draws = ()             # lists of Python floats and drawn functions: no tensor kind is drawn
    probe_helpers = (call_with_fn,)
    DEFAULT = "lambda x: x ** 3"

    def value_lists(self):
        g = torch.Generator().manual_seed(100)
        lists = [[1.0, -2.0, 0.5], [0.0], [4.0, -1.5, 2.25, 10.0], [2.5, -0.125, 3.0], [-3.5],
                 [0.0, 2.0, -1.0]]
        for n in (2, 7, 12, 3):
            lists.append([round(v, 3) for v in (torch.randn(n, generator=g, dtype=torch.float64) * 5).tolist()])
        return lists

    def cases(self):
        return function_cases(self.value_lists(), self.DEFAULT, seed=101)

    @staticmethod
    def probe(ns, case):
        return call_with_fn(student(ns, "cube_sum_grad"), case)

    def judge(self, case, r):
        from autograder import course_device

        check_gradient(r, case, "cube_sum_grad", self.DEFAULT, "x ** 3", False,
                       hint="make x with requires_grad=True, call fn(x).sum().backward() and return x.grad.")
        check_tensor(r["grad"], "cube_sum_grad(values)", device=course_device().type,
                     hint="make x with device=DEVICE, as the task says.")


class GradFnChain(Check):
    """``grad_fn_chain(t)``: any tensor; a leaf or a tensor without grad (empty list) or the result of a
    chain of ops (unary ops, ops with a second operand that needs no grad on either side, sums of two
    branches, repeated ops, chains of more than ten nodes); the chain follows ``next_functions[0][0]``.
    Graphs are built from recipes (source text): in the sandbox for the student's function, and again
    here, where the judge walks its own copy (nothing computed in the sandbox is trusted)."""
    assignment, grade_id, function = ASSIGNMENT, "grad_fn_chain_tests", "grad_fn_chain"
    draws = ("leaf",)      # a leaf (the recipe `lambda a: a`), a tensor that needs no gradient, op results
    RECIPES = ["lambda a: (a * 2).sigmoid().sum()", "lambda a: a", "lambda a: a.exp().tanh().mean()",
               "lambda a: (a[0:2] + 1).pow(2).sum()", "lambda a: a.sigmoid()",
               "lambda a: a.double().relu().cumsum(0).prod()", "lambda a: (a * 3).view(3, 1).t().abs().max()",
               "lambda a: (a * torch.ones(3)).sum()", "lambda a: (torch.ones(3) * a).sum()",
               "lambda a: (a.exp() + a.sin()).sum()", "lambda a: a.detach() * 2",
               "lambda a: a.sigmoid().sigmoid().sigmoid().mul(2).add(1).tanh().exp().neg().abs().sum()"]

    def cases(self):
        return [{"recipe": r, "label": f"t = ({r})(torch.ones(3, requires_grad=True))"} for r in self.RECIPES]

    @staticmethod
    def probe(ns, case):
        t = eval(case["recipe"])(torch.ones(3, requires_grad=True))
        return student(ns, "grad_fn_chain")(t)

    def judge(self, case, names):
        t = eval(case["recipe"])(torch.ones(3, requires_grad=True))
        truth, node = [], t.grad_fn
        while node is not None:
            truth.append(type(node).__name__)
            node = node.next_functions[0][0] if node.next_functions else None
        check_type(names, list, "grad_fn_chain(t)")
        check_equal(names, truth, "grad_fn_chain(t)", inputs=case["label"],
                    hint="start at t.grad_fn, append type(node).__name__, then node = node.next_functions[0][0].")


class IntermediateGrad(Check):
    """``intermediate_grad(values, fn=lambda h: h * h)``: ``values`` a list of 1 to 5 floats (any sign,
    large ones included; several lists of the same length), ``fn`` left at its default or a function of
    one float64 tensor built from torch operations; returns d/dh sum(fn(h)) for h = sigmoid(x) as a
    float64 tensor of the same length, to float64 precision. As for ``cube_sum_grad``, functions drawn
    for each list (seeded, and two at grading time) make autograd the only way to the numbers: returning
    2 * h fails whatever else the answer runs."""
    assignment, grade_id, function = ASSIGNMENT, "intermediate_grad_tests", "intermediate_grad"
    draws = ()             # lists of Python floats and drawn functions: no tensor kind is drawn
    probe_helpers = (call_with_fn,)
    DEFAULT = "lambda h: h * h"

    def value_lists(self):
        return [[0.0, 1.0, -2.0], [3.0, -0.25], [0.0], [10.0, -10.0, 0.5, 2.5, -7.25], [1.5, -0.5, 4.0],
                [0.25, -3.0], [-1.75]]

    def cases(self):
        return function_cases(self.value_lists(), self.DEFAULT, seed=102, at_sigmoid=True)

    @staticmethod
    def probe(ns, case):
        return call_with_fn(student(ns, "intermediate_grad"), case)

    def judge(self, case, r):
        check_gradient(r, case, "intermediate_grad", self.DEFAULT, "h * h", True,
                       hint="h = x.sigmoid(); h.retain_grad(); fn(h).sum().backward(); return h.grad.")
