"""Names, objects and storage: measuring what a Python statement does to a tensor.

Assignment 2 teaches students to tell, for any statement about a tensor named ``x``, whether it
*rebinds the name* or *writes into the memory*, by measuring instead of guessing. This module holds
what the student's notebook uses:

* the measuring instrument of the lessons: :func:`make_x` (the fresh input), :func:`witnesses`
  (``id``, ``untyped_storage().data_ptr()``, ``_version`` and a copy of the values), :func:`measure`
  (the raw facts about one statement; deciding its category is the student's exercise, so no
  category is computed here) and :func:`print_measurements`;
* :func:`check_example_category`, the visible tests' check of the student's ``classify_update`` on
  the notebook's own examples (the caller states the expected category);
* the explorer: :class:`StorageExplorer` (ipywidgets; its callbacks are plain methods so tests can
  drive them headless), :func:`explorer` (shows it, or a static figure when there is no front end)
  and :func:`draw_names_objects_storage` (the names -> objects -> storage picture);
* the model question's inputs, :func:`model_inputs`.

The reference classifier and the hidden checks live on the instructor side
(``instructor/hidden/a02_names_and_storage/``), never in this package.

The categories the student's ``classify_update`` returns (applied in this order; ``x0`` is the
tensor ``x`` named before the statement, ``x1`` what ``x`` names after it):

``in-place``         ``x0._version`` went up: an in-place operation ran on ``x0`` (or on a tensor
                     sharing its counter: a view, ``x.detach()``), by however many steps.
``untracked-write``  the version did not move, but ``x0``'s contents did (values, shape or
                     memory): written behind autograd's back (``x.data += 1``).
``no-change``        ``x1 is x0`` and nothing about ``x0`` changed (``x = x.contiguous()``).
``new-view``         ``x1`` is another object sharing ``x0``'s storage (``x = x[:]``).
``new-tensor``       ``x1`` is another object with memory of its own (``x = x + 1``).

Nothing here is a table of what PyTorch does: every answer is measured on the installed version.
"""
from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Callable

import torch

from .checks import call_student, check_type, fail
from .i18n import N_, _
from .runtime import course_device

__all__ = [
    "CATEGORIES", "EXAMPLES", "make_x", "Witness", "witnesses", "Measurement", "measure",
    "check_example_category", "measurement_rows", "print_measurements", "measurement_html",
    "draw_names_objects_storage", "StorageExplorer", "explorer", "has_front_end", "model_inputs",
]

CATEGORIES = ("in-place", "untracked-write", "no-change", "new-view", "new-tensor")

#: Statements the explorer offers (students may type any other).
EXAMPLES = (
    "x = x + 1", "x += 1", "x[0] = 1", "x[0] += 1", "x[:] = x + 1", "x.add_(1)", "x = x.add_(1)",
    "torch.add(x, 1, out=x)", "x = x[:]", "x = x.clone()", "x.sigmoid_()", "x.t_()", "x.requires_grad_()",
    "x.data += 1", "x.detach().add_(1)", "x = x.contiguous()", "x *= 1",
)

_VALUES = [[0.5, -1.5, 2.0], [3.0, -0.25, 1.25]]  # distinct, non-zero, exact in float16


def make_x(device: torch.device | str | None = None, dtype: torch.dtype | None = None) -> torch.Tensor:
    """The fresh tensor every statement is tried on: shape (2, 3), distinct non-zero values,
    no ``requires_grad`` (float32 on the course device unless told otherwise)."""
    device = torch.device(device) if device is not None else course_device()
    return torch.tensor(_VALUES, dtype=dtype or torch.float32, device=device)


@dataclass
class Witness:
    """What can be measured about one tensor object at one moment."""
    id: int
    data_ptr: int
    version: int
    shape: tuple
    dtype: torch.dtype
    values: torch.Tensor = field(repr=False)  # a detached copy

    def short(self) -> str:
        return _(f"id {self.id:#x}, storage {self.data_ptr:#x}, _version {self.version}")


