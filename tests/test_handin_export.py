"""``autograder.export()`` names the tasks still open by the names the course uses, not by test code."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from autograder.handin import HandinReport, task_name

REPO = Path(__file__).resolve().parents[1]
RELEASED = sorted(REPO.glob("release/*/*.ipynb"))


@pytest.mark.parametrize("path", RELEASED, ids=lambda p: p.parent.name)
def test_every_test_cell_is_named_by_its_task(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    tests = [(c["metadata"]["nbgrader"]["grade_id"], "".join(c["source"])) for c in nb["cells"]
             if c.get("metadata", {}).get("nbgrader", {}).get("grade") and c["cell_type"] == "code"]
    assert tests, f"{path} has no autograded test cell"
    for gid, source in tests:
        # nbgrader's Validator reports a failing cell by its stripped source
        name = task_name(source.strip() + "\n", nb)
        assert name == gid.removesuffix("_tests"), (path, gid, name)
        assert "\n" not in name and "assert" not in name


def test_a_cell_the_notebook_does_not_hold_falls_back_to_its_first_line():
    assert task_name("assert f(1) == 2\nassert f(2) == 4", {"cells": []}) == "assert f(1) == 2"


def test_the_report_lists_task_names():
    report = HandinReport(Path("a-handin.zip"), Path("a.ipynb"), "a.ipynb", True, ["cube_sum_grad", "leaf_or_not"])
    assert "still open (2): cube_sum_grad, leaf_or_not" in str(report)


@pytest.mark.parametrize("path", RELEASED, ids=lambda p: p.parent.name)
def test_every_assignment_ends_by_saying_how_to_hand_it_in(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    last = "".join(nb["cells"][-1]["source"])
    assert nb["cells"][-1]["cell_type"] == "markdown" and "Hand in" in last, f"{path}: its last cell: {last[:200]}"
    assert "import autograder; autograder.export()" in last and "**Submit**" in last, last


@pytest.mark.parametrize("where", ["notebooks/00_start_here.ipynb", "docs/students.md", "README.md"])
def test_the_doors_say_how_to_hand_in(where):
    text = (REPO / where).read_text(encoding="utf-8")
    assert "autograder.export()" in text and "Submit" in text and "LMS" in text, where
