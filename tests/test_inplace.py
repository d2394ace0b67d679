"""Tests for autograder.inplace: the locator names the lines that broke autograd.

Expected line numbers are never hard-coded: lines carry ``# @tag`` markers and
``_line(path, tag)`` finds them.  Node names are not assumed either (PyTorch
prints ``Sigmoid`` or ``SigmoidBackward0`` depending on the version).
"""
from __future__ import annotations

import importlib.util
import linecache
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from autograder.inplace import (
    InplaceOnSavedError, SavedTensor, assert_no_inplace_on_saved, explain, locate_inplace,
    measure_overhead, parse_version_error, run_located,
)
from autograder.inplace import main as inplace_main

ROOT = Path(__file__).resolve().parents[1]
FIX = Path(__file__).resolve().parent / "fixtures" / "inplace"
HERE = os.path.abspath(__file__)


def _line(path, tag: str) -> int:
    """Line number of the line ending in ``# @tag``."""
    for number, text in enumerate(Path(path).read_text().splitlines(), 1):
        if text.rstrip().endswith("# @" + tag):
            return number
    raise LookupError(f"no '# @{tag}' in {path}")


def _load(name: str):
    """Import a fixture module by path (unique name: no sys.path games)."""
    spec = importlib.util.spec_from_file_location(f"_inplace_fixture_{name}", FIX / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


seed = _load("seed_script")
clean = _load("clean_script")
mods = _load("inplace_modules")
SEED = str(FIX / "seed_script.py")
MODS = str(FIX / "inplace_modules.py")


def _located_error(fn):
    """Run ``fn`` under a locator; it must still raise PyTorch's version error."""
    with pytest.raises(RuntimeError, match="modified by an inplace operation") as info:
        with locate_inplace() as loc:
            fn()
    return loc, info.value


def _the_save(loc) -> SavedTensor:
    assert len(loc.broken) == 1, loc.broken
    return loc.broken[0]


def _writes(record: SavedTensor):
    return [(w.site.lineno, w.version_before, w.version_after) for w in record.writes]


# ------------------------------------------------------------------ the seed bug

def test_seed_reports_sigmoid_line_and_both_writes():
    loc, err = _located_error(seed.run)
    record = _the_save(loc)
    assert record.op == "sigmoid" and record.role == "result"
    assert (record.site.filename, record.site.lineno) == (SEED, _line(SEED, "save"))
    assert record.shape == (1, 3, 4, 4, 7) and record.dtype == torch.float32
    assert _writes(record) == [(_line(SEED, "write1"), 0, 1), (_line(SEED, "write2"), 1, 2)]
    assert all(w.site.filename == SEED and w.op == "copy_" for w in record.writes)

    report = err.inplace_report
    assert report in err.__notes__
    rel = os.path.relpath(SEED)
    assert (f"saved at version 0 by sigmoid at {rel}:{_line(SEED, 'save')}; written at "
            f"{rel}:{_line(SEED, 'write1')} (0 → 1) and {rel}:{_line(SEED, 'write2')} (1 → 2)"
            ) in report
    assert "y[..., 0:2] = (y[..., 0:2] * 2 - 0.5 + grid) * stride" in report
    assert "float32" in report and "[1, 3, 4, 4, 7]" in report and "cpu" in report
    assert "site-packages" not in report and "torch/" not in report


def test_error_is_not_silenced_and_message_unchanged():
    with pytest.raises(RuntimeError) as plain:
        seed.run()
    _, located = _located_error(seed.run)
    assert str(located) == str(plain.value)
    assert parse_version_error(located) == parse_version_error(plain.value)


# --------------------------------------------------------- every in-place form

def _exp(x):
    y = x.exp()  # @exp_save
    y.add_(1)  # @exp_write
    return y


def _tanh(x):
    y = x.tanh()  # @tanh_save
    y *= 2  # @tanh_write
    return y


def _relu_module(x):
    y = x.sigmoid()  # @relum_save
    y = nn.ReLU(inplace=True)(y)  # @relum_write
    return y


def _relu_functional(x):
    y = x.sigmoid()  # @reluf_save
    F.relu_(y)  # @reluf_write
    return y


def _mul_input(x):
    a = x + 1
    b = a * x  # @mul_save
    a += 1  # @mul_write
    return b


def _view_of_view(x):
    y = x.sigmoid()  # @vv_save
    v = y[0]
    vv = v[:, 1]
    vv.zero_()  # @vv_write
    return y


def _out_kwarg(x):
    y = x.sigmoid()  # @out_save
    with torch.no_grad():
        torch.mul(x.detach(), 2, out=y)  # @out_write
    return y


def _index_put(x):
    y = x.sigmoid()  # @ip_save
    y.index_put_((torch.tensor([0, 2]),), torch.zeros(2, *x.shape[1:]))  # @ip_write
    return y


@pytest.mark.parametrize("fn, tag, saved_by, write_op", [
    (_exp, "exp", "exp", "add_"),
    (_tanh, "tanh", "tanh", "mul_"),
    (_relu_module, "relum", "sigmoid", "relu_"),
    (_relu_functional, "reluf", "sigmoid", "relu_"),
    (_mul_input, "mul", "mul", "add_"),
    (_view_of_view, "vv", "sigmoid", "zero_"),
    (_out_kwarg, "out", "sigmoid", "mul (out=)"),
    (_index_put, "ip", "sigmoid", "index_put_"),
], ids=lambda v: v if isinstance(v, str) else None)
def test_each_inplace_form_is_located(fn, tag, saved_by, write_op):
    x = torch.randn(3, 4, 5, requires_grad=True)
    loc, err = _located_error(lambda: fn(x).sum().backward())
    record = _the_save(loc)
    assert record.op == saved_by
    assert (record.site.filename, record.site.lineno) == (HERE, _line(HERE, f"{tag}_save"))
    assert _writes(record) == [(_line(HERE, f"{tag}_write"), 0, 1)]
    assert record.writes[0].op == write_op and record.writes[0].site.filename == HERE
    assert f"test_inplace.py:{_line(HERE, f'{tag}_write')} (0 → 1)" in err.inplace_report


def test_write_inside_module_from_another_file():
    """``y[..., 0:2] *= s`` is two writes on one line: mul_ on the view, then copy_ back."""
    x = torch.randn(1, 3, 4, 4, 7, requires_grad=True)
    head = mods.Decode()
    loc, err = _located_error(lambda: head(x).sum().backward())
    record = _the_save(loc)
    assert (record.site.filename, record.site.lineno) == (MODS, _line(MODS, "mod_save"))
    line = _line(MODS, "mod_write")
    assert _writes(record) == [(line, 0, 1), (line, 1, 2)]
    assert [w.op for w in record.writes] == ["mul_", "copy_"]
    assert all(w.caller.filename == HERE for w in record.writes)  # who called the module
    assert "y[..., 0:2] *= self.stride" in err.inplace_report


def test_leaf_rule_is_reported_as_such():
    w = torch.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable") as info:
        with locate_inplace():
            w.add_(1)  # @leaf_write
    report = info.value.inplace_report
    assert "leaf" in report and "requires grad" in report
    assert f"test_inplace.py:{_line(HERE, 'leaf_write')}" in report and "w.add_(1)" in report
    assert "→" not in report and "saved at version" not in report


def test_view_rule_is_reported_as_such():
    x = torch.randn(2, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match="is a view") as info:
        with locate_inplace():
            first, _ = x.clone().unbind(0)
            first.mul_(2)  # @view_write
    report = info.value.inplace_report
    assert "view rule" in report and f"test_inplace.py:{_line(HERE, 'view_write')}" in report


class _Twice(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a * 2  # @fn_save

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return grad * a


def test_custom_function_saves_are_watched():
    x = torch.randn(3, requires_grad=True)

    def bad():
        a = x.exp()
        out = _Twice.apply(a)  # @fn_call
        a.add_(1)  # @fn_write
        out.sum().backward()

    loc, err = _located_error(bad)
    record, also = sorted(loc.broken, key=lambda r: r.op != "_Twice.apply")  # exp saved `a` too
    assert also.op == "exp" and _writes(also) == _writes(record)
    assert record.op == "_Twice.apply" and record.site.lineno == _line(HERE, "fn_save")
    assert record.caller.lineno == _line(HERE, "fn_call")
    assert _writes(record) == [(_line(HERE, "fn_write"), 0, 1)]
    assert "saved at version 0 by _Twice.apply" in err.inplace_report
    assert "also broke what exp" in err.inplace_report


# ------------------------------------------------------------ no false reports

def _clone_then_write(x):
    y = x.sigmoid().clone()
    y[..., 0:2] = y[..., 0:2] * 2 - 0.5
    return y


def _write_unsaved(x):
    y = x + 1  # add saves nothing
    y += 1
    return y * 3


def _buffers_under_no_grad(x):
    return mods.Counter()(x)


def _batchnorm_train(x):
    return nn.BatchNorm1d(3).train()(x.reshape(4, 3, 5)).relu_()


def _clean_decode(x):
    return clean.decode(x, torch.ones(1, 3, 4, 4, 2), torch.ones(1, 3, 4, 4, 2))


@pytest.mark.parametrize("fn", [_clean_decode, _clone_then_write, _write_unsaved,
                                _buffers_under_no_grad, _batchnorm_train])
def test_correct_code_is_not_reported(fn):
    x = torch.randn(1, 3, 4, 4, 7, requires_grad=True) if fn is _clean_decode else \
        torch.randn(4, 5, 3, requires_grad=True)
    with locate_inplace() as loc:
        fn(x).sum().backward()
    assert loc.broken == []
    assert isinstance(assert_no_inplace_on_saved(fn, x), torch.Tensor)


def _model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(inplace=True),
                         nn.Conv2d(8, 7, 3, padding=1))


def _grads(located: bool):
    model, x = _model(), torch.randn(1, 3, 4, 4, requires_grad=True, generator=torch.Generator().manual_seed(1))

    def step():
        out = model(x).view(1, 1, 7, 4, 4).permute(0, 1, 3, 4, 2)
        _clean_decode(out.expand(1, 3, 4, 4, 7)).pow(2).sum().backward()

    run_located(step) if located else step()
    return [x.grad] + [p.grad for p in model.parameters()] + list(model.buffers())


def test_gradients_identical_with_and_without_locator():
    plain, located = _grads(False), _grads(True)
    assert len(plain) == len(located)
    assert all(torch.equal(a, b) for a, b in zip(plain, located))


# -------------------------------------------------- assert_no_inplace_on_saved

def test_assert_helper_fails_on_forward_only():
    x, grid, anchor = seed.inputs()
    with pytest.raises(InplaceOnSavedError) as info:
        assert_no_inplace_on_saved(seed.decode, x, grid, anchor)
    assert isinstance(info.value, AssertionError)
    text = str(info.value)
    for tag in ("save", "write1", "write2"):
        assert f"seed_script.py:{_line(SEED, tag)}" in text
    assert "(0 → 1)" in text and "(1 → 2)" in text
    assert [r.op for r in info.value.saved] == ["sigmoid"]


def test_assert_helper_returns_result_and_ignores_saves_backward_does_not_need():
    def unneeded(x):
        y = x.sigmoid()  # its node is not part of the result's graph
        z = x * 2
        y.add_(1)
        return z

    x = torch.randn(3, requires_grad=True)
    out = assert_no_inplace_on_saved(unneeded, x)
    assert torch.equal(out, x * 2)
    out.sum().backward()  # PyTorch agrees: backward works


def test_notebook_cell_lines_are_shown_with_their_source():
    cell = "/tmp/ipykernel_123/456.py"
    src = "y = x.sigmoid()\ny[:, 0:2] = y[:, 0:2] * 2\n"
    linecache.cache[cell] = (len(src), None, src.splitlines(True), cell)  # what IPython does
    namespace = {"x": torch.randn(2, 3, requires_grad=True)}
    try:
        with pytest.raises(InplaceOnSavedError) as info:
            assert_no_inplace_on_saved(lambda: exec(compile(src, cell, "exec"), namespace)
                                       or namespace["y"])
        text = str(info.value)
    finally:
        linecache.cache.pop(cell, None)
    # no IPython here to give the cell's number: the cell is named by its first line
    assert 'saved at version 0 by sigmoid at cell "y = x.sigmoid()", line 1; ' \
           'written at cell "y = x.sigmoid()", line 2 (0 → 1)' in text, text
    assert "y[:, 0:2] = y[:, 0:2] * 2" in text


# ----------------------------------------------------------------- parsing

@pytest.mark.parametrize("message, expected", [
    ("one of the variables needed for gradient computation has been modified by an inplace "
     "operation: [torch.FloatTensor [1, 3, 8, 8, 85]], which is output 0 of SigmoidBackward0, "
     "is at version 2; expected version 0 instead. Hint: ...",
     ("float32", (1, 3, 8, 8, 85), "cpu", "SigmoidBackward0", "sigmoid", 2, 0)),
    ("... modified by an inplace operation: [torch.cuda.HalfTensor [2, 3]], which is output 1 "
     "of NativeBatchNormBackward0, is at version 5; expected version 4 instead.",
     ("float16", (2, 3), "cuda", "NativeBatchNormBackward0", "native_batch_norm", 5, 4)),
    ("... modified by an inplace operation: [torch.FloatTensor [1, 3, 8, 8, 85]], which is "
     "output 0 of Sigmoid, is at version 2; expected version 0 instead.",
     ("float32", (1, 3, 8, 8, 85), "cpu", "Sigmoid", "sigmoid", 2, 0)),
    ("... modified by an inplace operation: [torch.DoubleTensor []] is at version 1; "
     "expected version 0 instead.", ("float64", (), "cpu", None, None, 1, 0)),
])
def test_parse_version_error(message, expected):
    p = parse_version_error(RuntimeError(message))
    assert (p.dtype, p.shape, p.device, p.node, p.op, p.version_now, p.version_saved) == expected
    assert parse_version_error("some other error") is None


def test_explain_without_locator_uses_the_message():
    with pytest.raises(RuntimeError) as info:
        seed.run()
    text = explain(info.value)
    assert "[1, 3, 4, 4, 7]" in text and "version 0" in text and "locate_inplace" in text
    assert explain(ValueError("unrelated")) is None


# ------------------------------------------------------------------------ CLI

@pytest.fixture(scope="module", autouse=True)
def cli_procs():
    """Start the CLI subprocesses with the module's first test, so their torch
    import overlaps the in-process tests; the CLI tests collect them at the end."""
    scripts = {"seed": [SEED], "exit": [str(FIX / "exit_script.py"), "3"]}
    procs = {name: subprocess.Popen([sys.executable, "-m", "autograder.inplace", *args],
                                    cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True, encoding="utf-8")
             for name, args in scripts.items()}
    yield procs
    for proc in procs.values():
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def _finish(proc):
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out, err


def test_cli_reports_seed_bug(cli_procs):
    code, out, err = _finish(cli_procs["seed"])
    assert code != 0
    assert "RuntimeError: one of the variables needed" in err
    rel = os.path.relpath(SEED, ROOT)
    for tag in ("save", "write1", "write2"):
        assert f"{rel}:{_line(SEED, tag)}" in err
    assert "(0 → 1)" in err and "(1 → 2)" in err
    assert "backward succeeded" not in out


def test_cli_preserves_exit_code_argv_and_main(cli_procs):
    code, out, err = _finish(cli_procs["exit"])
    assert code == 3, err
    assert "argv: ['3']" in out


def test_cli_clean_script_exits_zero(monkeypatch, capsys):
    """In-process (one torch import less): main() returns the exit status."""
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    monkeypatch.setattr(sys, "path", list(sys.path))
    assert inplace_main([str(FIX / "clean_script.py")]) == 0
    assert "backward succeeded" in capsys.readouterr().out


# --------------------------------------------------------------- cost, CUDA

def test_overhead_is_bounded():
    ratio = measure_overhead(repeats=5)
    print(f"\nlocator overhead (fwd+bwd, small conv model, 1x3x64x64): {ratio:.2f}x")
    assert ratio < 10


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_tensors():
    x, grid, anchor = (t.cuda() for t in seed.inputs())
    x = x.detach().requires_grad_()
    loc, err = _located_error(lambda: seed.decode(x, grid, anchor).sum().backward())
    assert _writes(_the_save(loc)) == [(_line(SEED, "write1"), 0, 1), (_line(SEED, "write2"), 1, 2)]
    assert "cuda" in err.inplace_report


def test_why_backward_fails_names_the_lines_and_leaves_inputs_alone():
    from autograder.inplace import why_backward_fails

    def buggy(p):
        y = p.sigmoid()
        y[..., 0:2] = y[..., 0:2] * 2  # write 1
        y[..., 2:4] = (y[..., 2:4] * 2) ** 2  # write 2
        return y

    def clean(p):
        y = p.sigmoid()
        return torch.cat([y[..., 0:2] * 2, y[..., 2:4] ** 2, y[..., 4:]], -1)

    p = torch.randn(2, 6, requires_grad=True)
    report = why_backward_fails(buggy, p)
    assert report is not None and "(0 → 1)" in report and "(1 → 2)" in report
    assert "# write 1" in report and "# write 2" in report
    assert p.grad is None and p._version == 0, "the caller's tensor must not be touched"
    assert why_backward_fails(clean, p) is None


# ------------------------------------------------------------ in the wild (assignment 4)

def _wild_report(fn):
    from autograder.inplace import locate_inplace

    with pytest.raises(RuntimeError) as caught:
        with locate_inplace():
            fn()
    return caught.value.inplace_report


def test_report_names_the_optimizer_step_of_a_gan_loop():
    from torch import nn

    torch.manual_seed(0)
    G = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 2))
    D = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 1))
    opt_d = torch.optim.Adam(D.parameters(), lr=0.1)

    def wrong_order():
        d_out = D(G(torch.randn(4, 2)))
        d_out.mean().backward(retain_graph=True)
        opt_d.step()                                   # writes D's weights, which the graph still needs
        (-d_out.mean()).backward()

    report = _wild_report(wrong_order)
    assert "opt_d.step()" in report and "optimizer's Adam.step()" in report, report
    assert "call the optimizer's step() only after every backward" in report, report