def witnesses(t: torch.Tensor) -> Witness:
    """The three witnesses of a tensor (object, memory, the tensor's own version counter) and a copy of
    its values."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"expected a tensor, got {type(t).__name__}")
    return Witness(id(t), t.untyped_storage().data_ptr(), t._version, tuple(t.shape), t.dtype,
                   t.detach().clone())


def _contents_changed(before: Witness, after: Witness) -> bool:
    if (before.data_ptr, before.shape, before.dtype) != (after.data_ptr, after.shape, after.dtype):
        return True
    return not torch.equal(before.values, after.values)


@dataclass
class Measurement:
    """Everything :func:`measure` saw (raw facts, no category). ``x`` names ``x0`` before and ``x1``
    after; ``a = x`` was taken before the statement, so the alias ``a`` always names ``x0``."""
    statement: str
    before: Witness            # x0 before
    original_after: Witness    # x0 after (what the alias a sees)
    after: Witness             # x1: what the name x refers to after the statement
    same_object: bool
    same_storage: bool
    version_bumped: bool
    contents_changed: bool

    @property
    def alias_changed(self) -> bool:
        return self.contents_changed

    def facts(self) -> str:
        """The raw facts, in one line (no verdict: applying the rules is the exercise)."""
        return (f"same object {self.same_object}, same storage {self.same_storage}, "
                f"x0._version {self.before.version} -> {self.original_after.version}, "
                f"x0's contents changed {self.contents_changed}")


def measure(statement: str, device: torch.device | str | None = None,
            dtype: torch.dtype | None = None) -> Measurement:
    """Run ``statement`` (with ``torch`` and a fresh ``x`` from :func:`make_x` in scope) and measure it.

    A reference to the original tensor is kept, so its ``id`` cannot be reused by a new object.
    Errors raised by the statement propagate; the statement must leave ``x`` naming a tensor.
    """
    x0 = make_x(device, dtype)
    a = x0  # the alias: another name for the same object
    before = witnesses(x0)
    scope = {"torch": torch, "x": x0, "a": a}
    exec(compile(statement, "<statement>", "exec"), scope)  # noqa: S102 - course statements
    x1 = scope.get("x")
    if not isinstance(x1, torch.Tensor):
        raise TypeError(f"after {statement!r}, x names a {type(x1).__name__}, not a tensor")
    original_after, after = witnesses(x0), witnesses(x1)
    return Measurement(statement, before, original_after, after, x1 is x0,
                       after.data_ptr == before.data_ptr, original_after.version > before.version,
                       _contents_changed(before, original_after))


def check_example_category(classify_update: Callable, statement: str, expected: str,
                           device: torch.device | str | None = None, dtype: torch.dtype | None = None) -> str:
    """The visible tests' check: ``classify_update(statement, device=..., dtype=...)`` must return
    ``expected``, the category the notebook itself states for this example. On a mismatch the
    message shows what :func:`measure` saw, so the student can apply the rules again."""
    device = torch.device(device) if device is not None else course_device()
    dtype = dtype or torch.float32
    what = f"classify_update({statement!r})"
    got = call_student(classify_update, statement, device=device, dtype=dtype, name="classify_update")
    check_type(got, str, what, hint=f"return one of {CATEGORIES}.")
    if got not in CATEGORIES:
        fail(f"{what} returned an unknown category", got=repr(got),
             expected=" or ".join(map(repr, CATEGORIES)), hint="spell the category exactly as in the table above.")
    if got != expected:
        m = measure(statement, device, dtype)
        fail(f"{what} gave the wrong category", inputs=f"x = make_x({str(device)!r}, {dtype})",
             expected=repr(expected), got=repr(got), detail=_(f"measured: same object {m.same_object}, same storage {m.same_storage}, x0._version "
                                             f"{m.before.version} -> {m.original_after.version}, x0's contents changed "
                                             f"{m.contents_changed}"),
             hint=_example_hint(expected, got, m))
    return got


def _example_hint(expected: str, got: str, m: Measurement) -> str:
    """What to look at next, from the measured facts of an example whose category the notebook states
    (marked: :func:`fail` translates its "try next" line)."""
    before, after = m.before.version, m.original_after.version
    if expected == "in-place" and after - before > 1:
        return N_(f"x0._version went from {before} to {after}: any increase means an in-place operation ran, "
                "not only an increase by one (one statement can run several). Test x0._version > the version "
                "read before.")
    if expected == "in-place":
        return N_("x0._version went up: test it first, on the old tensor x0 (keep x0 = x), even when x was "
                "rebound afterwards or no value changed.")
    if expected == "untracked-write":
        return N_("x0._version stayed put, but x0's contents did not: compare its values (a copy taken before, "
                "torch.equal), its shape and its storage address with what they were before the statement.")
    if expected == "new-view" and got == "new-tensor":
        return N_("x now names another object on x0's memory: compare untyped_storage().data_ptr() (the start "
                "of the block), not x.data_ptr() (the first element, which moves for x[1:]).")
    if expected == "no-change" and got == "in-place":
        return N_("x0._version did not move (a method name ending in _ is not enough), and x still names x0: "
                "nothing happened to it.")
    return N_("apply the rules of the table in order, on measurements: keep x0 = x, read its _version, "
            "storage address, shape and a copy of its values before the statement, and compare after.")


# --------------------------------------------------------------------------- showing measurements

def measurement_rows(m: Measurement) -> list[tuple[str, str, str, str]]:
    """(who, id, data_ptr, _version) rows: x before, x after, and the alias a after."""
    def row(who: str, w: Witness) -> tuple[str, str, str, str]:
        return who, f"{w.id:#x}", f"{w.data_ptr:#x}", str(w.version)
    return [row(_("x before"), m.before), row(_("x after"), m.after), row(_("a after (a = x before)"), m.original_after)]


def _values_text(w: Witness) -> str:
    return str([round(v, 3) for v in w.values.double().flatten().tolist()])


def _width(text: str) -> int:
    """Columns ``text`` takes in a monospace font (a Chinese character takes two)."""
    import unicodedata

    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _pad(text: str, width: int, left: bool = False) -> str:
    """``text`` padded to ``width`` columns (on the right when ``left``, like ``:<``; else like ``:>``)."""
    fill = " " * max(0, width - _width(text))
    return text + fill if left else fill + text


def print_measurements(statements, device=None, dtype=None) -> None:
    """A text table of the raw measurements for several statements (no verdicts: you decide)."""
    head = " ".join([_pad(_("statement"), 28, left=True), _pad(_("same object"), 11), _pad(_("same storage"), 12),
                     _pad("x0._version", 11), _pad(_("x0 changed"), 10)])
    print(head)
    print("-" * _width(head))
    for s in statements:
        m = measure(s, device, dtype)
        print(f"{s:<28} {str(m.same_object):>11} {str(m.same_storage):>12} "
              f"{f'{m.before.version} -> {m.original_after.version}':>11} {str(m.contents_changed):>10}")


def measurement_html(m: Measurement) -> str:
    """The explorer's read-out as an HTML table."""
    rows = "".join(
        f"<tr><td>{html.escape(who)}</td><td><code>{i}</code></td><td><code>{p}</code></td><td>{v}</td></tr>"
        for who, i, p, v in measurement_rows(m))
    return (f"<p><b>{html.escape(m.statement)}</b></p>"
            f"<table><tr><th>{_('name')}</th><th>id(...)</th><th>untyped_storage().data_ptr()</th><th>_version</th></tr>"
            f"{rows}</table>"
            "<p>" + _(f"x after is the same object: <b>{m.same_object}</b>; shares the old storage: <b>{m.same_storage}</b>; "
                      f"x0's contents changed: <b>{m.contents_changed}</b>; "
                      f"x0._version: <b>{m.before.version} &rarr; {m.original_after.version}</b> (measured)") + "</p>"
            "<p>" + _(f"a (alias) before: <code>{_values_text(m.before)}</code>") + "<br>"
            + _(f"a (alias) after: <code>{_values_text(m.original_after)}</code>") + "<br>"
            + _(f"x after: <code>{_values_text(m.after)}</code>") + "</p>")


