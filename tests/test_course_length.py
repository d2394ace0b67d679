"""The course's length, counted in what a student gets (``release/``), and the times each notebook states.

The word budget is the fourth edition's promise (issue #29): the release notebooks' markdown, counted as
whitespace-separated words, at most 11,000 for the whole course. Each notebook opens with a
"**Time:** …" sentence written by ``scripts/walkthrough.py --write``; these tests read its numbers back and
fail when the notebook changed and the sentence was not rewritten.
"""
from __future__ import annotations

import importlib.util
import json
import re

import pytest

from instructor.layout import REPO, assignments

_spec = importlib.util.spec_from_file_location("walkthrough", REPO / "scripts" / "walkthrough.py")
walkthrough = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(walkthrough)


def _first_time_sentence(assignment: str) -> str:
    nb = json.loads(walkthrough.release_notebook(assignment).read_text())
    for c in nb["cells"]:
        m = walkthrough.TIME_SENTENCE.search("".join(c["source"]))
        if c["cell_type"] == "markdown" and m:
            return m.group(0)
    pytest.fail(f"release/{assignment}: no '**Time:** … **Points:**' sentence in a markdown cell")


def test_the_whole_course_reads_in_at_most_11000_words():
    counts = {a: walkthrough.markdown_words(json.loads(walkthrough.release_notebook(a).read_text()))
              for a in assignments()}
    total = sum(counts.values())
    assert total <= walkthrough.WORD_BUDGET, (
        f"release/ markdown has {total:,} words, over the budget of {walkthrough.WORD_BUDGET:,}: {counts}. "
        "Cut repetition (point to where a demo is first taught) before adding more prose.")


def test_the_word_counter_counts_markdown_only():
    nb = {"cells": [{"cell_type": "markdown", "source": ["two words\n", "and `three` more"]},
                    {"cell_type": "code", "source": ["x = 1  # not read as prose"]}]}
    assert walkthrough.markdown_words(nb) == 5


@pytest.mark.parametrize("assignment", assignments())
def test_each_notebook_states_its_own_counted_length(assignment):
    row = walkthrough.count(assignment)
    sentence = _first_time_sentence(assignment)
    words = re.search(r"about ([\d,]+) words", sentence)
    assert words, f"release/{assignment}: the Time sentence does not say how many words: {sentence!r}"
    stated = int(words.group(1).replace(",", ""))
    assert stated == round(row["words"], -2), (
        f"release/{assignment} says about {stated:,} words; it has {row['words']:,}. "
        "Run `python scripts/walkthrough.py --write` and `python -m autograder release`.")
    cells = re.search(r"(\d+) code cells", sentence)
    assert cells and int(cells.group(1)) == row["code"], (sentence, row["code"])
    assert walkthrough._tasks_phrase(row["tasks"]) in sentence, (sentence, row["tasks"])
    rng = re.search(r"(\d+)–(\d+) minutes", sentence)
    low, high = int(rng.group(1)), int(rng.group(2))
    possible = {(e["low"], e["high"]) for run in range(0, 121, 5) for e in [walkthrough.estimate(row, float(run))]}
    assert (low, high) in possible, (
        f"release/{assignment} states {low}–{high} minutes; the walk-through gives one of {sorted(possible)} "
        "for a run time of 0–2 minutes")


@pytest.mark.parametrize("source, kind, items", [
    ("def f():\n    ### BEGIN SOLUTION\n    return [0, 1, 2]\n    ### END SOLUTION\n", "prediction", 3),
    ("def f(e):\n    ### BEGIN SOLUTION\n    m = re.search(r'x', e)\n    return m\n    ### END SOLUTION\n", "regex", 1),
    ("def f(x):\n    ### BEGIN SOLUTION\n    return x + 1\n    ### END SOLUTION\n", "function", 1),
])
def test_each_task_kind_is_recognised(source, kind, items):
    got, n, _ = walkthrough.task_kind({"cell_type": "code", "source": [source]})
    assert (got, n) == (kind, items)
    assert walkthrough.task_kind({"cell_type": "markdown", "source": ["YOUR ANSWER HERE"]})[0] == "written"


def test_a_prediction_task_costs_a_minute_an_item_and_a_written_answer_more_than_a_line():
    assert walkthrough.task_minutes("prediction", 12, 0) == 12 * walkthrough.PREDICTION_ITEM_MINUTES
    assert walkthrough.task_minutes("written", 1, 0) > walkthrough.task_minutes("function", 1, 1)
