"""Assignment 2 (names and storage): hidden checks, as probes (sandbox) and judges (grader).

Two questions:

* ``classify_update(statement, device=None, dtype=None)`` (four test cells): the case carries a
  statement; the probe hands it to the student's function; the judge measures the statement *here*,
  in the grader (:func:`measure`, the reference classifier that used to live in the student package)
  and compares the categories.
* ``fixed_model(x, w)`` (two test cells): the probe calls the student's function on leaves made from
  the case's tensors and returns the output, its ``requires_grad``, the gradients with respect to
  ``x`` and ``w`` for the case's upstream gradient (or the error backward raised) and, for the
  gradients cell, the report of the in-place locator; the judge compares with the float64
  :func:`reference_model` computed here.
"""
from __future__ import annotations

import random
import warnings
from dataclasses import dataclass

import torch

from autograder import course_device, test_configs
from autograder.checks import check_close, check_tensor, check_true, check_type, fail
from autograder.storage import make_x, model_inputs

from . import Check, configs_with_half_on_cpu

ASSIGNMENT = "02_names_and_storage"

CATEGORIES = ("in-place", "untracked-write", "no-change", "new-view", "new-tensor")


# --------------------------------------------------------------------------- the reference classifier

@dataclass
class Facts:
    """What running one statement on a fresh ``x`` did, and the category the rules give."""
    same_object: bool
    same_storage: bool
    version_before: int
    version_after: int
    contents_changed: bool
    category: str

    def text(self) -> str:
        return (f"measured: same object {self.same_object}, same storage {self.same_storage}, "
                f"x0._version {self.version_before} -> {self.version_after}, "
                f"x0's contents changed {self.contents_changed}")


def measure(statement: str, device, dtype: torch.dtype) -> Facts:
    """Run ``statement`` on ``x = make_x(device, dtype)`` and apply the task's rules, in order.

    Every witness of ``x0`` is read before the statement and a reference to it is kept (no id
    reuse). Contents are: storage address, shape, dtype and values (``torch.equal`` on copies).
    """
    x0 = make_x(torch.device(device), dtype)
    ptr, version, shape, dt, values = (x0.untyped_storage().data_ptr(), x0._version, tuple(x0.shape),
                                       x0.dtype, x0.detach().clone())
    scope = {"torch": torch, "x": x0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(statement, "<statement>", "exec"), scope)  # noqa: S102 - the grader's own statements
    x1 = scope.get("x")
    if not isinstance(x1, torch.Tensor):
        raise TypeError(f"after {statement!r}, x names a {type(x1).__name__}, not a tensor")
    version_after = x0._version
    changed = ((x0.untyped_storage().data_ptr(), tuple(x0.shape), x0.dtype) != (ptr, shape, dt)
               or not torch.equal(x0.detach(), values))
    same_storage = x1.untyped_storage().data_ptr() == ptr
    if version_after > version:
        category = "in-place"
    elif changed:
        category = "untracked-write"
    elif x1 is x0:
        category = "no-change"
    elif same_storage:
        category = "new-view"
    else:
        category = "new-tensor"
    return Facts(x1 is x0, same_storage, version, version_after, changed, category)


def classify(statement: str, device, dtype: torch.dtype) -> str:
    """The reference answer to ``classify_update``, measured on this PyTorch and device."""
    return measure(statement, device, dtype).category


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


# --------------------------------------------------------------------------- the statements

def _const(rng: random.Random) -> str:
    return rng.choice(["0", "1", "-1", "0.5", "2", "3.25", "-0.75", "1e-3", "1e3", "-2.5", "7", "0.1"])


def _nonzero(rng: random.Random) -> str:
    return rng.choice(["1", "-1", "0.5", "2", "3.25", "-0.75", "1e3", "-2.5", "7", "0.1"])


def _tiny(rng: random.Random) -> str:
    return rng.choice(["1e-2", "1e-3", "1e-4", "3e-5", "1e-6", "1e-8", "2 ** -9", "2 ** -12"])


def _expand(templates: list[str], rng: random.Random, per_template: int) -> list[str]:
    """Each template with ``per_template`` random fillings, deduplicated, in a stable order."""
    out: list[str] = []
    for t in templates:
        for _ in range(per_template if "{" in t else 1):
            i, j = rng.randrange(2), rng.randrange(3)
            lo = rng.choice(["-2", "-1", "0", "0.25"])
            s = t.format(c=_const(rng), nz=_nonzero(rng), eps=_tiny(rng), i=i, j=j, j1=j + 1, lo=lo,
                         hi=rng.choice(["0.5", "1", "2.5"]), k=rng.randrange(6), d=rng.randrange(3),
                         n=rng.randrange(1, 4), shape=rng.choice(["-1", "3, 2", "6, 1", "1, 6", "2, 3", "2, 1, 3"]))
            if s not in out:
                out.append(s)
    return out


