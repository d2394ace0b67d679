"""Assertion helpers for the course's tests.

Every failure reads the same way, for a student stuck at 2 a.m.:

    decode(...) returned wrong values
      for input: p float32 (1, 3, 4, 5, 7) on cpu
      expected : ...
      got      : ...
      try next : ...

Checks go type first, then shape/dtype/device, then values, and always end with what to try.
Comparisons use :func:`torch.testing.assert_close` with tolerances chosen per dtype on purpose.
"""
from __future__ import annotations

import contextlib
import io
import warnings
from typing import Any, Callable

import torch

__all__ = [
    "CheckFailed",
    "describe",
    "fail",
    "check_type",
    "check_tensor",
    "check_close",
    "check_equal",
    "check_true",
    "call_student",
    "tolerances",
]


class CheckFailed(AssertionError):
    """A test of the course failed; the message says what was expected and what to try.

    In a notebook (IPython, and so nbgrader's feedback) it shows as its message alone: the friendly
    "expected / got / try next" lines, no traceback through the grader's code or the test cell.
    """

    def _render_traceback_(self) -> list[str]:
        return [f"{type(self).__name__}: {self}"]


def describe(value: Any) -> str:
    """A one-line description of a value: tensors by dtype, shape and device, not by content."""
    from .i18n import _   # the Chinese edition: described in Chinese

    if isinstance(value, torch.Tensor):
        dtype, shape = str(value.dtype).replace('torch.', ''), tuple(value.shape)
        if value.requires_grad:
            return _(f"tensor {dtype} {shape} on {value.device}, requires_grad")
        return _(f"tensor {dtype} {shape} on {value.device}")
    if isinstance(value, (list, tuple)) and len(value) > 6:
        return _(f"{type(value).__name__} of {len(value)} items")
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def fail(what: str, *, expected: Any = None, got: Any = None, inputs: Any = None,
         hint: str = "", detail: str = "") -> None:
    """Raise :class:`CheckFailed` with the course's message layout."""
    lines = [what]
    if inputs is not None:
        lines.append(f"  for input: {inputs if isinstance(inputs, str) else describe(inputs)}")
    if expected is not None:
        lines.append(f"  expected : {expected if isinstance(expected, str) else describe(expected)}")
    if got is not None:
        lines.append(f"  got      : {got if isinstance(got, str) else describe(got)}")
    if hint:  # before the detail: expected / got / try next lead, where Validate's dialog shows them first
        lines.append(f"  try next : {hint}")
    if detail:
        lines += ["  " + line for line in _brief(detail)]
    from .i18n import language, translate_message   # the Chinese edition: the same message, in Chinese

    message = "\n".join(lines)
    raise CheckFailed(message if language() == "en" else translate_message(message))


def check_true(condition: bool, what: str, hint: str = "", **kw) -> None:
    if not condition:
        fail(what, hint=hint, **kw)


def check_type(value: Any, types: type | tuple[type, ...], what: str, hint: str = "") -> None:
    """Fail unless ``value`` is an instance of ``types``."""
    if not isinstance(value, types):
        names = (" or ".join(t.__name__ for t in types) if isinstance(types, tuple) else types.__name__)
        fail(f"{what} has the wrong type", expected=names, got=f"{type(value).__name__}: {describe(value)}",
             hint=hint or f"return a {names}.")


def check_tensor(value: Any, what: str, *, shape: tuple | None = None, dtype: torch.dtype | None = None,
                 device: torch.device | str | None = None, hint: str = "") -> None:
    """Type, then shape, then dtype, then device."""
    check_type(value, torch.Tensor, what, hint)
    if shape is not None and tuple(value.shape) != tuple(shape):
        fail(f"{what} has the wrong shape", expected=str(tuple(shape)), got=str(tuple(value.shape)),
             hint=hint or "keep every dimension of the input; build the result with torch.cat on the last one.")
    if dtype is not None and value.dtype != dtype:
        fail(f"{what} has the wrong dtype", expected=str(dtype), got=str(value.dtype),
             hint=hint or "a float32 constant mixed into a float16 tensor promotes it: "
                          "cast with .to(p.dtype) before joining the pieces.")
    if device is not None and value.device.type != torch.device(device).type:
        fail(f"{what} is on the wrong device", expected=str(device), got=str(value.device),
             hint=hint or "create new tensors with device=p.device (or use torch.zeros_like/ones_like).")


def tolerances(dtype: torch.dtype) -> dict[str, float]:
    """rtol/atol per dtype: tight for float64 references, loose enough for float16's 11-bit mantissa."""
    return {
        torch.float64: dict(rtol=1e-7, atol=1e-9),
        torch.float32: dict(rtol=1e-4, atol=1e-5),
        torch.float16: dict(rtol=2e-2, atol=2e-2),
        torch.bfloat16: dict(rtol=5e-2, atol=5e-2),
    }.get(dtype, dict(rtol=1e-5, atol=1e-8))


