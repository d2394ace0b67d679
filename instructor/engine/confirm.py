"""Every autograded point confirmed outside the student's kernel.

For one submitted notebook:

1. :func:`confirmation_cells` — the code the confirmation run executes: every code cell of the
   (canonical) notebook except the graded test cells. No hidden check, no reference answer. Every
   other cell runs; the driver sets ``COURSE_GRADING=1``, so the course's few slow cells that only
   show something do less (:func:`autograder.runtime.grading`).
2. :func:`run_probes` — runs :mod:`.probe_driver` on those cells and on each check's probe, in the
   sandbox (:mod:`instructor.sandbox`), and reads back plain data (``torch.load(weights_only=True)``). When the
   notebook ends the process (``os._exit``, a crash, the memory limit), the cell or check that was
   running is recorded and the run is repeated without it: the submission is graded as far as it ran.
3. :func:`confirm` — judges the results in this process and returns one :class:`Verdict` per
   graded test cell, plus the flags raised on the way.

``python -m instructor.authoring.confirm NOTEBOOK [...]`` prints the verdicts of notebooks;
``--samples ASSIGNMENT`` checks every sample submission's verdicts against its ``# expect:`` line
(an author's tool: it lives with the samples, in :mod:`instructor.authoring`).
"""
from __future__ import annotations

import contextlib
import functools
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from autograder.i18n import speaking
from autograder.nbgrader_cells import is_answer_cell

from ..hidden import Check, Verdict, checks_for, judge_results, probe_source
from ..hidden.probe_driver import timed_out
from ..layout import REPO, is_test_cell, test_cell_ids
from .results import ResultTooLarge, check_result_file, load_data
from .. import sandbox
from ..sandbox.box import Sandbox

DRIVER = Path(__file__).resolve().parents[1] / "hidden" / "probe_driver.py"
MAX_RERUNS = 3

__all__ = ["Confirmation", "confirmation_cells", "run_probes", "confirm", "test_cell_ids"]


@dataclass
class Confirmation:
    verdicts: dict[str, Verdict] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)
    seconds: float = 0.0
    sandboxed: bool = False
    hung_cells: list[str] = field(default_factory=list)  # sources of cells that ran into the cell limit
    hung_tests: list[str] = field(default_factory=list)  # test cells whose function never returned

    def as_json(self) -> dict:
        return {gid: v.as_json() for gid, v in self.verdicts.items()}


def confirmation_cells(nb) -> list[str]:
    """The code the confirmation run executes, in notebook order: every code cell but the tests."""
    return [c.source for c in nb.cells if c.cell_type == "code" and not is_test_cell(c)]


#: The time limit of a cell of the course's own (locked, not an answer) in the confirmation run: the
#: slowest of them takes seconds; past this, it is stuck in a student's function that never returns.
COURSE_CELL_SECONDS = 60.0


def course_cell_sources(assignment: str, release_dir: Path | None = None) -> frozenset[str]:
    """Sources of the released notebooks' own code cells (not answers, not tests)."""
    paths = sorted(((release_dir or REPO / "release") / assignment).glob("*.ipynb"))
    return _course_cell_sources(tuple((p, p.stat().st_mtime_ns) for p in paths))


@functools.lru_cache(maxsize=32)
def _course_cell_sources(release: tuple) -> frozenset[str]:
    """(read once per version of the release files: every submission of a class asks)"""
    return frozenset(c.source for path, _ in release for c in nbformat.read(path, as_version=4).cells
                     if c.cell_type == "code" and not is_test_cell(c) and not is_answer_cell(c))


def confirmation_cell_limits(nb, cell_timeout: float, course_sources: set[str] = frozenset()) -> list[float]:
    """Per cell of :func:`confirmation_cells`: the course's own cells (their source as released) get
    :data:`COURSE_CELL_SECONDS`, answers and the student's own cells the full cell limit (they may
    legitimately take long)."""
    out = []
    for c in nb.cells:
        if c.cell_type != "code" or is_test_cell(c):
            continue
        ours = not is_answer_cell(c) and c.source in course_sources
        out.append(min(cell_timeout, COURSE_CELL_SECONDS) if ours else cell_timeout)
    return out


def _job(cells: list[str], checks: list[Check], case_lists: list[list[dict]], case_timeout: float,
         cell_timeout: float, cell_limits: list[float] | None = None) -> dict:
    return {"cells": cells, "case_timeout": float(case_timeout), "cell_timeout": float(cell_timeout),
            "cell_limits": [float(x) for x in (cell_limits or [])],
            "checks": [{"grade_id": c.grade_id, "function": c.function, "source": probe_source(c), "cases": cases}
                       for c, cases in zip(checks, case_lists)]}


