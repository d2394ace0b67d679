"""Widgets and figures for the ungraded lessons in ``notebooks/``.

Three explorers, each usable in two ways:

* :class:`VersionExplorer` — runs a short program one line at a time and records, after every
  line, each tensor's ``_version``, what every autograd node saved (and at which version), and
  whether ``backward()`` would fail at that moment;
* :func:`autograd_graph` / :func:`draw_autograd_graph` — the backward graph read from
  ``grad_fn`` / ``next_functions`` / ``_saved_*`` (no Graphviz), saved tensors marked and a saved
  tensor that was written in place afterwards highlighted; :func:`saved_bytes`, the memory that graph
  keeps for backward;
* :class:`DecodeExplorer` — the YOLOv5 (release 5.0) decode of one cell and anchor,
  ``xy = (2*s - 0.5 + grid) * stride`` and ``wh = (2*s)**2 * anchor``, drawn on the image grid.

Every explorer's ``show()`` displays the ipywidgets controls *and* an ordinary PNG figure of the
current state (an IPython display with a ``display_id``). Callbacks redraw that figure in place.
Without a front end (nbclient, nbconvert, nbgrader, CI) the controls are inert and the figure
is the static picture of the initial state, so nothing depends on a browser being attached.
Nothing here reads a table of PyTorch internals typed by hand: what an op saved, and whether a
saved tensor is stale, are asked from the installed PyTorch each time.
"""
from __future__ import annotations

import io
import math
import textwrap
from dataclasses import dataclass, field
from typing import Any

import torch
from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch, Rectangle

from .i18n import _
from .saved_by_node import is_broken, is_freed, raw_saved, read_saved, role, saved_names, versions

#: a monospace font, and for the characters it lacks (Chinese, in the Chinese edition) the sans-serif one that
#: autograder.cjk_fonts puts first: matplotlib falls back glyph by glyph along the list
MONO = ["monospace", "sans-serif"]

__all__ = [
    "SavedInfo", "GraphNode", "AutogradGraph", "saved_tensors", "autograd_graph", "stale_saved",
    "draw_autograd_graph", "saved_bytes", "freed_saved", "VersionExplorer", "Snapshot", "DecodeExplorer", "decode_one",
    "figure_png", "show_figure",
]


# Colours used by every figure (colour-blind safe pairs: blue/orange, plus red for "broken").
C_OP, C_LEAF, C_SAVED, C_STALE, C_EDGE = "#dbe9f6", "#d9f0d3", "#fff2cc", "#f4cccc", "#555555"
RED, BLUE, ORANGE, GREEN = "#c0392b", "#1f77b4", "#ff7f0e", "#2ca02c"
# cells of the version explorer's table: unchanged, went up on that line, a saved tensor now stale
C_CELL, C_BUMP = "#eef3f8", "#fde0c5"


# --------------------------------------------------------------------------- figures and display

def figure_png(fig: Figure, dpi: int = 90) -> bytes:
    """The figure as PNG bytes (no pyplot, so no global figure state and no double display)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    return buf.getvalue()


def show_figure(fig: Figure, handle=None):
    """Display ``fig`` as a PNG and return the display handle; with ``handle``, update it instead.

    The handle is how widget callbacks redraw the same output area (``update_display_data``).
    """
    from IPython.display import Image, display

    image = Image(data=figure_png(fig), format="png")
    if handle is None:
        return display(image, display_id=True)
    handle.update(image)
    return handle


def _widgets():
    import ipywidgets

    return ipywidgets


class _Explorer:
    """What both explorers share: the text read-out as HTML, and showing widget + figure.

    Subclasses provide ``report()`` (text), ``figure()`` (matplotlib) and ``widget()`` (ipywidgets).
    Without a front end the widget is inert but the figure is still a static PNG in the output.
    """

    def _html(self) -> str:
        import html

        return f"<pre style='font-size:12px;line-height:1.3'>{html.escape(self.report())}</pre>"

    def show(self):
        from IPython.display import display

        display(self.widget())
        self._handle = show_figure(self.figure())
        return None


# --------------------------------------------------------------------------- saved tensors

def _key(t: torch.Tensor) -> tuple:
    """Identity of a tensor's data: same storage, offset, shape and strides."""
    try:
        ptr = t.untyped_storage().data_ptr()
    except Exception:  # noqa: BLE001 - tensors without storage (rare): fall back to object id
        ptr = id(t)
    return (ptr, t.storage_offset(), tuple(t.shape), tuple(t.stride()), t.device.type)


@dataclass
class SavedInfo:
    """One tensor an autograd node saved for its backward."""

    attr: str                     # "result", "self", "other", ... (the ``_saved_<attr>`` name)
    shape: tuple
    stale: bool                   # written in place after it was saved: backward will fail
    saved_version: int | None     # version when saved (None when PyTorch does not say)
    current_version: int | None   # version now
    name: str | None = None       # the user's variable name for it, when one matches
    message: str | None = None    # PyTorch's own error text when stale
    value: float | None = None    # the number, for a one-element saved tensor (e.g. a wrapped scalar)

    @property
    def label(self) -> str:
        """The variable name when known, else the value of a one-number tensor, else its shape."""
        if self.name:
            return self.name
        if self.value is not None:
            return f"tensor({self.value:g})"
        return f"tensor{list(self.shape)}"

    def describe(self) -> str:
        who = self.label
        if self.stale:
            return f"{self.attr} = {who}: " + _(f"saved at v{self.saved_version}, now v{self.current_version} (stale)")
        return f"{self.attr} = {who} (v{self.current_version})"


