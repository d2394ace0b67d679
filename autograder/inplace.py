"""Name the line that broke autograd's in-place rule.

PyTorch's error ``one of the variables needed for gradient computation has
been modified by an inplace operation: [torch.FloatTensor [1, 3, 8, 8, 85]],
which is output 0 of Sigmoid, is at version 2; expected version 0 instead``
names the tensor and the op that produced it, but not the line that wrote into
it.  This module watches forward (and backward) and answers that question:

    with locate_inplace() as loc:        # from Python
        loss = model(x).sum()
        loss.backward()                  # RuntimeError, now with a report note

    python -m autograder.inplace train.py [ARGS...]   # from the shell

How it works, and why it cannot change what it observes:

* A ``TorchDispatchMode`` sees every aten op below autograd, so it sees every
  in-place form (``+=``, slice assignment = ``copy_`` on a view, ``*_``
  methods, ``out=``, ``index_put_``, ``nn.ReLU(inplace=True)``), whoever calls
  it.  The written tensors are the arguments the op's schema marks as written
  (``alias_info.is_write``); they are matched to saved tensors by storage, so
  writes through views of views are caught.
* What autograd saved is read after each op from the new ``grad_fn`` nodes'
  ``_saved_*`` attributes (``saved_tensors`` for custom Functions).  Reading
  such an attribute runs PyTorch's own version check, so after a write to a
  saved storage we simply ask PyTorch whether that save is now broken, and
  its answer carries the exact "is at version N" numbers.
* No saved-tensor hooks are used: PyTorch skips its version check for tensors
  packed by hooks, which would silence the very error we explain.  Ops are
  passed through untouched, so gradients are bit-for-bit the same.

While active, the locator keeps references to the autograd nodes it has seen
(their saved tensors are still freed by ``backward``); everything is dropped
when the ``with`` block ends, except the findings.
"""

from __future__ import annotations

import contextlib
import dataclasses
import linecache
import os
import re
import statistics
import sys
import time
from typing import Any, Callable, Iterable

import torch
from torch.utils._python_dispatch import TorchDispatchMode

__all__ = [
    "locate_inplace", "InplaceLocator", "run_located", "assert_no_inplace_on_saved",
    "InplaceOnSavedError", "parse_version_error", "VersionError", "explain",
    "SavedTensor", "InplaceWrite", "Site", "measure_overhead", "main",
]

# --------------------------------------------------------------------------- sites

_INTERNAL_DIRS = tuple({os.path.dirname(os.path.abspath(torch.__file__)) + os.sep,
                        os.path.dirname(os.path.realpath(torch.__file__)) + os.sep})
_INTERNAL_FILES = {os.path.abspath(contextlib.__file__), os.path.realpath(contextlib.__file__),
                   os.path.abspath(__file__), os.path.realpath(__file__)}
_internal_cache: dict[str, bool] = {}
_CELL_RE = re.compile(r"^<ipython-input-|[/\\]ipykernel_\d+[/\\]\d+\.py$|^<cell")


def _is_internal(filename: str) -> bool:
    """Frames in torch/, contextlib or this file are never 'the user's line'."""
    hit = _internal_cache.get(filename)
    if hit is None:
        path = filename if filename.startswith("<") else os.path.abspath(filename)
        hit = path.startswith(_INTERNAL_DIRS) or path in _INTERNAL_FILES
        _internal_cache[filename] = hit
    return hit


@dataclasses.dataclass(frozen=True)
class Site:
    """One line of user code: where an op was called."""
    filename: str
    lineno: int
    function: str

    @property
    def is_cell(self) -> bool:
        return bool(_CELL_RE.search(self.filename))

    @property
    def where(self) -> str:
        """``path:line`` (relative to the working directory when inside it), or ``cell line N``."""
        if self.is_cell:
            return f"cell line {self.lineno}"
        path = self.filename
        if not path.startswith("<"):
            here = os.getcwd() + os.sep
            if os.path.abspath(path).startswith(here):
                path = os.path.relpath(path)
        return f"{path}:{self.lineno}"

    @property
    def source(self) -> str:
        """The line's text; linecache also knows IPython cells."""
        return linecache.getline(self.filename, self.lineno).strip()


