"""Hidden checks, one package per assignment, each check split into a *probe* and a *judge*.

An assignment's package (``aNN_name/``) exports its checks; inside, modules named by their role:
``references`` (the answers and the experiments that find out the truth), ``cases`` (the inputs the
checks draw on), ``checks`` (the :class:`Check` subclasses, one per graded test cell, with the helpers
their probes ship and their judges use) and ``mutants`` (the ``MUTANTS`` of :mod:`.mutation`).

A :class:`Check` confirms one graded test cell (its ``grade_id``):

* :meth:`Check.cases` — made in the grader: the inputs, as plain data (tensors, numbers, strings,
  lists, dicts; a function to hand the student is given as source text). Deterministically seeded.
  A case may carry a ``"label"`` (e.g. ``"a 0-dim float16 tensor"``): it is what a failing student is
  told about the input, instead of the hidden code.
* :meth:`Check.probe` — runs in the sandbox, in a fresh process holding only the student's cells:
  ``probe(ns, case)`` calls the student's objects (``student(ns, "name")``) on the case and returns
  plain data. Its *source* is shipped, so it must be self-contained: import inside the function,
  use only ``torch``, ``math``, the standard library, the student package ``autograder`` and the
  helper ``student``; put shared code in ``probe_helpers`` (functions whose source is shipped too).
  A probe holds no expected value.
* :attr:`Check.draws` — the input kinds its cases draw, in the words of :data:`KINDS` (dtypes, "0-dim",
  "meta", "GPU", "repeated calls", ...). ``tests/test_task_text.py`` holds each of them to appear in its
  task's text in the source notebook, so a check cannot start drawing a kind the student was never told.
* :meth:`Check.judge` — runs in the grader's own process: ``judge(case, result)`` computes the
  reference and raises :class:`autograder.checks.CheckFailed` (use the helpers of
  :mod:`autograder.checks`) when the result is wrong. Any other exception it raises also fails the
  case, with a generic message: a garbage result can never pass.

The same three pieces run in one process (:func:`run_in_process`) when an instructor executes a
``source/`` notebook: its hidden test cell calls :func:`autograder.verdicts.confirmed`, which finds
this package and runs the check on the notebook's own namespace.
"""
from __future__ import annotations

import copy
import functools
import importlib
import inspect
import re
import textwrap
from dataclasses import dataclass
from typing import Any, Callable, ClassVar

from autograder.checks import CheckFailed, no_match_hint

from .probe_driver import compile_probe, run_case, unwrap

ASSIGNMENT_MODULES = {
    "00_orientation": "instructor.hidden.a00_orientation",
    "01_version_counter": "instructor.hidden.a01_version_counter",
    "02_names_and_storage": "instructor.hidden.a02_names_and_storage",
    "03_yolo_head": "instructor.hidden.a03_yolo_head",
    "04_in_the_wild": "instructor.hidden.a04_in_the_wild",
}

__all__ = ["Check", "Verdict", "checks_for", "find_check", "probe_source", "judge_results",
           "run_in_process", "draws_of", "ASSIGNMENT_MODULES", "configs_with_half_on_cpu", "KINDS"]

#: The vocabulary of :attr:`Check.draws`: each input kind, and the pattern (a regular expression,
#: matched case-insensitively, as a whole word) that says it in a task's text.
KINDS: dict[str, str] = {
    **{dt: dt for dt in ("float64", "float32", "float16", "bfloat16", "int64", "int32", "uint8", "bool",
                         "complex64")},
    "0-dim": r"0-dim",
    "empty": r"empty",  # a tensor with no elements, e.g. of shape (0, 3)
    "non-contiguous": r"non-contiguous|transposed",
    "view": r"views?",
    "leaf": r"leaf",
    "meta": r"meta",  # the `meta` device: shapes and dtypes, no data
    "GPU": r"GPU|CUDA",
    "repeated calls": r"twice|called again|again and again|repeated(ly)?|(two|several) calls( in a row)?",
    "training": r"training",
    "export": r"export",
}