# Rebind or write? Only statements whose in-place writes leave x naming x0 (same object, same storage),
# and rebinds to tensors with memory of their own.
REBIND_FIXED = [
    "x = x * 2", "x.mul_(2)", "x.clamp_(0, 1)", "x = torch.sigmoid(x)", "torch.sigmoid(x, out=x)",
    "x.copy_(x * 2)", "x[:, 1] = 0", "x = x.clone()", "x -= x.mean()",
    "x.index_fill_(0, torch.tensor([0], device=x.device), 5.)", "x = torch.where(x > 0, x, 0.)",
    "x[x < 0] = 0", "x = x.exp()", "x = 2 * x",
]
REBIND_TEMPLATES = [
    # writes
    "x += {c}", "x -= {c}", "x *= {c}", "x /= {nz}", "x.add_({c})", "x.sub_({c})", "x.mul_({c})", "x.div_({nz})",
    "x[{i}] = {c}", "x[{i}, {j}] = {c}", "x[:, {j}] = x[:, {j}] * {c}", "x[{i}] += {c}", "x[:, :{j1}] -= {c}",
    "x.clamp_({lo}, {hi})", "x.copy_(x * {c})", "x.fill_({c})", "x.zero_()", "x.sigmoid_()", "x.exp_()",
    "x.abs_()", "x.neg_()", "x.relu_()", "x.tanh_()", "x.pow_(2)", "torch.mul(x, {c}, out=x)",
    "torch.add(x, {c}, out=x)", "x = x.mul_({c})", "x = x.add_({c})", "x.masked_fill_(x > {c}, 0)",
    "x.index_fill_(1, torch.tensor([{j}], device=x.device), {c})", "x.addcmul_(x, x)",
    "x.lerp_(torch.zeros_like(x), 0.5)", "x[x > {c}] = {c}", "x.t_()", "x.unsqueeze_(0)", "x.resize_(3, 2)",
    "x.squeeze_()", "x.floor_()", "x[...] = {c}", "x[:] = x.flip(0)", "x.clamp_(min={lo})",
    "x.scatter_(1, torch.zeros(2, 1, dtype=torch.long, device=x.device), {c})",
    # rebinds to new memory
    "x = x + {c}", "x = x * {c}", "x = {c} * x", "x = x - x.mean()", "x = x.flip(0)", "x = x.relu()",
    "x = x.abs()", "x = torch.zeros_like(x)", "x = torch.cat([x, x])", "x = x.clamp({lo}, {hi})",
    "x = x[[1, 0]]", "x = x.pow(2)", "x = x @ x.T", "x = x.sum(0)", "x = -x", "x = x ** 2",
    "x = x.softmax(-1)", "x = x.cumsum(1)", "x = torch.stack([x, x])", "x = x.t().contiguous()",
    "x = x.new_ones(2, 3)", "x = x.detach().clone()", "x = x * 1", "x = x + 0", "x = x[:, [{j}]]",
    "x = x.repeat({n}, 1)", "x = torch.tensor(x.tolist(), dtype=x.dtype, device=x.device)",
]

# A new object on the same memory (and a few look-alikes that copy or hand back x itself).
VIEW_FIXED = [
    "x = x.view(-1)", "x = x.T", "x = x[1:]", "x = x.detach()", "x = x.reshape(3, 2)", "x = x.unsqueeze(0)",
    "x = x[:, ::2]", "x = x.expand(4, 2, 3)", "x = x.view(-1)[2:]",
]
VIEW_TEMPLATES = [
    "x = x[{i}]", "x = x[:, {j}:]", "x = x[{i}:, :{j1}]", "x = x.view({shape})", "x = x.reshape({shape})",
    "x = x.mT", "x = x.t()", "x = x.transpose(0, 1)", "x = x.permute(1, 0)", "x = x.unsqueeze({d})",
    "x = x.expand({n}, 2, 3)", "x = x.narrow(1, {j}, 1)", "x = x.select(0, {i})", "x = x.diagonal()",
    "x = x.flatten()", "x = x.data", "x = x.unbind(0)[{i}]", "x = x.chunk(3, dim=1)[{j}]", "x = x.split(1)[{i}]",
    "x = x[..., None]", "x = x.view(torch.uint8)", "x = torch.as_strided(x, (2, 2), (1, 1))", "x = x.t().t()",
    "x = x.squeeze()", "x = x[:0]", "x = x.movedim(1, 0)", "x = x.unflatten(1, (3, 1))", "x = x.view_as(x)",
    "x = x.view(-1)[{k}:]", "x = x.unfold(1, 2, 1)", "x = x.swapaxes(0, 1)", "x = x.as_strided((3,), (2,))",
    "x = x[{i}, {j}]", "x = x.detach().view(-1)", "y = x; x = y[:]",
    # look-alikes
    "x = x.t().reshape(6)", "x = x.flip(1)", "x = x[[0, 1]]", "x = x.real", "x = x.contiguous()",
    "x = x.view(-1).clone()", "x = x.T.contiguous()",
]

