"""A timed walk-through of each assignment, the method behind the times the notebooks state.

For each assignment: its source notebook run top to bottom (nbclient, the solutions in place: how long
the computer takes), the words a student reads (markdown cells), the code cells a student runs, and the
tasks a student writes (autograded answers and written ones). The estimate a student sees is

    reading at WPM words per minute + CELL_SECONDS per code cell (read, run, look at the output)
    + the notebook's own run time + per autograded task TASK_MINUTES + LINE_MINUTES per line of its model
    solution + WRITTEN_MINUTES per written answer

rounded to 5 minutes, as a range of -10 % .. +25 % (a first try takes longer than a clean run).

    python scripts/walkthrough.py            # prints the table (Markdown) for the README
"""
from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

WPM = 120              # technical reading with code in it
CELL_SECONDS = 20      # read a code cell, run it, look at its output
TASK_MINUTES = 4       # read the task, write and debug one autograded function ...
LINE_MINUTES = 0.75    # ... plus this per line of the model solution (a longer answer takes longer)
WRITTEN_MINUTES = 5    # one short written answer


def measure(assignment: str) -> dict:
    import nbformat
    from nbclient import NotebookClient

    from instructor.layout import nbgrader_meta, source_notebooks

    [path] = source_notebooks(assignment)
    nb = nbformat.read(path, as_version=4)
    words = sum(len(re.findall(r"\w+", c.source)) for c in nb.cells if c.cell_type == "markdown")
    code = sum(1 for c in nb.cells if c.cell_type == "code")
    answers = [c for c in nb.cells if nbgrader_meta(c).get("solution") and c.cell_type == "code"]
    tasks = len(answers)
    lines = 0
    for c in answers:
        m = re.search(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", c.source, re.S)
        body = m.group(1) if m else c.source
        lines += sum(1 for l in body.splitlines() if l.strip() and not l.strip().startswith("#"))
    written = sum(1 for c in nb.cells if nbgrader_meta(c).get("solution") and c.cell_type == "markdown")
    t0 = time.perf_counter()
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    run = time.perf_counter() - t0
    minutes = (words / WPM + code * CELL_SECONDS / 60 + run / 60 + tasks * TASK_MINUTES + lines * LINE_MINUTES
               + written * WRITTEN_MINUTES)
    low, high = 5 * round(minutes * 0.9 / 5), 5 * round(minutes * 1.25 / 5)
    return dict(assignment=assignment, words=words, code=code, tasks=tasks, lines=lines, written=written, run=run,
                minutes=minutes, low=max(5, low), high=max(10, high))


def main() -> int:
    from instructor.layout import assignments

    rows = [measure(a) for a in assignments()]
    print(f"| assignment | words | code cells | tasks (solution lines) | written | run | estimate | stated |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['assignment']} | {r['words']:,} | {r['code']} | {r['tasks']} ({r['lines']}) | {r['written']} | {r['run']:.0f} s "
              f"| {r['minutes']:.0f} min | {r['low']}–{r['high']} min |")
    print(json.dumps({r["assignment"]: [r["low"], r["high"]] for r in rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
