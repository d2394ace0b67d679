"""Name the line that broke autograd's in-place rule.

PyTorch's error ``one of the variables needed for gradient computation has
been modified by an inplace operation: [torch.FloatTensor [1, 3, 8, 8, 85]],
which is output 0 of Sigmoid, is at version 2; expected version 0 instead``
names the tensor and the op that produced it, but not the line that wrote into
it.  This module watches the program's ops and answers that question:

    with locate_inplace() as loc:        # from Python
        loss = model(x).sum()
        loss.backward()                  # RuntimeError, now with a report note

    python -m autograder.inplace train.py [ARGS...]   # from the shell

    %load_ext autograder.inplace         # in a notebook: every cell watched; an in-place
                                         # error shows as always, the report printed under it

How it works, and why it cannot change what it observes, is told in
:mod:`autograder.inplace_recorder` (the ``TorchDispatchMode`` that sees every op, reads what
autograd saved and asks PyTorch's own version check which saves a write broke; ops pass through
untouched, so gradients are bit-for-bit the same).  The reports' words, and the parsing of
PyTorch's message, are in :mod:`autograder.inplace_messages`.  This module holds the rest: the
context manager (``InplaceLocator``), the assertions the hidden tests use, the notebook extension
and the command line; every name is importable from here.

Cost: a Python dispatch mode makes every aten op a call into Python.  The
locator does per op only what a later report may need (see ``_Recorder``),
and steps off the mode stack while the autograd engine runs backward's own
ops, which make no graph (it stays on for ``create_graph=True``; a write made
by a backward hook is therefore not located).  ``measure_overhead`` measures
the cost: ~1.35x on the course detector's forward + backward.

While active, the locator keeps references to the autograd nodes it has seen
(their saved tensors are still freed by ``backward``); everything is dropped
when the ``with`` block ends, except the findings.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import sys
import time
from typing import Callable

import torch
from torch.utils._python_dispatch import _get_current_dispatch_mode

from .i18n import _
# the recorder and the reports, and the names they always had here (re-exported: tests, notebooks and the
# hidden checks import them from autograder.inplace)
from .inplace_messages import (_UNSEEN, VersionError, _format_hidden, _format_rule, _format_saved,  # noqa: F401
                               _format_unlocated, _LEAF_RE, _VIEW_RE, parse_version_error)
from .inplace_recorder import (InplaceWrite, SavedTensor, Site, _overlaps, _Recorder, _run,  # noqa: F401
                               _tensors, _traceback_site, cell_name)

__all__ = [
    "locate_inplace", "InplaceLocator", "run_located", "assert_no_inplace_on_saved",
    "assert_no_write_on_saved", "InplaceOnSavedError", "parse_version_error", "VersionError", "explain",
    "SavedTensor", "InplaceWrite", "Site", "measure_overhead", "main",
    "load_ipython_extension", "unload_ipython_extension",
]


def explain(err: BaseException, locator: "InplaceLocator | None" = None) -> str | None:
    """A plain-words report for an in-place RuntimeError, or None if it is another error.

    Uses the locator given, else the report a locator attached to the error, else (inside a
    notebook cell watched by ``%load_ext autograder.inplace``) what that cell's locator saw, else
    only what PyTorch's message says.
    """
    if locator is not None:
        return locator.explain(err)
    report = getattr(err, "inplace_report", None)
    if report:
        return report
    parsed = parse_version_error(err)
    if parsed is not None:
        watching = _cell_locator()
        return watching.explain(err) if watching is not None else _format_unlocated(parsed)
    text = str(err)
    if _LEAF_RE.search(text) or _VIEW_RE.search(text):
        return _format_rule(_traceback_site(err), bool(_LEAF_RE.search(text)))
    return None


# ------------------------------------------------------ backward's own ops, unwatched

# backward() and autograd.grad() reach the C++ engine through this one Python function; the engine
# captures the thread's dispatch modes when it starts, and runs every node's backward under them.
_ENGINE_RUN_BACKWARD = getattr(torch.autograd, "_engine_run_backward", None)
_engine_patch_holders = 0


def _engine_run_backward_unwatched(t_outputs, *args, **kwargs):
    """The engine, run with the innermost locator stepped off the mode stack.

    Backward's own ops (``sigmoid_backward``, ``convolution_backward``, the ``detach`` of each
    gradient ...) make no graph and write nothing a report could name, yet a watching mode would
    turn each into a call into Python: about half of what watching costs.  So the locator leaves
    the stack while the engine runs and comes back after (also when backward raises).  It stays
    on with ``create_graph=True``, where backward builds a graph whose saves can be broken too.
    Not seen as a result: a write made by a backward hook.  PyTorch's version check is the
    engine's own, so the error is the same either way.
    """
    __tracebackhide__ = True  # (IPython and pytest leave this frame out; the locator's exit drops it)
    recorder = _get_current_dispatch_mode()
    create_graph = args[2] if len(args) > 2 else kwargs.get("create_graph", True)
    if type(recorder) is not _Recorder or not recorder.skip_backward or create_graph is not False:
        return _ENGINE_RUN_BACKWARD(t_outputs, *args, **kwargs)
    recorder.flush()  # the forward's last op, before the engine frees what it saved
    recorder.__exit__(None, None, None)
    try:
        return _ENGINE_RUN_BACKWARD(t_outputs, *args, **kwargs)
    finally:
        recorder.__enter__()


def _hold_engine_patch() -> None:
    global _engine_patch_holders
    _engine_patch_holders += 1
    if _engine_patch_holders == 1 and _ENGINE_RUN_BACKWARD is not None and \
            torch.autograd._engine_run_backward is _ENGINE_RUN_BACKWARD:
        torch.autograd._engine_run_backward = _engine_run_backward_unwatched


def _release_engine_patch() -> None:
    global _engine_patch_holders
    _engine_patch_holders = max(0, _engine_patch_holders - 1)
    if not _engine_patch_holders and torch.autograd._engine_run_backward is _engine_run_backward_unwatched:
        torch.autograd._engine_run_backward = _ENGINE_RUN_BACKWARD


def _drop_own_frames(err: BaseException) -> None:
    """Unlink ``_engine_run_backward_unwatched``'s frame from the error's traceback: what then
    shows is exactly what PyTorch shows without the locator."""
    tb = err.__traceback__
    while tb is not None and tb.tb_next is not None:
        if tb.tb_next.tb_frame.f_code is _engine_run_backward_unwatched.__code__:
            tb.tb_next = tb.tb_next.tb_next
        else:
            tb = tb.tb_next


# ---------------------------------------------------------------- public entry points

class InplaceLocator:
    """Context manager: watch the code inside, explain in-place errors raised in it.

    A RuntimeError about in-place writes that leaves the block is re-raised
    unchanged except for an added note (``add_note``) and an ``inplace_report``
    attribute holding the report.  ``broken`` lists saves that were broken,
    even if backward never ran; ``explain(err)`` reports on an error caught
    elsewhere (e.g. a backward run after the block).
    """

    def __init__(self, annotate: bool = True):
        self.annotate = annotate
        self._recorder = _Recorder()

    def __enter__(self) -> "InplaceLocator":
        self._holds_patch = self._recorder.skip_backward
        if self._holds_patch:
            _hold_engine_patch()
        self._recorder.__enter__()
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        self._recorder.__exit__(exc_type, exc, tb)
        self._release()
        if exc is not None:
            _drop_own_frames(exc)
        self._recorder.flush()
        if exc is not None and self.annotate and isinstance(exc, Exception):
            self._annotate(exc)
        self._recorder.nodes.clear()
        self._recorder.by_storage.clear()
        self._recorder._last_caller = None
        for record in (*self._recorder.broken, *self._recorder.hidden):
            record._node = None
        return False

    def _release(self) -> None:
        if getattr(self, "_holds_patch", False):
            self._holds_patch = False
            _release_engine_patch()

    @property
    def broken(self) -> list[SavedTensor]:
        """Saves written after the save, in the order they broke."""
        self._recorder.flush()
        return list(self._recorder.broken)

    @property
    def hidden(self) -> list[SavedTensor]:
        """Saves whose memory was written where PyTorch's version check cannot see it: through ``.data``
        (a tensor with a version counter of its own), or a save that saved-tensor hooks hand back as the
        tensor itself. Nothing fails; backward silently uses the new values. Each record's ``writes``
        name the lines (their versions do not move)."""
        self._recorder.flush()
        return list(self._recorder.hidden)

    def explain(self, err: BaseException) -> str | None:
        """Report for an in-place RuntimeError, using what this locator saw."""
        self._recorder.flush()
        parsed = parse_version_error(err)
        if parsed is None:
            return explain(err)
        record = self._match(parsed, str(err))
        if record is None:
            return _format_unlocated(parsed)
        where = _traceback_site(err)
        header = (_(f"In-place write on a tensor autograd saved for backward (error raised at {where.where}).")
                  if where else _("In-place write on a tensor autograd saved for backward."))
        others = [r for r in self._recorder.broken if r is not record and r._key == record._key]
        return _format_saved(record, parsed, header, others)

    def _match(self, parsed: VersionError, text: str) -> SavedTensor | None:
        """The broken save PyTorch complains about: same message, else same numbers."""
        head = text.split(" Hint:")[0]
        broken = self._recorder.broken
        for record in reversed(broken):
            if record.message and record.message.split(" Hint:")[0] == head:
                return record
        for record in reversed(broken):
            if (record.shape == parsed.shape and record.version == parsed.version_saved
                    and record.current_version == parsed.version_now):
                return record
        return None

    def _annotate(self, err: BaseException) -> None:
        if getattr(err, "inplace_report", None):
            return  # an inner locator already explained it
        report = self.explain(err)
        if report:
            err.inplace_report = report
            err.add_note(report)

    def _broken_needed_by(self, result, hidden: bool = False) -> list[SavedTensor]:
        """Broken saves (``hidden``: saves written unseen) whose node backward from ``result`` would reach."""
        roots = [t.grad_fn for t in _tensors(result) if t.grad_fn is not None]
        broken = self.hidden if hidden else self.broken
        if not roots:
            return broken
        seen, stack = {}, roots
        while stack:
            node = stack.pop()
            if node is not None and id(node) not in seen:
                seen[id(node)] = node
                stack.extend(nxt for nxt, _ in node.next_functions)
        return [r for r in broken if r._node is not None and seen.get(id(r._node)) is r._node]


def locate_inplace(annotate: bool = True) -> InplaceLocator:
    """``with locate_inplace() as loc:`` around forward and backward."""
    return InplaceLocator(annotate=annotate)


def run_located(fn: Callable, *args, **kwargs):
    """Call ``fn(*args, **kwargs)`` under a locator (errors get the report note)."""
    with InplaceLocator():
        return fn(*args, **kwargs)


def why_backward_fails(fn: Callable, *inputs, **kwargs) -> str | None:
    """Rerun ``fn`` on copies of ``inputs`` and a backward of its outputs under the locator.

    For test feedback: when a backward already failed outside the locator, this names the lines
    that wrote into the saved tensor. Returns the report, or None when the rerun does not fail
    with an in-place error. The caller's tensors are not touched (leaves are cloned).
    """
    copies = [t.detach().clone().requires_grad_(t.requires_grad) if isinstance(t, torch.Tensor) else t
              for t in inputs]
    try:
        with InplaceLocator():
            out = fn(*copies, **kwargs)
            outs = out if isinstance(out, (list, tuple)) else [out]
            roots = [o.float().sum() for o in outs if isinstance(o, torch.Tensor) and o.requires_grad]
            if roots:
                torch.autograd.backward(roots)
    except RuntimeError as err:
        return explain(err)
    except Exception:  # noqa: BLE001 - feedback only: any other failure means "no report"
        return None
    return None


class InplaceOnSavedError(AssertionError):
    """A forward pass wrote in place into a tensor autograd needs for backward."""

    def __init__(self, report: str, saved: list[SavedTensor]):
        super().__init__(report)
        self.report, self.saved = report, saved


def assert_no_inplace_on_saved(fn: Callable, *inputs, **kwargs):
    """Run ``fn`` (forward is enough); fail if it broke a save its result's backward needs.

    Returns ``fn``'s result when clean.  Raises ``InplaceOnSavedError`` (an
    AssertionError, so pytest shows it as a test failure) with the report.
    """
    with InplaceLocator() as loc:
        result = fn(*inputs, **kwargs)
        bad = loc._broken_needed_by(result)
    if bad:
        n = len(bad)
        header = (_(f"In-place write on a tensor autograd saved for backward: {n} saved tensors would make "
                    "backward fail.") if n > 1 else
                  _("In-place write on a tensor autograd saved for backward: 1 saved tensor would make backward "
                    "fail."))
        raise InplaceOnSavedError("\n".join(_format_saved(r, None, header if i == 0 else _("Also:"))
                                            for i, r in enumerate(bad)), bad)
    return result




def assert_no_write_on_saved(fn: Callable, *inputs, **kwargs):
    """Like :func:`assert_no_inplace_on_saved`, and also fail a write PyTorch's version check cannot see.

    A write into the memory of a tensor autograd saved, through ``.data`` (a tensor with a version
    counter of its own) or into a tensor saved-tensor hooks hand back as itself, breaks no save and
    raises nothing: backward silently uses the new values. This check matches each write to the
    saves by memory (the bytes each covers in its storage), so it fails those too. Returns ``fn``'s
    result when clean; raises ``InplaceOnSavedError`` (``saved``: the broken saves, then the ones
    written unseen) with the report.
    """
    with InplaceLocator() as loc:
        result = fn(*inputs, **kwargs)
        bad, unseen = loc._broken_needed_by(result), loc._broken_needed_by(result, hidden=True)
    unseen = [r for r in unseen if r not in bad]
    if bad or unseen:
        n = len(bad) + len(unseen)
        header = (_(f"In-place write on a tensor autograd saved for backward: {n} saved tensors written after "
                    "the save.") if n > 1 else
                  _("In-place write on a tensor autograd saved for backward: 1 saved tensor written after the save."))
        parts = [_format_saved(r, None, header if i == 0 else _("Also:")) for i, r in enumerate(bad)]
        parts += [_format_hidden(r, header if not parts and i == 0 else
                                 _("Also, a write autograd cannot see:")) for i, r in enumerate(unseen)]
        raise InplaceOnSavedError("\n".join(parts), bad + unseen)
    return result


def measure_overhead(model: torch.nn.Module | None = None, input_shape=(1, 3, 64, 64),
                     repeats: int = 15, threads: int = 1) -> float:
    """Cost of the locator: forward+backward time under it / plain time, the median over pairs.

    Same model, same input.  After 3 warm-up runs of each, ``repeats`` pairs of
    one plain and one located run follow each other in one process (in turn
    plain first and located first); the figure is the median of the pairs'
    ratios, so load that comes and goes on a shared machine hits both runs of a
    pair alike.  With ``threads=1`` (the default) the clock is this thread's CPU
    time; otherwise wall time.
    """
    torch.manual_seed(0)
    if model is None:
        model = torch.nn.Sequential(
            torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.BatchNorm2d(16), torch.nn.ReLU(inplace=True),
            torch.nn.Conv2d(16, 32, 3, stride=2, padding=1), torch.nn.ReLU(inplace=True),
            torch.nn.Conv2d(32, 32, 3, stride=2, padding=1), torch.nn.SiLU(),
            torch.nn.Conv2d(32, 21, 1))
    x = torch.randn(*input_shape)
    clock = time.thread_time if threads == 1 else time.perf_counter

    def timed(located: bool) -> float:
        start = clock()
        with InplaceLocator() if located else contextlib.nullcontext():
            model.zero_grad(set_to_none=True)
            model(x).sigmoid().sum().backward()
        return clock() - start

    old_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        for _ in range(3):  # warm up both paths (and the locator's per-op caches)
            timed(False), timed(True)
        ratios = []
        for i in range(repeats):
            if i % 2:
                located = timed(True)
                plain = timed(False)
            else:
                plain = timed(False)
                located = timed(True)
            ratios.append(located / plain)
    finally:
        torch.set_num_threads(old_threads)
    return statistics.median(ratios)


# ------------------------------------------------------------- IPython extension

_WATCHES: dict[int, "_CellWatch"] = {}   # id(shell) -> its watch


class _PassThrough(_Recorder):
    """What a cell's recorder becomes when it cannot leave the mode stack yet (see ``_CellWatch``)."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return _run(func, args, kwargs or {})