# Nothing happened to x0, and x still names it (and look-alikes whose answer depends on dtype or device).
NO_CHANGE_FIXED = [
    "x = x.to(x.dtype)", "x = x.to(x.device)", "y = x + 1", "y = x.view(-1)", "x = x.requires_grad_(False)",
    "pass", "x = x.float() if x.dtype == torch.float32 else x",
]
NO_CHANGE_TEMPLATES = [
    "x = x.type(x.dtype)", "x = torch.as_tensor(x)", "x = torch.asarray(x)", "x = x.detach_()", "x = x.real",
    "x.resize_(2, 3)", "x = [x][0]", "x = (lambda t: t)(x)", "x, y = x, x + {c}", "x.data *= 1",
    "x.data.copy_(x.data)", "x.data.add_(0)", "x.data.t_()", "x.data.unsqueeze_(0)", "x.data.resize_(6)",
    "x.requires_grad_()", "x = x.requires_grad_()", "y = x.clone(); y += {c}", "y = x.detach(); y = y + {c}",
    "x.data.set_(x.data.clone())", "x.grad = None", "x = x.to(dtype=x.dtype, device=x.device)",
    "x = x.contiguous().contiguous()", "x = x.clone() if False else x", "z = x[{i}] * {c}",
    "x.untyped_storage().copy_(x.clone().untyped_storage())", "x = x.cpu() if x.is_cpu else x",
    # depends on dtype / device: no-change in one configuration, a new tensor or a view in others
    "x = x.half()", "x = x.to(torch.float16)", "x = x.bfloat16()", "x = x.double()", "x = x.float()",
    "x = x.cpu()", "x = x.to('cpu')", "x = x.to(torch.float64).to(x.dtype)", "x = x.type(torch.float32)",
    # look-alikes
    "x = x.reshape(x.shape)", "x = x.view(-1).view(2, 3)", "x = x.view(2, 3)", "x = x.clone().contiguous()",
]

# Written behind autograd's back (values big and tiny, shape, storage moves with equal values, dtype-dependent
# no-ops) or written with autograd told though nothing changed, through another object, or before a rebind.
UNTRACKED_FIXED = [
    "x.data.mul_(2)", "x.data[0] = x.data[0] + 1", "x.data = x.data + 1", "x.data.clamp_(0, 1)",
    "x.clamp_(-100, 100)", "x.detach()[1] = 0", "x.data.add_(1); x = x + 1", "y = x[0]; y += 1",
    "x.data.sub_(x.data)",
]
UNTRACKED_TEMPLATES = [
    "x.data += {nz}", "x.data.mul_({nz})", "x.data[{i}] = x.data[{i}] + {nz}", "x.data = x.data + {nz}",
    "x.data.zero_()", "x.data.masked_fill_(x > {c}, 0)", "x.data.add_({nz}); x = x * {c}", "x.data.exp_()",
    "x.data[{i}, {j}] = {c}", "x.untyped_storage().fill_(0)", "x.data.neg_(); x = x[:]",
    # tiny changes: lost in half precision, not in float32 / float64
    "x.data += {eps}", "x.data.mul_(1 + {eps})", "x.data[{i}, {j}] += {eps}", "x.data.sub_({eps})",
    # shape changes, storage untouched
    "x.data = x.data.view(3, 2)", "x.data = x.data.t()", "x.data = x.data.reshape(-1)", "x.data = x.data[:1]",
    "x.data = x.data.unsqueeze(0)", "x.data = x.data[:, :{j1}]",
    # storage moves, values equal
    "x.data = x.data.clone()", "x.data = x.data * 1", "x.data = torch.tensor(x.tolist(), dtype=x.dtype, device=x.device)",
    "x.data = x.data.contiguous().clone()",
    # dtype-dependent: a no-op in one dtype
    "x.data = x.data.half()", "x.data = x.data.to(torch.float64)", "x.data = x.data.float()",
    # the version moved though nothing changed, or through another object, or before a rebind
    "x *= 1", "x.add_(0)", "x.copy_(x)", "x[:] = x.clone()", "x.mul_(1); x = x + 1", "x.add_({c}); x = x[:]",
    "x = x.add_({c})[:]", "x.set_(x.clone())", "x.resize_(6)", "x.squeeze_()", "x.detach().t_()",
    "x.detach().zero_()", "y = x.view(-1); y.mul_({c})", "y = x[{i}]; y += {c}", "x.detach()[{i}] = {c}",
    "x.masked_fill_(x > 100, 0)", "x.nan_to_num_()", "x.clamp_(min=-1e4)", "x.abs_().neg_().neg_()",
    "x.index_add_(0, torch.tensor([0], device=x.device), torch.zeros(1, 3, device=x.device, dtype=x.dtype))",
    "y = x.detach(); y.mul_({c}); x = y.clone()", "x[0] = x[0]",
    "x.unsqueeze_(0); x = x.squeeze(0)",
]