def _user_sites(limit: int = 2) -> tuple[Site, ...]:
    """The innermost user frames (innermost first), skipping torch and this module."""
    sites = []
    frame = sys._getframe(1)
    while frame is not None and len(sites) < limit:
        code = frame.f_code
        if not _is_internal(code.co_filename):
            sites.append(Site(code.co_filename, frame.f_lineno,
                              getattr(code, "co_qualname", code.co_name)))
        frame = frame.f_back
    return tuple(sites)


def _traceback_site(err: BaseException) -> Site | None:
    """The innermost user frame of an exception's traceback (where it was raised)."""
    site, tb = None, err.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if not _is_internal(code.co_filename):
            site = Site(code.co_filename, tb.tb_lineno, getattr(code, "co_qualname", code.co_name))
        tb = tb.tb_next
    return site


# ------------------------------------------------------------------------- records

@dataclasses.dataclass
class InplaceWrite:
    """One in-place op that moved a saved tensor's version counter."""
    op: str                 # e.g. "copy_", "add_", "mul (out=)"
    site: Site | None
    caller: Site | None
    version_before: int
    version_after: int
    via: str = ""           # who wrote, when not the user's own line: "optimizer SGD.step", "module ReLU(inplace=True)"


def _library_writer() -> str:
    """Who really wrote, when it was not a line of the user's own: 'optimizer SGD.step',
    'module ReLU(inplace=True)' or 'function Bad.forward' (a custom autograd.Function); else ''."""
    frame = sys._getframe(1)
    while frame is not None:
        path = frame.f_code.co_filename.replace(os.sep, "/")
        me = frame.f_locals.get("self")
        if "/torch/optim/" in path and isinstance(me, torch.optim.Optimizer):
            return f"optimizer {type(me).__name__}.{frame.f_code.co_name}"
        if "/torch/nn/" in path and isinstance(me, torch.nn.Module) and getattr(me, "inplace", False):
            return f"module {type(me).__name__}(inplace=True)"
        if frame.f_code.co_name == "forward" and "ctx" in frame.f_locals and not _is_internal(path) and \
                isinstance(frame.f_locals["ctx"], torch.autograd.function.FunctionCtx):
            return f"function {getattr(frame.f_code, 'co_qualname', 'forward')}"
        frame = frame.f_back
    return ""


_WRITER_WORDS = {
    "optimizer": "(the optimizer's {name}() updated a parameter in place: every optimizer writes the new "
                 "weights into the old tensor; the saved tensor is that parameter or a view of it, e.g. a "
                 "Linear layer's weight transposed)",
    "module": "(the layer {name} wrote its result into its input: that input is what the op before it "
              "saved for backward)",
    "function": "(the custom autograd.Function {name} wrote into its input; an input written in place "
                "must be marked with ctx.mark_dirty(x), and here that input is needed by the op that made it)",
}
_WRITER_FIX = {
    "optimizer": "  Fix: call the optimizer's step() only after every backward that still needs the old weights "
                 "(in a GAN: finish the generator's backward through D before opt_d.step()), or run the "
                 "forward again after the step so backward sees the new weights.",
    "module": "  Fix: make that layer out of place (inplace=False), or put it after an op that does not "
              "save its output (e.g. after a Linear layer, not after a sigmoid or tanh).",
    "function": "  Fix: in forward, write into a clone (x = x.clone()) or return a new tensor; if the write in "
                "place is intended, call ctx.mark_dirty(x) and do not feed it a tensor another op saved.",
}


@dataclasses.dataclass
class SavedTensor:
    """A tensor autograd kept for backward, and what happened to it afterwards."""
    dtype: torch.dtype
    shape: tuple[int, ...]
    device: str
    node: str               # backward node that keeps it, e.g. "SigmoidBackward0"
    op: str                 # aten op that created that node, e.g. "sigmoid"
    role: str               # "result", "self", "other", "saved_tensors[0]", ...
    version: int            # version at save time: what backward will expect
    site: Site | None
    caller: Site | None
    writes: list[InplaceWrite] = dataclasses.field(default_factory=list)
    current_version: int = -1
    message: str | None = None   # PyTorch's own complaint, once the save is broken
    _node: Any = dataclasses.field(default=None, repr=False, compare=False)
    _key: Any = dataclasses.field(default=None, repr=False, compare=False)

    @property
    def broken(self) -> bool:
        return self.message is not None


def _op_name(func) -> str:
    name = func.overloadpacket.__name__
    return f"{name} (out=)" if func._overloadname.startswith("out") else name