class _CellWatch:
    """``%load_ext autograder.inplace``: every cell runs under a locator, and when a cell dies of an
    in-place autograd error, the report is printed under IPython's own traceback.

    The error itself is left alone: IPython shows it exactly as it would without the extension
    (the locator does not annotate it), and ``result.error_in_exec`` is PyTorch's RuntimeError.
    The locator starts in ``pre_run_cell`` and stops in ``post_run_cell``, so it sees the writes
    of the cell that fails; writes made in an earlier cell are not seen (the report then says
    what PyTorch's message says).  A cell that uses no torch pays ~10 us for the two events;
    torch ops inside a cell run under the locator, backward's own ops included (IPython shows the
    traceback before the cell ends, so the engine is not stepped around here): ~1.4x on the course
    detector's forward + backward.  Cells that start while the user's own TorchDispatchMode is
    active are not watched, so the mode stack stays theirs.
    """

    def __init__(self, shell):
        self.shell = shell
        self.locator: InplaceLocator | None = None
        self.stale: list[_Recorder] = []   # recorders a user's mode sat on top of at the end of a cell

    def pre_run_cell(self, info=None) -> None:
        self._close()
        if torch._C._len_torch_dispatch_stack():
            return  # a mode of the user's is active: stacking ours on it could unbalance their exits
        locator = InplaceLocator(annotate=False)
        # IPython shows a cell's traceback before the cell ends, before any exit could drop the
        # engine wrapper's frame from it: so a watched cell keeps watching during backward.
        locator._recorder.skip_backward = False
        locator.__enter__()
        self.locator = locator

    def post_run_cell(self, result=None) -> None:
        locator, err = self.locator, getattr(result, "error_in_exec", None)
        self._close()  # off the mode stack first; what it found stays readable
        if locator is None or not isinstance(err, RuntimeError) or getattr(err, "inplace_report", None):
            return  # no watch, no error of PyTorch's kind, or one a locator in the cell already annotated
        report = locator.explain(err)
        if report:
            if report.startswith(_(_UNSEEN)):
                report += "\n" + _("  (The extension watches one cell at a time, and these writes happened in an "
                           "earlier cell: run the forward pass and backward in one cell to see the lines.)")
            print(report)

    def _close(self) -> None:
        locator, self.locator = self.locator, None
        if locator is not None:
            recorder = locator._recorder
            if _get_current_dispatch_mode() is recorder:
                locator.__exit__(None, None, None)
            else:  # the cell left a mode of its own on top: let ours pass ops through, pop it later
                locator._release()
                recorder.flush()
                recorder.__class__ = _PassThrough
                recorder.nodes.clear()
                recorder.by_storage.clear()
                recorder._last_caller = None
                self.stale.append(recorder)
        while self.stale and _get_current_dispatch_mode() is self.stale[-1]:
            self.stale.pop().__exit__(None, None, None)


