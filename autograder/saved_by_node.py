"""What an autograd node saved for backward, asked from PyTorch: the one reading of a node's saves.

Every op that needs an input or its output to compute its gradient keeps it in the node it makes (the
tensor's ``grad_fn``). PyTorch shows each of those saves as an attribute of the node:

* ``node._saved_<name>`` (``_saved_self``, ``_saved_result``, ``_saved_other``, ...): the saved value, a
  tensor, a list of tensors, or a plain number (an ``alpha``, a size, ``eps``);
* ``node.saved_tensors``: what a custom ``torch.autograd.Function`` kept with ``ctx.save_for_backward``;
* ``node._raw_saved_<name>``: the saved variable itself (its ``.data`` is the tensor), readable even when
  the save can no longer be unpacked.

Reading ``_saved_<name>`` (or ``saved_tensors``) runs PyTorch's own checks, so the answer is PyTorch's,
never a guess of ours: the value when the save is intact; a ``RuntimeError`` that says the tensor was
"modified by an inplace operation" and "is at version N; expected version M" when it was written in place
after the save (exactly the error ``backward()`` would raise: the save is *broken*, or *stale*); a
``RuntimeError`` that says it has "already been freed" when a ``backward()`` already ran through the
node.

Both sides of the student package read saves through this module: the lessons' explorers
(:mod:`autograder.explorers`: what each node saved, stale or not, and the memory it keeps) and the
in-place locator's recorder (:mod:`autograder.inplace_recorder`: which saves a write broke).
"""
from __future__ import annotations

import re

import torch

__all__ = ["SAVED_PREFIX", "RAW_SAVED_PREFIX", "FUNCTION_SAVED", "INPLACE_MARK", "FREED_MARK", "VERSION_RE",
           "saved_names", "role", "read_saved", "probe", "is_broken", "is_freed", "versions", "raw_saved"]

#: a node's attributes that hold what it saved: ``_saved_<name>``
SAVED_PREFIX = "_saved_"
#: the same saves as saved variables: ``_raw_saved_<name>`` (``.data`` is the tensor, stale or not)
RAW_SAVED_PREFIX = "_raw_saved_"
#: what a custom autograd.Function's node saved (``ctx.save_for_backward``)
FUNCTION_SAVED = "saved_tensors"
#: PyTorch's words for a save written in place after it was saved (the version-counter error)
INPLACE_MARK = "modified by an inplace operation"
#: PyTorch's word for a save an earlier ``backward()`` released
FREED_MARK = "freed"
#: the two versions in PyTorch's version-counter error: (now, expected = at the save)
VERSION_RE = re.compile(r"is at version (\d+); expected version (\d+)")


def saved_names(node, functions: bool = True) -> tuple[str, ...]:
    """The attributes of ``node`` that hold its saves: its ``_saved_*`` ones in ``dir`` order (sorted), then,
    for a custom autograd.Function's node and when ``functions`` is true, ``saved_tensors``.

    Some ``_saved_*`` attributes hold plain numbers (an op's ``alpha``, ``eps``, sizes): they are listed too,
    the caller skips what is not a tensor.
    """
    names = tuple(n for n in dir(node) if n.startswith(SAVED_PREFIX))
    if functions and isinstance(node, torch.autograd.function.BackwardCFunction):
        names += (FUNCTION_SAVED,)
    return names


def role(name: str, index: int | None = None) -> str:
    """What a save is to its op, as a report names it: ``_saved_self`` -> ``self``, ``saved_tensors`` with
    ``index`` 0 -> ``saved_tensors[0]``."""
    short = name[len(SAVED_PREFIX):] if name.startswith(SAVED_PREFIX) else name
    return short if index is None else f"{short}[{index}]"


def read_saved(node, name: str):
    """``(value, None)`` when PyTorch hands the save out, else ``(None, the exception it raised)`` (a broken
    save, a freed one, or an accessor PyTorch cannot answer); tell them apart with :func:`is_broken` and
    :func:`is_freed`."""
    try:
        return getattr(node, name), None
    except Exception as err:  # noqa: BLE001 - the caller decides what each failure means
        return None, err


def is_broken(err: BaseException | None) -> bool:
    """Whether reading a save failed because it was written in place after the save (PyTorch's
    version-counter error: the one ``backward()`` would raise)."""
    return isinstance(err, RuntimeError) and INPLACE_MARK in str(err)


def is_freed(err: BaseException | None) -> bool:
    """Whether reading a save failed because an earlier ``backward()`` freed it."""
    return isinstance(err, RuntimeError) and FREED_MARK in str(err)


def probe(node, name: str, index: int | None = None) -> tuple[str, str | None]:
    """Ask PyTorch about one save (``index``: one tensor of a saved list): ``("ok", None)``,
    ``("broken", PyTorch's message)``, or ``("freed", None)`` for any other failure (freed by a backward,
    or no longer readable at all)."""
    value, err = read_saved(node, name)
    if err is None and index is not None:
        try:
            value[index]
        except Exception as item_err:  # noqa: BLE001
            err = item_err
    if err is None:
        return "ok", None
    return ("broken", str(err)) if is_broken(err) else ("freed", None)


def versions(message: str) -> tuple[int, int] | None:
    """``(version now, version at the save)`` from PyTorch's version-counter message, or None."""
    match = VERSION_RE.search(message)
    return (int(match.group(1)), int(match.group(2))) if match else None


def raw_saved(node, name: str) -> torch.Tensor | None:
    """The tensor behind save ``name`` (``_saved_<x>`` or ``<x>``) through ``_raw_saved_<x>``: there even when
    the save is stale (the tensor as it is now, written or not). None when the node has no such saved
    variable, or it holds a list."""
    short = name[len(SAVED_PREFIX):] if name.startswith(SAVED_PREFIX) else name
    try:
        raw = getattr(node, RAW_SAVED_PREFIX + short)
    except Exception:  # noqa: BLE001
        return None
    try:
        return raw.data if not isinstance(raw, (list, tuple)) else None
    except Exception:  # noqa: BLE001
        return None