_OP_WORDS = {"copy_": "copy_ (assignment into a slice or view)",
             "index_put_": "index_put_ (indexed assignment)",
             "add_": "add_ (+= or .add_)", "sub_": "sub_ (-= or .sub_)",
             "mul_": "mul_ (*= or .mul_)", "div_": "div_ (/= or .div_)"}


def _storage_key(t: torch.Tensor):
    """Identify a tensor's memory, shared by all its views; None when it has none."""
    try:
        ptr = t.untyped_storage().data_ptr()
    except Exception:  # sparse, nested, meta, wrapper subclasses
        return None
    return (t.device.type, t.device.index, ptr) if ptr else None


def _tensors(obj) -> Iterable[torch.Tensor]:
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for item in obj:
            yield from _tensors(item)
    elif isinstance(obj, dict):
        for item in obj.values():
            yield from _tensors(item)


_WRITE_ARGS: dict[Any, tuple] = {}
_SAVED_ATTRS: dict[type, tuple[str, ...]] = {}
_DETACH = torch.ops.aten.detach.default
_VERSION_NOW_RE = re.compile(r"is at version (\d+); expected version (\d+)")


def _written_tensors(func, args, kwargs) -> list[torch.Tensor]:
    """Tensors the op's schema marks as written (``Tensor(a!)``), out= included."""
    spec = _WRITE_ARGS.get(func)
    if spec is None:
        spec = tuple((i, a.name, a.kwarg_only) for i, a in enumerate(func._schema.arguments)
                     if a.alias_info is not None and a.alias_info.is_write)
        _WRITE_ARGS[func] = spec
    out = []
    for i, name, kwarg_only in spec:
        value = kwargs.get(name) if kwarg_only or i >= len(args) else args[i]
        out.extend(_tensors(value))
    return out


def _saved_of(node) -> Iterable[tuple[str, int | None, torch.Tensor]]:
    """(attribute, index, tensor) for every tensor the node saved for backward."""
    names = _SAVED_ATTRS.get(type(node))
    if names is None:
        names = tuple(n for n in dir(node) if n.startswith("_saved_"))
        if isinstance(node, torch.autograd.function.BackwardCFunction):
            names += ("saved_tensors",)
        _SAVED_ATTRS[type(node)] = names
    for name in names:
        try:
            value = getattr(node, name)
        except Exception:  # already freed or already broken: nothing new to learn
            continue
        if isinstance(value, torch.Tensor):
            yield name, None, value
        elif isinstance(value, (list, tuple)):
            for i, t in enumerate(value):
                if isinstance(t, torch.Tensor):
                    yield name, i, t


def _probe(node, attr: str, index: int | None) -> tuple[str, str | None]:
    """Ask PyTorch about one save: 'ok', ('broken', its message) or 'freed'."""
    try:
        value = getattr(node, attr)
        if index is not None:
            value[index]
        return "ok", None
    except RuntimeError as err:
        text = str(err)
        return ("broken", text) if "modified by an inplace operation" in text else ("freed", None)
    except Exception:
        return "freed", None


def _role(attr: str, index: int | None) -> str:
    name = attr[len("_saved_"):] if attr.startswith("_saved_") else attr
    return name if index is None else f"{name}[{index}]"