def test_report_names_an_inplace_layer_after_a_sigmoid():
    from torch import nn

    m = nn.Sequential(nn.Linear(3, 3), nn.Sigmoid(), nn.ReLU(inplace=True))
    report = _wild_report(lambda: m(torch.randn(4, 3, requires_grad=True)).sum().backward())
    assert "saved at version 0 by sigmoid" in report and "ReLU(inplace=True)" in report, report
    assert "inplace=False" in report, report


def test_report_names_a_custom_function_that_writes_into_its_input():
    class Doubles(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)                                  # no ctx.mark_dirty, and x is a saved sigmoid output
            return x

        @staticmethod
        def backward(ctx, g):
            return 2 * g

    def run():
        h = torch.randn(3, requires_grad=True).sigmoid()
        Doubles.apply(h).sum().backward()

    report = _wild_report(run)
    assert "x.mul_(2)" in report and "Doubles.forward" in report and "ctx.mark_dirty" in report, report


def test_readme_claims_about_the_message_and_anomaly_mode():
    """What docs/locator.md says PyTorch's message and anomaly mode show, measured on the pinned torch."""
    import warnings

    # A saved *output* is reported as an output of the op that saved it, whatever wrote it later ...
    for op in (torch.sigmoid, torch.exp):
        p = torch.randn(4, requires_grad=True)
        y = op(p)
        saver = type(y.grad_fn).__name__.replace("Backward0", "")
        y[0:2] = 0.0
        assert type(y.grad_fn).__name__ == "CopySlices"
        with pytest.raises(RuntimeError) as info:
            y.sum().backward()
        named = str(info.value).split("which is output 0 of ")[1].split(",")[0]
        assert named.startswith(saver) and "CopySlices" not in named, named
    # ... a saved *input* with its grad_fn at backward time: the write's node.
    h = torch.randn(4, requires_grad=True) * 2
    sq = h ** 2                                        # pow saves its input h
    h[0:2] = 0.0                                       # now h's grad_fn is CopySlices
    with pytest.raises(RuntimeError, match=r"output 0 of (torch::autograd::)?CopySlices"):
        sq.sum().backward()

    # Anomaly mode records the writing lines in the write nodes' metadata, and prints only the failing node's.
    with warnings.catch_warnings(record=True) as caught, torch.autograd.set_detect_anomaly(True):
        warnings.simplefilter("always")
        p = torch.randn(4, requires_grad=True)
        y = p.sigmoid()                                # LINE-SIGMOID
        y[0:2] = 0.0                                   # LINE-SLICE
        copy_node = y.grad_fn
        y.add_(1.0)                                    # LINE-ADD
        add_node = y.grad_fn
        with pytest.raises(RuntimeError):
            y.sum().backward()
    assert type(copy_node).__name__ == "CopySlices" and "LINE-SLICE" in "".join(copy_node.metadata["traceback_"])
    assert type(add_node).__name__.startswith("AddBackward") and "LINE-ADD" in "".join(add_node.metadata["traceback_"])
    printed = "\n".join(str(w.message) for w in caught)
    assert "LINE-SIGMOID" in printed, printed
    assert "LINE-SLICE" not in printed and "LINE-ADD" not in printed, printed