def configs_with_half_on_cpu() -> list:
    """Every (device, dtype) of ``test_configs()`` and, on the CPU, float16 and bfloat16 too: the input
    space of a task whose operations the CPU runs in half precision."""
    import torch

    from autograder.runtime import test_configs

    configs = list(test_configs())
    for extra in (torch.float16, torch.bfloat16):
        if (torch.device("cpu"), extra) not in configs:
            configs.append((torch.device("cpu"), extra))
    return configs


class Check:
    """Subclass per graded test cell; set ``assignment``, ``grade_id`` and ``function`` (the name
    of the student's object, used in messages)."""

    assignment: ClassVar[str]
    grade_id: ClassVar[str]
    function: ClassVar[str] = "your function"
    probe_helpers: ClassVar[tuple[Callable, ...]] = ()
    case_timeout: ClassVar[float] = 60.0
    #: The input kinds the cases draw (keys of :data:`KINDS`); the task's text must name each.
    draws: ClassVar[tuple[str, ...]] = ()

    def cases(self) -> list[dict]:
        raise NotImplementedError

    @staticmethod
    def probe(ns: dict, case: dict) -> Any:
        raise NotImplementedError

    def judge(self, case: dict, result: Any) -> None:
        raise NotImplementedError


@dataclass
class Verdict:
    grade_id: str
    passed: bool
    message: str = ""
    cases: int = 0

    def as_json(self) -> dict:
        return {"passed": self.passed, "message": self.message, "cases": self.cases}


def _defined_in(cls: type, module) -> bool:
    """Defined in the assignment's module or, for an assignment package, in one of its modules."""
    return cls.__module__ == module.__name__ or cls.__module__.startswith(module.__name__ + ".")


@functools.lru_cache(maxsize=None)
def _check_classes(assignment: str) -> tuple[type, ...]:
    module = importlib.import_module(ASSIGNMENT_MODULES[assignment])
    found = [obj for obj in vars(module).values()
             if inspect.isclass(obj) and issubclass(obj, Check) and obj is not Check
             and getattr(obj, "grade_id", None) and _defined_in(obj, module)]
    # the order of their definitions, without re-reading sources (an assignment's checks share one module)
    found.sort(key=lambda c: c.probe.__code__.co_firstlineno)
    return tuple(found)


def draws_of(assignment: str) -> set[str]:
    """Every input kind (:attr:`Check.draws`) one of the assignment's checks draws."""
    return {kind for cls in _check_classes(assignment) for kind in getattr(cls, "draws", ())}


def checks_for(assignment: str) -> list[Check]:
    """Every check of an assignment, in the order of its module (fresh instances)."""
    return [c() for c in _check_classes(assignment)]


def find_check(grade_id: str, assignment: str | None = None) -> Check:
    for a in ([assignment] if assignment else ASSIGNMENT_MODULES):
        for check in checks_for(a):
            if check.grade_id == grade_id:
                return check
    raise KeyError(f"no hidden check confirms the test cell '{grade_id}'")


@functools.lru_cache(maxsize=None)
def _probe_source(cls: type) -> str:
    """The text shipped into the sandbox: the helpers, then ``def probe(ns, case)``."""
    parts = [textwrap.dedent(inspect.getsource(h)) for h in cls.probe_helpers]
    src = textwrap.dedent(inspect.getsource(cls.probe))
    lines = [l for l in src.splitlines() if l.strip() != "@staticmethod"]
    parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


def probe_source(check: Check) -> str:
    return _probe_source(type(check))


#: What the released stubs raise (nbgrader_config.py's code stub).
STUB_MESSAGE = "Replace this line with your answer"
#: The same stub in the Chinese edition (zh_CN/nbgrader_config.py's code stub).
STUB_MESSAGE_ZH_CN = "把这一行换成你的答案"
#: How PyTorch words the NotImplementedError it raises itself: an operation with no kernel for a device or
#: dtype (``"addmm_impl_cpu_" not implemented for 'Half'``, ``Could not run 'aten::...' with arguments from
#: the 'Meta' backend``), a meta tensor asked for data. Any other NotImplementedError is the student's own:
#: the stub, or a draft's ``raise NotImplementedError("todo")``.
_TORCH_NOT_IMPLEMENTED = re.compile(r"not implemented for '|Could not run '|aten::|meta tensor|no data!|"
                                    r"is not (?:yet )?(?:implemented|supported) (?:for|on) ")