def draw_names_objects_storage(m: Measurement, fig=None):
    """Two panels (before / after): names -> tensor objects -> storage, arrows included."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyBboxPatch

    if fig is None:
        fig = plt.figure(figsize=(10, 3.6))
    axes = fig.subplots(1, 2)

    def box(ax, xy, text, color):
        x, y = xy
        ax.add_patch(FancyBboxPatch((x - 0.13, y - 0.09), 0.26, 0.18, boxstyle="round,pad=0.02",
                                    facecolor=color, edgecolor="black"))
        ax.text(x, y, text, ha="center", va="center", fontsize=8)

    def arrow(ax, a, b):
        ax.annotate("", xy=(b[0] - 0.15, b[1]), xytext=(a[0] + 0.15, a[1]),
                    arrowprops=dict(arrowstyle="->", lw=1.4))

    def panel(ax, title, name_targets, objects, storages):
        ax.set_xlim(0, 1.2)
        ax.set_ylim(0, 1)
        ax.axis("off")
        ax.set_title(title, fontsize=10)
        for col, head in ((0.15, _("names")), (0.55, _("objects")), (0.98, _("storage"))):
            # italic in English; the Chinese fonts have no italic face (matplotlib would pick one without Chinese)
            ax.text(col, 0.97, head, ha="center", fontsize=9, style="italic" if head.isascii() else "normal")
        obj_y = {key: 0.7 - 0.4 * i for i, key in enumerate(objects)}
        sto_y = {key: 0.7 - 0.4 * i for i, key in enumerate(storages)}
        for i, (name, target) in enumerate(name_targets):
            ny = 0.7 - 0.4 * i
            box(ax, (0.15, ny), name, "#e8f0ff")
            arrow(ax, (0.15, ny), (0.55, obj_y[target]))
        for key, (text, sto) in objects.items():
            box(ax, (0.55, obj_y[key]), text, "#fff3d6")
            arrow(ax, (0.55, obj_y[key]), (0.98, sto_y[sto]))
        for key, text in storages.items():
            box(ax, (0.98, sto_y[key]), text, "#e4f7e4")

    b, oa, af = m.before, m.original_after, m.after

    def obj_text(w):
        return _(f"Tensor id ..{w.id % 0x10000:04x}") + f"\n_version {w.version}"

    def sto_text(w, label):
        vals = w.values.double().flatten().tolist()[:3]
        return f"{label} ..{w.data_ptr % 0x10000:04x}\n" + ", ".join(f"{v:g}" for v in vals) + ", ..."

    panel(axes[0], _("before"), [("x", "x0"), ("a", "x0")], {"x0": (obj_text(b), "s0")},
          {"s0": sto_text(b, _("storage"))})
    if m.same_object:
        objects = {"x0": (obj_text(oa), "s0")}
        names = [("x", "x0"), ("a", "x0")]
    else:
        objects = {"x1": (obj_text(af), "s0" if m.same_storage else "s1"), "x0": (obj_text(oa), "s0")}
        names = [("x", "x1"), ("a", "x0")]
    storages = {"s0": sto_text(oa, _("storage"))}
    if not m.same_storage:
        storages = {"s1": sto_text(af, _("new storage")), **storages} if not m.same_object else storages
    title = _(f"after  {m.statement}")
    change = f"x0._version {b.version} -> {oa.version}"     # measured, never assumed to be +1
    if m.contents_changed:
        title += "\n" + (_(f"(x0 changed, {change})") if m.version_bumped else _(f"(x0 changed, {change}: NOT bumped)"))
    elif m.version_bumped:
        title += "\n" + _(f"(x0's contents unchanged, {change})")
    panel(axes[1], title, names, objects, storages)
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------- the explorer

def has_front_end() -> bool:
    """True inside a Jupyter kernel (a front end may render widgets), False in plain Python."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