def test_a_slice_write_under_no_grad_gets_the_same_error_with_the_locator():
    """Watching must not change the program: a view made under no_grad is not rebuilt by the locator."""
    def writes_under_no_grad(p):
        y = p.sigmoid()
        with torch.no_grad():
            y[..., 0:2] = y[..., 0:2] * 2
        return y

    p = torch.randn(2, 3, 4, 4, 7, requires_grad=True)
    with pytest.raises(RuntimeError) as plain:
        writes_under_no_grad(p).sum().backward()
    with pytest.raises(RuntimeError) as watched:
        with locate_inplace():
            writes_under_no_grad(p).sum().backward()
    assert str(watched.value) == str(plain.value)
    report = watched.value.inplace_report
    assert "y[..., 0:2] = y[..., 0:2] * 2" in report and "version 0 → 1" in report, report


# ------------------------------------------------ backward's own ops run unwatched

def test_a_backward_error_keeps_pytorchs_own_traceback():
    """The locator steps off the mode stack around the engine; its frame is gone from the traceback."""
    import traceback

    def frames(err):
        return [(f.filename, f.name) for f in traceback.extract_tb(err.__traceback__)]

    with pytest.raises(RuntimeError) as plain:
        seed.run()
    with pytest.raises(RuntimeError) as located:
        with locate_inplace():
            seed.run()
    assert frames(located.value) == frames(plain.value)
    assert "autograder/inplace.py" not in "".join(traceback.format_tb(located.value.__traceback__))


