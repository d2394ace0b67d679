"""The lessons' explorers, driven headless: state after each step, callbacks, figures.

Truths come from the installed PyTorch (does backward() really fail here?), and the YOLO decode is
compared with the course's own head (autograder.yolo), never with numbers typed in.
"""
import re

import pytest
import torch
from matplotlib.figure import Figure

from autograder import explorers as E
from autograder.explorers import (DecodeExplorer, VersionExplorer, autograd_graph, decode_one,
                                  draw_autograd_graph, figure_png, freed_saved, saved_tensors, stale_saved)

ERROR_RE = re.compile(r"output 0 of (Sigmoid|SigmoidBackward0), is at version 2; expected version 0")


def _backward_fails(lines: list[str]) -> bool:
    """Run a program prefix and try backward from every tensor with a grad_fn: does PyTorch refuse?"""
    ns = {"torch": torch}
    for line in lines:
        exec(line, ns)  # noqa: S102
    roots = [v for k, v in ns.items() if isinstance(v, torch.Tensor) and v.grad_fn is not None]
    if not roots:
        return False
    try:
        torch.autograd.grad(sum(r.sum() for r in roots), [ns["p"]], allow_unused=True)
    except RuntimeError as err:
        assert "modified by an inplace operation" in str(err)
        return True
    return False


# ----------------------------------------------------------------------------- version explorer

def test_version_explorer_records_versions_and_failure():
    ex = VersionExplorer(E.DEFAULT_PROGRAM)
    assert ex.n_steps == len(ex.snapshots) - 1 == 7
    ys = [s.tensors["y"].version for s in ex.snapshots if "y" in s.tensors]
    assert ys == [0, 0, 1, 2, 2, 2]
    assert ex.first_failing_step() == 4 and ex.lines[3].startswith("y[0:2] =")
    last = ex.snapshots[-1]
    assert last.error and ERROR_RE.search(last.error), last.error
    stale = last.stale
    assert len(stale) == 1
    op, info = stale[0]
    assert op == "SigmoidBackward0" and info.name == "y" and info.attr == "result"
    assert (info.saved_version, info.current_version) == (0, 2)
    assert "backward() would FAIL" in ex.report(last)


def test_version_explorer_verdict_matches_pytorch_at_every_step():
    for program in (E.DEFAULT_PROGRAM, E.FIXED_PROGRAM):
        ex = VersionExplorer(program)
        for snap in ex.snapshots:
            lines = [ln for ln in ex.lines[:snap.step] if "backward" not in ln]
            assert snap.backward_would_fail == _backward_fails(lines), (program, snap.step)


def test_fixed_program_never_fails_and_gets_gradient():
    ex = VersionExplorer(E.FIXED_PROGRAM)
    assert ex.first_failing_step() is None
    assert all(s.error is None for s in ex.snapshots)
    assert all(s.tensors.get("y") is None or s.tensors["y"].version == 0 for s in ex.snapshots)


def test_version_explorer_navigation_and_widget_callbacks():
    ex = VersionExplorer(E.DEFAULT_PROGRAM)
    assert ex.step == 0 and ex.prev().step == 0          # clamps at the start
    box = ex.widget()
    (prev_b, slider, next_b), readout = box.children[0].children, box.children[1]
    next_b.click()
    next_b.click()
    assert ex.step == 2 and slider.value == 2 and "after line 2" in readout.value
    slider.value = 5
    assert ex.step == 5 and "would FAIL" in readout.value
    prev_b.click()
    assert ex.step == 4 and slider.value == 4
    assert ex.go(99).step == ex.n_steps                  # clamps at the end
    fig = ex.figure()
    assert isinstance(fig, Figure) and len(fig.axes) == 3
    assert figure_png(fig)[:8] == b"\x89PNG\r\n\x1a\n"


def test_freed_saved_is_what_pytorch_says_after_backward():
    p = torch.tensor([0.3, -1.2], requires_grad=True)
    y = p.sigmoid()
    assert not freed_saved(y)
    y.sum().backward(retain_graph=True)
    assert not freed_saved(y)                            # retained: still there
    y.grad_fn._saved_result                              # and readable
    y.sum().backward()
    assert freed_saved(y)
    with pytest.raises(RuntimeError, match="freed"):     # PyTorch agrees
        y.grad_fn._saved_result