class StorageExplorer:
    """Pick or type a statement, press *Measure*, read id / data_ptr / _version before and after.

    The callbacks are plain methods (:meth:`on_pick`, :meth:`on_measure`), so a test can drive the
    widget without a browser: set ``explorer.text.value`` and call ``explorer.button.click()``.
    """

    def __init__(self, statements=EXAMPLES, device=None, dtype=None, draw: bool = True):
        import ipywidgets as widgets

        self.device, self.dtype, self.draw = device, dtype, draw
        self.last: Measurement | None = None
        self.error: str | None = None
        self.figures = 0
        self.dropdown = widgets.Dropdown(options=list(statements), value=statements[0], description=_("example"))
        self.text = widgets.Text(value=statements[0], description=_("statement"),
                                 layout=widgets.Layout(width="420px"))
        self.button = widgets.Button(description=_("Measure"), button_style="primary")
        self.html = widgets.HTML()
        self.out = widgets.Output()
        self.dropdown.observe(self.on_pick, names="value")
        self.button.on_click(self.on_measure)
        self.text.continuous_update = False
        self.widget = widgets.VBox([widgets.HBox([self.dropdown]), widgets.HBox([self.text, self.button]),
                                    self.html, self.out])
        self.on_measure()

    def on_pick(self, change) -> None:
        """Dropdown callback: copy the example into the text box and measure it."""
        self.text.value = change["new"] if isinstance(change, dict) else change.new
        self.on_measure()

    def on_measure(self, _button=None) -> None:
        """Button callback: measure ``self.text.value`` and show the read-out (and the picture)."""
        statement = self.text.value.strip()
        try:
            self.last, self.error = measure(statement, self.device, self.dtype), None
        except Exception as err:  # noqa: BLE001 - a typo must show a message, not break the widget
            self.last, self.error = None, f"{type(err).__name__}: {err}"
            self.html.value = ("<p style='color:#b00'>" + _(f"{html.escape(statement)} raised {html.escape(self.error)}")
                               + "</p>")
            return
        self.html.value = measurement_html(self.last)
        if self.draw:
            import matplotlib.pyplot as plt
            self.out.clear_output(wait=True)
            with self.out:
                fig = draw_names_objects_storage(self.last)
                self.figures += 1
                plt.show()
                plt.close(fig)