def test_the_engine_is_restored_and_the_mode_stack_balanced():
    engine = torch.autograd.graph._engine_run_backward
    x = torch.randn(3, requires_grad=True)
    with locate_inplace():
        with locate_inplace():                          # nested: one wrapper, held twice
            x.sigmoid().sum().backward()
        assert torch._C._len_torch_dispatch_stack() == 1
        y = x.exp()
        y.add_(1)                                       # after a backward, writes are watched again
        with pytest.raises(RuntimeError):
            y.sum().backward()
    assert torch.autograd._engine_run_backward is engine
    assert torch._C._len_torch_dispatch_stack() == 0


def test_backward_with_create_graph_is_watched():
    """With create_graph=True backward builds a graph; what it saves is located like forward's saves."""
    x = torch.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError) as info:
        with locate_inplace() as loc:
            h = x * 2
            y = h.tanh()
            (g,) = torch.autograd.grad(y.sum(), h, create_graph=True)  # @cg_grad
            y.mul_(2)  # @cg_write
            g.sum().backward()
    report = info.value.inplace_report
    assert f"saved at version 0 by tanh_backward at {os.path.relpath(HERE)}:{_line(HERE, 'cg_grad')}" in report
    assert f"written at {os.path.relpath(HERE)}:{_line(HERE, 'cg_write')} (0 → 1)" in report
    assert sorted(r.op for r in loc.broken) == ["tanh", "tanh_backward"]