def run_probes(cells: list[str], checks: list[Check], case_lists: list[list[dict]], *,
               limits: "sandbox.Limits | None" = None, workdir: Path | None = None,
               use_sandbox: bool = True, cell_limits: list[float] | None = None,
               box=None) -> tuple[dict[str, list | None], list[str], bool]:
    """Run the driver until every check has results or was ended by the notebook: in ``box``, the
    submission's sandbox (:class:`instructor.sandbox.box.Sandbox`: pre-started or fresh, one face), each
    run in a folder of ``workdir``; without one (an author's check), a fresh sandbox of its own.

    Returns ({grade_id: results or None}, flags, sandboxed, sources of the cells that ran into the cell limit).
    """
    import torch

    # The judge's tensors (here, in the grading process) are tiny: a second intra-op thread only spins
    # and takes the core of the other grading worker (six assignment-3 confirmations: 4.1 -> 2.8-3.1 s
    # of this process's CPU, the same wall time). The sandboxed runs have OMP_NUM_THREADS=1 already.
    torch.set_num_threads(1)
    limits = limits or sandbox.Limits.from_config()
    cells = list(cells)
    pending = list(range(len(checks)))
    results: dict[str, list | None] = {}
    flags: list[str] = []
    sandboxed = False
    space = contextlib.ExitStack()
    if box is None:  # an author's check (no submission): a fresh sandbox of its own
        box = space.enter_context(Sandbox(limits, pre_started=False))
    base = box.folder if workdir is None else Path(workdir)
    deadline = time.monotonic() + limits.wall_seconds
    budget = limits.result_bytes  # all result files of this submission together, unpacked
    hung: list[str] = []
    try:
        for attempt in range(MAX_RERUNS + 1):
            if not pending:
                break
            scratch = base / f"run{attempt}"
            scratch.mkdir(parents=True, exist_ok=True)
            shutil.copy2(DRIVER, scratch / "probe_driver.py")
            torch.save(_job(cells, [checks[i] for i in pending], [case_lists[i] for i in pending],
                            limits.case_seconds, limits.cell_seconds, cell_limits), scratch / "job.pt")
            out = scratch / "out"
            out.mkdir()
            remaining = max(1.0, deadline - time.monotonic())
            run = box.run("probe_driver.py", ["job.pt", "out"], scratch, wall_seconds=remaining, use_sandbox=use_sandbox)
            sandboxed = sandboxed or run.sandboxed
            for i in list(pending):
                gid = checks[i].grade_id
                f = out / f"{gid}.pt"
                if not os.path.lexists(f):
                    continue
                pending.remove(i)
                results[gid] = None
                if not _regular_file(f):
                    flags.append(f"{gid}: the confirmation result was replaced by a link or a special file: "
                                 "forged, not read")
                    continue
                try:
                    budget -= check_result_file(f, max(0, budget))
                    results[gid] = load_data(f, max_bytes=limits.result_bytes)
                except ResultTooLarge as err:
                    flags.append(f"{gid}: the confirmation result is outside the grader's limits, not read "
                                 f"(forged results are tampering): {err}")
                except Exception as err:  # noqa: BLE001 - not plain data: the check fails
                    flags.append(f"{gid}: the confirmation result was not plain data ({type(err).__name__})")
            hung += _hung_cells(out / "summary.pt", cells)
            if not pending:
                break
            progress = _read_small(out / "progress.txt")
            why = with_error_output(run.reason or f"the process exited with status {run.returncode}",
                                    error_tail(scratch / ".sandbox-stderr"))
            if run.timed_out or time.monotonic() >= deadline:
                flags.append(f"confirmation stopped: {why}; {len(pending)} question(s) not confirmed")
                break
            if progress.startswith("cell ") and progress.split()[1:2] and progress.split()[1].isdigit() \
                    and int(progress.split()[1]) < len(cells):
                k = int(progress.split()[1])
                flags.append(f"cell {k + 1} of the answers ended the confirmation run ({why}); it was skipped")
                cells[k] = "pass  # skipped by the grader: this cell ended the process"
            elif progress.startswith("check ") and any(checks[i].grade_id == progress[6:].strip() for i in pending):
                gid = progress[6:].strip()
                flags.append(f"{gid}: calling the answer ended the confirmation run ({why})")
                i = next(i for i in pending if checks[i].grade_id == gid)
                results[gid] = None
                pending.remove(i)
            else:
                flags.append(f"confirmation run failed before any cell ran ({why})")
                break
        for i in pending:
            results.setdefault(checks[i].grade_id, None)
    finally:
        space.close()
    return results, flags, sandboxed, list(dict.fromkeys(hung))


def _hung_cells(summary: Path, cells: list[str]) -> list[str]:
    """Sources of the cells that ran into the cell limit in a run (from the driver's summary)."""
    if not _regular_file(summary):
        return []
    try:
        data = load_data(summary, max_bytes=1 << 20)
        return [cells[e["cell"]] for e in data["cell_errors"]
                if isinstance(e, dict) and e.get("error") == "CellTimeout" and isinstance(e.get("cell"), int)
                and 0 <= e["cell"] < len(cells)]
    except Exception:  # noqa: BLE001 - a forged summary only loses this speed-up
        return []