def is_stub_message(message: str) -> bool:
    """A NotImplementedError the student's code raised (the stub, a draft), not one PyTorch raised."""
    return STUB_MESSAGE in message or STUB_MESSAGE_ZH_CN in message or not _TORCH_NOT_IMPLEMENTED.search(message)


def _error_message(check: Check, case: dict, err: dict) -> str:
    where = f"\n  for input: {case['label']}" if case.get("label") else ""
    kind, msg = err.get("type", "Error"), err.get("message", "")
    if kind == "NotImplementedError" and not is_stub_message(msg):   # PyTorch's own: an answer, not a stub
        return (f"{check.function} raised NotImplementedError{where}\n  detail   : {msg[:600]}\n"
                "  try next : PyTorch has no kernel for one of your operations on this input (its device or "
                "dtype, above): do that step with another operation, or on a device that has it.")
    if kind == "NotImplementedError":
        return (f"{check.function} is not implemented yet{where}\n"
                f"  try next : replace `raise NotImplementedError` in the cell that defines {check.function}, run it.")
    if kind == "NameError" and "is not defined" in msg:
        return f"{msg}{where}\n  try next : run your notebook top to bottom (Kernel > Restart & Run All) and fix the first error."
    if kind == "Timeout":
        return f"{check.function} {msg}{where}\n  try next : look for a loop that never ends."
    hint = no_match_hint(kind, msg) or "call it yourself on an input like the one above and read the traceback."
    return f"{check.function} raised {kind}{where}\n  detail   : {msg[:600]}\n  try next : {hint}"


def judge_case(check: Check, case: dict, result: Any) -> str | None:
    """None when the case passes, else the message the student reads."""
    result = unwrap(result)
    if isinstance(result, dict) and "__error__" in result:
        return _error_message(check, case, result["__error__"])
    try:
        check.judge(case, result)
    except CheckFailed as err:
        msg = str(err)
        if case.get("label") and "for input" not in msg:
            first, _, rest = msg.partition("\n")
            msg = f"{first}\n  for input: {case['label']}" + (f"\n{rest}" if rest else "")
        return msg
    except Exception as err:  # noqa: BLE001 - a result the judge cannot read is a wrong result
        return (f"{check.function} returned something the grader could not check "
                f"({type(err).__name__}: {str(err)[:200]})"
                + (f"\n  for input: {case['label']}" if case.get("label") else "")
                + "\n  try next : return exactly the type and shape the task asks for.")
    return None


def judge_results(check: Check, cases: list[dict], results: list | None) -> Verdict:
    """The verdict of one check from the probe's results (None: the probe never finished)."""
    if results is None:
        return Verdict(check.grade_id, False, f"{check.function} could not be confirmed: the confirmation "
                                              "run ended before reaching it (your notebook stopped the process)", 0)
    if len(results) != len(cases):
        return Verdict(check.grade_id, False, _error_message(check, {}, unwrap(results[0])["__error__"])
                       if results and isinstance(results[0], dict) and "__error__" in results[0]
                       else "the confirmation run returned an incomplete result", len(cases))
    for case, result in zip(cases, results):
        msg = judge_case(check, case, result)
        if msg:
            return Verdict(check.grade_id, False, msg, len(cases))
    return Verdict(check.grade_id, True, "", len(cases))


def run_in_process(grade_id: str, ns: dict, assignment: str | None = None) -> Verdict:
    """Probe and judge in this process (an instructor running a ``source/`` notebook)."""
    check = find_check(grade_id, assignment)
    cases = check.cases()
    probe = compile_probe(probe_source(check), grade_id)
    results = [run_case(probe, ns, copy.deepcopy(case), 0) for case in cases]
    return judge_results(check, cases, results)