class _Recorder(TorchDispatchMode):
    """The dispatch mode: records saves and the writes that break them.

    Work for op *k* is done at the start of op *k+1* (``flush``): only then has
    autograd attached the new ``grad_fn`` and bumped the version counter.
    """

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        """Opt out of torch's dynamo-disable wrapper (the documented switch).

        The wrapper costs a one-off import of torch._dynamo (seconds) and a
        per-op toll; the locator is for eager code, not torch.compile'd code.
        """
        return False

    def __init__(self):
        super().__init__()
        self.pending: list = []
        self.nodes: dict[int, Any] = {}          # id -> node, kept alive so ids stay unique
        self.by_storage: dict[Any, list] = {}    # storage key -> [(node, attr, index, record)]
        self.broken: list[SavedTensor] = []
        self._prune_at = 4096

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is _DETACH:
            # Autograd calls detach while it saves an op's output (tensor_data()),
            # i.e. before that save is visible; a detach writes nothing either.
            return func(*args, **kwargs)
        if self.pending:
            self.flush()
        written = _written_tensors(func, args, kwargs)
        before = [t._version for t in written]
        out = func(*args, **kwargs)
        # who wrote (an optimizer, an inplace=True layer, a custom Function): known only now, on this stack
        writer = _library_writer() if written else ""
        self.pending.append((func, _user_sites(), written, before, out, writer, torch.is_grad_enabled()))
        return out

    def flush(self) -> None:
        pending, self.pending = self.pending, []
        for func, sites, written, before, out, writer, grad_mode in pending:
            for t in written:
                self._check_write(t, func, sites, writer)
            # Read grad_fn in the grad mode the op ran in: reading it later, with grad mode back on, makes
            # PyTorch rebuild the history of a view made under no_grad and raise an error the user's
            # program would never have seen.
            with torch.set_grad_enabled(grad_mode):
                for t in (*_tensors(out), *written):
                    try:
                        node = t.grad_fn
                    except RuntimeError:
                        continue
                    if node is not None:
                        self._discover(node, func, sites)

    def _discover(self, root, func, sites) -> None:
        """Record the saves of every node not seen before (i.e. made by this op)."""
        stack = [root]
        while stack:
            node = stack.pop()
            if node is None or self.nodes.get(id(node)) is node:
                continue
            self.nodes[id(node)] = node
            op = func.overloadpacket.__name__
            if isinstance(node, torch.autograd.function.BackwardCFunction):
                # custom autograd.Function: its node appears after forward returns
                op = re.sub(r"Backward$", "", type(node).__name__) + ".apply"
            for attr, index, t in _saved_of(node):
                key = _storage_key(t)
                if key is None:
                    continue
                record = SavedTensor(
                    dtype=t.dtype, shape=tuple(t.shape), device=str(t.device), node=node.name(),
                    op=op, version=t._version,
                    current_version=t._version,
                    role=_role(attr, index),
                    site=sites[0] if sites else None, caller=sites[1] if len(sites) > 1 else None,
                    _node=node, _key=key)
                self.by_storage.setdefault(key, []).append((node, attr, index, record))
            stack.extend(nxt for nxt, _ in node.next_functions)
        if len(self.nodes) > self._prune_at:
            self._prune()

    def _check_write(self, t: torch.Tensor, func, sites, writer: str = "") -> None:
        """After a write, let PyTorch's own check tell which saves it broke."""
        key = _storage_key(t)
        entries = self.by_storage.get(key) if key is not None else None
        if not entries:
            return
        alive = []
        for entry in entries:
            node, attr, index, record = entry
            state, message = _probe(node, attr, index)
            if state == "freed":
                continue
            alive.append(entry)
            if state == "broken":
                now = int(_VERSION_NOW_RE.search(message).group(1))
                if now != record.current_version:
                    record.writes.append(InplaceWrite(
                        _op_name(func), sites[0] if sites else None,
                        sites[1] if len(sites) > 1 else None, record.current_version, now,
                        writer))
                    record.current_version, record.message = now, message
                    if record not in self.broken:
                        self.broken.append(record)
        self.by_storage[key] = alive

    def _prune(self) -> None:
        """Forget nodes whose saves backward already freed (long loops stay bounded)."""
        keep = {}
        for key, entries in list(self.by_storage.items()):
            alive = [e for e in entries if _probe(e[0], e[1], e[2])[0] != "freed"]
            if alive:
                self.by_storage[key] = alive
                keep.update((id(e[0]), e[0]) for e in alive)
            else:
                del self.by_storage[key]
        self.nodes = keep
        self._prune_at = max(4096, 2 * len(keep))


# --------------------------------------------------------------- parsing PyTorch

@dataclasses.dataclass(frozen=True)
class VersionError:
    """What PyTorch's version-counter message says, in fields."""
    tensor_type: str        # "torch.FloatTensor", "torch.cuda.HalfTensor"
    dtype: str              # "float32", "float16", ... ("" if unknown)
    shape: tuple[int, ...]
    device: str             # "cpu", "cuda", ...
    node: str | None        # "Sigmoid" / "SigmoidBackward0"; None for leaves
    op: str | None          # "sigmoid"
    output_index: int | None
    version_now: int
    version_saved: int


_VERSION_RE = re.compile(
    r"modified by an inplace operation: \[(?P<type>[\w.]+) \[(?P<shape>[^\]]*)\]\]"
    r"(?:, which is output (?P<index>\d+) of (?P<node>[^,]+),)?"
    r"\s*is at version (?P<now>\d+); expected version (?P<saved>\d+) instead")
