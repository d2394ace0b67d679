"""A timed walk-through of each assignment, the method behind the times the notebooks state.

What a student meets is counted in the **student's** notebook, ``release/<a>/<a>.ipynb`` (no model
answers, no rubrics): the words of its markdown cells (whitespace-separated, as a word counter
counts them), its code cells, and its tasks, each of one kind:

* ``prediction``: the answer is a literal (a list or dict of predicted values); each predicted item
  is a small experiment in the head: PREDICTION_ITEM_MINUTES per item;
* ``regex``: the model answer parses text with ``re``: REGEX_MINUTES plus LINE_MINUTES per line;
* ``function``: any other autograded code: FUNCTION_MINUTES plus LINE_MINUTES per line of the model
  solution (from ``source/``: a longer answer takes longer);
* ``written``: a short written answer, graded by hand: WRITTEN_MINUTES.

The estimate: reading at WPM words a minute + CELL_SECONDS per code cell (read, run, look at the
output) + the notebook's own run time (its source notebook, nbclient, solutions in place) + the tasks;
stated as a range of -10 % .. +25 % rounded to 5 minutes (a first try takes longer than a clean run).

    python scripts/walkthrough.py            # the table (Markdown) for docs/performance.md
    python scripts/walkthrough.py --write    # also rewrite each source notebook's "**Time:**" sentence
    python scripts/walkthrough.py --no-run   # without running the notebooks (run time taken as 0)

After ``--write``, regenerate ``release/`` (``python -m autograder release``): the sentence is part of
the first cell. ``tests/test_course_length.py`` checks that the words and tasks each notebook states
are the ones counted here, and that the whole course stays within its word budget.
"""
from __future__ import annotations

import ast
import json
import re
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

WPM = 120                      # technical reading with code in it
CELL_SECONDS = 20              # read a code cell, run it, look at its output
PREDICTION_ITEM_MINUTES = 1.0  # predict one value: think the statement through
REGEX_MINUTES = 10             # read the message, write a pattern, debug it on the examples ...
FUNCTION_MINUTES = 4           # read the task, write and debug one autograded function ...
LINE_MINUTES = 0.75            # ... plus this per line of the model solution
WRITTEN_MINUTES = 10           # one short written answer: think, test a claim in a cell, write
WORD_BUDGET = 11_000           # the release notebooks' markdown, whole course

TIME_SENTENCE = re.compile(r"\*\*Time:\*\*.*?(?=\*\*Points:\*\*)", re.S)


def release_notebook(assignment: str) -> Path:
    return REPO / "release" / assignment / f"{assignment}.ipynb"


def markdown_words(nb: dict) -> int:
    """Whitespace-separated words in the markdown cells: what a student reads."""
    return sum(len("".join(c["source"]).split()) for c in nb["cells"] if c["cell_type"] == "markdown")


