"""Mutation testing of the hidden checks: every plausible wrong variant of a reference answer must
lose points.

Each assignment package declares ``MUTANTS`` (in its ``mutants`` module): for a graded function (named
by its solution cell's grade id), the test cells whose checks judge it, and its mutants::

    MUTANTS = {
        "fixed_sigmoid_decode": Target(checks=("fixed_sigmoid_decode_tests",), mutants=(
            Mutant("drop the grid offset", "+ grid", ""),
            Mutant("float32 cast kept", "...", "...", equivalent="the cast is a no-op for float32 inputs"),
        )),
    }

A :class:`Mutant` replaces one exact piece of text of the reference solution (the source notebook's
solution cell, markers removed) by another. A mutant is *killed* when at least one of its target's
checks fails on it. A mutant marked ``equivalent`` (with the reason) behaves like the reference on
everything the task allows, so it must *pass* every check instead.

:func:`run_mutants` executes the source notebook's non-test cells once, then each mutant's solution
cell in a copy of that namespace, and judges it in-process (no nbgrader, no sandbox: the
instructor's own code). ``python -m instructor.hidden.mutation [ASSIGNMENT ...]`` prints the score.
"""
from __future__ import annotations

import importlib
import re
import sys
import time
from dataclasses import dataclass, field

import nbformat

from autograder.nbgrader_cells import grade_id

from . import ASSIGNMENT_MODULES, run_in_process

__all__ = ["Mutant", "Target", "MutantResult", "reference_solution", "notebook_namespace", "run_mutants",
           "mutation_table"]


@dataclass(frozen=True)
class Mutant:
    name: str
    old: str
    new: str
    equivalent: str = ""  # why it behaves exactly like the reference (then it must pass)
    count: int = 1        # how many occurrences of ``old`` to replace (0: all)


@dataclass(frozen=True)
class Target:
    checks: tuple[str, ...]
    mutants: tuple[Mutant, ...]


@dataclass
class MutantResult:
    assignment: str
    function: str
    mutant: Mutant
    killed: bool
    failed_checks: list[str] = field(default_factory=list)
    error: str = ""

    @property
    def ok(self) -> bool:
        """Killed when it should be, alive when it is equivalent; a broken mutant is never ok."""
        if self.error:
            return False
        return (not self.killed) if self.mutant.equivalent else self.killed


_MARKERS = re.compile(r"^[ \t]*### (BEGIN|END) SOLUTION[ \t]*(\n|\Z)", re.M)


def _source_notebook(assignment: str):
    from ..layout import source_notebooks

    [path] = source_notebooks(assignment)[:1]
    return nbformat.read(path, as_version=4)


def reference_solution(assignment: str, function: str) -> str:
    """The source of the solution cell ``function`` (its grade id), solution markers removed."""
    for cell in _source_notebook(assignment).cells:
        if grade_id(cell) == function:
            return _MARKERS.sub("", cell.source)
    raise KeyError(f"{assignment}: no solution cell '{function}'")


_NAMESPACES: dict[str, dict] = {}


def notebook_namespace(assignment: str) -> dict:
    """The namespace after every non-test cell of the source notebook ran (cached per process)."""
    if assignment in _NAMESPACES:
        return _NAMESPACES[assignment]
    from IPython.core.interactiveshell import InteractiveShell

    from ..layout import is_test_cell

    main_module = sys.modules.get("__main__")  # IPython swaps in a __main__ of its own; put ours back after
    shell = InteractiveShell.instance(colors="NoColor")
    shell.reset(new_session=False)
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        for cell in _source_notebook(assignment).cells:
            if cell.cell_type == "code" and not is_test_cell(cell):
                res = shell.run_cell(_MARKERS.sub("", cell.source), store_history=False)
                if not res.success:
                    raise RuntimeError(f"{assignment}: a cell of the source notebook failed: "
                                       f"{res.error_in_exec or res.error_before_exec}")
    _NAMESPACES[assignment] = dict(shell.user_ns)
    if main_module is not None:
        sys.modules["__main__"] = main_module  # multiprocessing's spawn (grading workers) needs the real one
    return _NAMESPACES[assignment]


def apply(source: str, mutant: Mutant) -> str:
    if mutant.old not in source:
        raise ValueError(f"mutant '{mutant.name}': {mutant.old!r} is not in the reference solution")
    return source.replace(mutant.old, mutant.new, mutant.count or -1)


def judge_source(assignment: str, checks: tuple[str, ...], source: str) -> list[str]:
    """Grade ids of ``checks`` that fail when the solution cell is ``source``."""
    import contextlib
    import io

    ns = dict(notebook_namespace(assignment))
    failed = []
    with contextlib.redirect_stdout(io.StringIO()):
        code = compile(source, "<mutant>", "exec")  # a mutant that does not compile is a broken mutant
        try:
            exec(code, ns)
        except Exception:  # noqa: BLE001 - a mutant whose cell raises: its function is not defined
            return list(checks)
        for gid in checks:
            if not run_in_process(gid, ns, assignment).passed:
                failed.append(gid)
    return failed


def run_mutants(assignments=None, progress: bool = False) -> list[MutantResult]:
    results = []
    for assignment in assignments or ASSIGNMENT_MODULES:
        module = importlib.import_module(ASSIGNMENT_MODULES[assignment])
        for function, target in getattr(module, "MUTANTS", {}).items():
            reference = reference_solution(assignment, function)
            for mutant in target.mutants:
                t0 = time.perf_counter()
                try:
                    failed = judge_source(assignment, target.checks, apply(reference, mutant))
                    results.append(MutantResult(assignment, function, mutant, bool(failed), failed))
                except (ValueError, SyntaxError) as err:  # not applicable or not Python: the mutant is broken
                    results.append(MutantResult(assignment, function, mutant, False, error=f"BROKEN MUTANT: {err}"))
                if progress:
                    print(f"  {assignment}/{function}: {mutant.name} "
                          f"{'killed' if results[-1].killed else 'ALIVE'} ({time.perf_counter() - t0:.1f} s)",
                          flush=True)
    return results


def mutation_table(results: list[MutantResult]) -> str:
    rows, by_fn = [], {}
    for r in results:
        by_fn.setdefault((r.assignment, r.function), []).append(r)
    rows.append(f"{'function':<48} {'mutants':>7} {'killed':>6} {'equiv.':>6} {'score':>7}")
    for (a, f), rs in by_fn.items():
        live = [r for r in rs if not r.mutant.equivalent]
        killed = sum(r.killed for r in live)
        eq = len(rs) - len(live)
        score = f"{100 * killed / len(live):.0f} %" if live else "-"
        rows.append(f"{a + '/' + f:<48} {len(live):>7} {killed:>6} {eq:>6} {score:>7}")
        for r in rs:
            if not r.ok:
                rows.append(f"    {'SURVIVED' if not r.mutant.equivalent else 'EQUIVALENT BUT FAILED'}: "
                            f"{r.mutant.name} {r.error}")
    return "\n".join(rows)


if __name__ == "__main__":
    res = run_mutants(sys.argv[1:] or None, progress=True)
    print(mutation_table(res))
    sys.exit(0 if all(r.ok for r in res) else 1)