def saved_tensors(node, names: dict[str, torch.Tensor] | None = None) -> list[SavedInfo]:
    """What ``node`` (a ``grad_fn``) saved, asked from PyTorch through its ``_saved_*`` attributes.

    A saved tensor whose version moved on since it was saved cannot be unpacked: PyTorch raises the
    very RuntimeError that ``backward()`` would raise. We catch it and read both versions from it.
    Non-tensor saved values (``alpha``, ``exponent``, sizes) are skipped.
    """
    if node is None:
        return []
    by_key = {}
    for name, t in (names or {}).items():
        if isinstance(t, torch.Tensor):
            by_key.setdefault(_key(t), name)
    infos: list[SavedInfo] = []
    for full in saved_names(node, functions=False):
        attr = role(full)
        value, err = read_saved(node, full)
        if err is not None:
            if not is_broken(err):  # freed, or an accessor PyTorch cannot answer: not a tensor we can show
                continue
            text = str(err)
            both = versions(text)
            raw = raw_saved(node, full)
            infos.append(SavedInfo(
                attr=attr, shape=tuple(raw.shape) if raw is not None else (),
                stale=True,
                saved_version=both[1] if both else None,
                current_version=both[0] if both else (raw._version if raw is not None else None),
                name=by_key.get(_key(raw)) if raw is not None else None,
                message=text.split(" Hint:")[0]))
            continue
        values = value if isinstance(value, (list, tuple)) else [value]
        for i, t in enumerate(values):
            if not isinstance(t, torch.Tensor):
                continue
            label = attr if len(values) == 1 else f"{attr}[{i}]"
            infos.append(SavedInfo(attr=label, shape=tuple(t.shape), stale=False,
                                   saved_version=t._version, current_version=t._version,
                                   name=by_key.get(_key(t)),
                                   value=float(t.detach().reshape(-1)[0]) if t.numel() == 1 else None))
    return infos


# --------------------------------------------------------------------------- the backward graph

@dataclass
class GraphNode:
    key: int
    label: str                     # grad_fn.name(), e.g. "SigmoidBackward0"
    leaf_name: str | None = None   # for AccumulateGrad: the leaf's variable name
    saved: list[SavedInfo] = field(default_factory=list)
    depth: int = 0

    @property
    def is_leaf(self) -> bool:
        return self.label == "torch::autograd::AccumulateGrad" or self.label.endswith("AccumulateGrad")

    @property
    def short(self) -> str:
        label = self.label.replace("torch::autograd::", "")
        if self.is_leaf:
            return "AccumulateGrad\n" + _(f"(leaf {self.leaf_name})") if self.leaf_name else "AccumulateGrad"
        return label

    @property
    def stale(self) -> bool:
        return any(s.stale for s in self.saved)


@dataclass
class AutogradGraph:
    nodes: dict[int, GraphNode]
    edges: list[tuple[int, int, int]]   # (node, input index in next_functions, next node)
    root: int | None

    def stale(self) -> list[tuple[GraphNode, SavedInfo]]:
        return [(n, s) for n in self.nodes.values() for s in n.saved if s.stale]

    def by_label(self, label: str) -> list[GraphNode]:
        return [n for n in self.nodes.values() if n.short.split("\n")[0] == label or n.label == label]


def _roots(roots) -> list:
    if isinstance(roots, (torch.Tensor,)) or hasattr(roots, "next_functions"):
        roots = [roots]
    out = []
    for r in roots:
        node = r.grad_fn if isinstance(r, torch.Tensor) else r
        if node is not None:
            out.append(node)
    return out


def autograd_graph(roots, names: dict[str, torch.Tensor] | None = None) -> AutogradGraph:
    """Walk the backward graph from ``roots`` (tensors or ``grad_fn`` nodes) through ``next_functions``.

    ``names`` maps variable names to tensors (e.g. ``locals()``), used to label leaves and saved tensors.
    """
    names = {k: v for k, v in (names or {}).items() if isinstance(v, torch.Tensor) and not k.startswith("_")}
    leaf_names = {id(v): k for k, v in names.items() if v.is_leaf}
    nodes: dict[int, GraphNode] = {}
    edges: list[tuple[int, int, int]] = []
    starts = _roots(roots)
    stack = list(starts)
    objects = {}
    while stack:
        fn = stack.pop()
        if id(fn) in nodes:
            continue
        objects[id(fn)] = fn
        variable = getattr(fn, "variable", None)
        nodes[id(fn)] = GraphNode(key=id(fn), label=fn.name(),
                                  leaf_name=leaf_names.get(id(variable)) if variable is not None else None,
                                  saved=saved_tensors(fn, names))
        for i, (nxt, _) in enumerate(fn.next_functions):
            if nxt is None:
                continue
            edges.append((id(fn), i, id(nxt)))
            stack.append(nxt)
    # depth = longest path from a root, so every edge points downwards
    for _ in range(len(nodes)):
        changed = False
        for a, _, b in edges:
            if nodes[b].depth < nodes[a].depth + 1:
                nodes[b].depth = nodes[a].depth + 1
                changed = True
        if not changed:
            break
    return AutogradGraph(nodes=nodes, edges=edges, root=id(starts[0]) if starts else None)


