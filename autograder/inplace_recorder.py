"""The in-place locator's recorder: a ``TorchDispatchMode`` that notes what autograd saved and which
writes broke it.

Start here if you wonder how ``locate_inplace()`` can name the line that wrote into a saved tensor.

1. **Every op passes through it.** A ``TorchDispatchMode`` (``_Recorder``) sees every aten op below
   autograd, whoever calls it, so it sees every in-place form: ``+=``, slice assignment (``copy_`` on a
   view), the ``*_`` methods, ``out=``, ``index_put_``, ``nn.ReLU(inplace=True)``. Each op is run
   exactly as called (``_run``) and its result handed back untouched, so gradients are bit-for-bit the
   same with the locator as without.
2. **Which tensors an op writes** is read from the op's schema: the arguments marked ``Tensor(a!)``
   (``alias_info.is_write``), learned once per op (``_write_spec``, ``_written_tensors``).
3. **What autograd saved** is read after each op from the new ``grad_fn`` nodes' saves
   (:mod:`autograder.saved_by_node`: ``_saved_*``, ``saved_tensors`` for custom Functions), node by node
   through ``next_functions`` (``_Recorder._discover``). Each saved tensor becomes a ``_Save``, filed
   under its *storage* (``_storage_key``): a write through any view of that memory finds it.
4. **After a write into a saved storage** the recorder simply asks PyTorch whether the save is now
   broken (``probe``): reading a saved attribute runs PyTorch's own version check, and its answer
   carries the exact "is at version N; expected version M" numbers (``_Recorder._check_write``). A
   broken save becomes a ``SavedTensor`` record, with each ``InplaceWrite`` that moved its version and
   the user's lines (``Site``) that made it. A write into the same bytes that PyTorch's check cannot see
   (through ``.data``, or a save that saved-tensor hooks hand back as itself) is matched by geometry
   (``_geometry``, ``_overlaps``) and recorded in ``hidden``.
5. **Whose line it was**: the two innermost frames outside torch and the locator's own files
   (``_user_frames``); when a library wrote (an optimizer's ``step``, an ``inplace=True`` layer, a
   custom Function), ``_library_writer`` says which.

Two timing details: the work for op *k* is done at the start of op *k+1* (``_Recorder.flush``), because
only then has autograd attached the new ``grad_fn`` and bumped the version counter; and no saved-tensor
hooks are used, since PyTorch skips its version check for tensors packed by hooks, which would silence
the very error being explained.

The rest of the locator is elsewhere: the context manager, the assertions, the notebook extension and
the command line in :mod:`autograder.inplace`; the reports' words in :mod:`autograder.inplace_messages`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import linecache
import os
import re
import sys
from typing import Any, Iterable

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from .inplace_messages import parse_version_error
from .saved_by_node import VERSION_RE, probe, role, saved_names

__all__ = ["Site", "InplaceWrite", "SavedTensor", "cell_name"]

# --------------------------------------------------------------------------- sites

_INTERNAL_DIRS = tuple({os.path.dirname(os.path.abspath(torch.__file__)) + os.sep,
                        os.path.dirname(os.path.realpath(torch.__file__)) + os.sep})
#: the locator's own files (this one, autograder/inplace.py, inplace_messages.py): never 'the user's line'
_OWN_FILES = ("inplace.py", "inplace_recorder.py", "inplace_messages.py")
_INTERNAL_FILES = {os.path.abspath(contextlib.__file__), os.path.realpath(contextlib.__file__),
                   *(os.path.join(os.path.dirname(where(__file__)), name)
                     for where in (os.path.abspath, os.path.realpath) for name in _OWN_FILES)}
_internal_cache: dict[str, bool] = {}
_CELL_RE = re.compile(r"^<ipython-input-|[/\\]ipykernel_\d+[/\\]\d+\.py$|^<cell")


def _is_internal(filename: str) -> bool:
    """Frames in torch/, contextlib or the locator's own files are never 'the user's line'."""
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