def _cell_locator() -> "InplaceLocator | None":
    """The locator watching the running notebook cell, if the extension is loaded."""
    for watch in _WATCHES.values():
        if watch.locator is not None:
            return watch.locator
    return None


def load_ipython_extension(ip) -> None:
    """``%load_ext autograder.inplace``: explain in-place autograd errors under their traceback."""
    if id(ip) in _WATCHES:
        return
    watch = _WATCHES[id(ip)] = _CellWatch(ip)
    ip.events.register("pre_run_cell", watch.pre_run_cell)
    ip.events.register("post_run_cell", watch.post_run_cell)
    watch.pre_run_cell()  # %load_ext runs inside a cell: watch the rest of that one too


def unload_ipython_extension(ip) -> None:
    """``%unload_ext autograder.inplace``: stop watching cells."""
    watch = _WATCHES.pop(id(ip), None)
    if watch is None:
        return
    for name, callback in (("pre_run_cell", watch.pre_run_cell), ("post_run_cell", watch.post_run_cell)):
        try:
            ip.events.unregister(name, callback)
        except ValueError:
            pass
    watch._close()


# ---------------------------------------------------------------------------- CLI

_USAGE = "usage: python -m autograder.inplace SCRIPT [ARGS...]"


def main(argv: list[str] | None = None) -> int:
    """Run a script like ``python -m pdb`` does, explaining in-place errors on stderr.

    Exit status: the script's own (SystemExit codes pass through), 1 when it
    dies of an exception (with the traceback and report printed), 2 on bad usage.
    """
    import runpy
    import traceback

    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_USAGE, file=sys.stderr)
        return 0 if argv else 2
    script = os.path.abspath(argv[0])
    if not os.path.isfile(script):
        print(f"{_USAGE}\nerror: no such script: {argv[0]}", file=sys.stderr)
        return 2
    sys.argv = [script, *argv[1:]]
    sys.path[0] = os.path.dirname(script)
    try:
        with InplaceLocator():
            runpy.run_path(script, run_name="__main__")
    except SystemExit:
        raise
    except BaseException as err:  # noqa: BLE001 - report anything, like the interpreter
        tb = err.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != script:
            tb = tb.tb_next
        traceback.print_exception(type(err), err, tb or err.__traceback__, file=sys.stderr)
        if getattr(err, "inplace_report", None):
            print("\n(autograder.inplace: report above; the original error was re-raised "
                  "unchanged apart from this note)", file=sys.stderr)
        return 130 if isinstance(err, KeyboardInterrupt) else 1
    return 0


if __name__ == "__main__":
    from autograder.inplace import main as _main  # one copy of the module, not __main__'s

    sys.exit(_main())
