"""Assignment 1's mutants: plausible wrong variants of each reference solution
(``python -m instructor.hidden.mutation 01_version_counter``): each must fail a check, except those
marked equivalent (they must pass)."""
from __future__ import annotations

import torch

from ..mutation import Mutant, Target

# --------------------------------------------------------------------------- the decode, mutated
#: The reference decode, exactly the source notebook's solution cell (tests/test_hidden_a01.py checks).
DECODE_SOURCE = """def fixed_sigmoid_decode(p, grid, anchor_grid, stride):
    s = p.sigmoid()
    centre = (s[..., 0:2] * 2 - 0.5 + grid) * stride
    size = (s[..., 2:4] * 2) ** 2 * anchor_grid
    return torch.cat([centre, size, s[..., 4:]], dim=-1)
"""

_CPU = "" if torch.cuda.is_available() else "on a grader without a GPU the float16 cases do not run"

#: Wrong (and equivalent) variants of the decode: the mutants of ``fixed_sigmoid_decode`` and, those
#: named in :data:`DECODE_FAMILY`, the decodes that ``judge_fix`` is also tested on.
DECODE_MUTANTS: tuple[Mutant, ...] = (
    Mutant("+ 0.5 instead of - 0.5", "- 0.5", "+ 0.5"),
    Mutant("the centre not doubled", "(s[..., 0:2] * 2 - 0.5", "(s[..., 0:2] - 0.5"),
    Mutant("no grid offset", " + grid)", ")"),
    Mutant("the grid's x and y swapped", " + grid)", " + grid.flip(-1))"),
    Mutant("no stride", ") * stride\n", ")\n"),
    Mutant("the stride squared", "* stride\n", "* stride * stride\n"),
    Mutant("a hard-coded stride 8", "* stride\n", "* 8\n"),
    Mutant("the size cubed", "** 2", "** 3"),
    Mutant("squared before doubling", "(s[..., 2:4] * 2) ** 2", "s[..., 2:4] * 2 ** 2"),
    Mutant("no anchors", " * anchor_grid", ""),
    Mutant("anchors rebuilt for three anchors", "* anchor_grid\n",
           "* decode_constants(p.shape[2], p.shape[3], 3, dtype=p.dtype, device=p.device)[1]\n"),
    Mutant("off by one: the classes from column 5", "s[..., 4:]", "s[..., 5:]"),
    Mutant("the objectness column only", "s[..., 4:]", "s[..., 4:5]"),
    Mutant("raw logits for the scores", "s[..., 4:]]", "p[..., 4:]]"),
    Mutant("the whole sigmoid detached", "s = p.sigmoid()", "s = p.sigmoid().detach()"),
    Mutant("the sigmoid of p.data", "s = p.sigmoid()", "s = p.data.sigmoid()"),
    Mutant("the scores detached", "s[..., 4:]]", "s[..., 4:].detach()]"),
    Mutant("the scores through .data", "s[..., 4:]]", "s.data[..., 4:]]"),
    Mutant("the centre from a detached sigmoid", "(s[..., 0:2] * 2", "(s[..., 0:2].detach() * 2"),
    Mutant("the size under torch.no_grad()", "    size = (s[..., 2:4] * 2) ** 2 * anchor_grid\n",
           "    with torch.no_grad():\n        size = (s[..., 2:4] * 2) ** 2 * anchor_grid\n"),
    Mutant("the centre's x and y swapped", "s[..., 0:2]", "s[..., 0:2].flip(-1)"),
    Mutant("size before centre", "[centre, size,", "[size, centre,"),
    Mutant("the sigmoid in half precision", "s = p.sigmoid()", "s = p.half().sigmoid().to(p.dtype)"),
    Mutant("a float32 result", "], dim=-1)", "], dim=-1).float()"),
    Mutant("joined on the wrong dim", "dim=-1", "dim=0"),
    Mutant("writes into the sigmoid after all", "    return torch.cat([centre, size, s[..., 4:]], dim=-1)",
           "    s[..., 0:2] = centre\n    s[..., 2:4] = size\n    return s"),
    Mutant("the sigmoid in place on p", "s = p.sigmoid()", "s = p.sigmoid_()"),
    Mutant("CPU zeros added to the result", "], dim=-1)", "], dim=-1) + torch.zeros(p.shape, dtype=p.dtype)"),
    Mutant("the offset as a CPU tensor", "- 0.5", "- torch.tensor([0.5, 0.5], dtype=p.dtype)"),
    Mutant("the grid rebuilt on the CPU", " + grid)",
           " + decode_constants(p.shape[2], p.shape[3], p.shape[1], dtype=p.dtype)[0])"),
    Mutant("the offset as a float32 tensor (float16 becomes float32)", "- 0.5",
           "- torch.full((2,), 0.5, device=p.device)"),
    Mutant("dim=4", "dim=-1", "dim=4", equivalent="p always has five dims"),
    Mutant("the sigmoid by its formula", "s = p.sigmoid()", "s = 1 / (1 + torch.exp(-p))",
           equivalent="the same function, to rounding, for the logits of the task"),
    Mutant("4 s^2", "(s[..., 2:4] * 2) ** 2", "4 * s[..., 2:4] ** 2", equivalent="(2s)^2 = 4s^2"),
    Mutant(".square()", "(s[..., 2:4] * 2) ** 2", "(s[..., 2:4] * 2).square()", equivalent="the same square"),
    Mutant("2 (s - 0.25)", "s[..., 0:2] * 2 - 0.5", "2 * (s[..., 0:2] - 0.25)", equivalent="the same affine map"),
    Mutant(":2", "s[..., 0:2]", "s[..., :2]", equivalent="the same slice"),
    Mutant("the offset as a 0-dim CPU tensor", "- 0.5", "- torch.tensor(0.5, dtype=p.dtype)",
           equivalent="0-dim CPU tensors mix with tensors of any device, as on a GPU"),
    Mutant("the offset as a 0-dim float32 CPU tensor", "- 0.5", "- torch.tensor(0.5)",
           equivalent="a 0-dim tensor neither moves nor promotes p (float16 stays float16)"),
    Mutant("the scores cloned", "s[..., 4:]]", "s[..., 4:].clone()]", equivalent="a copy of the same values"),
    Mutant("float(stride)", "* stride\n", "* float(stride)\n", equivalent="stride is a float"),
    Mutant("zeros made on p's device", "], dim=-1)", "], dim=-1) + torch.zeros_like(p)",
           equivalent="zeros_like keeps p's device and dtype"),
)


