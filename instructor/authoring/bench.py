"""``python -m autograder bench``: how fast a class is graded, and where the time goes.

It builds a synthetic class from the sample submissions (each sample ``--copies`` times, under
student names ``<sample>-01``, ``<sample>-02``, ...), then grades it three ways, each in a fresh
course folder:

* **nbgrader, serial** — plain ``nbgrader autograde`` one notebook at a time, kernel unconfined, the
  hidden checks in the kernel (the anchor: what nbgrader alone does);
* ``grade --jobs 1`` — the trusted pipeline (sandbox + confirmation), one at a time;
* ``grade --jobs N`` — the same on N workers.

It prints throughput (notebooks per minute), the speed-up of ``--jobs N`` over ``--jobs 1``, and the
per-notebook cost broken down against the floor (a sandboxed ``python -c "import torch, IPython"``,
measured in the same run): the confirmation run, the nbgrader execution, recording and feedback.

A shared machine's speed drifts (on the course's 2-core VM the same pure-Python loop took 1.4 s and,
an hour later, 2.5 s). So ``grade --jobs 1`` runs twice, before and after ``--jobs N`` (A-B-A: a drift
that is steady over the runs cancels in the mean), each run is preceded by a speed probe (a fixed loop,
printed), and the ratios use the mean of the two ``--jobs 1`` runs. ``--once`` runs it once.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import nbformat

from .. import sandbox
from ..batch import course
from ..sandbox import zygote
from . import samples


#: samples left out of the synthetic class: an endless loop measures the time limits, not the grader
#: (timed on its own in tests/test_pipeline.py; plain nbgrader would wait 180 s in each cell calling it)
NOT_IN_BENCH = {("03_yolo_head", "endless_decode")}


def synthetic_class(dest: Path, copies: int, assignments: list[str] | None) -> int:
    n = 0
    for s in samples.load_samples():
        if (assignments and s.assignment not in assignments) or (s.assignment, s.student) in NOT_IN_BENCH:
            continue
        name, nb = samples.build_notebook(s)
        for k in range(1, copies + 1):
            out = dest / f"{s.student}-{k:02d}" / s.assignment / name
            out.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, out)
            n += 1
    return n


def floor_seconds(repeats: int = 3) -> float:
    """Sandboxed interpreter start + import torch + IPython: the least any graded notebook costs."""
    times = []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(repeats):
            res = sandbox.run([sandbox.python(), "-c", "import torch, IPython"], Path(tmp), limits=sandbox.Limits())
            times.append(res.seconds)
    return statistics.median(times)


def speed_probe() -> float:
    """Seconds a fixed pure-Python loop takes now: the machine's speed at this moment."""
    t0 = time.perf_counter()
    x = 0
    for i in range(10_000_000):
        x += i
    return time.perf_counter() - t0


def _probe_in_child(_: int) -> float:
    return speed_probe()


def pair_probe(jobs: int) -> float:
    """How many times one core's throughput ``jobs`` copies of :func:`speed_probe` get when they run
    at once, each in its own process (``jobs`` x alone / the slowest of them). On a quiet machine with
    ``jobs`` free cores it is ``jobs``; a VM whose vCPUs share a busy host gives less, and then no
    ``--jobs N`` speed-up can be more than this."""
    import multiprocessing

    alone = speed_probe()
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        together = pool.map(_probe_in_child, range(jobs))
    return jobs * alone / max(together)


class CpuMeter:
    """Mean number of cores busy (user, nice, system, irq, softirq from ``/proc/stat``) and the share
    of time the hypervisor took (steal) between :meth:`start` and :meth:`stop`: how much of the
    machine a run used."""

    @staticmethod
    def _read() -> tuple[float, list[int]]:
        try:
            with open("/proc/stat") as f:
                fields = [int(x) for x in f.readline().split()[1:]]
        except (OSError, ValueError):
            fields = []
        return time.monotonic(), fields

    def start(self) -> "CpuMeter":
        self.t0, self.f0 = self._read()
        return self

    def stop(self) -> str:
        t1, f1 = self._read()
        if not self.f0 or len(f1) < 8:
            return "cores busy: unknown (no /proc/stat)"
        d = [b - a for a, b in zip(self.f0, f1)]
        hz = os.sysconf("SC_CLK_TCK")
        wall = max(1e-9, t1 - self.t0)
        busy = (d[0] + d[1] + d[2] + d[5] + d[6]) / hz / wall
        steal = d[7] / hz / wall
        return f"{busy:.2f} of {os.cpu_count()} cores busy on average (steal {steal:.2f})"


