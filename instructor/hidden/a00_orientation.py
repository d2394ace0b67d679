"""Assignment 0 (orientation): hidden checks, as probes (sandbox) and judges (grader)."""
from __future__ import annotations

import torch

from autograder.checks import check_close, check_equal, check_tensor, check_true, check_type

from . import Check
from .mutation import Mutant, Target

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


# --------------------------------------------------------------------------- mutation testing
# Plausible wrong variants of each reference solution (``python -m instructor.hidden.mutation
# 00_orientation``): each must fail a check, except those marked equivalent (they must pass).

def _machine_dependent() -> tuple[str, str]:
    from autograder import course_device

    no_gpu = "" if torch.cuda.is_available() else "on a grader without a GPU, PyTorch sees no CUDA"
    cpu = ("the course device of this grader is the CPU, so a hard-coded CPU is right here"
           if course_device().type == "cpu" else "")
    return no_gpu, cpu


_ON_CPU, _DEVICE_IS_CPU = _machine_dependent()

MUTANTS = {
    "environment_report": Target(checks=("environment_report_tests",), mutants=(
        Mutant("version without its local part", '"torch": torch.__version__,',
               '"torch": torch.__version__.split("+")[0],'),
        Mutant("major.minor only", '"torch": torch.__version__,', '"torch": torch.__version__[:4],'),
        Mutant("the CUDA version instead of torch's", '"torch": torch.__version__,',
               '"torch": str(torch.version.cuda),'),
        Mutant("the device object, not its name", '"device": course_device().type,', '"device": course_device(),'),
        Mutant("the device name in capitals", '"device": course_device().type,',
               '"device": course_device().type.upper(),'),
        Mutant("the device index instead of its name", '"device": course_device().type,',
               '"device": str(course_device().index),'),
        Mutant("cuda as a string", '"cuda": torch.cuda.is_available(),', '"cuda": str(torch.cuda.is_available()),'),
        Mutant("cuda as an int", '"cuda": torch.cuda.is_available(),', '"cuda": int(torch.cuda.is_available()),'),
        Mutant("cuda negated", '"cuda": torch.cuda.is_available(),', '"cuda": not torch.cuda.is_available(),'),
        Mutant("cuda as the number of GPUs", '"cuda": torch.cuda.is_available(),',
               '"cuda": torch.cuda.device_count(),'),
        Mutant("the function, not its answer", '"cuda": torch.cuda.is_available(),', '"cuda": torch.cuda.is_available,'),
        Mutant("key 'version' instead of 'torch'", '"torch": torch.__version__,', '"version": torch.__version__,'),
        Mutant("key 'gpu' instead of 'cuda'", '"cuda": torch.cuda.is_available(),', '"gpu": torch.cuda.is_available(),'),
        Mutant("drops the device key", '"device": course_device().type,', ''),
        Mutant("a list of pairs instead of a dict", "def environment_report():\n",
               "def environment_report():\n    return list(_report().items())\n\ndef _report():\n"),
        Mutant("device and cuda swapped", '"device": course_device().type,\n        "cuda": torch.cuda.is_available(),',
               '"device": torch.cuda.is_available(),\n        "cuda": course_device().type,'),
        Mutant("hard-coded 'cpu'", '"device": course_device().type,', '"device": "cpu",', equivalent=_DEVICE_IS_CPU),
        Mutant("hard-coded cuda False", '"cuda": torch.cuda.is_available(),', '"cuda": False,', equivalent=_ON_CPU),
        Mutant("str() of the version", '"torch": torch.__version__,', '"torch": str(torch.__version__),',
               equivalent="torch.__version__ is a str subclass; str() of it is the same string"),
        Mutant("device_count() > 0", '"cuda": torch.cuda.is_available(),', '"cuda": torch.cuda.device_count() > 0,',
               equivalent="a bool, True exactly when PyTorch sees a GPU"),
        Mutant("an extra key", '"cuda": torch.cuda.is_available(),',
               '"cuda": torch.cuda.is_available(),\n        "python": __import__("sys").version,',
               equivalent="the task asks for at least the three keys; others are allowed"),
        Mutant("the notebook's DEVICE", '"device": course_device().type,', '"device": DEVICE.type,',
               equivalent="DEVICE = setup_notebook() is course_device()"),
    )),
    "cube_sum_grad": Target(checks=("cube_sum_grad_tests",), mutants=(
        Mutant("x ** 2 instead of x ** 3", "(x ** 3)", "(x ** 2)"),
        Mutant("mean instead of sum", "(x ** 3).sum()", "(x ** 3).mean()"),
        Mutant("returns x, not its grad", "return x.grad", "return x"),
        Mutant("float32 leaf", "dtype=torch.float64, ", ""),
        Mutant("float32 gradient, cast back to float64", "return x.grad", "return x.grad.float().double()"),
        Mutant("float16 gradient", "return x.grad", "return x.grad.half()"),
        Mutant("no requires_grad", ", requires_grad=True", ""),
        Mutant("a list, not a tensor", "return x.grad", "return x.grad.tolist()"),
        Mutant("a tuple around the gradient", "return x.grad", "return (x.grad,)"),
        Mutant("|x| ** 3", "(x ** 3)", "(x.abs() ** 3)"),
        Mutant("adds x to the loss", "(x ** 3)", "(x ** 3 + x)"),
        Mutant("drops the first value from the loss", "(x ** 3).sum()", "(x ** 3)[1:].sum()"),
        Mutant("off-by-one: drops the last gradient", "return x.grad", "return x.grad[:-1]"),
        Mutant("first three values only", "torch.tensor(values,", "torch.tensor(values[:3],"),
        Mutant("rounds the values to 2 decimals", "torch.tensor(values,", "torch.tensor([round(v, 2) for v in values],"),
        Mutant("a detached factor", "(x ** 3)", "(x ** 2 * x.detach())"),
        Mutant("squeezed (a 0-dim result for one value)", "return x.grad", "return x.grad.squeeze()"),
        Mutant("unsqueezed", "return x.grad", "return x.grad.unsqueeze(0)"),
        Mutant("cached by the number of values", "    return x.grad",
               "    return cube_sum_grad.__dict__.setdefault(len(values), x.grad)"),
        Mutant("cached by the first value", "    return x.grad",
               "    return cube_sum_grad.__dict__.setdefault(values[0], x.grad)"),
        Mutant("the formula instead of autograd", "(x ** 3).sum().backward()\n    return x.grad",
               "return 3 * x.detach() ** 2"),
        Mutant("the formula, after an unused backward", "return x.grad", "return 3 * x.detach() ** 2",
               equivalent="a backward pass ran and the numbers are the same: the check cannot tell"),
        Mutant("upstream gradient 2", ".sum().backward()", ".sum().backward(torch.tensor(2.0, dtype=torch.float64, device=DEVICE))"),
        Mutant("the CPU instead of DEVICE", "device=DEVICE", "device='cpu'", equivalent=_DEVICE_IS_CPU),
        Mutant("x * x * x", "(x ** 3)", "(x * x * x)", equivalent="the same function; autograd's product rule "
                                                                "gives 3x² up to float64 rounding"),
        Mutant("x ** 3.0", "(x ** 3)", "(x ** 3.0)", equivalent="the same power"),
        Mutant("abs of the gradient", "return x.grad", "return x.grad.abs()", equivalent="3x² is never negative"),
        Mutant("grad detached", "return x.grad", "return x.grad.detach()", equivalent="x.grad needs no grad"),
        Mutant("torch.autograd.grad", "(x ** 3).sum().backward()\n    return x.grad",
               "return torch.autograd.grad((x ** 3).sum(), x)[0]", equivalent="the same gradient"),
    )),
    "grad_fn_chain": Target(checks=("grad_fn_chain_tests",), mutants=(
        Mutant("node.name() (spells AccumulateGrad with its namespace)", "type(node).__name__", "node.name()"),
        Mutant("str of the type", "type(node).__name__", "str(type(node))"),
        Mutant("follows the last input", "node.next_functions[0][0] if", "node.next_functions[-1][0] if"),
        Mutant("follows the first input that is not None", "node.next_functions[0][0] if node.next_functions else None",
               "next((f for f, _ in node.next_functions if f is not None), None)"),
        Mutant("no guard for a node without inputs", " if node.next_functions else None", ""),
        Mutant("stops after five nodes", "while node is not None:", "while node is not None and len(names) < 5:"),
        Mutant("at most eight steps", "while node is not None:", "for _ in range(8):\n        if node is None:\n            break"),
        Mutant("starts with the tensor's type", "names = []", "names = [type(t).__name__]"),
        Mutant("a tuple", "return names", "return tuple(names)"),
        Mutant("reversed (leaf first)", "names.append(type(node).__name__)", "names.insert(0, type(node).__name__)"),
        Mutant("skips t.grad_fn itself", "node = t.grad_fn\n",
               "node = t.grad_fn.next_functions[0][0] if t.grad_fn is not None and t.grad_fn.next_functions else None\n"),
        Mutant("None for a leaf", "return names", "return names or None"),
        Mutant("drops AccumulateGrad", "return names", "return names[:-1]"),
        Mutant("skips repeated node types", "names.append(type(node).__name__)",
               "names.append(type(node).__name__) if type(node).__name__ not in names else None"),
        Mutant("cached by the tensor's shape", "return names", "return grad_fn_chain.__dict__.setdefault(tuple(t.shape), names)"),
        Mutant("the node pairs, not nodes", "node = node.next_functions[0][0] if", "node = node.next_functions[0] if"),
        Mutant("lower-case names", "type(node).__name__", "type(node).__name__.lower()"),
        Mutant("strips the Backward0 suffix", "type(node).__name__", "type(node).__name__.replace('Backward0', '')"),
        Mutant("`while node`", "while node is not None:", "while node:",
               equivalent="autograd nodes are always truthy"),
        Mutant("__qualname__", "type(node).__name__", "type(node).__qualname__",
               equivalent="autograd node classes are top-level: qualname is the name"),
        Mutant("node.__class__", "type(node).__name__", "node.__class__.__name__", equivalent="the same class"),
    )),
    "intermediate_grad": Target(checks=("intermediate_grad_tests",), mutants=(
        Mutant("no retain_grad", "    h.retain_grad()\n", ""),
        Mutant("retain_grad after backward", "    h.retain_grad()\n    (h * h).sum().backward()\n",
               "    (h * h).sum().backward()\n    h.retain_grad()\n"),
        Mutant("retain_grad on x", "h.retain_grad()", "x.retain_grad()"),
        Mutant("returns x.grad", "return h.grad", "return x.grad"),
        Mutant("a detached factor", "(h * h)", "(h * h.detach())"),
        Mutant("tanh instead of sigmoid", "x.sigmoid()", "x.tanh()"),
        Mutant("mean instead of sum", "(h * h).sum()", "(h * h).mean()"),
        Mutant("float32", "dtype=torch.float64, ", ""),
        Mutant("sigmoid in float32", "x.sigmoid()", "x.float().sigmoid().double()"),
        Mutant("a list, not a tensor", "return h.grad", "return h.grad.tolist()"),
        Mutant("h * x instead of h * h", "(h * h)", "(h * x)"),
        Mutant("clamped input", "x.sigmoid()", "x.clamp(-5, 5).sigmoid()"),
        Mutant("squeezed", "return h.grad", "return h.grad.squeeze()"),
        Mutant("upstream gradient 0.5", ".sum().backward()", ".sum().backward(torch.tensor(0.5, dtype=torch.float64))"),
        Mutant("drops the last value", "torch.tensor(values,", "torch.tensor(values[:-1],"),
        Mutant("h under no_grad", "h = x.sigmoid()", "with torch.no_grad():\n        h = x.sigmoid()"),
        Mutant("cached by the number of values", "    return h.grad",
               "    return intermediate_grad.__dict__.setdefault(len(values), h.grad)"),
        Mutant("h ** 3", "(h * h)", "(h * h * h)"),
        Mutant("h ** 2", "(h * h)", "(h ** 2)", equivalent="the same function"),
        Mutant("sigmoid by its formula", "x.sigmoid()", "1 / (1 + torch.exp(-x))",
               equivalent="the same function in float64"),
        Mutant("h a leaf of its own", "h = x.sigmoid()", "h = x.sigmoid().detach().requires_grad_()",
               equivalent="the gradient with respect to h is the same"),
        Mutant("2h written by hand", "    h.retain_grad()\n    (h * h).sum().backward()\n    return h.grad",
               "    return (2 * h).detach()"),
        Mutant("2h written by hand after the backward", "return h.grad", "return (2 * h).detach()",
               equivalent="a backward pass ran and the numbers are the same: the check cannot tell"),
        Mutant("retain_graph", ".sum().backward()", ".sum().backward(retain_graph=True)",
               equivalent="keeping the graph changes nothing"),
    )),
}
