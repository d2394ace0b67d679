"""The in-place locator's words: PyTorch's error read into fields, and the reports written from what the
recorder saw.

* :func:`parse_version_error` reads PyTorch's "modified by an inplace operation" message (old and new
  wordings) into a :class:`VersionError`: the tensor's type, shape and device, the op whose output it
  is, the version it is at and the version backward expected;
* the ``_format_*`` functions write the plain-words reports: one broken save and the lines that wrote
  into it (``_format_saved``), a write autograd cannot see (``_format_hidden``), an error no locator
  watched (``_format_unlocated``), the leaf and view rules (``_format_rule``).

Every text a student reads is marked for translation (``_``, ``N_``: the Chinese catalogue); the
records the reports are written from come from :mod:`autograder.inplace_recorder`, and
:func:`autograder.inplace.explain` picks the report for an error.
"""

from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING, Iterable

from .i18n import N_, _

if TYPE_CHECKING:  # only named in annotations: the recorder imports this module
    from .inplace_recorder import SavedTensor, Site

__all__ = ["VersionError", "parse_version_error"]

# --------------------------------------------------------------- what a write is called

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


_OP_WORDS = {"copy_": N_("copy_ (assignment into a slice or view)"),
             "index_put_": N_("index_put_ (indexed assignment)"),
             "add_": N_("add_ (+= or .add_)"), "sub_": N_("sub_ (-= or .sub_)"),
             "mul_": N_("mul_ (*= or .mul_)"), "div_": N_("div_ (/= or .div_)")}


#: the first line of a report on an error no locator saw (the extension adds a line when it starts so)
_UNSEEN = N_("In-place write on a tensor autograd saved for backward (not seen by the locator).")


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


def _format_rule(site: Site | None, leaf: bool) -> str:
    """The leaf or the view rule, at ``site`` (where the error was raised)."""
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
