"""What the sandbox and the confirmation cost, per assignment, measured on this machine.

    python scripts/bench_grading.py [--repeats 3]

For one full-marks sample submission of each assignment it times, ``--repeats`` times each:

* **plain**      — nbgrader ``autograde`` as the course did it before the sandbox: the kernel on the
                   grader's own machine, unconfined, hidden checks run inside it;
* **rlimits**    — the grading pipeline with bubblewrap switched off (``COURSE_SANDBOX=off``);
* **sandboxed**  — the grading pipeline as an instructor runs it: confirmation run in bubblewrap,
                   then nbgrader with its kernel in bubblewrap.

It prints medians: the nbgrader part of each mode, the confirmation run, and the sandbox's own
cost (sandboxed nbgrader part against plain autograde).
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from instructor.batch import course  # noqa: E402
from instructor.authoring import samples  # noqa: E402

FULL = {"00_orientation": "ada", "01_version_counter": "ada", "02_names_and_storage": "correct_alt",
        "03_yolo_head": "cat_style", "04_in_the_wild": "ada"}


def _stage(root: Path, assignment: str) -> list[course.Submission]:
    [s] = [s for s in samples.load_samples(assignment) if s.student == FULL[assignment]]
    name, nb = samples.build_notebook(s)
    dest = root / "incoming" / s.student / assignment
    dest.mkdir(parents=True)
    import nbformat

    nbformat.write(nb, dest / name)
    subs, problems = course.collect_submissions(root / "incoming")
    assert not problems, problems
    return subs


def plain(assignment: str) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        [sub] = _stage(root, assignment)
        work = root / "course"
        api = course.nbgrader_api(work)
        shutil.copytree(REPO / "source" / assignment, work / "source" / assignment)
        api.generate_assignment(assignment, force=True, create=True)
        target = work / "submitted" / sub.student / assignment
        target.mkdir(parents=True)
        for nb in sub.notebooks:
            shutil.copy2(nb, target / nb.name)
        t0 = time.perf_counter()
        out = api.autograde(assignment, sub.student, force=True, create=True)
        took = time.perf_counter() - t0
        assert out.get("success"), out.get("log", "")[-2000:]
        return took


def pipeline(assignment: str, sandbox_on: bool) -> tuple[float, float, float]:
    """(nbgrader part, confirmation, total) seconds of one submission."""
    from instructor import sandbox

    old = os.environ.get("COURSE_SANDBOX")
    if not sandbox_on:
        os.environ["COURSE_SANDBOX"] = "off"
    else:
        os.environ.pop("COURSE_SANDBOX", None)
    sandbox._STATUS = None
    os.environ["_COURSE_SANDBOX_WARNED"] = "1"
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            subs = _stage(root, assignment)
            [res] = course.grade(subs, root / "course", feedback=False, progress=False)
            assert res.ok and res.auto_score == res.auto_max, (res.error, res.flags, res.questions)
            return res.seconds - res.confirm_seconds, res.confirm_seconds, res.seconds
    finally:
        sandbox._STATUS = None
        if old is None:
            os.environ.pop("COURSE_SANDBOX", None)
        else:
            os.environ["COURSE_SANDBOX"] = old


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--assignments", nargs="*", default=list(FULL))
    args = parser.parse_args()
    course.prepare_environment()
    rows = []
    for a in args.assignments:
        p, r, s = [], [], []
        for _ in range(args.repeats):
            p.append(plain(a))
            r.append(pipeline(a, sandbox_on=False))
            s.append(pipeline(a, sandbox_on=True))
        med = statistics.median
        rows.append((a, med(p), med(x[0] for x in r), med(x[0] for x in s), med(x[1] for x in s),
                     med(x[2] for x in s)))
        print(f"measured {a}", flush=True)
    head = ("assignment", "plain autograde", "nbgrader, rlimits only", "nbgrader, in bubblewrap", "bubblewrap's cost",
            "confirmation", "total, trusted", "total vs plain")
    print("\n| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    for a, p, r, s, c, t in rows:
        print(f"| {a} | {p:.1f} s | {r:.1f} s | {s:.1f} s | {100 * (s - r) / r:+.0f} % | {c:.1f} s | {t:.1f} s "
              f"| {100 * (t - p) / p:+.0f} % |")
    print(f"\nmedians of {args.repeats} runs each. bubblewrap's cost: the nbgrader part in bubblewrap against the same "
          "part with rlimits only.\nplain autograde runs the hidden checks inside the kernel; the trusted pipeline "
          "runs them in the confirmation run instead.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