# ------------------------------------------------- %load_ext autograder.inplace (IPython)

_ANSI = re.compile(r"\x1b\[[0-9;]*m")

_FAILING_CELL = """\
p = torch.randn(2, 3, 4, requires_grad=True)
y = p.sigmoid()
y[..., 0:2] = y[..., 0:2] * 2 - 0.5    # first write
y[..., 2:4] = (y[..., 2:4] * 2) ** 2   # second write
y.sum().backward()
"""


@pytest.fixture
def shell(tmp_path, monkeypatch):
    """A real IPython shell (no history file, no profile in $HOME) with torch imported."""
    pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    InteractiveShell.clear_instance()
    ip = InteractiveShell.instance(config=config)
    ip.run_cell("import torch", silent=True)
    yield ip
    ip.run_line_magic("unload_ext", "autograder.inplace")
    InteractiveShell.clear_instance()
    assert torch._C._len_torch_dispatch_stack() == 0


def _run(ip, capsys, code):
    capsys.readouterr()
    result = ip.run_cell(code)
    return result, _ANSI.sub("", capsys.readouterr().out)


def test_extension_prints_the_report_and_leaves_the_error_alone(shell, capsys):
    _, without = _run(shell, capsys, _FAILING_CELL)       # the error as IPython shows it on its own
    shell.run_line_magic("load_ext", "autograder.inplace")
    result, out = _run(shell, capsys, _FAILING_CELL)
    err = result.error_in_exec
    assert isinstance(err, RuntimeError) and "modified by an inplace operation" in str(err)
    assert not hasattr(err, "__notes__") and not hasattr(err, "inplace_report")  # the error is untouched
    traceback_end = out.index("is at version 2; expected version 0 instead")
    assert out[:traceback_end] == without[:without.index("is at version 2; expected version 0 instead")]
    report = out[traceback_end:]
    cell = f"Cell In[{shell.execution_count}]"              # as IPython's traceback above names it
    assert f"{cell}, line 5" in out[:traceback_end]
    assert f"(error raised at {cell}, line 5)" in report, report
    assert f"saved at version 0 by sigmoid at {cell}, line 2; written at {cell}, line 3 (0 → 1) " \
           f"and {cell}, line 4 (1 → 2)" in report, report
    first, second = report.index("# first write"), report.index("# second write")
    assert 0 < first < second                               # the writing lines, in order
    assert torch._C._len_torch_dispatch_stack() == 0        # nothing left on the mode stack