def explorer(statements=EXAMPLES, device=None, dtype=None):
    """Show the explorer in a notebook; without a widget front end, draw the static picture instead.

    Returns the :class:`StorageExplorer` (or ``None`` when only the static figure was drawn).
    """
    try:
        import ipywidgets  # noqa: F401
        usable = has_front_end()
    except ImportError:
        usable = False
    if usable:
        from IPython.display import display
        ex = StorageExplorer(statements, device, dtype)
        display(ex.widget)
        return ex
    import matplotlib.pyplot as plt
    m = measure(statements[0], device, dtype)
    for who, i, p, v in measurement_rows(m):
        print(f"{_pad(who, 24, left=True)} id {i}  data_ptr {p}  _version {v}")
    draw_names_objects_storage(m)
    plt.show()
    return None


# --------------------------------------------------------------------------- the model question

def model_inputs(device=None, dtype=torch.float64, n: int = 5, seed: int = 0):
    """Leaf tensors ``x`` (n, 3) and ``w`` (3, 4) requiring grad, reproducible from ``seed``."""
    device = torch.device(device) if device is not None else course_device()
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 3, generator=g, dtype=torch.float64)
    w = torch.randn(3, 4, generator=g, dtype=torch.float64)
    return (x.to(device, dtype).requires_grad_(), w.to(device, dtype).requires_grad_())