_LEAF_RE = re.compile(r"leaf Variable that requires grad is being used in an in-place operation")
_VIEW_RE = re.compile(r"view\b.*?(?:has been|is being) modified inplace")
_DTYPES = {"Float": "float32", "Double": "float64", "Half": "float16", "BFloat16": "bfloat16",
           "Long": "int64", "Int": "int32", "Short": "int16", "Char": "int8", "Byte": "uint8",
           "Bool": "bool", "ComplexFloat": "complex64", "ComplexDouble": "complex128"}


def _op_from_node(node: str) -> str:
    base = re.sub(r"Backward\d*$", "", node)
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", base).lower()


def parse_version_error(err: BaseException | str) -> VersionError | None:
    """Parse PyTorch's "modified by an inplace operation" message (old and new wordings)."""
    m = _VERSION_RE.search(str(err))
    if m is None:
        return None
    ttype = m.group("type")
    kind = re.search(r"(\w+?)(?:Tensor|Type)$", ttype.split(".")[-1])
    parts = ttype.split(".")
    device = parts[1].lower() if len(parts) == 3 else ("cuda" if "CUDA" in ttype else "cpu")
    shape = tuple(int(s) for s in m.group("shape").replace(" ", "").split(",") if s)
    node = m.group("node")
    return VersionError(
        tensor_type=ttype, dtype=_DTYPES.get(kind.group(1), "") if kind else "", shape=shape,
        device=device, node=node, op=_op_from_node(node) if node else None,
        output_index=int(m.group("index")) if m.group("index") else None,
        version_now=int(m.group("now")), version_saved=int(m.group("saved")))


# ---------------------------------------------------------------------- reports

def _site_lines(site: Site | None, caller: Site | None, indent: str,
                shown: set | None = None) -> list[str]:
    """The source line, plus "called from" once per distinct caller (``shown``)."""
    if site is None:
        return [f"{indent}(no user line: it ran inside PyTorch)"]
    lines = [f"{indent}{site.source}"] if site.source else []
    if caller is not None and site.function != "<module>" and (
            shown is None or (site.function, caller) not in shown):
        if shown is not None:
            shown.add((site.function, caller))
        lines.append(f"{indent}(in {site.function}, called from {caller.where})")
    return lines


def _where(site: Site | None) -> str:
    return site.where if site else "<no user line>"


def _format_saved(record: SavedTensor, parsed: VersionError | None, header: str,
                  others: Iterable[SavedTensor] = ()) -> str:
    """The plain-words story of one broken save."""
    writes = [f"{_where(w.site)} ({w.version_before} → {w.version_after})" for w in record.writes]
    joined = writes[0] if len(writes) == 1 else ", ".join(writes[:-1]) + " and " + writes[-1]
    dtype = str(record.dtype).replace("torch.", "")
    keeps = "its result" if record.role == "result" else f"its input '{record.role}'"
    lines = [header,
             f"  In short: saved at version {record.version} by {record.op} at "
             f"{_where(record.site)}; written at {joined}.",
             f"  Tensor:  {dtype}, shape {list(record.shape)}, on {record.device}"
             + (f" (PyTorch calls it output {parsed.output_index} of {parsed.node})"
                if parsed and parsed.node else ""),
             f"  Saved:   {record.op} at {_where(record.site)} kept {keeps} for backward "
             f"(node {record.node}), at version {record.version}:"]
    shown: set = set()
    lines += _site_lines(record.site, record.caller, "             ", shown)
    lines.append("  Then written in place, in this order:")
    for n, w in enumerate(record.writes, 1):
        lines.append(f"    {n}. {_where(w.site)}  {_OP_WORDS.get(w.op, w.op)}  "
                     f"version {w.version_before} → {w.version_after}")
        lines += _site_lines(w.site, w.caller, "         ", shown)
        if w.via:
            kind, _, name = w.via.partition(" ")
            lines.append("         " + _WRITER_WORDS[kind].format(name=name))
    for other in others:
        lines.append(f"  The same writes also broke what {other.op} at {_where(other.site)} saved "
                     f"(node {other.node}); backward would stop there too.")
    fix = ("  Fix: leave the saved tensor alone - build the new values out of place "
           "(e.g. torch.cat of the pieces) or write into a copy (y = y.clone()).")
    kinds = [w.via.partition(" ")[0] for w in record.writes if w.via]
    if kinds:
        fix = _WRITER_FIX[kinds[0]]
    lines += [f"  Backward needs the values of version {record.version}, but the tensor is now "
              f"at version {record.current_version}, so PyTorch refuses to compute the gradient.", fix]
    return "\n".join(lines)