def test_extension_is_silent_on_clean_cells_and_other_errors(shell, capsys):
    shell.run_line_magic("load_ext", "autograder.inplace")
    result, out = _run(shell, capsys, "q = torch.ones(3, requires_grad=True)\n(q.sigmoid() * 2).sum().backward()")
    assert result.success and out == ""
    result, out = _run(shell, capsys, "torch.ones(2) @ torch.ones(3)")
    assert isinstance(result.error_in_exec, RuntimeError) and "In-place" not in out


def test_report_names_the_save_cell_and_the_error_cell_as_jupyter_does(shell, capsys):
    """Saved and written in one cell, backward in the next: each site is named by its own cell, the way
    IPython's traceback names a cell (``Cell In[N], line L``), never a bare "cell line L"."""
    first = shell.run_cell("from autograder.inplace import locate_inplace\n"
                           "loc = locate_inplace(annotate=False).__enter__()\n"
                           "p = torch.randn(3, requires_grad=True)\n"
                           "y = p.exp()\n"
                           "y.mul_(2)\n", store_history=True)
    save_cell = first.execution_count
    capsys.readouterr()
    second = shell.run_cell("try:\n"
                            "    y.sum().backward()\n"
                            "except RuntimeError as e:\n"
                            "    err = e\n"
                            "loc.__exit__(None, None, None)\n"
                            "print(loc.explain(err))\n", store_history=True)
    out = _ANSI.sub("", capsys.readouterr().out)
    assert second.success and second.execution_count == save_cell + 1, out
    assert f"(error raised at Cell In[{save_cell + 1}], line 2)" in out, out
    assert (f"saved at version 0 by exp at Cell In[{save_cell}], line 4; "
            f"written at Cell In[{save_cell}], line 5 (0 → 1)") in out, out
    assert "cell line" not in out


