"""Assignment 0's checks: one :class:`~instructor.hidden.Check` per graded test cell, with the
helpers its probes ship into the sandbox and its judges use."""
from __future__ import annotations

import torch

from autograder.checks import check_close, check_equal, check_tensor, check_true, check_type

from .. import Check

ASSIGNMENT = "00_orientation"


def counted_backward(fn, *args):
    """Call ``fn(*args)`` and count the backward passes autograd's engine runs meanwhile
    (``.backward()``, ``torch.autograd.grad`` and ``torch.func`` all go through it): ``(result, runs)``.
    Shipped into the sandbox with the probes that use it."""
    from torch.autograd.variable import Variable

    engine, runs = Variable._execution_engine, []

    class Counting:
        def run_backward(self, *a, **k):
            runs.append(1)
            return engine.run_backward(*a, **k)

        def __getattr__(self, name):
            return getattr(engine, name)

    Variable._execution_engine = Counting()
    try:
        result = fn(*args)
    finally:
        Variable._execution_engine = engine
    return result, len(runs)


def check_autograd_ran(runs, what, hint):
    check_true(runs > 0, f"{what} has the right numbers, but autograd did not compute them",
               expected=f"a backward pass inside {what.split('(')[0]} (.backward() or torch.autograd.grad)",
               got="no backward pass ran", hint=hint)


class EnvironmentReport(Check):
    """``environment_report()``: no input. Its dict must hold the grader's torch version, the
    course device type and a real bool for CUDA (the sandbox sees the grader's GPUs and
    ``COURSE_DEVICE``). Every truth is computed here, in the grader, never taken from the sandbox."""
    assignment, grade_id, function = ASSIGNMENT, "environment_report_tests", "environment_report"

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
    """``cube_sum_grad(values)``: a list of 1 to 12 floats (any sign, zero included; several lists of
    the same length). Returns d/dx sum(x**3) = 3 x**2 as a float64 tensor of the same length on the
    course device (``DEVICE``), to float64 precision, computed by autograd: a backward pass must run
    inside the function (the task forbids returning the formula)."""
    assignment, grade_id, function = ASSIGNMENT, "cube_sum_grad_tests", "cube_sum_grad"
    probe_helpers = (counted_backward,)

    def cases(self):
        g = torch.Generator().manual_seed(100)
        lists = [[1.0, -2.0, 0.5], [0.0], [4.0, -1.5, 2.25, 10.0], [2.5, -0.125, 3.0], [-3.5],
                 [0.0, 2.0, -1.0]]
        for n in (2, 7, 12, 3):
            lists.append([round(v, 3) for v in (torch.randn(n, generator=g, dtype=torch.float64) * 5).tolist()])
        return [{"values": v, "label": f"values = {v}"} for v in lists]

    @staticmethod
    def probe(ns, case):
        g, runs = counted_backward(student(ns, "cube_sum_grad"), list(case["values"]))
        return {"grad": g, "backward_runs": runs}

    def judge(self, case, r):
        from autograder import course_device

        g = r["grad"]

        expected = 3 * torch.tensor(case["values"], dtype=torch.float64) ** 2
        check_tensor(g, "cube_sum_grad(values)", shape=tuple(expected.shape),
                     hint="return x.grad after calling .backward() on the sum (not the sum itself).")
        check_tensor(g, "cube_sum_grad(values)", dtype=torch.float64,
                     hint="make x with dtype=torch.float64, as the task says.")
        check_tensor(g, "cube_sum_grad(values)", device=course_device().type,
                     hint="make x with device=DEVICE, as the task says.")
        check_close(g.double(), expected, "cube_sum_grad(values)", inputs=case["label"], rtol=1e-10, atol=1e-12,
                    hint="let autograd compute it in float64: (x ** 3).sum().backward(), then x.grad.")
        check_autograd_ran(r["backward_runs"], "cube_sum_grad(values)",
                           hint="make x with requires_grad=True, call (x ** 3).sum().backward() and return x.grad "
                                "instead of writing 3 * x ** 2 yourself.")


class GradFnChain(Check):
    """``grad_fn_chain(t)``: any tensor; a leaf or a tensor without grad (empty list) or the result of a
    chain of ops (unary ops, ops with a second operand that needs no grad on either side, sums of two
    branches, repeated ops, chains of more than ten nodes); the chain follows ``next_functions[0][0]``.
    Graphs are built from recipes (source text): in the sandbox for the student's function, and again
    here, where the judge walks its own copy (nothing computed in the sandbox is trusted)."""
    assignment, grade_id, function = ASSIGNMENT, "grad_fn_chain_tests", "grad_fn_chain"
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
    """``intermediate_grad(values)``: a list of 1 to 5 floats (any sign, large ones included; several
    lists of the same length); returns d/dh sum(h*h) = 2h for h = sigmoid(x) as a float64 tensor of the
    same length, to float64 precision, computed by autograd: a backward pass must run inside the
    function (the task says that returning 2 * h fails)."""
    assignment, grade_id, function = ASSIGNMENT, "intermediate_grad_tests", "intermediate_grad"
    probe_helpers = (counted_backward,)

    def cases(self):
        return [{"values": v, "label": f"values = {v}"}
                for v in ([0.0, 1.0, -2.0], [3.0, -0.25], [0.0], [10.0, -10.0, 0.5, 2.5, -7.25], [1.5, -0.5, 4.0],
                          [0.25, -3.0], [-1.75])]

    @staticmethod
    def probe(ns, case):
        g, runs = counted_backward(student(ns, "intermediate_grad"), list(case["values"]))
        return {"grad": g, "backward_runs": runs}

    def judge(self, case, r):
        g = r["grad"]
        expected = 2 * torch.tensor(case["values"], dtype=torch.float64).sigmoid()
        check_tensor(g, "intermediate_grad(values)", shape=tuple(expected.shape),
                     hint="call h.retain_grad() before backward(), then return h.grad.")
        check_tensor(g, "intermediate_grad(values)", dtype=torch.float64,
                     hint="make x with dtype=torch.float64, as the task says.")
        check_close(g.double(), expected, "intermediate_grad(values)", inputs=case["label"], rtol=1e-10, atol=1e-12,
                    hint="call h.retain_grad() before backward(), then return h.grad.")
        check_autograd_ran(r["backward_runs"], "intermediate_grad(values)",
                           hint="h.retain_grad(); (h * h).sum().backward(); return h.grad — instead of writing "
                                "2 * h yourself.")