def plain_nbgrader(incoming: Path, work: Path) -> float:
    """Serial nbgrader autograde, no sandbox, hidden checks in the kernel; wall seconds."""
    import shutil

    subs, _ = course.collect_submissions(incoming)
    api = course.nbgrader_api(work)
    for a in sorted({s.assignment for s in subs}):
        shutil.copytree(course.REPO / "source" / a, work / "source" / a)
        api.generate_assignment(a, force=True, create=True)
    meter, t0 = CpuMeter().start(), time.perf_counter()
    for sub in subs:
        target = work / "submitted" / sub.student / sub.assignment
        target.mkdir(parents=True)
        for nb in sub.notebooks:
            shutil.copy2(nb, target / nb.name)
        api.autograde(sub.assignment, sub.student, force=True, create=True)
    wall = time.perf_counter() - t0
    print(f"nbgrader autograde, serial: {wall:.0f} s, {meter.stop()}", flush=True)
    return wall


def pipeline(incoming: Path, work: Path, jobs: int) -> tuple[float, list[course.Result]]:
    subs, _ = course.collect_submissions(incoming)
    meter, t0, start = CpuMeter().start(), time.perf_counter(), time.time()
    results = course.grade(subs, work, jobs=jobs, progress=True)
    wall = time.perf_counter() - t0
    print(f"grade --jobs {jobs}: {wall:.0f} s, {meter.stop()}; {edges(results, start, start + wall)}", flush=True)
    return wall, results


def edges(results: list[course.Result], start: float, end: float) -> str:
    """When the first submission's grading began after the batch started (the grading process's setup
    and, with workers, their start: each starts its pre-started sandbox first; one at a time, the one
    sandbox starts within the first submission), and how long before the batch's end the last one
    finished (the workers' end)."""
    spans = [(r.started, r.started + r.seconds) for r in results if r.started]
    if not spans:
        return "no submission was graded"
    # each submission's own span is timed inside the batch's: a difference below zero is rounding
    first, last = max(0.0, min(s for s, _ in spans) - start), max(0.0, end - max(e for _, e in spans))
    return f"the first submission began {first:.1f} s after the start, the last ended {last:.1f} s before the end"


PHASES = ("confirm", "kernel start", "answer cells", "test cells", "bookkeeping", "feedback")


def breakdown(results: list[course.Result], floor: float, starts: list[float] = ()) -> str:
    """Mean seconds per notebook in each phase of ``grade --jobs 1``, against the floor."""
    graded = [r for r in results if r.ok]
    if not graded:
        return "no notebook was graded"
    mean = {p: statistics.mean(r.phases.get(p, 0.0) for r in graded) for p in PHASES}
    total = statistics.mean(r.seconds for r in graded)
    times = sorted(r.seconds for r in graded)
    p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
    lines = [f"\nper notebook, grade --jobs 1 (mean of {len(graded)} graded; p50 {statistics.median(times):.1f} s, "
             f"p95 {p95:.1f} s):", "", "| phase | seconds |", "|---|---|"]
    lines += [f"| {p} | {mean[p]:.2f} |" for p in PHASES]
    other = total - sum(mean.values())
    lines += [f"| other (staging, canonicalization) | {other:.2f} |", f"| **total** | **{total:.2f}** |", ""]
    own = mean["answer cells"] + mean["test cells"]
    lines.append(f"floor, measured in this run: {floor:.2f} s = one sandboxed interpreter start + import torch, IPython "
                 "(median of 3)")
    if starts:
        lines.append(f"pre-started sandboxes: {len(starts)} start(s), {statistics.mean(starts):.2f} s each, paid once per "
                     f"worker, not per notebook (their share in the total above: {sum(starts) / len(graded):.2f} s)")
    lines.append(f"own cells: {own:.2f} s = the notebook's answer and test cells as the kernel timed them (import torch "
                 "is in them only where the kernel had not imported it already)")
    lines.append(f"beyond the floor and the own cells: {total:.2f} - {floor:.2f} - {own:.2f} = {total - floor - own:.2f} s "
                 f"per notebook (confirmation {mean['confirm']:.2f} s: the answers run again outside the kernel, "
                 "with the probes)")
    lines.append(f"the grading's own cost, the floor not taken off: {total:.2f} - {own:.2f} = {total - own:.2f} s per "
                 "notebook (the floor itself is paid once per worker, by its pre-started sandbox)")
    return "\n".join(lines)