def _solution_body(source: str) -> str:
    m = re.search(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", source, re.S)
    return m.group(1) if m else source


def task_kind(cell: dict) -> tuple[str, int, int]:
    """(kind, items, lines) of one solution cell of the source notebook."""
    source = "".join(cell["source"])
    if cell["cell_type"] == "markdown":
        return "written", 1, 0
    body = _solution_body(source)
    lines = [l for l in body.splitlines() if l.strip() and not l.strip().startswith("#")]
    if len(lines) == 1 and lines[0].strip().startswith("return "):
        try:
            value = ast.literal_eval(lines[0].strip()[len("return "):])
        except (ValueError, SyntaxError):
            value = None
        if isinstance(value, (list, tuple, dict)):
            return "prediction", len(value), 0
    if re.search(r"\bre\.(search|match|fullmatch|findall|finditer|compile)\(", body):
        return "regex", 1, len(lines)
    return "function", 1, len(lines)


def task_minutes(kind: str, items: int, lines: int) -> float:
    return {"prediction": items * PREDICTION_ITEM_MINUTES,
            "regex": REGEX_MINUTES + lines * LINE_MINUTES,
            "function": FUNCTION_MINUTES + lines * LINE_MINUTES,
            "written": WRITTEN_MINUTES}[kind]


def count(assignment: str) -> dict:
    """Everything but the run time, from the release notebook (and the model answers' lengths)."""
    from instructor.layout import nbgrader_meta, source_notebooks

    released = json.loads(release_notebook(assignment).read_text())
    [src_path] = source_notebooks(assignment)
    source = json.loads(src_path.read_text())
    tasks = []
    for c in source["cells"]:
        meta = nbgrader_meta(c) if hasattr(c, "metadata") else c.get("metadata", {}).get("nbgrader", {})
        if meta.get("solution") and (c["cell_type"] == "markdown" or meta.get("grade_id")):
            kind, items, lines = task_kind(c)
            tasks.append(dict(grade_id=meta.get("grade_id"), kind=kind, items=items, lines=lines,
                              minutes=task_minutes(kind, items, lines)))
    return dict(assignment=assignment, words=markdown_words(released),
                code=sum(1 for c in released["cells"] if c["cell_type"] == "code"), tasks=tasks)


def estimate(row: dict, run_seconds: float) -> dict:
    minutes = (row["words"] / WPM + row["code"] * CELL_SECONDS / 60 + run_seconds / 60
               + sum(t["minutes"] for t in row["tasks"]))
    low, high = 5 * round(minutes * 0.9 / 5), 5 * round(minutes * 1.25 / 5)
    return dict(row, run=run_seconds, minutes=minutes, low=max(5, low), high=max(10, high))


def run_seconds(assignment: str) -> float:
    import nbformat
    from nbclient import NotebookClient

    from instructor.layout import source_notebooks

    [path] = source_notebooks(assignment)
    nb = nbformat.read(path, as_version=4)
    t0 = time.perf_counter()
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    return time.perf_counter() - t0


def _tasks_phrase(tasks: list[dict]) -> str:
    names = {"prediction": ("prediction", "predictions"), "regex": ("regular expression", "regular expressions"),
             "function": ("function", "functions"), "written": ("short written answer", "short written answers")}
    parts = []
    for kind in ("prediction", "regex", "function", "written"):
        n = sum(1 for t in tasks if t["kind"] == kind)
        if n:
            parts.append(f"{n} {names[kind][n != 1]}")
    return ", ".join(parts)


def time_sentence(r: dict) -> str:
    """The sentence each notebook opens with; ``tests/test_course_length.py`` reads the numbers back."""
    return (f"**Time:** {r['low']}–{r['high']} minutes (about {round(r['words'], -2):,} words to read, "
            f"{r['code']} code cells to run; to write: {_tasks_phrase(r['tasks'])}; a model's "
            "estimate, not a measurement: the README gives its rule). ")


def write_sentence(assignment: str, sentence: str) -> bool:
    """Replace the ``**Time:** …`` sentence of the source notebook (up to ``**Points:**``)."""
    from instructor.layout import source_notebooks

    [path] = source_notebooks(assignment)
    nb = json.loads(path.read_text())
    for c in nb["cells"]:
        text = "".join(c["source"])
        if c["cell_type"] == "markdown" and TIME_SENTENCE.search(text):
            new = TIME_SENTENCE.sub(lambda m: sentence, text, count=1)
            if new == text:
                return False
            c["source"] = new.splitlines(keepends=True)
            path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
            return True
    raise SystemExit(f"error: {path}: no '**Time:** … **Points:**' sentence in a markdown cell")


def main(argv: list[str] | None = None) -> int:
    import argparse

    from instructor.layout import assignments

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="rewrite each source notebook's Time sentence")
    ap.add_argument("--no-run", action="store_true", help="do not run the notebooks (run time 0)")
    args = ap.parse_args(argv)
    rows = []
    for a in assignments():
        rows.append(estimate(count(a), 0.0 if args.no_run else run_seconds(a)))
    print("| assignment | words | code cells | tasks (minutes) | run | estimate | stated |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        tasks = ", ".join(f"{t['kind']} {t['minutes']:.0f}" for t in r["tasks"])
        print(f"| {r['assignment']} | {r['words']:,} | {r['code']} | {tasks} | {r['run']:.0f} s "
              f"| {r['minutes']:.0f} min | {r['low']}–{r['high']} min |")
    total = sum(r["words"] for r in rows)
    print(f"\nrelease markdown: {total:,} words (budget {WORD_BUDGET:,})")
    if args.write:
        for r in rows:
            changed = write_sentence(r["assignment"], time_sentence(r))
            print(f"{r['assignment']}: {'rewrote' if changed else 'unchanged'}: {time_sentence(r).strip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