def _classify_configs() -> list[tuple[str, str]]:
    """Every (device, dtype) of ``test_configs()`` and, on the CPU, float16 and bfloat16 too, as names."""
    return [(str(d), str(t).replace("torch.", "")) for d, t in configs_with_half_on_cpu()]


def _statement_case(statement: str, device: str | None, dtype: str | None) -> dict:
    if device is None:
        label = f"classify_update({statement!r})  (device and dtype left to their defaults)"
    else:
        label = f"classify_update({statement!r}, device={device!r}, dtype=torch.{dtype})"
    return {"statement": statement, "device": device, "dtype": dtype, "label": label}


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
        for s in _expand(self.TEMPLATES, rng, self.PER_TEMPLATE):
            if s not in pool:
                pool.append(s)
        return pool

    def cases(self):
        device = str(course_device())
        cases = [_statement_case(s, device, "float32") for s, _ in self.VISIBLE]
        cases += [_statement_case(s, None, None) for s in self.DEFAULTS]
        for dev, dt in _classify_configs():
            for s in self.statements():
                try:
                    classify(s, dev, getattr(torch, dt))
                except Exception:  # noqa: BLE001 - an op this device / dtype lacks: not a case here
                    continue
                cases.append(_statement_case(s, dev, dt))
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
    VISIBLE = (("x = x + 1", "new-tensor"), ("x += 1", "in-place"), ("x[0] = 1", "in-place"),
               ("x = x.add_(1)", "in-place"), ("x[0] += 1", "in-place"), ("x.t_()", "in-place"))
    FIXED, TEMPLATES, SEED, PER_TEMPLATE = REBIND_FIXED, REBIND_TEMPLATES, 2001, 1
    DEFAULTS = ("x = x + 1", "x += 1")


class ClassifyNewView(_ClassifyCheck):
    """New views of ``x0``'s storage (slices, views, reshapes, transposes, expand, detach, dtype
    views) and look-alikes that copy or hand back ``x`` itself."""
    __doc__ = _ClassifyCheck.__doc__ + "\n\n    " + __doc__
    assignment, grade_id = ASSIGNMENT, "classify_update_new_view_tests"
    VISIBLE = (("x = x[:]", "new-view"), ("x = x[1:]", "new-view"))
    FIXED, TEMPLATES, SEED, PER_TEMPLATE = VIEW_FIXED, VIEW_TEMPLATES, 2002, 1
    DEFAULTS = ("x = x[:]",)


class ClassifyNoChange(_ClassifyCheck):
    """Statements that hand back ``x`` itself or touch only other objects (including writes through
    ``.data`` that change nothing), statements whose answer depends on the dtype or device
    (``x = x.half()``, ``x = x.cpu()``), and look-alike views."""
    __doc__ = _ClassifyCheck.__doc__ + "\n\n    " + __doc__
    assignment, grade_id = ASSIGNMENT, "classify_update_no_change_tests"
    VISIBLE = (("x = x.contiguous()", "no-change"), ("x.requires_grad_()", "no-change"))
    FIXED, TEMPLATES, SEED, PER_TEMPLATE = NO_CHANGE_FIXED, NO_CHANGE_TEMPLATES, 2003, 1
    DEFAULTS = ("x = x.contiguous()", "x = x.float()", "x = x.double()", "x = x.cpu()")


class ClassifyUntrackedAndVersion(_ClassifyCheck):
    """Writes autograd was not told about (values changed a lot or by a tiny amount, lost in half
    precision; shape changes; storage moved with equal values; dtype-dependent no-ops), and writes it
    was told about though no value changed, through another object, or before ``x`` is rebound."""
    __doc__ = _ClassifyCheck.__doc__ + "\n\n    " + __doc__
    assignment, grade_id = ASSIGNMENT, "classify_update_untracked_and_version_tests"
    VISIBLE = (("x.data += 1", "untracked-write"), ("x.detach().add_(1)", "in-place"), ("x *= 1", "in-place"),
               ("x.data = x.data.clone()", "untracked-write"))
    FIXED, TEMPLATES, SEED, PER_TEMPLATE = UNTRACKED_FIXED, UNTRACKED_TEMPLATES, 2004, 2
    DEFAULTS = ("x.data += 1", "x.data += 1e-5")


