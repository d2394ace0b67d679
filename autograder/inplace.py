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
* Cost: a Python dispatch mode makes every aten op a call into Python.  The
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
import dataclasses
import inspect
import linecache
import os
import re
import statistics
import sys
import time
from typing import Any, Callable, Iterable

import torch
from torch.utils._python_dispatch import TorchDispatchMode, _get_current_dispatch_mode

from .i18n import N_, _
from .saved_by_node import VERSION_RE, probe, role, saved_names

__all__ = [
    "locate_inplace", "InplaceLocator", "run_located", "assert_no_inplace_on_saved",
    "assert_no_write_on_saved", "InplaceOnSavedError", "parse_version_error", "VersionError", "explain",
    "SavedTensor", "InplaceWrite", "Site", "measure_overhead", "main",
    "load_ipython_extension", "unload_ipython_extension",
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
        """``path:line`` (relative to the working directory when inside it), or, in a notebook, the
        cell named as Jupyter names it in a traceback: ``Cell In[6], line 2`` (see :func:`cell_name`)."""
        if self.is_cell:
            return f"{cell_name(self.filename)}, line {self.lineno}"
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


def cell_name(filename: str) -> str:
    """A notebook cell as Jupyter's tracebacks name it: ``Cell In[6]`` (its execution count, from
    IPython's own map of cell file names), else ``cell "its first line"``, else the file name."""
    ipython = sys.modules.get("IPython")
    shell = None
    if ipython is not None:
        with contextlib.suppress(Exception):
            shell = ipython.get_ipython()
    named = None
    with contextlib.suppress(Exception):
        named = shell.compile.format_code_name(filename) if shell is not None else None
    if named:
        return " ".join(named)   # IPython's ("Cell", "In[6]")
    old = re.match(r"<ipython-input-(\d+)-", filename)
    if old:
        return f"Cell In[{old.group(1)}]"
    first = next((line.strip() for line in linecache.getlines(filename) if line.strip()), "")
    if first:
        return f'cell "{first if len(first) <= 40 else first[:39] + "…"}"'
    return filename if filename.startswith("<") else f"cell {filename}"


def _user_frames(frame) -> tuple:
    """``(code, lineno, code, lineno)`` of the two innermost user frames from ``frame`` outwards
    (fewer when the stack has fewer), skipping torch and this module.

    Called for every op that may save, so it keeps raw code objects and line numbers (a frame's
    line moves on, so it must be read now); ``_sites`` turns them into ``Site`` objects only
    when a report needs them.
    """
    found = ()
    cache = _internal_cache
    while frame is not None:
        code = frame.f_code
        internal = cache.get(code.co_filename)
        if internal is None:
            internal = _is_internal(code.co_filename)
        if not internal:
            found += (code, frame.f_lineno)
            if len(found) == 4:
                return found
        frame = frame.f_back
    return found


def _site(code, lineno) -> Site:
    return Site(code.co_filename, lineno, getattr(code, "co_qualname", code.co_name))


def _sites(frames: tuple) -> tuple[Site, ...]:
    """``_user_frames``' raw tuple as ``(site, caller)`` (shorter when there were fewer)."""
    return tuple(_site(frames[i], frames[i + 1]) for i in range(0, len(frames), 2))


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
    "optimizer": N_("(the optimizer's {name}() updated a parameter in place: every optimizer writes the new "
                 "weights into the old tensor; the saved tensor is that parameter or a view of it, e.g. a "
                 "Linear layer's weight transposed)"),
    "module": N_("(the layer {name} wrote its result into its input: that input is what the op before it "
              "saved for backward)"),
    "function": N_("(the custom autograd.Function {name} wrote into its input; an input written in place "
                "must be marked with ctx.mark_dirty(x), and here that input is needed by the op that made it)"),
}
_WRITER_FIX = {
    "optimizer": N_("  Fix: call the optimizer's step() only after every backward that still needs the old weights "
                 "(in a GAN: finish the generator's backward through D before opt_d.step()), or run the "
                 "forward again after the step so backward sees the new weights."),
    "module": N_("  Fix: make that layer out of place (inplace=False), or put it after an op that does not "
              "save its output (e.g. after a Linear layer, not after a sigmoid or tanh)."),
    "function": N_("  Fix: in forward, write into a clone (x = x.clone()) or return a new tensor; if the write in "
                "place is intended, call ctx.mark_dirty(x) and do not feed it a tensor another op saved."),
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


_OP_WORDS = {"copy_": N_("copy_ (assignment into a slice or view)"),
             "index_put_": N_("index_put_ (indexed assignment)"),
             "add_": N_("add_ (+= or .add_)"), "sub_": N_("sub_ (-= or .sub_)"),
             "mul_": N_("mul_ (*= or .mul_)"), "div_": N_("div_ (/= or .div_)")}


def _storage_key(t: torch.Tensor):
    """Identify a tensor's memory, shared by all its views; None when it has none."""
    try:
        ptr = t.untyped_storage().data_ptr()
    except Exception:  # sparse, nested, meta, wrapper subclasses
        return None
    return (ptr, t.device) if ptr else None


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
# Ops that, run with grad mode on, leave nothing to record: factories (no tensor in, so no history
# out) and ops whose backward node keeps no tensor (view, permute, add, cat, sum ...; learned from
# the first node each one makes).  Their nodes are still found, from the next op that saves.
_QUIET: set = set()
_SAVED_ATTRS: dict[type, tuple[str, ...]] = {}
_DETACH = torch.ops.aten.detach.default


def _write_spec(func) -> tuple:
    """``(position, name, kwarg_only)`` of the arguments the op's schema marks as written.

    Learned once per op overload, with whether the op takes a tensor at all: one that does not
    (``empty``, ``zeros``, ``randn`` ...) makes a tensor without history, so with grad mode on it
    joins ``_QUIET``.
    """
    spec = _WRITE_ARGS.get(func)
    if spec is None:
        arguments = func._schema.arguments
        spec = tuple((i, a.name, a.kwarg_only) for i, a in enumerate(arguments)
                     if a.alias_info is not None and a.alias_info.is_write)
        if not spec and not any("Tensor" in str(a.type) for a in arguments):
            _QUIET.add(func)
        _WRITE_ARGS[func] = spec
    return spec


def _written_tensors(func, args, kwargs) -> list[torch.Tensor]:
    """Tensors the op's schema marks as written (``Tensor(a!)``), out= included."""
    spec = _WRITE_ARGS.get(func)
    if spec is None:
        spec = _write_spec(func)
    out = []
    for i, name, kwarg_only in spec:
        value = kwargs.get(name) if kwarg_only or i >= len(args) else args[i]
        out.extend(_tensors(value))
    return out


def _needs_grad(values) -> bool:
    """Whether any tensor among ``values`` (or in a list among them) requires grad."""
    for value in values:
        if isinstance(value, torch.Tensor):
            if value.requires_grad:
                return True
        elif isinstance(value, (list, tuple)) and _needs_grad(value):
            return True
    return False


def _saved_names(node) -> tuple[str, ...]:
    """The node type's saves (:func:`autograder.saved_by_node.saved_names`: ``_saved_*``, ``saved_tensors``
    for custom Functions), learned once per type, less those already seen holding a plain number (eps,
    padding, sizes ...): they never hold a tensor."""
    names = _SAVED_ATTRS.get(type(node))
    if names is None:
        names = _SAVED_ATTRS[type(node)] = saved_names(node)
    return names


def _node_op(node, op: str) -> str:
    """Who saved: the aten op, or ``Name.apply`` for a custom autograd.Function's node (which
    appears only after its forward returned)."""
    if isinstance(node, torch.autograd.function.BackwardCFunction):
        return re.sub(r"Backward$", "", type(node).__name__) + ".apply"
    return op


_SCALARS = frozenset((int, float, bool, str, torch.dtype, torch.device, torch.layout,
                      torch.memory_format))


def _forget_attr(node, name: str) -> None:
    names = _SAVED_ATTRS[type(node)]
    _SAVED_ATTRS[type(node)] = tuple(n for n in names if n != name)


def _run(func, args, kwargs):
    """Run the op as called.

    One repair: PyTorch hands a dispatch mode a *wrapped number* (a Python scalar an op kept as a
    0-dim tensor, e.g. the 2 of ``x * 2``, readable through ``node._saved_other``) as a plain
    number, which an op taking only a Tensor (``detach``, ``item``) then refuses with any mode on.
    Such an argument gets its tensor back, so code that reads saved tensors runs as it does
    without the locator.
    """
    try:
        return func(*args, **kwargs)
    except RuntimeError:
        fixed = _numbers_as_tensors(func, args)
        if fixed is None:
            raise
    return func(*fixed, **kwargs)


_NUMBER_DTYPES = {bool: torch.bool, int: torch.int64, float: torch.float64, complex: torch.complex128}


def _numbers_as_tensors(func, args) -> tuple | None:
    """``args`` with plain numbers in ``Tensor`` slots made tensors again; None if there are none."""
    fixed, changed = list(args), False
    for i, (value, spec) in enumerate(zip(args, func._schema.arguments)):
        if type(value) in _NUMBER_DTYPES and str(spec.type) == "Tensor":
            fixed[i], changed = torch.tensor(value, dtype=_NUMBER_DTYPES[type(value)]), True
    return tuple(fixed) if changed else None


def _geometry(t: torch.Tensor) -> tuple | None:
    """``(storage offset, shape, strides, element size)``: which bytes of its storage a view covers."""
    try:
        return t.storage_offset(), tuple(t.shape), tuple(t.stride()), t.element_size()
    except Exception:  # sparse, nested, wrapper subclasses
        return None


_MASK_BYTES = 1 << 26  # spans larger than this are taken to overlap (no exact answer needed there)


def _overlaps(a: tuple, b: tuple) -> bool:
    """Whether two views of one storage (``_geometry``) share a byte: their spans first, then, when
    the spans meet, exactly (a byte mask of the common span; slices of the same columns of a tensor
    interleave without touching)."""
    spans = []
    for offset, shape, stride, size in (a, b):
        if 0 in shape:
            return False
        lo = offset * size
        spans.append((lo, lo + (sum((n - 1) * st for n, st in zip(shape, stride)) + 1) * size))
    if max(spans[0][0], spans[1][0]) >= min(spans[0][1], spans[1][1]):
        return False
    base, top = min(spans[0][0], spans[1][0]), max(spans[0][1], spans[1][1])
    if top - base > _MASK_BYTES:
        return True
    with torch._C._DisableTorchDispatch():  # no mode sees these ops (the locator's own included)
        mask = torch.zeros(top - base, dtype=torch.bool)
        views = []
        for offset, shape, stride, size in (a, b):
            views.append(mask.as_strided((*shape, size), (*(st * size for st in stride), 1), offset * size - base))
        views[0].fill_(True)
        return bool(views[1].any())


class _Save:
    """One tensor a node saved, as the hot path keeps it: where, and who saved it.

    What it looks like (dtype, shape, device) and the version it was saved at are read only when
    a write into its storage is about to run (``look``): until then nothing can have changed them.
    It becomes a ``SavedTensor`` only once a write broke it.
    """
    __slots__ = ("node", "attr", "index", "op", "frames", "key", "version", "dtype", "shape", "device",
                 "record", "geometry", "hidden")

    def __init__(self, node, attr, index, op, frames, key):
        self.node, self.attr, self.index, self.op, self.frames, self.key = node, attr, index, op, frames, key
        self.version = self.dtype = self.shape = self.device = self.geometry = None
        self.record: SavedTensor | None = None
        self.hidden: SavedTensor | None = None  # its record once a write hidden from autograd reached it

    def look(self) -> None:
        """Before a write into this storage: note the tensor while PyTorch still hands it out."""
        if self.version is not None:
            return
        try:
            t = getattr(self.node, self.attr)
            if self.index is not None:
                t = t[self.index]
        except Exception:  # freed, or broken by a write the locator did not see
            return
        self.version, self.dtype, self.shape, self.device = t._version, t.dtype, tuple(t.shape), str(t.device)
        self.geometry = _geometry(t)

    def as_hidden_record(self) -> SavedTensor:
        """The ``SavedTensor`` for this save, whose memory a write hidden from autograd reached
        (``look`` ran before that write, so what it looks like is known)."""
        if self.hidden is None:
            sites = _sites(self.frames)
            self.hidden = SavedTensor(
                dtype=self.dtype, shape=self.shape, device=self.device,
                node=self.node.name(), op=self.op, role=role(self.attr, self.index),
                version=self.version, current_version=self.version,
                site=sites[0] if sites else None, caller=sites[1] if len(sites) > 1 else None,
                _node=self.node, _key=self.key)
        return self.hidden

    def as_record(self, message: str) -> SavedTensor:
        """The ``SavedTensor`` for this save, which ``message`` (PyTorch's complaint) says is broken."""
        if self.record is None:
            if self.version is None:  # never seen intact: take what PyTorch's message says
                parsed = parse_version_error(message)
                self.version = parsed.version_saved
                self.dtype = getattr(torch, parsed.dtype, None) if parsed.dtype else None
                self.shape, self.device = parsed.shape, str(self.key[1])
            sites = _sites(self.frames)
            self.record = SavedTensor(
                dtype=self.dtype, shape=self.shape, device=self.device,
                node=self.node.name(), op=self.op, role=role(self.attr, self.index),
                version=self.version, current_version=self.version,
                site=sites[0] if sites else None, caller=sites[1] if len(sites) > 1 else None,
                _node=self.node, _key=self.key)
        return self.record


_is_grad_enabled = torch._C.is_grad_enabled
_set_grad_enabled = torch._C._set_grad_enabled
_graph_task_id = torch._C._current_graph_task_id
_getframe = sys._getframe
_Tensor = torch.Tensor
_BackwardCFunction = torch.autograd.function.BackwardCFunction
_AccumulateGrad = torch._C._functions.AccumulateGrad
_RESUMABLE = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR


class _Recorder(TorchDispatchMode):
    """The dispatch mode: records saves and the writes that break them.

    Work for op *k* is done at the start of op *k+1* (``flush``): only then has
    autograd attached the new ``grad_fn`` and bumped the version counter.

    The per-op path is kept short: it notes the op, its two innermost user frames (raw code
    objects and line numbers) and its output; reports, ``Site`` and ``SavedTensor`` objects are
    built only for saves a write breaks.  Ops that leave nothing to record are passed straight
    through: with grad mode on, factories and ops whose node keeps no tensor (``_QUIET``); with it
    off, the ops of a backward pass (when the locator still sees them: see
    ``_engine_run_backward_unwatched``) unless they write.  A write into memory no recorded save
    uses cannot break anything, so only a write into a saved storage pays for the full stack walk
    that names who wrote (``_library_writer``).
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
        self.by_storage: dict[Any, list] = {}    # storage key -> [_Save]
        self.broken: list[SavedTensor] = []
        self.hidden: list[SavedTensor] = []      # saves whose memory a write autograd cannot see reached
        self._prune_at = 4096
        self._last_caller = self._last_lineno = None   # the previous op's calling frame ...
        self._last_frames: tuple = ()                  # ... and its user lines (see __torch_dispatch__)
        self.skip_backward = True   # step off the mode stack while the engine runs (see below)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        if func is _DETACH:
            # Autograd calls detach while it saves an op's output (tensor_data()),
            # i.e. before that save is visible; a detach writes nothing either.
            return _run(func, args, kwargs)
        if self.pending:
            self.flush()
        grad_mode = _is_grad_enabled()
        spec = _WRITE_ARGS.get(func)
        if spec is None:
            spec = _write_spec(func)
        if not spec:
            if grad_mode:
                if func in _QUIET:
                    return _run(func, args, kwargs)
            elif _graph_task_id() != -1:
                return _run(func, args, kwargs)  # an op of backward itself: makes no graph, writes nothing
            # (other ops under no_grad are recorded: inside a custom Function's forward, the op that
            # makes its output is where the Function's node, and what it saved, comes from)
            caller = _getframe(1)
            if caller is self._last_caller and caller.f_lineno == self._last_lineno:
                frames = self._last_frames  # same line of the same running frame: same user lines
            else:
                frames = _user_frames(caller)
                if not caller.f_code.co_flags & _RESUMABLE:  # a generator's parents change between resumes
                    self._last_caller, self._last_lineno, self._last_frames = caller, caller.f_lineno, frames
            out = _run(func, args, kwargs)
            self.pending.append((func, frames, (), False, out, "", grad_mode))
            return out
        written = _written_tensors(func, args, kwargs)
        # Only a write into a storage some recorded save uses can break a save (all earlier ops are
        # flushed by now, and an op never breaks its own saves).
        by_storage, check = self.by_storage, False
        for t in written:
            entries = by_storage.get(_storage_key(t))
            if entries:
                check = True
                for save in entries:
                    save.look()
        if not check and grad_mode and not _needs_grad(args) and not _needs_grad(kwargs.values()):
            # breaks nothing, and with no input that requires grad it makes no node either
            # (e.g. BatchNorm's num_batches_tracked += 1)
            return _run(func, args, kwargs)
        frames = _user_frames(_getframe(1))
        out = _run(func, args, kwargs)
        # who wrote (an optimizer, an inplace=True layer, a custom Function): known only now, on this stack
        writer = _library_writer() if check else ""
        self.pending.append((func, frames, written, check, out, writer, grad_mode))
        return out

    def flush(self) -> None:
        pending, self.pending = self.pending, []
        grad_now = grad_before = _is_grad_enabled()
        try:
            for func, frames, written, check, out, writer, grad_mode in pending:
                if check:
                    sites = _sites(frames)
                    for t in written:
                        self._check_write(t, func, sites, writer)
                # Read grad_fn in the grad mode the op ran in: reading it later, with grad mode back on, makes
                # PyTorch rebuild the history of a view made under no_grad and raise an error the user's
                # program would never have seen.
                if grad_mode is not grad_now:
                    _set_grad_enabled(grad_mode)
                    grad_now = grad_mode
                outs = (out,) if isinstance(out, _Tensor) else tuple(_tensors(out))
                for t in (*outs, *written) if written else outs:
                    try:
                        node = t.grad_fn
                    except RuntimeError:
                        continue
                    if node is not None and self.nodes.get(id(node)) is not node:
                        self._discover(node, func, frames)
                        if grad_mode and not written and not _SAVED_ATTRS.get(type(node), True) and \
                                not isinstance(node, _BackwardCFunction):
                            _QUIET.add(func)  # its node type keeps no tensor: nothing to note next time
        finally:
            if grad_now is not grad_before:
                _set_grad_enabled(grad_before)

    def _discover(self, root, func, frames) -> None:
        """Record the saves of every node not seen before (i.e. made by this op)."""
        stack = [root]
        nodes, by_storage, saved_attrs = self.nodes, self.by_storage, _SAVED_ATTRS
        op = None
        while stack:
            node = stack.pop()
            if nodes.get(id(node)) is node:
                continue
            nodes[id(node)] = node
            names = saved_attrs.get(type(node))
            if names is None:
                names = _saved_names(node)
            for name in names:
                try:
                    value = getattr(node, name)
                except Exception:  # already freed or already broken: nothing new to learn
                    continue
                if value is None:
                    continue
                if op is None:
                    op = func.overloadpacket.__name__
                if isinstance(value, _Tensor):
                    try:
                        ptr = value.untyped_storage().data_ptr()
                    except Exception:  # sparse, nested, meta, wrapper subclasses
                        continue
                    if ptr:
                        save = _Save(node, name, None, _node_op(node, op), frames, (ptr, value.device))
                        entries = by_storage.get(save.key)
                        if entries is None:
                            by_storage[save.key] = [save]
                        else:
                            entries.append(save)
                elif isinstance(value, (list, tuple)):
                    for index, t in enumerate(value):
                        if isinstance(t, _Tensor):
                            key = _storage_key(t)
                            if key is not None:
                                by_storage.setdefault(key, []).append(
                                    _Save(node, name, index, _node_op(node, op), frames, key))
                    if value and all(type(v) in _SCALARS for v in value):
                        _forget_attr(node, name)
                elif type(value) in _SCALARS:
                    _forget_attr(node, name)  # an int/float/bool field of this node type: never a tensor
            for nxt, _ in node.next_functions:
                if nxt is not None and type(nxt) is not _AccumulateGrad and nodes.get(id(nxt)) is not nxt:
                    stack.append(nxt)  # (a leaf's AccumulateGrad saves nothing and leads nowhere)
        if len(nodes) > self._prune_at:
            self._prune()

    def _check_write(self, t: torch.Tensor, func, sites, writer: str = "") -> None:
        """After a write, let PyTorch's own check tell which saves it broke."""
        key = _storage_key(t)
        entries = self.by_storage.get(key) if key is not None else None
        if not entries:
            return
        alive, where = [], None
        for save in entries:
            state, message = probe(save.node, save.attr, save.index)
            if state == "freed":
                continue
            alive.append(save)
            if state == "ok" and save.geometry is not None:
                # PyTorch's check passes, yet the write reached this save's memory: it went through a tensor
                # with a version counter of its own (.data), or the save is unpacked by a hook that hands back
                # the tensor itself (saved-tensor hooks skip the check): backward will use the new values
                where = _geometry(t) if where is None else where
                if where is not None and _overlaps(save.geometry, where):
                    record = save.as_hidden_record()
                    record.writes.append(InplaceWrite(_op_name(func), sites[0] if sites else None,
                                                      sites[1] if len(sites) > 1 else None, save.version,
                                                      save.version, writer))
                    if record not in self.hidden:
                        self.hidden.append(record)
            if state == "broken":
                record = save.as_record(message)
                now = int(VERSION_RE.search(message).group(1))
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
            alive = [e for e in entries if probe(e.node, e.attr, e.index)[0] != "freed"]
            if alive:
                self.by_storage[key] = alive
                keep.update((id(e.node), e.node) for e in alive)
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
        return [indent + _("(no user line: it ran inside PyTorch)")]
    lines = [f"{indent}{site.source}"] if site.source else []
    if caller is not None and site.function != "<module>" and (
            shown is None or (site.function, caller) not in shown):
        if shown is not None:
            shown.add((site.function, caller))
        lines.append(indent + _(f"(in {site.function}, called from {caller.where})"))
    return lines


def _where(site: Site | None) -> str:
    return site.where if site else "<no user line>"


def _format_saved(record: SavedTensor, parsed: VersionError | None, header: str,
                  others: Iterable[SavedTensor] = ()) -> str:
    """The plain-words story of one broken save."""
    writes = [f"{_where(w.site)} ({w.version_before} → {w.version_after})" for w in record.writes]
    joined = writes[0] if len(writes) == 1 else _(f"{', '.join(writes[:-1])} and {writes[-1]}")
    dtype = str(record.dtype).replace("torch.", "")
    keeps = _("its result") if record.role == "result" else _(f"its input '{record.role}'")
    lines = [header,
             _(f"  In short: saved at version {record.version} by {record.op} at "
               f"{_where(record.site)}; written at {joined}."),
             _(f"  Tensor:  {dtype}, shape {list(record.shape)}, on {record.device} (PyTorch calls it output "
               f"{parsed.output_index} of {parsed.node})") if parsed and parsed.node else
             _(f"  Tensor:  {dtype}, shape {list(record.shape)}, on {record.device}"),
             _(f"  Saved:   {record.op} at {_where(record.site)} kept {keeps} for backward "
               f"(node {record.node}), at version {record.version}:")]
    shown: set = set()
    lines += _site_lines(record.site, record.caller, "             ", shown)
    lines.append(_("  Then written in place, in this order:"))
    for n, w in enumerate(record.writes, 1):
        lines.append(f"    {n}. {_where(w.site)}  {_(_OP_WORDS.get(w.op, w.op))}  "
                     + _(f"version {w.version_before} → {w.version_after}"))
        lines += _site_lines(w.site, w.caller, "         ", shown)
        if w.via:
            kind, name = w.via.partition(" ")[::2]
            lines.append("         " + _(_WRITER_WORDS[kind]).format(name=name))
    for other in others:
        lines.append(_(f"  The same writes also broke what {other.op} at {_where(other.site)} saved "
                       f"(node {other.node}); backward would stop there too."))
    fix = _("  Fix: leave the saved tensor alone - build the new values out of place "
           "(e.g. torch.cat of the pieces) or write into a copy (y = y.clone()).")
    kinds = [w.via.partition(" ")[0] for w in record.writes if w.via]
    if kinds:
        fix = _(_WRITER_FIX[kinds[0]])
    lines += [_(f"  Backward needs the values of version {record.version}, but the tensor is now "
                f"at version {record.current_version}, so PyTorch refuses to compute the gradient."), fix]
    return "\n".join(lines)


def _format_unlocated(parsed: VersionError) -> str:
    shape = list(parsed.shape)
    dtype = parsed.dtype or parsed.tensor_type
    return "\n".join([
        _(_UNSEEN),
        _(f"  Tensor:  {dtype}, shape {shape}, on {parsed.device}, output {parsed.output_index} of {parsed.node}")
        if parsed.node else _(f"  Tensor:  {dtype}, shape {shape}, on {parsed.device} (a leaf tensor)"),
        _(f"  It was saved at version {parsed.version_saved} and has since been written in place "
          f"{parsed.version_now - parsed.version_saved} time(s) (now version {parsed.version_now})."),
        _("  Run the forward pass inside locate_inplace() (or `python -m autograder.inplace "
          "script.py`) to see which lines wrote it.")])


def _format_rule(err: BaseException, leaf: bool) -> str:
    site = _traceback_site(err)
    if leaf:
        rule = _("PyTorch forbids in-place writes to a leaf tensor that requires grad (a "
                "parameter, or an input made with requires_grad=True), and raises at once; "
                "no version counter is involved.")
        fix = _("Fix: wrap deliberate updates (initialisation, optimiser steps) in "
               "torch.no_grad(), or write into a copy (x = x.clone()).")
        title = _("In-place write on a leaf tensor that requires grad (the leaf rule).")
    else:
        rule = _("PyTorch forbids this in-place write on a view: the view's autograd history "
                "cannot be rewritten (e.g. an output of unbind/split, or a view made in no_grad).")
        fix = _("Fix: write into a copy (v = v.clone()) or build the result out of place.")
        title = _("In-place write on a view that autograd cannot track (the view rule).")
    lines = [title, _(f"  At:      {_where(site)}")]
    lines += _site_lines(site, None, "             ")
    return "\n".join(lines + [_(f"  Rule:    {rule}"), f"  {fix}"])


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
        return _format_rule(err, bool(_LEAF_RE.search(text)))
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


def _format_hidden(record: SavedTensor, header: str) -> str:
    """The plain-words story of a save whose memory was written behind autograd's back."""
    writes = [_where(w.site) for w in record.writes]
    joined = writes[0] if len(writes) == 1 else _(f"{', '.join(writes[:-1])} and {writes[-1]}")
    dtype = str(record.dtype).replace("torch.", "")
    keeps = _("its result") if record.role == "result" else _(f"its input '{record.role}'")
    lines = [header,
             _(f"  In short: saved by {record.op} at {_where(record.site)}; written at {joined}, where autograd "
               "cannot see it."),
             _(f"  Tensor:  {dtype}, shape {list(record.shape)}, on {record.device}"),
             _(f"  Saved:   {record.op} at {_where(record.site)} kept {keeps} for backward (node {record.node}):")]
    shown: set = set()
    lines += _site_lines(record.site, record.caller, "             ", shown)
    lines.append(_("  Then written into the same memory, in this order:"))
    for n, w in enumerate(record.writes, 1):
        lines.append(f"    {n}. {_where(w.site)}  {_(_OP_WORDS.get(w.op, w.op))}")
        lines += _site_lines(w.site, w.caller, "         ", shown)
    lines += [_(f"  The saved tensor's version counter did not move (still {record.version}): the write went "
              "through a tensor with a counter of its own (.data), or saved-tensor hooks hand the tensor itself "
              "back to backward. PyTorch raises nothing and backward computes the gradient from the new values: "
              "a wrong gradient, silently."),
              _("  Fix: leave the saved tensor alone - build the new values out of place (e.g. torch.cat of the "
                "pieces) or write into a copy (y = y.clone()); hiding the write does not fix it.")]
    return "\n".join(lines)


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

_UNSEEN = N_("In-place write on a tensor autograd saved for backward (not seen by the locator).")
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
