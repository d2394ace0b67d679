"""Assignment 2's mutants: plausible wrong variants of each reference solution
(``python -m instructor.hidden.mutation 02_names_and_storage``): each must fail a check, except those
marked equivalent (they must pass)."""
from __future__ import annotations

import torch

from ..mutation import Mutant, Target

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