def saved_bytes(roots, exclude=()) -> int:
    """Bytes of memory the backward graph reachable from ``roots`` keeps alive for its gradient formulas.

    Every tensor any node saved (``_saved_*``; a stale one too, read through ``_raw_saved_*``) is counted
    once per storage, so a tensor saved twice, or two views of one buffer, count once. Storages of the
    tensors in ``exclude`` (inputs, parameters: they exist anyway) are left out. Asked from the installed
    PyTorch each time, like everything here.
    """
    skip = {(t.device.type, t.untyped_storage().data_ptr()) for t in exclude}
    sizes: dict[tuple, int] = {}
    for fn, full in _saved_attributes(roots):
        value, err = read_saved(fn, full)
        if err is not None:
            if not isinstance(err, RuntimeError):  # an accessor PyTorch cannot answer
                continue
            value = raw_saved(fn, full)  # written in place since it was saved: still held, still memory
        for t in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(t, torch.Tensor) and t.device.type != "meta":
                key = (t.device.type, t.untyped_storage().data_ptr())
                if key not in skip:
                    sizes[key] = t.untyped_storage().nbytes()
    return sum(sizes.values())


def _saved_attributes(roots):
    """(node, ``_saved_*`` attribute name) for every node of the backward graph from ``roots``, once each."""
    seen, stack = set(), _roots(roots)
    while stack:
        fn = stack.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        for full in saved_names(fn, functions=False):
            yield fn, full
        stack.extend(nxt for nxt, _ in fn.next_functions if nxt is not None)


def freed_saved(roots) -> bool:
    """Whether a ``backward()`` already ran through (part of) the graph from ``roots`` and freed what
    the nodes it ran had saved (one that failed part-way frees the nodes before the failure).

    Asked from PyTorch: reading a freed ``_saved_*`` attribute raises its "already been freed" error.
    """
    for fn, full in _saved_attributes(roots):
        if is_freed(read_saved(fn, full)[1]):
            return True
    return False


def stale_saved(roots, names: dict[str, torch.Tensor] | None = None) -> list[tuple[str, SavedInfo]]:
    """Every saved tensor reachable from ``roots`` that was modified in place after being saved.

    Non-empty means ``backward()`` from those roots would raise the version-counter error.
    """
    graph = autograd_graph(roots, names)
    return [(n.short.split("\n")[0], s) for n, s in graph.stale()]


def _layout(graph: AutogradGraph) -> dict[int, tuple[float, float]]:
    rows: dict[int, list[int]] = {}
    for key, node in graph.nodes.items():
        rows.setdefault(node.depth, []).append(key)
    parents: dict[int, list[int]] = {}
    for a, i, b in graph.edges:
        parents.setdefault(b, []).append(a)
    pos: dict[int, tuple[float, float]] = {}
    # room for the saved-tensor tags to the right of a box
    spacing = 5.4 if any(n.saved for n in graph.nodes.values()) else 3.2
    for depth in sorted(rows):
        keys = rows[depth]
        if depth > 0:  # order each row under its parents (barycentre), ties by input index
            def centre(k):
                xs = [pos[p][0] for p in parents.get(k, []) if p in pos]
                return sum(xs) / len(xs) if xs else 0.0
            order = {b: i for a, i, b in graph.edges}
            keys.sort(key=lambda k: (centre(k), order.get(k, 0)))
        width = len(keys)
        for j, k in enumerate(keys):
            pos[k] = ((j - (width - 1) / 2) * spacing, -depth * 1.6)
    return pos