def test_extension_explains_a_caught_error_and_unloads(shell, capsys):
    shell.run_line_magic("load_ext", "autograder.inplace")
    shell.run_line_magic("load_ext", "autograder.inplace")   # a second load is a no-op
    caught = ("from autograder.inplace import explain\n"
              "p = torch.randn(3, requires_grad=True)\n"
              "try:\n"
              "    y = p.exp()\n"
              "    y.add_(1)\n"
              "    y.sum().backward()\n"
              "except RuntimeError as err:\n"
              "    print(explain(err))\n")
    result, out = _run(shell, capsys, caught)
    cell = f"Cell In[{shell.execution_count}]"
    assert result.success and f"saved at version 0 by exp at {cell}, line 4; written at {cell}, line 5 (0 → 1)" in out
    assert f"(error raised at {cell}, line 6)" in out
    # forward in one cell, backward in the next: PyTorch's numbers and a hint, no lines
    _run(shell, capsys, "y = p.exp()\ny.add_(1)")
    _, out = _run(shell, capsys, "y.sum().backward()")
    assert "not seen by the locator" in out and "one cell at a time" in out
    shell.run_line_magic("unload_ext", "autograder.inplace")
    result, out = _run(shell, capsys, _FAILING_CELL)
    assert isinstance(result.error_in_exec, RuntimeError) and "In-place write" not in out
    assert torch._C._len_torch_dispatch_stack() == 0