def _scores_line(result: course.Result | None) -> str:
    """One result's total, per-question scores, error, flags and integrity note, on one line."""
    if result is None:
        return "missing"
    questions = " ".join(f"{q.grade_id}={q.score}" for q in result.questions)
    return f"{result.auto_score:g} {questions} {result.error} {result.flags} {result.integrity}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--copies", type=int, default=1, help="copies of each sample submission (default 1)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="workers for the parallel run")
    parser.add_argument("--assignments", nargs="*", help="only these assignments")
    parser.add_argument("--skip-plain", action="store_true", help="skip the plain-nbgrader anchor")
    parser.add_argument("--once", action="store_true", help="run grade --jobs 1 once, not before and after --jobs N")
    args = parser.parse_args(argv)
    course.prepare_environment()
    probes = []

    scaling = []

    def probe(label: str) -> None:
        probes.append((label, speed_probe()))
        scaling.append(pair_probe(args.jobs) if args.jobs > 1 else 1.0)
        print(f"speed probe before {label}: {probes[-1][1]:.2f} s; {args.jobs} at once got "
              f"{scaling[-1]:.2f}x one core's throughput", flush=True)

    with tempfile.TemporaryDirectory(prefix="grading-bench-") as tmp:
        root = Path(tmp)
        n = synthetic_class(root / "class", args.copies, args.assignments)
        print(f"synthetic class: {n} notebooks ({args.copies} cop{'y' if args.copies == 1 else 'ies'} of each sample)")
        plain = None
        if not args.skip_plain:
            probe("nbgrader autograde")
            plain = plain_nbgrader(root / "class", root / "plain")
        probe("grade --jobs 1")
        # measured right before the run whose per-notebook figures it is compared with: this VM's speed
        # drifts, and a floor taken minutes earlier (before plain nbgrader) gave 2.46 s once, 1.49 s another time
        floor = floor_seconds()
        serial, r1 = pipeline(root / "class", root / "jobs1", 1)
        starts = zygote.start_times()
        zygote.stop_all()
        probe(f"grade --jobs {args.jobs}")
        parallel, rn = pipeline(root / "class", root / f"jobs{args.jobs}", args.jobs)
        serials, runs = [serial], [("grade --jobs 1", r1), (f"grade --jobs {args.jobs}", rn)]
        if not args.once:
            probe("grade --jobs 1 (again)")
            again, r1b = pipeline(root / "class", root / "jobs1-again", 1)
            zygote.stop_all()
            serials.append(again)
            runs.append(("grade --jobs 1 (again)", r1b))
        probe("the end")
    one = statistics.mean(serials)
    by_run = {label: {(r.student, r.assignment): r for r in results} for label, results in runs}
    reference = by_run["grade --jobs 1"]
    differ = [(label, k) for label, other in by_run.items() for k in sorted(reference.keys() | other.keys())
              if getattr(reference.get(k), "auto_score", None) != getattr(other.get(k), "auto_score", None)]

    def rate(seconds):
        return f"{60 * n / seconds:.1f}"

    print("\n| run | wall | notebooks/min | against plain nbgrader | speed-up |\n|---|---|---|---|---|")
    if plain is not None:
        print(f"| nbgrader autograde, serial (no sandbox) | {plain:.0f} s | {rate(plain)} | 1.00× | |")

    def vs_plain(seconds):
        return f"{seconds / plain:.2f}×" if plain else ""

    for k, seconds in enumerate(serials):
        print(f"| grade --jobs 1 (sandbox + confirmation){' again' if k else ''} | {seconds:.0f} s | {rate(seconds)} | "
              f"{vs_plain(seconds)} | |")
    if len(serials) > 1:
        print(f"| grade --jobs 1, mean of the two | {one:.0f} s | {rate(one)} | {vs_plain(one)} | 1.00× |")
    print(f"| grade --jobs {args.jobs} | {parallel:.0f} s | {rate(parallel)} | {vs_plain(parallel)} | "
          f"{one / parallel:.2f}× |")
    print("\nspeed probe (a fixed loop; the same machine would give the same figure): "
          + ", ".join(f"{label} {sec:.2f} s" for label, sec in probes))
    if args.jobs > 1:
        print(f"{args.jobs} copies of the probe at once (each in its own process) got "
              + ", ".join(f"{x:.2f}x" for x in scaling)
              + f" one core's throughput at those moments: what this machine allowed a --jobs {args.jobs} run")
    print(breakdown(r1, floor, starts))
    print(f"every run gave {'DIFFERENT' if differ else 'the same'} scores")
    for label, key in differ:
        print(f"  {key[0]}/{key[1]}: grade --jobs 1: {_scores_line(reference.get(key))}\n"
              f"      {label}: {_scores_line(by_run[label].get(key))}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