def draw_autograd_graph(roots, names: dict[str, torch.Tensor] | None = None, title: str | None = None,
                        ax=None) -> Figure:
    """Draw the backward graph: one box per ``grad_fn`` node, arrows along ``next_functions``.

    Yellow tags are the tensors each node saved; a red tag (and red node outline) is a saved tensor
    that was written in place after it was saved: the one ``backward()`` will complain about.
    """
    graph = autograd_graph(roots, names)
    pos = _layout(graph)
    n_rows = max((n.depth for n in graph.nodes.values()), default=0) + 1
    n_cols = max((sum(1 for n in graph.nodes.values() if n.depth == d) for d in range(n_rows)), default=1)
    if ax is None:
        fig = Figure(figsize=(max(6.0, 4.2 * n_cols + 2.5), 1.1 * n_rows + 1.2))
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    for a, i, b in graph.edges:
        (x0, y0), (x1, y1) = pos[a], pos[b]
        span = graph.nodes[b].depth - graph.nodes[a].depth
        if span <= 1:  # to the next row: a straight arrow between the boxes
            start, end, rad = (x0, y0 - 0.32), (x1, y1 + 0.32), 0.0
        else:  # skips rows: leave and enter by the left side, bulging left, so it never crosses a box
            start, end, rad = (x0 - 1.15, y0 - 0.1), (x1 - 1.15, y1 + 0.1), 0.35
        ax.annotate("", xy=end, xytext=start,
                    arrowprops=dict(arrowstyle="-|>", color=C_EDGE, lw=1.2, shrinkA=0, shrinkB=0,
                                    connectionstyle=f"arc3,rad={rad}"))
        # label at the curve's midpoint (matplotlib's arc3 control point, halved)
        mx = (start[0] + end[0]) / 2 + rad * (end[1] - start[1]) / 2
        my = (start[1] + end[1]) / 2 - rad * (end[0] - start[0]) / 2
        ax.text(mx + (0.08 if rad == 0 else -0.08), my, f"next_functions[{i}]", fontsize=6.5, color="#777777",
                ha="left" if rad == 0 else "right", va="center")
    for key, node in graph.nodes.items():
        x, y = pos[key]
        face = C_LEAF if node.is_leaf else C_OP
        edge = RED if node.stale else "#333333"
        ax.add_patch(FancyBboxPatch((x - 1.15, y - 0.3), 2.3, 0.6, boxstyle="round,pad=0.04",
                                    facecolor=face, edgecolor=edge, lw=2.4 if node.stale else 1.0))
        ax.text(x, y, node.short, ha="center", va="center", fontsize=8.5, family=MONO)
        for j, s in enumerate(node.saved):
            sx, sy = x + 1.3, y + 0.18 - 0.34 * j
            text = (_(f"saved {s.attr}: {s.label}")
                    + ("\n" + _(f"saved at v{s.saved_version}, now v{s.current_version}") if s.stale
                       else f" (v{s.current_version})"))
            ax.text(sx, sy, text, fontsize=7, ha="left", va="center",
                    color=RED if s.stale else "#6b5900", fontweight="bold" if s.stale else "normal",
                    bbox=dict(boxstyle="round,pad=0.2", facecolor=C_STALE if s.stale else C_SAVED,
                              edgecolor=RED if s.stale else "#c9a800", lw=1.5 if s.stale else 0.8))
    xs = [p[0] for p in pos.values()] or [0.0]
    ys = [p[1] for p in pos.values()] or [0.0]
    ax.set_xlim(min(xs) - 1.6 - (1.6 if any(graph.nodes[b].depth - graph.nodes[a].depth > 1 for a, _, b in graph.edges) else 0), max(xs) + 3.6)
    ax.set_ylim(min(ys) - 0.7, max(ys) + 0.7)
    ax.axis("off")
    stale = graph.stale()
    which = ", ".join(_(f"{s.label} saved by {n.short.split(chr(10))[0]}") for n, s in stale)
    verdict = (_(f"backward() would FAIL: {which} was modified in place")
               if stale else _("backward() would run: every saved tensor is at the version it was saved at"))
    ax.set_title((title + "\n" if title else "") + verdict, fontsize=9.5, color=RED if stale else GREEN)
    return fig


# --------------------------------------------------------------------------- version counter explorer

@dataclass
class TensorState:
    name: str
    version: int
    grad_fn: str | None
    requires_grad: bool
    shape: tuple
    is_leaf: bool


@dataclass
class Snapshot:
    """The state after ``step`` lines of the program ran (step 0: nothing ran yet)."""

    step: int
    line: str | None
    tensors: dict[str, TensorState]
    saved: list[tuple[str, SavedInfo]]   # (grad_fn name, what it saved), over every reachable node
    stale: list[tuple[str, SavedInfo]]   # the saved tensors that are stale now
    error: str | None = None             # what this line raised, if anything
    has_graph: bool = False              # some named tensor has a grad_fn (there is a node to look at)
    freed: bool = False                  # a backward() ran and freed what (some) nodes had saved

    @property
    def backward_would_fail(self) -> bool:
        return bool(self.stale)

    def versions(self) -> dict[str, int]:
        return {k: t.version for k, t in self.tensors.items()}


DEFAULT_PROGRAM = """
p = torch.tensor([0.3, -1.2, 0.8, 0.1], requires_grad=True)
y = p.sigmoid()
xy = y[0:2] * 2 - 0.5
y[0:2] = xy
y[2:4] = (y[2:4] * 2) ** 2
loss = y.sum()
loss.backward()
"""

FIXED_PROGRAM = """
p = torch.tensor([0.3, -1.2, 0.8, 0.1], requires_grad=True)
y = p.sigmoid()
xy = y[0:2] * 2 - 0.5
wh = (y[2:4] * 2) ** 2
out = torch.cat([xy, wh])
loss = out.sum()
loss.backward()
"""