def test_extension_leaves_a_users_dispatch_mode_alone(shell, capsys):
    from torch.utils._python_dispatch import TorchDispatchMode

    class Counting(TorchDispatchMode):
        calls = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            Counting.calls += 1
            return func(*args, **(kwargs or {}))

    shell.user_ns["Counting"] = Counting
    shell.run_line_magic("load_ext", "autograder.inplace")
    assert _run(shell, capsys, "mode = Counting()\nmode.__enter__()")[0].success   # left on past the cell
    assert _run(shell, capsys, "torch.ones(2) + 1")[0].success
    assert Counting.calls > 0
    assert _run(shell, capsys, "mode.__exit__(None, None, None)")[0].success     # the user's exit pops theirs
    calls = Counting.calls
    result, out = _run(shell, capsys, "torch.ones(2) + 1\nprint(torch._C._len_torch_dispatch_stack())")
    assert result.success and out.strip() == "1"            # this cell's own watch, and only it
    assert Counting.calls == calls
    assert torch._C._len_torch_dispatch_stack() == 0


def test_extension_costs_little_per_cell(shell):
    """The per-cell price of watching: entering and leaving a locator (a cell without torch pays only this)."""
    import statistics
    import time

    from autograder import inplace

    shell.run_line_magic("load_ext", "autograder.inplace")
    watch = inplace._WATCHES[id(shell)]
    times = []
    for _ in range(200):
        start = time.perf_counter()
        watch.pre_run_cell()
        watch.post_run_cell(None)
        times.append(time.perf_counter() - start)
    per_cell = statistics.median(times)
    print(f"\nextension: {per_cell * 1e6:.0f} us per cell")
    assert per_cell < 1e-3


def test_code_that_reads_a_saved_python_number_runs_under_the_locator():
    """``x * 2`` keeps the 2 as a 0-dim tensor; with any dispatch mode on, PyTorch hands ops on it
    a plain int, which ``detach``/``item`` refuse. The locator gives them the tensor back."""
    x = torch.randn(3, requires_grad=True)
    node = (x * 2.5).grad_fn
    plain = node._saved_other
    with locate_inplace():
        saved = node._saved_other
        assert float(saved.detach()) == 2.5 and saved.item() == 2.5
    assert plain.item() == 2.5