def test_version_explorer_says_what_each_state_is():
    fixed, broken = VersionExplorer(E.FIXED_PROGRAM), VersionExplorer(E.DEFAULT_PROGRAM)
    said = {k: "\n".join(fixed.saved_lines(fixed.snapshots[k])) for k in (0, 1, 3, fixed.n_steps)}
    assert "no autograd node yet" in said[0] and "no autograd node yet" in said[1]
    assert "SigmoidBackward0 saved result = y" in said[3]
    last = fixed.snapshots[-1]                            # after a backward() that ran: freed, not "yet"
    assert last.freed and not last.saved and "freed" in said[fixed.n_steps] and "yet" not in said[fixed.n_steps]
    assert "freed" in fixed.verdict(last) and "would run" not in fixed.verdict(last)
    assert "would run" in fixed.verdict(fixed.snapshots[3]) and "no graph" in fixed.verdict(fixed.snapshots[1])
    failed = broken.snapshots[-1]   # backward() failed at the sigmoid: the nodes it ran before are freed,
    assert failed.freed and failed.error and [op for op, _ in failed.saved] == ["SigmoidBackward0"]
    assert failed.stale and "SigmoidBackward0 saved result = y" in "\n".join(broken.saved_lines(failed))
    assert broken.verdict(failed).startswith("this line raised RuntimeError")  # the stale save is still there
    assert "backward() would FAIL" in broken.report(failed)


def _drawn(fig):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return canvas.get_renderer()


@pytest.mark.parametrize("program", [E.DEFAULT_PROGRAM, E.FIXED_PROGRAM,
                                     "p = torch.ones(3, requires_grad=True)\nc = (p * 1).clone()\nc.add_(1)"])
def test_version_figure_legend_shows_only_the_colours_drawn(program):
    from matplotlib.colors import to_hex

    ex = VersionExplorer(program)
    for snap in ex.snapshots:
        fig = ex.figure(snap)
        table, bottom = fig.axes[1], fig.axes[2]
        drawn = {to_hex(p.get_facecolor()) for p in table.patches}
        legend = bottom.get_legend()
        shown = {to_hex(h.get_facecolor()) for h in legend.legend_handles} if legend else set()
        assert shown == drawn, (snap.step, shown, drawn)
        bold = any(t.get_fontweight() == "bold" for t in table.texts)
        assert bold == bool(legend and legend.get_title().get_text()), snap.step


def test_version_figure_headers_and_lines_do_not_overlap():
    ex = VersionExplorer(E.FIXED_PROGRAM)                 # six tensors: the widest table of the lessons
    fig = ex.figure(ex.snapshots[-1])
    renderer = _drawn(fig)
    code, table = fig.axes[0], fig.axes[1]
    headers = sorted((t for t in table.texts if t.get_position()[1] == 0), key=lambda t: t.get_position()[0])
    assert [t.get_text() for t in headers] == list(ex.snapshots[-1].tensors)
    boxes = [t.get_window_extent(renderer) for t in headers]
    assert all(a.x1 < b.x0 for a, b in zip(boxes, boxes[1:])), [(b.x0, b.x1) for b in boxes]
    table_left = min(p.get_window_extent(renderer).x0 for p in table.patches)
    assert all(t.get_window_extent(renderer).x1 < table_left for t in code.texts)


def test_version_explorer_records_a_raising_line_and_continues():
    ex = VersionExplorer("a = torch.zeros(2)\nb = a.nope()\nc = a + 1")
    assert ex.snapshots[2].error.startswith("AttributeError")
    assert "c" in ex.snapshots[3].tensors


def test_show_without_front_end(capsys):
    for ex in (VersionExplorer(E.FIXED_PROGRAM), DecodeExplorer()):
        ex.show()  # no IPython kernel: must not raise, prints reprs
    assert "VBox" in capsys.readouterr().out


# ----------------------------------------------------------------------------- autograd graph

@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_graph_of_a_clean_computation(dtype):
    p = torch.tensor([0.3, -1.2, 0.8], dtype=dtype, requires_grad=True)
    w = torch.tensor([2.0, 1.0, 0.5], dtype=dtype, requires_grad=True)
    y = p.sigmoid()
    loss = (y * w).sum()
    names = {"p": p, "w": w, "y": y, "loss": loss}
    g = autograd_graph(loss, names)
    # every edge is one entry of next_functions: count them independently
    seen, stack, n_edges = set(), [loss.grad_fn], 0
    while stack:
        fn = stack.pop()
        if fn in seen:
            continue
        seen.add(fn)
        for nxt, _ in fn.next_functions:
            if nxt is not None:
                n_edges += 1
                stack.append(nxt)
    assert len(g.nodes) == len(seen) and len(g.edges) == n_edges
    labels = sorted(n.label for n in g.nodes.values())
    assert labels.count("torch::autograd::AccumulateGrad") == 2
    assert sorted(n.leaf_name for n in g.nodes.values() if n.is_leaf) == ["p", "w"]
    assert g.stale() == [] and stale_saved(loss, names) == []
    sig = next(n for n in g.nodes.values() if n.label == y.grad_fn.name())
    assert [(s.attr, s.name) for s in sig.saved] == [("result", "y")]
    mul = next(n for n in g.nodes.values() if n.label == "MulBackward0")
    assert sorted(s.name for s in mul.saved) == ["w", "y"]
    # rows: every edge points downwards
    assert all(g.nodes[b].depth > g.nodes[a].depth for a, _, b in g.edges)
    fig = draw_autograd_graph(loss, names, title="t")
    assert "would run" in fig.axes[0].get_title()
    loss.backward()  # and PyTorch agrees