class VersionExplorer(_Explorer):
    """Step through a short program; after each line see every tensor's ``_version``, what each
    autograd node saved, and whether ``backward()`` would fail now.

    The program runs once, up front, line by line in its own namespace (with ``torch``); a line that
    raises is recorded and the run goes on. ``go(k)``, ``next()`` and ``prev()`` move between the
    recorded states; the widget's slider and buttons call them.
    """

    def __init__(self, program: str = DEFAULT_PROGRAM, title: str = "", seed: int = 0):
        self.lines = [ln for ln in textwrap.dedent(program).strip("\n").splitlines() if ln.strip()]
        self.title = title
        self.seed = seed
        self.snapshots = self._record()
        self.step = 0
        self._handle = None
        self._controls = None

    # -- recording
    def _record(self) -> list[Snapshot]:
        torch.manual_seed(self.seed)
        ns: dict[str, Any] = {"torch": torch}
        snaps = [self._snapshot(ns, 0, None, None)]
        for i, line in enumerate(self.lines, start=1):
            error = None
            try:
                exec(compile(line, f"<line {i}>", "exec"), ns)  # noqa: S102 - the lesson's own program
            except Exception as err:  # noqa: BLE001 - the failure is what the lesson shows
                error = f"{type(err).__name__}: {str(err).split(' Hint:')[0]}"
            snaps.append(self._snapshot(ns, i, line, error))
        return snaps

    @staticmethod
    def _snapshot(ns, step, line, error) -> Snapshot:
        named = {k: v for k, v in ns.items() if isinstance(v, torch.Tensor) and not k.startswith("_")}
        tensors = {k: TensorState(k, v._version, v.grad_fn.name() if v.grad_fn is not None else None,
                                  v.requires_grad, tuple(v.shape), v.is_leaf) for k, v in named.items()}
        roots = [v for v in named.values() if v.grad_fn is not None]
        graph = autograd_graph(roots, named) if roots else AutogradGraph({}, [], None)
        saved = [(n.short.split("\n")[0], s) for n in graph.nodes.values() for s in n.saved]
        stale = [(op, s) for op, s in saved if s.stale]
        return Snapshot(step, line, tensors, saved, stale, error, has_graph=bool(roots),
                        freed=bool(roots) and freed_saved(roots))

    @staticmethod
    def saved_lines(snap: Snapshot) -> list[str]:
        """What the nodes saved, one line each; when they saved nothing, why (it depends on the state)."""
        if snap.saved:
            return [_(f"{op} saved {s.describe()}") for op, s in snap.saved]
        if not snap.has_graph:
            return [_("no autograd node yet: no tensor has a grad_fn")]
        if snap.freed:
            return [_("none any more: backward() freed the tensors the nodes had saved")]
        return [_("the autograd nodes so far saved no tensor")]

    @staticmethod
    def verdict(snap: Snapshot) -> str:
        """backward() at this moment, in words (the line's own error first)."""
        if snap.error:
            return _(f"this line raised {snap.error}")
        if snap.stale:
            reasons = "; ".join(_(f"{op} needs {s.label} at v{s.saved_version}, it is at v{s.current_version}")
                                for op, s in snap.stale)
            return _(f"backward() now: FAILS — {reasons}")
        if snap.freed:
            return _("backward() ran: the graph's saved tensors are freed")
        if not snap.has_graph:
            return _("backward() now: no graph yet, nothing to differentiate")
        return _("backward() now: would run")

    # -- navigation
    @property
    def n_steps(self) -> int:
        return len(self.lines)

    @property
    def state(self) -> Snapshot:
        return self.snapshots[self.step]

    def go(self, step: int) -> Snapshot:
        self.step = max(0, min(int(step), self.n_steps))
        self._refresh()
        return self.state

    def next(self) -> Snapshot:
        return self.go(self.step + 1)

    def prev(self) -> Snapshot:
        return self.go(self.step - 1)

    def first_failing_step(self) -> int | None:
        """The first step after which ``backward()`` would fail (a saved tensor is stale)."""
        return next((s.step for s in self.snapshots if s.backward_would_fail), None)

    # -- text and figure
    def report(self, snap: Snapshot | None = None) -> str:
        snap = snap or self.state
        out = [_(f"after line {snap.step}: {snap.line}") if snap.line else _("before line 1")]
        for t in snap.tensors.values():
            out.append(f"  {t.name:>5}._version = {t.version}   grad_fn = {t.grad_fn}")
        out += ["  " + line for line in self.saved_lines(snap)]
        if snap.error:
            out.append("  " + _(f"this line raised {snap.error}"))
        if snap.stale:
            out.append("  " + _("backward() would FAIL now"))
        elif snap.freed:
            out.append("  " + _("backward() ran; what the nodes saved is freed"))
        elif snap.has_graph:
            out.append("  " + _("backward() would run now"))
        else:
            out.append("  " + _("no graph yet: nothing to run backward() on"))
        return "\n".join(out)

    def figure(self, snap: Snapshot | None = None) -> Figure:
        from matplotlib.patches import Patch

        snap = snap or self.state
        names: list[str] = []
        for s in self.snapshots:
            for k in s.tensors:
                if k not in names:
                    names.append(k)
        fig = Figure(figsize=(11.5, 0.42 * (self.n_steps + 1) + 2.9))
        gs = fig.add_gridspec(2, 2, width_ratios=[1.35, 1], height_ratios=[self.n_steps + 1.5, 3.6],
                              hspace=0.22, wspace=0.05)
        code, table, bottom = fig.add_subplot(gs[0, 0]), fig.add_subplot(gs[0, 1]), fig.add_subplot(gs[1, :])
        fail_at = self.first_failing_step()
        top = -0.5    # a header row (y = 0) above line 1, on both axes alike
        # the program, current line marked
        code.set_xlim(0, 1)
        code.set_ylim(self.n_steps + 0.5, top)
        code.axis("off")
        code.text(0.025, 0, _("line   (▶ the line that just ran)"), fontsize=8, color="#777777", va="center")
        for i, line in enumerate(self.lines, start=1):
            done = i <= snap.step
            if i == snap.step:
                code.add_patch(Rectangle((0, i - 0.45), 1, 0.9,
                                         facecolor="#fff2cc", edgecolor="none"))
            failed = self.snapshots[i].error is not None
            code.text(0.025, i, f"{i:>2}  {line}", family="monospace", fontsize=8.5, va="center",
                      color=(RED if failed and done else "#111111" if done else "#aaaaaa"))
            if i == snap.step:
                code.text(0.003, i, "▶", fontsize=8, va="center", ha="left", color=ORANGE)
        # versions: rows = steps, columns = tensors; a header row of names, the quantity said once above it
        table.set_xlim(-0.5, max(len(names), 1) - 0.5)
        table.set_ylim(self.n_steps + 0.5, top)
        table.axis("off")
        table.text((len(names) - 1) / 2, top - 0.1, _("._version of each tensor after each line"),
                   ha="center", va="bottom", fontsize=8, color="#777777")
        header = 7.5 if len(names) <= 6 else 6.5
        for j, n in enumerate(names):
            table.text(j, 0, n if len(n) <= 8 else n[:7] + "…", ha="center", va="center",
                       fontsize=header, family="monospace")
        used: dict[str, bool] = {}    # cell colour -> drawn; the legend shows only those
        bold = False
        for s in self.snapshots[1:snap.step + 1]:
            stale_names = {x.name for _, x in s.stale}
            for j, n in enumerate(names):
                if n not in s.tensors:
                    continue
                v = s.tensors[n].version
                prev = self.snapshots[s.step - 1].tensors.get(n)
                bumped = prev is not None and prev.version != v
                colour = C_STALE if n in stale_names else (C_BUMP if bumped else C_CELL)
                used[colour] = True
                bold = bold or bumped
                table.add_patch(Rectangle((j - 0.45, s.step - 0.42), 0.9, 0.84, facecolor=colour,
                                          edgecolor=RED if n in stale_names else "none"))
                table.text(j, s.step, str(v), ha="center", va="center", fontsize=9,
                           fontweight="bold" if bumped else "normal")
        # bottom: what is saved now, and the verdict
        bottom.axis("off")
        lines = self.saved_lines(snap)
        if len(lines) > 5:
            lines = lines[:4] + [_(f"(+{len(lines) - 4} more)")]
        verdict = self.verdict(snap)
        if snap.error:
            verdict = textwrap.shorten(verdict, 240)
        bottom.text(0, 1, _("what each autograd node saved (and that tensor's version):") + "\n" + "\n".join(lines),
                    va="top", family=MONO, fontsize=8)
        labels = {C_CELL: _("version unchanged on that line"),
                  C_BUMP: _("version went up on that line"),
                  C_STALE: _("saved by a node, then written in place (stale)")}
        handles = [Patch(facecolor=c, edgecolor=RED if c == C_STALE else "#bbbbbb", label=labels[c])
                   for c in (C_CELL, C_BUMP, C_STALE) if c in used]
        if handles:
            legend = bottom.legend(handles=handles, loc="upper right", fontsize=7.5, frameon=False,
                                   title=_("bold number: went up on that line") if bold else None,
                                   title_fontsize=7.5, alignment="right")
            legend.get_title().set_color("#555555")
        bottom.text(0, 0.0, textwrap.fill(verdict, 125), va="bottom", fontsize=9.5, fontweight="bold",
                    color=RED if (snap.stale or snap.error) else GREEN if snap.has_graph else "#555555")
        where = "   " + _(f"(first fails after line {fail_at})") if fail_at else ""
        fig.suptitle((f"{self.title}  " + _(f"step {snap.step}/{self.n_steps}") + where).strip(), fontsize=10.5,
                     y=0.995)
        return fig

    # -- widget
    def widget(self):
        w = _widgets()
        slider = w.IntSlider(value=self.step, min=0, max=self.n_steps, description=_("line"),
                             continuous_update=False, layout=w.Layout(width="420px"))
        prev_b = w.Button(description=_("◀ prev"), layout=w.Layout(width="90px"))
        next_b = w.Button(description=_("next ▶"), layout=w.Layout(width="90px"))
        readout = w.HTML(value=self._html())

        def on_slider(change):
            if change["new"] != self.step:
                self.go(change["new"])

        slider.observe(on_slider, names="value")
        prev_b.on_click(lambda _b: self.prev())
        next_b.on_click(lambda _b: self.next())
        self._controls = (slider, readout)
        return w.VBox([w.HBox([prev_b, slider, next_b]), readout])


    def _refresh(self):
        if self._controls is not None:
            slider, readout = self._controls
            if slider.value != self.step:
                slider.value = self.step
            readout.value = self._html()
        if self._handle is not None:
            show_figure(self.figure(), self._handle)