def _regular_file(path: Path) -> bool:
    import stat

    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _read_small(path: Path, limit: int = 400) -> str:
    """A few bytes of a file the sandbox wrote, never following a link (it may point anywhere)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return ""
    try:
        if not _regular_file(path):
            return ""
        return os.read(fd, limit).decode("utf-8", "replace").strip()
    finally:
        os.close(fd)


#: How much of a failing sandboxed process's error output the grader keeps: its last lines, bounded.
ERROR_TAIL_LINES = 20
ERROR_TAIL_BYTES = 4096


def clean_text(text: str) -> str:
    """``text`` with terminal escapes (colours, cursor moves) and control characters removed, tabs as
    spaces, line feeds kept: what a sandboxed process wrote, safe to print in a terminal, a CSV cell or
    a page (bidirectional overrides and other invisible format characters go too)."""
    import re
    import unicodedata

    text = re.sub(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b.", "", text)
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\t", "    ")
    return "".join(ch for ch in text if ch == "\n" or unicodedata.category(ch) not in ("Cc", "Cf", "Cs", "Co"))


def error_tail(path: Path, lines: int = ERROR_TAIL_LINES, limit: int = ERROR_TAIL_BYTES) -> str:
    """The last ``lines`` lines (at most ``limit`` bytes) of the error output a sandboxed process left in
    ``path`` (``<scratch>/.sandbox-stderr``, the kernel's ``kernel.log``), cleaned (:func:`clean_text`).

    The folder is one the submission could write and the grader may run as root: the file is opened
    with ``O_NOFOLLOW`` (a link is never followed) and ``O_NONBLOCK`` (a FIFO cannot hang the grader),
    must be a regular file (``fstat`` on what was opened), and only its last ``limit`` bytes are read.
    "" when there is none or it is empty; a bracketed note when it was replaced by a link or anything
    but a regular file (not read)."""
    import errno
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as err:
        if err.errno == errno.ELOOP:
            return f"[{Path(path).name} was replaced by a symbolic link: not read]"
        return ""
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return f"[{Path(path).name} was replaced by something that is not a regular file: not read]"
        start = max(0, st.st_size - limit)
        data = os.pread(fd, limit, start)
    except OSError:
        return ""
    finally:
        os.close(fd)
    text = clean_text(data.decode("utf-8", "replace"))
    kept = [line.rstrip() for line in text.split("\n") if line.strip()]
    if start and kept:
        kept = kept[1:] or kept  # the first line read may be cut: dropped when others follow
    return "\n".join(kept[-lines:])


def with_error_output(why: str, tail: str) -> str:
    """``why`` a run failed, followed by the last lines of its error output, on one line (a flag)."""
    return f"{why}; its last error output: {' ⏎ '.join(tail.splitlines())}" if tail else why


def confirm(nb, assignment: str, *, limits=None, workdir: Path | None = None,
            use_sandbox: bool = True, wanted: list[str] | None = None,
            box=None) -> Confirmation:
    """Verdicts for the graded test cells ``wanted`` (default: those of ``nb``, a canonical notebook).

    Every code cell but the tests runs, in notebook order: nothing is left out by reading the code."""
    t0 = time.perf_counter()
    wanted = set(wanted if wanted is not None else test_cell_ids(nb))
    checks = [c for c in checks_for(assignment) if c.grade_id in wanted]
    case_lists = [c.cases() for c in checks]
    limits = limits or sandbox.Limits.from_config()
    cells = confirmation_cells(nb)
    results, flags, sandboxed, hung = run_probes(cells, checks, case_lists, limits=limits,
                                                 cell_limits=confirmation_cell_limits(nb, limits.cell_seconds,
                                                                                      course_cell_sources(assignment)),
                                                 workdir=workdir, use_sandbox=use_sandbox, box=box)
    hung_tests = [gid for gid, got in results.items() if isinstance(got, list) and any(map(timed_out, got))]
    conf = Confirmation(flags=flags, sandboxed=sandboxed, hung_cells=hung, hung_tests=hung_tests)
    for check, cases in zip(checks, case_lists):
        got = results.get(check.grade_id)
        try:
            if got is not None and not isinstance(got, list):
                raise TypeError(f"a {type(got).__name__}, not a list of case results")
            with speaking("en"):   # judged in English in every edition (translated where a student reads it)
                conf.verdicts[check.grade_id] = judge_results(check, cases, got)
        except Exception as err:  # noqa: BLE001 - the driver never writes such data: it was forged
            conf.verdicts[check.grade_id] = Verdict(check.grade_id, False, "the confirmation result had a form the "
                                                    "grader never writes; not graded", len(cases))
            conf.flags.append(f"{check.grade_id}: the confirmation result had a form the grader never writes "
                              f"({type(err).__name__}: {str(err)[:120]}): forged results are tampering")
    for gid in sorted(wanted - set(conf.verdicts)):
        conf.verdicts[gid] = Verdict(gid, False, f"no hidden check confirms '{gid}' (ask your instructor)")
    conf.seconds = time.perf_counter() - t0
    return conf
