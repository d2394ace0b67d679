"""What a student sees before handing in: the released notebook's visible tests, run on a sample's answers.

A sample file says ``# visible: fail=fixed_sigmoid_decode_tests pass=judge_fix_tests``; this module
fills the sample's answers into the *released* notebook (no hidden tests there), runs it top to bottom
the way a student's Run All does, and reports, for every test cell, whether it raised and the first
lines the student would read. ``tests/test_visible.py`` holds every sample to its ``# visible:`` line
and checks that a first failure reads short and friendly-first.

    python -m instructor.authoring.visible 01_version_counter      # one assignment's samples
    python -m instructor.authoring.visible tests/samples/03_yolo_head/no_grad_fix.py
"""
from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from autograder.nbgrader_cells import grade_id, is_test_cell

from ..layout import REPO
from ..engine.pipeline import prepare_environment
from .samples import Sample, build_notebook, load_samples, parse_sample

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


@dataclass
class CellOutcome:
    grade_id: str
    outcome: str            # "pass" or "fail"
    shown: str = ""         # the error as the student's notebook shows it (colour codes removed)


@dataclass
class VisibleRun:
    sample: str
    cells: dict[str, CellOutcome] = field(default_factory=dict)

    def mismatches(self, expected: dict[str, str]) -> list[str]:
        out = []
        for gid, want in expected.items():
            got = self.cells.get(gid)
            if got is None:
                out.append(f"{gid}: no such test cell in the release")
            elif got.outcome != want:
                out.append(f"{gid}: expected the visible tests to {want}, they {'passed' if got.outcome == 'pass' else 'failed'}"
                           + (f"\n    {got.shown.splitlines()[0] if got.shown else ''}" if got.outcome == "fail" else ""))
        return out


def shown_error(output) -> str:
    """The text a notebook front end shows for an error output."""
    return _ANSI.sub("", "\n".join(output.get("traceback") or [f"{output.get('ename')}: {output.get('evalue')}"]))


def run_notebook(nb, assignment: str, timeout: int = 600) -> dict[str, CellOutcome]:
    """Execute ``nb`` (a filled-in release notebook) like Run All; the outcome of every test cell."""
    from nbclient import NotebookClient

    prepare_environment()
    with tempfile.TemporaryDirectory(prefix="visible-") as tmp:
        work = Path(tmp) / assignment
        shutil.copytree(REPO / "release" / assignment, work)
        NotebookClient(nb, timeout=timeout, allow_errors=True, kernel_name="python3",
                       resources={"metadata": {"path": str(work)}}).execute()
    return cell_outcomes(nb)


def cell_outcomes(nb) -> dict[str, CellOutcome]:
    """Each test cell's *visible* outcome in an executed notebook.

    Works on a released notebook run by hand and on an autograded one alike: a cell that failed only in
    its hidden part (``HiddenTestFailed``, raised by ``confirmed`` after the visible tests passed) counts
    as a visible pass.
    """
    cells = {}
    for cell in nb.cells:
        if not is_test_cell(cell):
            continue
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"
                  and o.get("ename") != "HiddenTestFailed"]
        gid = grade_id(cell) or ""
        cells[gid] = CellOutcome(gid, "fail" if errors else "pass", shown_error(errors[0]) if errors else "")
    return cells


def run_sample(sample: Sample | Path) -> VisibleRun:
    if not isinstance(sample, Sample):
        sample = parse_sample(Path(sample))
    _, nb = build_notebook(sample)
    return VisibleRun(f"{sample.assignment}/{sample.student}", run_notebook(nb, sample.assignment))


def run_samples(samples: list[Sample], jobs: int = 2) -> dict[str, VisibleRun]:
    """Every sample's visible run, ``jobs`` at a time (each is its own kernel)."""
    if jobs <= 1 or len(samples) <= 1:
        return {r.sample: r for r in map(run_sample, samples)}
    from multiprocessing import get_context

    with ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("spawn")) as pool:
        return {r.sample: r for r in pool.map(run_sample, [s.path for s in samples])}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m instructor.authoring.visible", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("targets", nargs="*", help="assignment names or sample files (default: every sample "
                                                   "with a '# visible:' line)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--all", action="store_true", help="also samples without a '# visible:' line")
    args = parser.parse_args(argv)
    chosen: list[Sample] = []
    for t in args.targets or [None]:
        if t and t.endswith(".py"):
            chosen.append(parse_sample(Path(t)))
        else:
            chosen += [s for s in load_samples(t) if args.all or s.expect_visible]
    runs = run_samples(chosen, args.jobs)
    bad = 0
    for s in chosen:
        run = runs[f"{s.assignment}/{s.student}"]
        wrong = run.mismatches(s.expect_visible)
        bad += bool(wrong)
        print(f"{'MISMATCH' if wrong else 'ok':8} {run.sample}: "
              + " ".join(f"{g}={c.outcome}" for g, c in run.cells.items()))
        for w in wrong:
            print("   ", w)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