# --------------------------------------------------------------------------- the model question

def reference_model(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """What ``leaky_model`` computes, written without a single in-place write."""
    y = torch.sigmoid(torch.relu(x @ w + 0.1))
    return torch.cat([y[:, :2] * 2 - 0.5, (y[:, 2:] * 2) ** 2], dim=1)


def _model_case(device, dtype: str, seed: int, n: int = 5, scale: float = 1.0, upstream: str = "ramp",
                saved_writes: bool = False) -> dict:
    x, w = (t.detach() for t in model_inputs("cpu", torch.float64, n=n, seed=seed))
    x = x * scale
    if upstream == "ones":
        up = torch.ones(n, 4, dtype=torch.float64)
    else:
        up = torch.linspace(-1, 1, n * 4, dtype=torch.float64).reshape(n, 4)
    extra = f", x scaled by {scale:g}" if scale != 1 else ""
    where = ("on the 'meta' device (no values: it stands in for a GPU, so a tensor made on the CPU "
             "does not fit)" if str(device) == "meta" else f"on {device}")
    return {"x": x, "w": w, "device": str(device), "dtype": dtype, "upstream": up, "saved_writes": saved_writes,
            "label": f"x ({n}, 3), w (3, 4), {dtype} {where}, seed {seed}{extra}"}


def _meta_case(dtype: str = "float32", seed: int = 10) -> dict:
    """The forward pass with ``x`` and ``w`` on the ``meta`` device: the CPU grader's stand-in for a GPU.
    Like CUDA, ``meta`` accepts Python numbers and 0-dim CPU tensors next to its tensors, and refuses any
    other CPU tensor; it holds no values, so only the devices are judged (values: the other cases)."""
    return _model_case("meta", dtype, seed=seed, upstream="ones")


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


def _reference(case: dict) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The float64 reference output and gradients, from the inputs as the student's dtype holds them."""
    dtype = getattr(torch, case["dtype"])
    xr, wr = (case[k].to(dtype).double().requires_grad_() for k in ("x", "w"))
    ref = reference_model(xr, wr)
    gx, gw = torch.autograd.grad((ref * case["upstream"].to(dtype).double()).sum(), (xr, wr))
    return ref.detach(), gx, gw


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
    ref, _, _ = _reference(case)
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

    def cases(self):
        cases = [_model_case(course_device(), "float64", seed=0, upstream="ones")]        # the visible test
        for device, dtype in test_configs():
            cases.append(_model_case(device, str(dtype).replace("torch.", ""), seed=3, upstream="ones"))
        cases += [_model_case("cpu", "float64", seed=4, n=1, upstream="ones"),
                  _model_case("cpu", "float32", seed=5, n=8, scale=3.0, upstream="ones"),
                  _model_case("cpu", "float16", seed=6, n=5, upstream="ones"),
                  _meta_case("float32", seed=10), _meta_case("float16", seed=11)]
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

    def cases(self):
        cases = [_model_case(course_device(), "float64", seed=0, saved_writes=True)]      # the visible test
        for device, dtype in test_configs():
            for seed in (1, 2):
                cases.append(_model_case(device, str(dtype).replace("torch.", ""), seed=seed, saved_writes=True))
        cases += [_model_case("cpu", "float64", seed=7, n=1, saved_writes=True),
                  _model_case("cpu", "float64", seed=8, n=9, scale=2.5, saved_writes=True),
                  _model_case("cpu", "float16", seed=9, n=5, saved_writes=True),
                  _meta_case("float64", seed=12)]
        return cases

    @staticmethod
    def probe(ns, case):
        return _run_model(ns, case)

    def judge(self, case, r):
        if case["device"] == "meta":
            return _judge_meta(case, r)
        _judge_output(case, r)
        dtype, where = getattr(torch, case["dtype"]), case["label"]
        _, gx_ref, gw_ref = _reference(case)
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


# --------------------------------------------------------------------------- mutation testing

from .mutation import Mutant, Target  # noqa: E402 - declared after the checks they exercise

_CPU_ONLY = not torch.cuda.is_available()
_IF_CPU_ONLY = ("on a CPU-only grader every case's device is the CPU, which is also DEVICE; "
                "on a GPU grader the CUDA cases kill it")

_CLASSIFY_MUTANTS = (
    # the order of the rules
    Mutant("contents tested before the version (a tracked write that changed values reads as untracked)",
           '''    if old._version > old_version:
        return "in-place"
    if (old.untyped_storage().data_ptr() != old_ptr or old.shape != old_shape
            or not torch.equal(old.detach(), old_values)):
        return "untracked-write"
''', '''    if (old.untyped_storage().data_ptr() != old_ptr or old.shape != old_shape
            or not torch.equal(old.detach(), old_values)):
        return "untracked-write"
    if old._version > old_version:
        return "in-place"
'''),
    Mutant("new-view tested before no-change (x itself counts as a view of its own storage)",
           '''    if new is old:
        return "no-change"
    if new.untyped_storage().data_ptr() == old_ptr:
        return "new-view"
''', '''    if new.untyped_storage().data_ptr() == old_ptr:
        return "new-view"
    if new is old:
        return "no-change"
'''),
    Mutant("version read on the tensor x names afterwards, not on x0", "if old._version > old_version",
           "if new._version > old_version"),
    Mutant("version compared with != instead of >", "if old._version > old_version",
           "if old._version != old_version",
           equivalent="a version counter never goes down, so 'changed' and 'went up' are the same test"),
    Mutant("version compared with 0 instead of the version read before", "if old._version > old_version",
           "if old._version > 0",
           equivalent="make_x returns a fresh tensor, whose version is always 0 before the statement"),
    # the storage witness
    Mutant("x.data_ptr() (first element) compared instead of the storage's address",
           "if new.untyped_storage().data_ptr() == old_ptr:", "if new.data_ptr() == old.data_ptr():"),
    Mutant("new-view and new-tensor swapped (storage test negated)",
           "if new.untyped_storage().data_ptr() == old_ptr:", "if new.untyped_storage().data_ptr() != old_ptr:"),
    Mutant("old storage compared with the new tensor's storage instead of the address read before",
           "old.untyped_storage().data_ptr() != old_ptr", "old.untyped_storage().data_ptr() != new.untyped_storage().data_ptr()"),
    Mutant("storage move not detected (equal values on new memory)",
           "old.untyped_storage().data_ptr() != old_ptr or ", ""),
    # the contents witness
    Mutant("values not compared", "\n            or not torch.equal(old.detach(), old_values)", ""),
    Mutant("tolerant value comparison (allclose) instead of exact",
           "not torch.equal(old.detach(), old_values)", "not torch.allclose(old.detach(), old_values)"),
    Mutant("values compared in half precision", "not torch.equal(old.detach(), old_values)",
           "not torch.equal(old.detach().half(), old_values.half())"),
    Mutant("values compared on the new tensor, not on x0", "not torch.equal(old.detach(), old_values)",
           "not torch.equal(new.detach(), old_values)"),
    Mutant("values snapshot is an alias (detach without clone): writes behind autograd's back go unseen",
           "old_values = x.detach().clone()", "old_values = x.detach()"),
    Mutant("shape change not detected (values compared flattened, shape not compared)",
           "old.shape != old_shape\n            or not torch.equal(old.detach(), old_values)",
           "not torch.equal(old.detach().flatten(), old_values.flatten())"),
    Mutant("shape not compared on its own", " or old.shape != old_shape", "",
           equivalent="torch.equal is False for tensors of different shapes, so the value test already sees "
                      "every shape change"),
    # identity
    Mutant("identity tested with torch.equal (same values) instead of `is`", "if new is old:",
           "if torch.equal(new, old):"),
    Mutant("identity tested with == instead of `is`", "if new is old:", "if bool(new == old):"),
    Mutant("identity tested with id() (x0 kept alive)", "if new is old:", "if id(new) == id(old):",
           equivalent="a reference to x0 is kept (old), so its id cannot be reused by the new object"),
    Mutant("the name x read from the function's local, not from scope['x']", 'new = scope["x"]', "new = x"),
    # arguments
    Mutant("dtype argument ignored", "torch.float32 if dtype is None else dtype", "torch.float32"),
    Mutant("default dtype float64 instead of float32", "torch.float32 if dtype is None", "torch.float64 if dtype is None"),
    Mutant("default dtype float16 instead of float32", "torch.float32 if dtype is None", "torch.float16 if dtype is None"),
    Mutant("device argument ignored", "DEVICE if device is None else device", "DEVICE",
           equivalent=_IF_CPU_ONLY if _CPU_ONLY else ""),
    Mutant("default device the CPU instead of DEVICE", "DEVICE if device is None", "'cpu' if device is None",
           equivalent=_IF_CPU_ONLY if _CPU_ONLY else ""),
    # categories
    Mutant("category misspelt: 'inplace'", 'return "in-place"', 'return "inplace"'),
    Mutant("category misspelt: 'untracked'", 'return "untracked-write"', 'return "untracked"'),
    Mutant("category misspelt: 'new view'", 'return "new-view"', 'return "new view"'),
    Mutant("category 'new-tensor' for an unchanged x", 'return "no-change"', 'return "new-tensor"'),
    # state across calls
    Mutant("result cached by statement across calls (device and dtype ignored)",
           "def classify_update(statement, device=None, dtype=None):\n",
           "_CACHE = {}\n"
           "def classify_update(statement, device=None, dtype=None):\n"
           "    if statement in _CACHE:\n"
           "        return _CACHE[statement]\n"
           "    _CACHE[statement] = _classify(statement, device, dtype)\n"
           "    return _CACHE[statement]\n"
           "def _classify(statement, device=None, dtype=None):\n"),
    Mutant("result cached per (statement, device, dtype)",
           "def classify_update(statement, device=None, dtype=None):\n",
           "import functools\n@functools.lru_cache(maxsize=None)\n"
           "def classify_update(statement, device=None, dtype=None):\n",
           equivalent="the category is a function of the statement, device and dtype alone: every call "
                      "measures a fresh make_x"),
    Mutant("one tensor reused across calls (made once, not per call)",
           "def classify_update(statement, device=None, dtype=None):\n"
           "    x = make_x(DEVICE if device is None else device, torch.float32 if dtype is None else dtype)\n",
           "_X = {}\n"
           "def classify_update(statement, device=None, dtype=None):\n"
           "    key = (str(DEVICE if device is None else device), torch.float32 if dtype is None else dtype)\n"
           "    x = _X.setdefault(key, make_x(*key))\n"),
)

_MODEL_MUTANTS = (
    Mutant("bias dropped", "x @ w + 0.1", "x @ w"),
    Mutant("bias with the wrong sign", "x @ w + 0.1", "x @ w - 0.1"),
    Mutant("bias added after the ReLU", "torch.relu(x @ w + 0.1)", "torch.relu(x @ w) + 0.1"),
    Mutant("ReLU missing", "torch.relu(x @ w + 0.1)", "(x @ w + 0.1)"),
    Mutant("ReLU and sigmoid swapped", "h = torch.relu(x @ w + 0.1)\n    y = h.sigmoid()",
           "h = torch.sigmoid(x @ w + 0.1)\n    y = h.relu()"),
    Mutant("leaky ReLU instead of ReLU", "torch.relu(", "torch.nn.functional.leaky_relu("),
    Mutant("tanh instead of sigmoid", "y = h.sigmoid()", "y = h.tanh()"),
    Mutant("wrong exponent (cube)", "** 2", "** 3"),
    Mutant("exponent missing", "(y[:, 2:] * 2) ** 2", "(y[:, 2:] * 2)"),
    Mutant("square of y, then times 2", "(y[:, 2:] * 2) ** 2", "y[:, 2:] ** 2 * 2"),
    Mutant("wrong offset (+ 0.5)", "* 2 - 0.5", "* 2 + 0.5"),
    Mutant("offset missing", "y[:, :2] * 2 - 0.5", "y[:, :2] * 2"),
    Mutant("off-by-one column split (3 and 1)", "y[:, :2] * 2 - 0.5, (y[:, 2:]", "y[:, :3] * 2 - 0.5, (y[:, 3:]"),
    Mutant("off-by-one column split (1 and 3)", "y[:, :2] * 2 - 0.5, (y[:, 2:]", "y[:, :1] * 2 - 0.5, (y[:, 1:]"),
    Mutant("halves decoded the other way round", "y[:, :2] * 2 - 0.5, (y[:, 2:] * 2) ** 2",
           "(y[:, :2] * 2) ** 2, y[:, 2:] * 2 - 0.5"),
    Mutant("rows sliced instead of columns", "y[:, :2] * 2 - 0.5, (y[:, 2:]", "y[:2] * 2 - 0.5, (y[2:]"),
    Mutant("wrong cat dimension", "dim=1)", "dim=0)"),
    Mutant("cat on the last dimension", "dim=1)", "dim=-1)", equivalent="y is 2-D: dim -1 is dim 1"),
    Mutant("sigmoid output detached", "y = h.sigmoid()", "y = h.sigmoid().detach()"),
    Mutant("one decoded half detached", "(y[:, 2:] * 2) ** 2", "(y[:, 2:].detach() * 2) ** 2"),
    Mutant("w detached", "x @ w", "x @ w.detach()"),
    Mutant("the layer computed under torch.no_grad()", "    h = torch.relu(x @ w + 0.1)\n",
           "    with torch.no_grad():\n        h = torch.relu(x @ w + 0.1)\n"),
    Mutant("a decoded half read through .data", "(y[:, 2:] * 2) ** 2", "(y.data[:, 2:] * 2) ** 2"),
    Mutant("output re-made a leaf (detach().requires_grad_())", "dim=1)", "dim=1).detach().requires_grad_()"),
    Mutant("a float32 0-dim constant in float64 math", "x @ w + 0.1", "x @ w + torch.tensor(0.1)"),
    Mutant("a float32 constant row in the bias (promotes float16, CPU-only)", "x @ w + 0.1",
           "x @ w + torch.full((4,), 0.1)"),
    Mutant("math done in float32 and cast back", "h = torch.relu(x @ w + 0.1)",
           "h = torch.relu(x.float() @ w.float() + 0.1).to(x.dtype)"),
    Mutant("result cast to float32", "dim=1)", "dim=1).float()"),
    Mutant("bias tensor created on the CPU (no device=)", "x @ w + 0.1",
           "x @ w + torch.full((1, 4), 0.1, dtype=x.dtype)"),
    Mutant("decode weights created with torch.tensor on the CPU",
           "return torch.cat([y[:, :2] * 2 - 0.5, (y[:, 2:] * 2) ** 2], dim=1)",
           "first = torch.tensor([True, True, False, False])\n"
           "    return torch.where(first, y * 2 - 0.5, (y * 2) ** 2)"),
    Mutant("result moved to the CPU", "dim=1)", "dim=1).cpu()",
           equivalent="on a CPU-only grader the inputs are on the CPU, so .cpu() hands back the same tensor (on the "
                      "meta stand-in it fails like any copy out of meta, which a CPU round trip also does); on a GPU "
                      "grader the CUDA cases' device check kills it" if _CPU_ONLY else ""),
    Mutant("the saved sigmoid output written in place afterwards", "y = h.sigmoid()",
           "y = h.sigmoid()\n    y.mul_(1)"),
    Mutant("the decode written into the sigmoid output (the leak kept)",
           "return torch.cat([y[:, :2] * 2 - 0.5, (y[:, 2:] * 2) ** 2], dim=1)",
           "y[:, :2] = y[:, :2] * 2 - 0.5\n    y[:, 2:] = (y[:, 2:] * 2) ** 2\n    return y"),
    # right answers written differently
    Mutant("bias as a 0-dim tensor of the input's dtype, made on the CPU", "x @ w + 0.1",
           "x @ w + torch.tensor(0.1, dtype=x.dtype)",
           equivalent="a 0-dim CPU tensor is allowed next to tensors of any device (CUDA and meta alike) and "
                      "has the input's dtype"),
    Mutant("bias tensor made with device=x.device", "x @ w + 0.1",
           "x @ w + torch.full((1, 4), 0.1, dtype=x.dtype, device=x.device)",
           equivalent="the same values, on the input's device and dtype"),
    Mutant("bias and ReLU in place on h (nothing saved h)", "h = torch.relu(x @ w + 0.1)",
           "h = x @ w\n    h += 0.1\n    h.relu_()",
           equivalent="the matrix product saved x and w, not h; relu_ writes before anything saves h"),
    Mutant("clamp(min=0) for relu, torch.sigmoid for the method", "h = torch.relu(x @ w + 0.1)\n    y = h.sigmoid()",
           "h = torch.clamp(x @ w + 0.1, min=0)\n    y = torch.sigmoid(h)", equivalent="the same functions"),
    Mutant("square written as 4 * y ** 2", "(y[:, 2:] * 2) ** 2", "4 * y[:, 2:] ** 2",
           equivalent="the same function; float rounding differs by far less than the tolerance"),
    Mutant("the sigmoid output cloned and written into", "return torch.cat([y[:, :2] * 2 - 0.5, (y[:, 2:] * 2) ** 2], dim=1)",
           "y = y.clone()\n    y[:, :2] = y[:, :2] * 2 - 0.5\n    y[:, 2:] = (y[:, 2:] * 2) ** 2\n    return y",
           equivalent="the writes go into a copy nothing saved (clone saves nothing)"),
)

MUTANTS = {
    "classify_update": Target(checks=("classify_update_rebind_vs_inplace_tests", "classify_update_new_view_tests",
                                      "classify_update_no_change_tests",
                                      "classify_update_untracked_and_version_tests"),
                              mutants=_CLASSIFY_MUTANTS),
    "fixed_model": Target(checks=("fixed_model_forward_tests", "fixed_model_gradients_tests"),
                          mutants=_MODEL_MUTANTS),
}