# --------------------------------------------------------------------------- the mutants of each graded function

PREDICTED = [0, 1, 2, 4, 4, 5, 5, 6, 7, 7, 0, 2]


def _one_off(i: int, delta: int) -> Mutant:
    wrong = list(PREDICTED)
    wrong[i] += delta
    return Mutant(f"line {i + 1} off by {delta:+d}", f"return {PREDICTED}", f"return {wrong}")


_READ_RE = 'r"\\[([\\w.]+) \\[([\\d, ]*)\\]\\](?:, which is output \\d+ of ([^,]+),)?"'

MUTANTS = {
    "reproduce_sigmoid_error": Target(checks=("reproduce_sigmoid_error_tests",), mutants=(
        Mutant("raises instead of returning", "        return err", "        raise err"),
        Mutant("returns the message", "        return err", "        return str(err)"),
        Mutant("a new RuntimeError of the same text", "        return err", "        return RuntimeError(str(err))"),
        Mutant("drops the traceback", "        return err", "        return err.with_traceback(None)"),
        Mutant("catches ValueError", "except RuntimeError as err", "except ValueError as err"),
        Mutant("four outputs (not detector-shaped)", "torch.randn(2, 3, 8, 8, 7,", "torch.randn(2, 3, 8, 8, 4,"),
        Mutant("four dims", "torch.randn(2, 3, 8, 8, 7,", "torch.randn(3, 8, 8, 7,"),
        Mutant("p needs no grad", ", requires_grad=True", ""),
        Mutant("backward of a detached result", "y.sum().backward()", "y.detach().sum().backward()"),
        Mutant("backward of a non-scalar", "y.sum().backward()", "y.backward()"),
        Mutant("the decode under no_grad", "    y = broken_decode(p, GRID, ANCHOR_GRID, STRIDE)\n",
               "    with torch.no_grad():\n        y = broken_decode(p, GRID, ANCHOR_GRID, STRIDE)\n"),
        Mutant("a third write", "    y = broken_decode(p, GRID, ANCHOR_GRID, STRIDE)\n",
               "    y = broken_decode(p, GRID, ANCHOR_GRID, STRIDE)\n    y[..., 4:5] = y[..., 4:5] * 1\n"),
        Mutant("one write only", "    y = broken_decode(p, GRID, ANCHOR_GRID, STRIDE)\n",
               "    y = p.sigmoid()\n    y[..., 0:2] = (y[..., 0:2] * 2 - 0.5 + GRID) * STRIDE\n"),
        Mutant("the clone fix (no error)", "broken_decode(p,", "fix_clone(p,"),
        Mutant("writes through .data (no error)", "    y = broken_decode(p, GRID, ANCHOR_GRID, STRIDE)\n",
               "    y = p.sigmoid()\n    y.data[..., 0:2] = y.data[..., 0:2] * 2\n    y.data[..., 2:4] = y.data[..., 2:4] * 2\n"),
        Mutant("tanh instead of sigmoid", "    y = broken_decode(p, GRID, ANCHOR_GRID, STRIDE)\n",
               "    y = p.tanh()\n    y[..., 0:2] = y[..., 0:2] * 2\n    y[..., 2:4] = y[..., 2:4] * 2\n"),
        Mutant("pow on the slices (saves a view)", "    y = broken_decode(p, GRID, ANCHOR_GRID, STRIDE)\n",
               "    y = p.sigmoid()\n    y[..., 0:2] = y[..., 0:2] ** 2\n    y[..., 2:4] = y[..., 2:4] ** 2\n"),
        Mutant("constants of another grid", "torch.randn(2, 3, 8, 8, 7,", "torch.randn(2, 3, 4, 4, 7,"),
        Mutant("a cached sigmoid output (the second call writes into it again)",
               "    y = broken_decode(p, GRID, ANCHOR_GRID, STRIDE)\n",
               "    y = reproduce_sigmoid_error.__dict__.setdefault('y', p.sigmoid())\n"
               "    y[..., 0:2] = (y[..., 0:2] * 2 - 0.5 + GRID) * STRIDE\n"
               "    y[..., 2:4] = (y[..., 2:4] * 2) ** 2 * ANCHOR_GRID\n"),
        Mutant("the first call's error kept and returned again", "        return err\n",
               "        return reproduce_sigmoid_error.__dict__.setdefault('err', err)\n"),
        Mutant("catches Exception", "except RuntimeError as err", "except Exception as err",
               equivalent="the error is a RuntimeError"),
        Mutant("a non-leaf p", "broken_decode(p,", "broken_decode(p * 1,",
               equivalent="the sigmoid's output is written either way"),
        Mutant("torch.autograd.grad", "y.sum().backward()", "torch.autograd.grad(y.sum(), p)",
               equivalent="the same engine raises the same error"),
        Mutant("float64", "requires_grad=True)", "requires_grad=True, dtype=torch.float64)",
               equivalent="any float dtype is right"),
        Mutant("another detector shape", "torch.randn(2, 3, 8, 8, 7,", "torch.randn(1, 3, 8, 8, 85,",
               equivalent="other detector shapes are right"),
        Mutant("backward through the scores only", "y.sum().backward()", "y[..., 4:].sum().backward()",
               equivalent="the gradient still reaches the sigmoid"),
    )),
    "predict_versions": Target(checks=("predict_versions_tests",), mutants=(
        *(_one_off(i, 1) for i in range(len(PREDICTED))),
        _one_off(3, -1),   # a[1] += 1 counted as one write
        _one_off(8, -1),   # unsqueeze_ counted as no write (no number changes)
        _one_off(10, 7),   # a = a * 1 thought to keep a's count
        Mutant("one number short", f"return {PREDICTED}", f"return {PREDICTED[:-1]}"),
        Mutant("one number too many", f"return {PREDICTED}", f"return {PREDICTED + [2]}"),
        Mutant("strings", f"return {PREDICTED}", f"return [str(v) for v in {PREDICTED}]"),
        Mutant("floats", f"return {PREDICTED}", f"return [float(v) for v in {PREDICTED}]"),
        Mutant("a bool for a 1", f"return {PREDICTED}", f"return {[0, True] + PREDICTED[2:]}"),
        Mutant("reversed", f"return {PREDICTED}", f"return {PREDICTED[::-1]}"),
        Mutant("a dict", f"return {PREDICTED}", f"return dict(enumerate({PREDICTED}))"),
        Mutant("a tensor", f"return {PREDICTED}", f"return torch.tensor({PREDICTED})"),
        Mutant("a tuple", f"return {PREDICTED}", f"return tuple({PREDICTED})",
               equivalent="a list or a tuple is asked for"),
        Mutant("runs the program", f"return {PREDICTED}",
               "from autograder.saved_tensors import VERSION_PROGRAM\n    env, out = {'torch': torch}, []\n"
               "    for st, w in VERSION_PROGRAM:\n        exec(st, env)\n        out.append(int(eval(w, env)._version))\n"
               "    return out", equivalent="the program's own versions are the answer"),
    )),
    "read_error_message": Target(checks=("read_error_message_tests",), mutants=(
        Mutant("no dots in the type", r"\[([\w.]+) \[", r"\[(\w+) \["),
        Mutant("torch.* types only", r"\[([\w.]+) \[", r"\[(torch\.[\w.]+) \["),
        Mutant("no 0-dim shape", r"\[([\d, ]*)\]", r"\[([\d, ]+)\]"),
        Mutant("no spaces in the shape", r"\[([\d, ]*)\]", r"\[([\d,]*)\]"),
        Mutant("one-digit versions", r"is at version (\d+); expected version (\d+)",
               r"is at version (\d); expected version (\d)"),
        Mutant("node names are words", r"of ([^,]+),)?", r"of (\w+),)?"),
        Mutant("the node part required", r"of ([^,]+),)?", r"of ([^,]+),)"),
        Mutant("output 0 only", r"which is output \d+ of", r"which is output 0 of"),
        Mutant("'' instead of None for no node", '"node": m.group(3)', '"node": m.group(3) or ""'),
        Mutant("node stripped (None breaks)", '"node": m.group(3)', '"node": m.group(3).strip()'),
        Mutant("the Backward0 suffix dropped", '"node": m.group(3)',
               '"node": m.group(3) and m.group(3).replace("Backward0", "")'),
        Mutant("version_now as a string", '"version_now": int(m.group(4))', '"version_now": m.group(4)'),
        Mutant("versions swapped", '"version_now": int(m.group(4)), "version_saved": int(m.group(5))',
               '"version_now": int(m.group(5)), "version_saved": int(m.group(4))'),
        Mutant("the saved version is always 0", '"version_saved": int(m.group(5))', '"version_saved": 0'),
        Mutant("shape as a list", "shape = tuple(", "shape = list("),
        Mutant("shape as strings", "tuple(int(s) for s", "tuple(s.strip() for s"),
        Mutant("no filter for the empty shape", ' if s.strip())', ')'),
        Mutant("at most four dims", 'if s.strip())\n', 'if s.strip())[:4]\n'),
        Mutant("only the exception's args", "str(err))", "err.args[0])"),
        Mutant("re.match", "re.search(", "re.match("),
        Mutant("the last part of the type", '"tensor_type": m.group(1)', '"tensor_type": m.group(1).split(".")[-1]'),
        Mutant("the type without 'torch.'", '"tensor_type": m.group(1)', '"tensor_type": m.group(1).replace("torch.", "")'),
        Mutant("an extra key", '"version_saved": int(m.group(5))}', '"version_saved": int(m.group(5)), "text": str(err)}'),
        Mutant("cached by the exception type", "def read_error_message(err):\n",
               "def read_error_message(err, _seen={}):\n    return _seen.setdefault(type(err), _read(err))\n\n"
               "def _read(err):\n"),
        Mutant("split on ', '", 'm.group(2).split(",")', 'm.group(2).split(", ")',
               equivalent="int() ignores the spaces either way"),
        Mutant("one space before 'is at'", r'r"\s*is at version', r'r" is at version',
               equivalent="PyTorch writes exactly one space there"),
        Mutant("the text before ' Hint:'", "str(err))", 'str(err).split(" Hint:")[0])',
               equivalent="the fields are all before the hint"),
    )),
    "saved_by": Target(checks=("saved_by_tests",), mutants=(
        Mutant("a sorted list", "    return found", "    return sorted(found)"),
        Mutant("output only", '("input", "output")', '("output",)'),
        Mutant("input only", '("input", "output")', '("input",)'),
        Mutant("roles swapped", '(x if role == "input" else y)', '(y if role == "input" else x)'),
        Mutant("writes through .data (no version bump)", "(x if role == \"input\" else y).mul_(1.0)",
               "(x if role == \"input\" else y).data.mul_(1.0)"),
        Mutant("backward of a non-scalar", "y.sum().backward()", "y.backward()"),
        Mutant("None for an empty set", "    return found", "    return found or None"),
        Mutant("stops at the first role found", "found.add(role)", "found.add(role)\n                break"),
        Mutant("cached by the op's type", "    return found", "    return saved_by.__dict__.setdefault(type(op), found)"),
        Mutant("cached by the op's name", "    return found",
               "    return saved_by.__dict__.setdefault(getattr(op, '__name__', ''), found)"),
        Mutant("any RuntimeError counts, non-scalar backward", "y.sum().backward()\n        except RuntimeError as err:\n"
               "            if \"modified by an inplace operation\" in str(err):\n                found.add(role)",
               "y.backward()\n        except RuntimeError as err:\n                found.add(role)"),
        Mutant("attribute names instead of the experiment", "    found = set()\n",
               "    y = op((torch.rand(5, dtype=torch.float64) + 0.5).requires_grad_().clone())\n"
               "    n = dir(y.grad_fn)\n"
               "    return {'output'} if '_saved_result' in n else ({'input'} if '_saved_self' in n else set())\n"
               "    found = set()\n"),
        Mutant("the names swapped", "found.add(role)", "found.add({'input': 'output', 'output': 'input'}[role])"),
        Mutant("a tuple", "    return found", "    return tuple(found)"),
        Mutant("the last node's saved tensors only", "    found = set()\n",
               "    x = (torch.rand(5, dtype=torch.float64) + 0.5).requires_grad_().clone()\n    y = op(x)\n"
               "    saved = [getattr(y.grad_fn, n) for n in dir(y.grad_fn) if n.startswith('_saved_')]\n"
               "    saved = [v for v in saved if isinstance(v, torch.Tensor)]\n"
               "    return {r for r, t in (('input', x), ('output', y)) if any(v.data_ptr() == t.data_ptr() for v in saved)}\n"
               "    found = set()\n"),
        Mutant("the write before the op", "        y = op(x)\n        with torch.no_grad():\n            (x if role == \"input\" else y).mul_(1.0)\n",
               "        with torch.no_grad():\n            x.mul_(1.0)\n        y = op(x)\n"),
        Mutant("both written in each round", '(x if role == "input" else y).mul_(1.0)', "x.mul_(1.0)\n            y.mul_(1.0)"),
        Mutant("the message test negated", '"modified by an inplace operation" in str(err)',
               '"modified by an inplace operation" not in str(err)'),
        Mutant("found reset in each round", "    for role in (\"input\", \"output\"):\n",
               "    for role in (\"input\", \"output\"):\n        found = set()\n"),
        Mutant("returns after the first round", "                found.add(role)\n",
               "                found.add(role)\n        return found\n"),
        Mutant("the op on a detached input", "        y = op(x)\n", "        y = op(x.detach())\n"),
        Mutant("the op run under no_grad", "        y = op(x)\n", "        with torch.no_grad():\n            y = op(x)\n"),
        Mutant("set of the first letters", "    return found", "    return {r[0] for r in found}"),
        Mutant("the write under grad mode", "        with torch.no_grad():\n            (x if", "        if True:\n            (x if",
               equivalent="a non-leaf may be written with grad on; the bump is the same"),
        Mutant("the experiment in float32", "dtype=torch.float64", "dtype=torch.float32",
               equivalent="the version check does not depend on the dtype"),
        Mutant("a frozenset", "    return found", "    return frozenset(found)",
               equivalent="the visible test accepts a frozenset"),
        Mutant("add_(0.0)", ".mul_(1.0)", ".add_(0.0)", equivalent="any in-place write bumps the version"),
        Mutant("writes through detach()", '(x if role == "input" else y).mul_(1.0)',
               '(x if role == "input" else y).detach().mul_(1.0)',
               equivalent="detach() shares the version counter"),
        Mutant("any RuntimeError counts", "            if \"modified by an inplace operation\" in str(err):\n"
               "                found.add(role)", "            found.add(role)",
               equivalent="backward of these ops fails for no other reason"),
        Mutant("'inplace' only", '"modified by an inplace operation"', '"inplace"', equivalent="the same message"),
        Mutant("mean instead of sum", "y.sum().backward()", "y.mean().backward()", equivalent="any scalar loss"),
    )),
    "fixed_sigmoid_decode": Target(checks=("fixed_sigmoid_decode_tests",), mutants=DECODE_MUTANTS),
    "judge_fix": Target(checks=("judge_fix_tests",), mutants=(
        Mutant("catches RuntimeError only", "except Exception:", "except RuntimeError:"),
        Mutant("catches RuntimeError and ValueError", "except Exception:", "except (RuntimeError, ValueError):"),
        Mutant("no requires_grad check", "        if not out.requires_grad:\n            return \"no_gradient\"\n", ""),
        Mutant("no p.grad check", "    if leaf.grad is None:\n        return \"no_gradient\"\n", ""),
        Mutant("p.grad None called wrong", "    if leaf.grad is None:\n        return \"no_gradient\"",
               "    if leaf.grad is None:\n        return \"wrong_gradient\""),
        Mutant("grad_fn instead of requires_grad", "if not out.requires_grad:", "if out.grad_fn is None:",
               equivalent="they differ only for a decode returning a leaf that needs grad (p itself), which the "
                          "hidden decodes leave out: the task does not settle it, and a correct style checks grad_fn"),
        Mutant("no gradient called an error", "            return \"no_gradient\"\n        out.backward",
               "            return \"error\"\n        out.backward"),
        Mutant("an error called no gradient", "        return \"error\"", "        return \"no_gradient\""),
        Mutant("exact comparison", "torch.allclose(leaf.grad, ref_leaf.grad)", "torch.equal(leaf.grad, ref_leaf.grad)"),
        Mutant("a loose rtol", "torch.allclose(leaf.grad, ref_leaf.grad)",
               "torch.allclose(leaf.grad, ref_leaf.grad, rtol=1e-2)"),
        Mutant("verdicts swapped", '"correct" if torch.allclose', '"wrong_gradient" if torch.allclose'),
        Mutant("upstream weights all ones", "weights = torch.randn_like(p)", "weights = torch.ones_like(p)"),
        Mutant("the reference without the weights", "s[..., 4:]], -1).backward(weights)", "s[..., 4:]], -1).sum().backward()"),
        Mutant("the candidate without the weights", "out.backward(weights)", "out.sum().backward()"),
        Mutant("the reference leaf reused", "    leaf = p.clone().requires_grad_()\n", "    leaf = ref_leaf\n"),
        Mutant("a detached input", "decode(leaf, *consts)", "decode(leaf.detach(), *consts)"),
        Mutant("backward outside the try", "        out.backward(weights)\n    except Exception:\n        return \"error\"\n",
               "    except Exception:\n        return \"error\"\n    out.backward(weights)\n"),
        Mutant("five outputs instead of seven", "torch.randn(2, 3, 4, 5, 7,", "torch.randn(2, 3, 4, 5, 5,"),
        Mutant("the reference cubes the size", "s[..., 2:4] * 2) ** 2 * consts[1]", "s[..., 2:4] * 2) ** 3 * consts[1]"),
        Mutant("cached by the decode's name", "def judge_fix(decode):\n",
               "def judge_fix(decode, _seen={}):\n    if decode.__name__ not in _seen:\n"
               "        _seen[decode.__name__] = _judge_fix(decode)\n    return _seen[decode.__name__]\n\n"
               "def _judge_fix(decode):\n"),
        Mutant("the reference's scores detached", "               s[..., 4:]], -1)", "               s[..., 4:].detach()], -1)"),
        Mutant("the candidate gets float32", "decode(leaf, *consts)", "decode(leaf.float(), *consts)"),
        Mutant("catches BaseException", "except Exception:", "except BaseException:",
               equivalent="no candidate raises outside Exception"),
        Mutant("positive upstream weights", "weights = torch.randn_like(p)", "weights = torch.rand_like(p)",
               equivalent="any distinct random weights tell the candidates apart"),
        Mutant("allclose the other way round", "torch.allclose(leaf.grad, ref_leaf.grad)",
               "torch.allclose(ref_leaf.grad, leaf.grad)",
               equivalent="gradients differ by rounding or by far more than the tolerance"),
        Mutant("a fixed seed", "    p = torch.randn(", "    torch.manual_seed(3)\n    p = torch.randn(",
               equivalent="every outcome holds for any input"),
    )),
}
