"""Assignment 0 (orientation): hidden checks, as probes (sandbox) and judges (grader)."""
from __future__ import annotations

import torch

from autograder.checks import check_close, check_equal, check_tensor, check_true, check_type

from . import Check

ASSIGNMENT = "00_orientation"


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

        check_equal(report["device"], course_device().type, "report['device']",
                    hint="a string: course_device().type gives 'cuda' or 'cpu'.")
        check_true(type(report["cuda"]) is bool, "report['cuda'] is not a bool", got=repr(report["cuda"]),
                   hint="torch.cuda.is_available() returns a bool.")
        check_equal(report["cuda"], torch.cuda.is_available(), "report['cuda']")


class SquareSumGrad(Check):
    """``square_sum_grad(values)``: a list of 1 to 12 floats (any sign, zero included). Returns
    d/dx sum(x**3) = 3 x**2 as a float64 tensor of the same length."""
    assignment, grade_id, function = ASSIGNMENT, "square_sum_grad_tests", "square_sum_grad"

    def cases(self):
        g = torch.Generator().manual_seed(100)
        lists = [[1.0, -2.0, 0.5], [0.0], [4.0, -1.5, 2.25, 10.0]]
        for n in (2, 7, 12):
            lists.append([round(v, 3) for v in (torch.randn(n, generator=g, dtype=torch.float64) * 5).tolist()])
        return [{"values": v, "label": f"values = {v}"} for v in lists]

    @staticmethod
    def probe(ns, case):
        return student(ns, "square_sum_grad")(list(case["values"]))

    def judge(self, case, g):
        expected = 3 * torch.tensor(case["values"], dtype=torch.float64) ** 2
        check_tensor(g, "square_sum_grad(values)", shape=tuple(expected.shape),
                     hint="return x.grad after calling .backward() on the sum (not the sum itself).")
        check_close(g.double(), expected, "square_sum_grad(values)", inputs=case["label"])


class GradFnChain(Check):
    """``grad_fn_chain(t)``: any tensor; a leaf (empty list) or the result of a chain of ops.
    Graphs are built from recipes (source text): in the sandbox for the student's function, and again
    here, where the judge walks its own copy (nothing computed in the sandbox is trusted)."""
    assignment, grade_id, function = ASSIGNMENT, "grad_fn_chain_tests", "grad_fn_chain"
    RECIPES = ["lambda a: (a * 2).sigmoid().sum()", "lambda a: a", "lambda a: a.exp().tanh().mean()",
               "lambda a: (a[0:2] + 1).pow(2).sum()", "lambda a: a.sigmoid()",
               "lambda a: a.double().relu().cumsum(0).prod()", "lambda a: (a * 3).view(3, 1).t().abs().max()"]

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
    """``intermediate_grad(values)``: a list of floats; returns d/dh sum(h*h) = 2h for h = sigmoid(x)."""
    assignment, grade_id, function = ASSIGNMENT, "intermediate_grad_tests", "intermediate_grad"

    def cases(self):
        return [{"values": v, "label": f"values = {v}"}
                for v in ([0.0, 1.0, -2.0], [3.0, -0.25], [0.0], [10.0, -10.0, 0.5, 2.5, -7.25])]

    @staticmethod
    def probe(ns, case):
        return student(ns, "intermediate_grad")(list(case["values"]))

    def judge(self, case, g):
        expected = 2 * torch.tensor(case["values"], dtype=torch.float64).sigmoid()
        check_tensor(g, "intermediate_grad(values)", shape=tuple(expected.shape),
                     hint="call h.retain_grad() before backward(), then return h.grad.")
        check_close(g.double(), expected, "intermediate_grad(values)", inputs=case["label"])