def test_graph_marks_the_tensor_written_in_place():
    p = torch.tensor([0.3, -1.2, 0.8, 0.1], requires_grad=True)
    y = p.sigmoid()
    y[0:2] = y[0:2] * 2 - 0.5
    y[2:4] = (y[2:4] * 2) ** 2
    loss = y.sum()
    g = autograd_graph(loss, {"p": p, "y": y})
    stale = g.stale()
    assert len(stale) == 1
    node, info = stale[0]
    assert node.label == "SigmoidBackward0" and info.name == "y"
    assert (info.saved_version, info.current_version) == (0, y._version) == (0, 2)
    assert ERROR_RE.search(info.message)
    assert sum(n.label.endswith("CopySlices") for n in g.nodes.values()) == 2
    fig = draw_autograd_graph(loss, {"p": p, "y": y})
    assert "FAIL" in fig.axes[0].get_title()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_saved_input_written_in_place_is_found():
    a = torch.tensor([1.0, 2.0], requires_grad=True).clone()  # non-leaf, may be modified in place
    b = torch.tensor([3.0, 4.0], requires_grad=True)
    c = a * b           # MulBackward0 saves a and b
    a.add_(1)
    infos = {s.attr: s for s in saved_tensors(c.grad_fn, {"a": a, "b": b})}
    assert infos["self"].stale and infos["self"].name == "a"
    assert not infos["other"].stale and infos["other"].name == "b"
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        c.sum().backward()


# ----------------------------------------------------------------------------- YOLO decode

def test_decode_matches_the_course_head():
    yolo = pytest.importorskip("autograder.yolo")
    from instructor.hidden.a03_yolo_head import reference_decode
    gen = torch.Generator().manual_seed(0)
    nx, ny, stride = 5, 4, 16
    anchors = ((10, 13), (16, 30), (33, 23))
    anchor_grid = torch.tensor(anchors, dtype=torch.float64).view(1, 3, 1, 1, 2)
    p = torch.randn(1, 3, ny, nx, 6, generator=gen, dtype=torch.float64) * 3
    grid = yolo.make_grid(nx, ny, dtype=torch.float64)
    for decode in (reference_decode, yolo.legacy_decode):
        out = decode(p.clone(), grid, anchor_grid, stride)
        for a in range(3):
            for row in range(ny):
                for col in range(nx):
                    tx, ty, tw, th = p[0, a, row, col, :4].tolist()
                    d = decode_one(tx, ty, tw, th, col, row, anchors[a], stride)
                    got = torch.tensor([d["cx"], d["cy"], d["w"], d["h"]], dtype=torch.float64)
                    torch.testing.assert_close(got, out[0, a, row, col, :4], rtol=1e-9, atol=1e-9)


def test_decode_explorer_sliders_and_ranges():
    ex = DecodeExplorer(nx=5, ny=4, stride=16, col=2, row=1, anchor=1)
    d = ex.decode()  # raw zeros: cell centre, exactly the anchor
    assert (d["cx"], d["cy"], d["w"], d["h"]) == (2.5 * 16, 1.5 * 16, 16.0, 30.0)
    box = ex.widget()
    ex._controls["tx"].value = 6.0       # what dragging the slider does
    ex._controls["anchor"].value = 2
    assert ex.values["tx"] == 6.0 and ex.values["anchor"] == 2
    d = ex.decode()
    assert 2 * 16 + 1.4 * 16 < d["cx"] < (2 + 1.5) * 16      # at most 1.5 cells past the cell's left edge
    assert d["w"] == pytest.approx(33.0)                         # tw = 0: anchor width
    assert "anchor 2 = 33x23 px" in box.children[1].value
    ex.set(tw=6.0, th=-6.0, col=99)                              # col clamps to the grid
    assert ex.values["col"] == 4 and ex._controls["col"].value == 4
    d = ex.decode()
    assert 3.9 * 33 < d["w"] < 4 * 33 and d["h"] < 0.01 * 23
    x1, y1, x2, y2 = ex.box()
    assert x2 - x1 == pytest.approx(d["w"]) and y2 - y1 == pytest.approx(d["h"])
    with pytest.raises(KeyError):
        ex.set(bogus=1)
    fig = ex.figure()
    assert isinstance(fig, Figure) and len(fig.axes) == 3
    assert "decoded box" in fig.axes[0].get_title()