def _format_unlocated(parsed: VersionError) -> str:
    shape = list(parsed.shape)
    by = f", output {parsed.output_index} of {parsed.node}" if parsed.node else " (a leaf tensor)"
    return "\n".join([
        "In-place write on a tensor autograd saved for backward (not seen by the locator).",
        f"  Tensor:  {parsed.dtype or parsed.tensor_type}, shape {shape}, on {parsed.device}{by}",
        f"  It was saved at version {parsed.version_saved} and has since been written in place "
        f"{parsed.version_now - parsed.version_saved} time(s) (now version {parsed.version_now}).",
        "  Run the forward pass inside locate_inplace() (or `python -m autograder.inplace "
        "script.py`) to see which lines wrote it."])


def _format_rule(err: BaseException, leaf: bool) -> str:
    site = _traceback_site(err)
    if leaf:
        rule = ("PyTorch forbids in-place writes to a leaf tensor that requires grad (a "
                "parameter, or an input made with requires_grad=True), and raises at once; "
                "no version counter is involved.")
        fix = ("Fix: wrap deliberate updates (initialisation, optimiser steps) in "
               "torch.no_grad(), or write into a copy (x = x.clone()).")
        title = "In-place write on a leaf tensor that requires grad (the leaf rule)."
    else:
        rule = ("PyTorch forbids this in-place write on a view: the view's autograd history "
                "cannot be rewritten (e.g. an output of unbind/split, or a view made in no_grad).")
        fix = "Fix: write into a copy (v = v.clone()) or build the result out of place."
        title = "In-place write on a view that autograd cannot track (the view rule)."
    lines = [title, f"  At:      {_where(site)}"]
    lines += _site_lines(site, None, "             ")
    return "\n".join(lines + [f"  Rule:    {rule}", f"  {fix}"])


def explain(err: BaseException, locator: "InplaceLocator | None" = None) -> str | None:
    """A plain-words report for an in-place RuntimeError, or None if it is another error.

    Uses the report attached by a locator when there is one, else the locator
    given, else only what PyTorch's message says.
    """
    if locator is not None:
        return locator.explain(err)
    report = getattr(err, "inplace_report", None)
    if report:
        return report
    parsed = parse_version_error(err)
    if parsed is not None:
        return _format_unlocated(parsed)
    text = str(err)
    if _LEAF_RE.search(text) or _VIEW_RE.search(text):
        return _format_rule(err, bool(_LEAF_RE.search(text)))
    return None


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
        self._recorder.__enter__()
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        self._recorder.__exit__(exc_type, exc, tb)
        self._recorder.flush()
        if exc is not None and self.annotate and isinstance(exc, Exception):
            self._annotate(exc)
        self._recorder.nodes.clear()
        self._recorder.by_storage.clear()
        for record in self._recorder.broken:
            record._node = None
        return False

    @property
    def broken(self) -> list[SavedTensor]:
        """Saves written after the save, in the order they broke."""
        self._recorder.flush()
        return list(self._recorder.broken)

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
        header = ("In-place write on a tensor autograd saved for backward"
                  + (f" (error raised at {where.where})." if where else "."))
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

    def _broken_needed_by(self, result) -> list[SavedTensor]:
        """Broken saves whose node backward from ``result`` would reach."""
        roots = [t.grad_fn for t in _tensors(result) if t.grad_fn is not None]
        broken = self.broken
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
        header = ("In-place write on a tensor autograd saved for backward: "
                  f"{n} saved tensor{'s' if n > 1 else ''} would make backward fail.")
        raise InplaceOnSavedError("\n".join(_format_saved(r, None, header if i == 0 else "Also:")
                                            for i, r in enumerate(bad)), bad)
    return result


def measure_overhead(model: torch.nn.Module | None = None, input_shape=(1, 3, 64, 64),
                     repeats: int = 15, threads: int = 1) -> float:
    """Cost of the locator: median forward+backward time under it / median plain time.

    Plain and located runs alternate in one process.  With ``threads=1`` (the
    default) the clock is this thread's CPU time, so other load on a shared
    machine does not swamp the figure; otherwise wall time is used.
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
        timed(False), timed(True)  # warm up both paths
        plain, located = [], []
        for _ in range(repeats):
            plain.append(timed(False))
            located.append(timed(True))
    finally:
        torch.set_num_threads(old_threads)
    return statistics.median(located) / statistics.median(plain)


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