# --------------------------------------------------------------------------- YOLO decode explorer

def _sigmoid(v: float) -> float:
    return 1.0 / (1.0 + math.exp(-v))


def decode_one(tx: float, ty: float, tw: float, th: float, col: int, row: int,
               anchor: tuple[float, float], stride: float) -> dict[str, float]:
    """YOLOv5 (release 5.0) decode of one cell's raw outputs, in pixels.

    ``cx = (2*sigmoid(tx) - 0.5 + col) * stride`` (same for y with the row) and
    ``w = (2*sigmoid(tw))**2 * anchor_w`` (same for h).
    """
    sx, sy, sw, sh = (_sigmoid(v) for v in (tx, ty, tw, th))
    return {
        "sx": sx, "sy": sy, "sw": sw, "sh": sh,
        "off_x": 2 * sx - 0.5, "off_y": 2 * sy - 0.5,
        "cx": (2 * sx - 0.5 + col) * stride, "cy": (2 * sy - 0.5 + row) * stride,
        "gain_w": (2 * sw) ** 2, "gain_h": (2 * sh) ** 2,
        "w": (2 * sw) ** 2 * anchor[0], "h": (2 * sh) ** 2 * anchor[1],
    }


class DecodeExplorer(_Explorer):
    """Sliders for one cell/anchor's raw outputs (tx, ty, tw, th); the decoded box on the image grid.

    The grid is ``nx`` x ``ny`` cells of ``stride`` pixels. Shown: the chosen cell, the region its
    centre can reach (``2*s - 0.5`` lies in (-0.5, 1.5), so half a cell beyond each side), the anchor
    box (dashed, centred on the decoded centre) and the decoded box; on the right the two squashing
    curves with the current values marked.
    """

    def __init__(self, nx: int = 5, ny: int = 4, stride: int = 16,
                 anchors=((10, 13), (16, 30), (33, 23)), col: int = 2, row: int = 1, anchor: int = 1,
                 tx: float = 0.0, ty: float = 0.0, tw: float = 0.0, th: float = 0.0):
        self.nx, self.ny, self.stride = nx, ny, stride
        self.anchors = [tuple(float(v) for v in a) for a in anchors]
        self.values = {"tx": float(tx), "ty": float(ty), "tw": float(tw), "th": float(th),
                       "col": int(col), "row": int(row), "anchor": int(anchor)}
        self._handle = None
        self._controls: dict[str, Any] = {}
        self._readout = None

    def set(self, **values) -> dict[str, float]:
        """Change raw outputs / cell / anchor (as the sliders do) and return the new decode."""
        for k, v in values.items():
            if k not in self.values:
                raise KeyError(f"unknown control {k!r}; use one of {sorted(self.values)}")
            self.values[k] = type(self.values[k])(v)
        self.values["col"] = max(0, min(self.values["col"], self.nx - 1))
        self.values["row"] = max(0, min(self.values["row"], self.ny - 1))
        self.values["anchor"] = max(0, min(self.values["anchor"], len(self.anchors) - 1))
        for k, c in self._controls.items():
            if c.value != self.values[k]:
                c.value = self.values[k]
        self._refresh()
        return self.decode()

    def decode(self) -> dict[str, float]:
        v = self.values
        return decode_one(v["tx"], v["ty"], v["tw"], v["th"], v["col"], v["row"],
                          self.anchors[v["anchor"]], self.stride)

    def box(self) -> tuple[float, float, float, float]:
        """The decoded box as (x1, y1, x2, y2) in pixels."""
        d = self.decode()
        return (d["cx"] - d["w"] / 2, d["cy"] - d["h"] / 2, d["cx"] + d["w"] / 2, d["cy"] + d["h"] / 2)

    def report(self) -> str:
        d, v, s = self.decode(), self.values, self.stride
        aw, ah = self.anchors[v["anchor"]]
        return (_(f"cell (col {v['col']}, row {v['row']}), anchor {v['anchor']} = {aw:g}x{ah:g} px, stride {s}") + "\n"
                f"x: s = sigmoid({v['tx']:+.2f}) = {d['sx']:.3f};  (2*s - 0.5 + {v['col']}) * {s} = {d['cx']:.1f} px\n"
                f"y: s = sigmoid({v['ty']:+.2f}) = {d['sy']:.3f};  (2*s - 0.5 + {v['row']}) * {s} = {d['cy']:.1f} px\n"
                f"w: s = sigmoid({v['tw']:+.2f}) = {d['sw']:.3f};  (2*s)**2 * {aw:g} = {d['gain_w']:.3f} * {aw:g} = {d['w']:.1f} px\n"
                f"h: s = sigmoid({v['th']:+.2f}) = {d['sh']:.3f};  (2*s)**2 * {ah:g} = {d['gain_h']:.3f} * {ah:g} = {d['h']:.1f} px")

    def figure(self) -> Figure:
        d, v, s = self.decode(), self.values, self.stride
        aw, ah = self.anchors[v["anchor"]]
        W, H = self.nx * s, self.ny * s
        fig = Figure(figsize=(10.5, 4.3))
        gs = fig.add_gridspec(2, 2, width_ratios=[1.6, 1], hspace=0.55, wspace=0.22)
        ax = fig.add_subplot(gs[:, 0])
        ax.set_xlim(-s, W + s)
        ax.set_ylim(H + s, -s)  # image coordinates: y grows downwards
        ax.set_aspect("equal")
        ax.add_patch(Rectangle((0, 0), W, H, facecolor="#f7f7f7", edgecolor="#333333", lw=1.2))
        for i in range(1, self.nx):
            ax.plot([i * s, i * s], [0, H], color="#cccccc", lw=0.8)
        for j in range(1, self.ny):
            ax.plot([0, W], [j * s, j * s], color="#cccccc", lw=0.8)
        c0, r0 = v["col"] * s, v["row"] * s
        ax.add_patch(Rectangle((c0, r0), s, s, facecolor="#dbe9f6", edgecolor=BLUE, lw=1.5, label=_("the cell")))
        ax.add_patch(Rectangle((c0 - s / 2, r0 - s / 2), 2 * s, 2 * s, facecolor="none", edgecolor=BLUE,
                               lw=1, ls=":", label=_("where its centre can land")))
        ax.add_patch(Rectangle((d["cx"] - aw / 2, d["cy"] - ah / 2), aw, ah, facecolor="none",
                               edgecolor=ORANGE, lw=1.5, ls="--", label=_(f"anchor {aw:g}x{ah:g}")))
        ax.add_patch(Rectangle((d["cx"] - d["w"] / 2, d["cy"] - d["h"] / 2), d["w"], d["h"],
                               facecolor=(0.17, 0.63, 0.17, 0.12), edgecolor=GREEN, lw=2.2, label=_("decoded box")))
        ax.plot([d["cx"]], [d["cy"]], "o", color=GREEN, ms=5)
        ax.plot([c0 + s / 2], [r0 + s / 2], "+", color=BLUE, ms=8)
        ax.set_xticks([i * s for i in range(self.nx + 1)])
        ax.set_yticks([j * s for j in range(self.ny + 1)])
        ax.tick_params(labelsize=7)
        ax.set_title(_(f"decoded box: centre ({d['cx']:.1f}, {d['cy']:.1f}) px, size {d['w']:.1f} x {d['h']:.1f} px"),
                     fontsize=9.5)
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.06), ncol=2, fontsize=7.5, frameon=False)
        ts = [i / 20 for i in range(-120, 121)]
        c1 = fig.add_subplot(gs[0, 1])
        c1.plot(ts, [2 * _sigmoid(t) - 0.5 for t in ts], color=BLUE)
        for t, lab, m in ((v["tx"], "tx", "o"), (v["ty"], "ty", "s")):
            c1.plot([t], [2 * _sigmoid(t) - 0.5], m, color=BLUE, ms=5, label=lab)
        c1.axhline(-0.5, color="#999999", lw=0.7, ls=":")
        c1.axhline(1.5, color="#999999", lw=0.7, ls=":")
        c1.set_title(_("offset in cells: 2*sigmoid(t) - 0.5  (between -0.5 and 1.5)"), fontsize=8)
        c1.tick_params(labelsize=7)
        c1.legend(fontsize=7, loc="upper left")
        c2 = fig.add_subplot(gs[1, 1])
        c2.plot(ts, [(2 * _sigmoid(t)) ** 2 for t in ts], color=ORANGE)
        for t, lab, m in ((v["tw"], "tw", "o"), (v["th"], "th", "s")):
            c2.plot([t], [(2 * _sigmoid(t)) ** 2], m, color=ORANGE, ms=5, label=lab)
        c2.axhline(4, color="#999999", lw=0.7, ls=":")
        c2.set_title(_("anchor gain: (2*sigmoid(t))**2  (between 0 and 4)"), fontsize=8)
        c2.set_xlabel(_("raw output t"), fontsize=8)
        c2.tick_params(labelsize=7)
        c2.legend(fontsize=7, loc="upper left")
        return fig

    def widget(self):
        w = _widgets()
        style = {"description_width": "60px"}
        ctl = {k: w.FloatSlider(value=self.values[k], min=-6, max=6, step=0.1, description=k,
                                continuous_update=False, style=style) for k in ("tx", "ty", "tw", "th")}
        ctl["col"] = w.IntSlider(value=self.values["col"], min=0, max=self.nx - 1, description=_("col"),
                                 continuous_update=False, style=style)
        ctl["row"] = w.IntSlider(value=self.values["row"], min=0, max=self.ny - 1, description=_("row"),
                                 continuous_update=False, style=style)
        ctl["anchor"] = w.Dropdown(options=[(f"{i}: {a[0]:g}x{a[1]:g} px", i) for i, a in enumerate(self.anchors)],
                                   value=self.values["anchor"], description=_("anchor"), style=style)
        self._readout = w.HTML(value=self._html())

        def make_cb(key):
            def cb(change):
                if change["new"] != self.values[key]:
                    self.set(**{key: change["new"]})
            return cb

        for k, c in ctl.items():
            c.observe(make_cb(k), names="value")
        self._controls = ctl
        left = w.VBox([ctl[k] for k in ("tx", "ty", "tw", "th")])
        right = w.VBox([ctl["col"], ctl["row"], ctl["anchor"]])
        return w.VBox([w.HBox([left, right]), self._readout])


    def _refresh(self):
        if self._readout is not None:
            self._readout.value = self._html()
        if self._handle is not None:
            show_figure(self.figure(), self._handle)