def check_close(actual: Any, expected: torch.Tensor, what: str, *, inputs: Any = None,
                rtol: float | None = None, atol: float | None = None, hint: str = "") -> None:
    """Type, shape and values of ``actual`` against ``expected`` (dtype-aware tolerances)."""
    check_type(actual, torch.Tensor, what, hint)
    if tuple(actual.shape) != tuple(expected.shape):
        fail(f"{what} has the wrong shape", expected=str(tuple(expected.shape)), got=str(tuple(actual.shape)),
             inputs=inputs, hint=hint)
    tol = tolerances(expected.dtype)
    if rtol is not None:
        tol["rtol"] = rtol
    if atol is not None:
        tol["atol"] = atol
    try:
        torch.testing.assert_close(actual.detach().to(expected.device, expected.dtype),
                                   expected.detach(), equal_nan=False, **tol)
    except AssertionError as err:
        diff = (actual.detach().to(expected.device, torch.float64) - expected.detach().double()).abs()
        idx = tuple(int(i) for i in torch.unravel_index(diff.argmax(), diff.shape)) if diff.numel() else ()
        fail(f"{what} has wrong values", inputs=inputs,
             expected=f"{float(expected.flatten()[diff.argmax()]):.6g} at index {idx}" if idx else "",
             got=f"{float(actual.detach().flatten()[diff.argmax()]):.6g} at index {idx}" if idx else "",
             detail=str(err).splitlines()[0] + "\n" + "\n".join(str(err).splitlines()[1:3]),
             hint=hint)


MAX_DETAIL_LINES = 4   # with the what / input / expected / got / try-next lines: at most ten in all


def _brief(detail: str) -> list[str]:
    """At most ``MAX_DETAIL_LINES`` lines of detail. A locator report keeps its first line and its
    "In short:" line (which save, which writes); anything cut is counted, never silently dropped."""
    lines = [line for line in detail.strip().splitlines() if line.strip()]
    if len(lines) <= MAX_DETAIL_LINES:
        return lines
    short = [line.strip() for line in lines if line.strip().startswith("In short:")]
    if short:   # a locator report: which save and writes, then the first write and its line of code
        first_write = [i for i, line in enumerate(lines) if line.strip().startswith("Then written in place")]
        write = lines[first_write[0] + 1:first_write[0] + 3] if first_write else []
        keep = short[:1] + [("" if k == 0 else "   ") + line.strip() for k, line in enumerate(write)]
    else:
        keep = lines[:MAX_DETAIL_LINES - 1]
    return keep + [f"(+{len(lines) - len(keep)} more lines: run the failing call in a cell of your own to see them all)"]


def check_equal(actual: Any, expected: Any, what: str, hint: str = "", inputs: Any = None) -> None:
    if actual != expected:
        fail(f"{what} is not what was expected", expected=repr(expected), got=repr(actual),
             inputs=inputs, hint=hint)


def call_student(fn: Callable, *args, name: str | None = None, **kwargs) -> Any:
    """Call a student's function; turn 'not implemented yet' and crashes into clear messages.

    Warnings raised inside are recorded and printed on stdout, so a correct answer that makes
    PyTorch warn is not zeroed by nbgrader (which fails a test cell that writes to stderr).
    """
    name = name or getattr(fn, "__name__", "your function")
    if not callable(fn):
        fail(f"{name} is not a function", got=describe(fn),
             hint=f"run the cell that defines {name} (Run > Run All Above Selected Cell).")
    crash = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = fn(*args, **kwargs)
        except CheckFailed:
            raise
        except Exception as err:  # noqa: BLE001 - every crash becomes a clear message, raised below
            crash = err           # (outside the except block: no "during handling ..." chain)
    if isinstance(crash, NotImplementedError):
        fail(f"{name} is not implemented yet",
             hint=f"replace `raise NotImplementedError` in the cell that defines {name}, run it, then rerun this test.")
    if crash is not None:
        fail(f"{name}(...) raised {type(crash).__name__}", detail=_crash_detail(crash),
             inputs=", ".join(describe(a) for a in args) if args else None, hint=_crash_hint(crash))
    for w in caught:
        print(f"(warning while running {name}: {w.category.__name__}: {w.message})")
    return result


#: What a regular-expression match object has and ``None`` has not: ``re.search(...).group(1)`` on a
#: pattern that matched nothing fails with ``'NoneType' object has no attribute 'group'``.
_MATCH_METHODS = ("group", "groups", "groupdict", "span", "start", "end", "string", "lastindex")
NO_MATCH_HINT = ("your pattern matched nothing in the message: print the message and try the pattern on it "
                 "with re.search(...) (it returns None when nothing matches).")


def no_match_hint(kind: str, text: str) -> str:
    """The regex hint when an error (its type's name and message) is a failed match used as a match, else "".
    Shared by the visible tests and the hidden checks' messages."""
    if kind == "AttributeError" and any(f"'NoneType' object has no attribute '{m}'" in text for m in _MATCH_METHODS):
        return NO_MATCH_HINT
    if kind == "TypeError" and "'NoneType' object is not subscriptable" in text:
        return "if that None came from re.search or re.match, " + NO_MATCH_HINT
    return ""


def _crash_hint(err: BaseException) -> str:
    """What to try next after a crash: the regex hint when the crash is a failed match used as a match."""
    return (no_match_hint(type(err).__name__, str(err))
            or "run it yourself on the input above and read the full traceback.")


def _crash_detail(err: BaseException, lines: int = 3) -> str:
    """The error's first lines and, when it came from a notebook cell, the line of the student's code."""
    import traceback

    text = "\n".join(str(err).strip().splitlines()[:lines]) or type(err).__name__
    if len(text) > 400:
        text = text[:397] + "..."
    cell_frames = [f for f in traceback.extract_tb(err.__traceback__)
                   if "ipykernel_" in (f.filename or "") or (f.filename or "").startswith("<ipython-input")]
    if cell_frames and cell_frames[-1].line:
        from .i18n import _

        text += "\n" + _(f"at: {cell_frames[-1].line.strip()[:100]}  (in {cell_frames[-1].name})")
    return text


@contextlib.contextmanager
def captured_stdout():
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        yield buf
