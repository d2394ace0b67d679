"""A hand-in made from an earlier release still runs: the grader restores the *locked* cells from the
current release (``canonical``), and keeps the student's copy of every other cell, the course's
unlocked demonstrations included. So a name that a locked cell of a release once bound (the setup
cell's imports) may be read by an unlocked cell of that release: removing it turns such a cell into a
NameError in the grader's kernel, and an answer that reads what the cell made loses its points (issue
37: ``grading`` went out of the setup cells with ``demonstration_steps``, and the sample
``reads_demonstration``, built from the release before, lost 2 points). ``tests/fixtures/locked_names.json``
records every name the locked cells of each release have bound; it only grows."""
from __future__ import annotations

import ast
import json
from pathlib import Path

import nbformat
import pytest

from autograder.nbgrader_cells import cell_kind, cell_source, is_locked
from instructor.batch import course

REPO = Path(__file__).resolve().parents[1]
RECORD = Path(__file__).resolve().parent / "fixtures" / "locked_names.json"


def bound_names(source: str) -> set[str]:
    """Names a cell binds at its top level: imports, assignments, defs and classes."""
    names: set[str] = set()
    for node in ast.parse(source).body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"}
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                names |= {n.id for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names


def locked_names(assignment: str, root: Path = REPO) -> set[str]:
    """Names bound by the locked code cells of ``assignment``'s release that are not graded (the setup
    cells): what the grader restores in every hand-in."""
    names: set[str] = set()
    for nb_path in sorted((root / "release" / assignment).glob("*.ipynb")):
        nb = nbformat.read(nb_path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code" and is_locked(cell) and cell_kind(cell) is None:
                names |= bound_names(cell_source(cell))
    return names


def test_bound_names_sees_imports_and_assignments():
    src = "import torch.nn as nn\nfrom autograder import grading, setup_notebook\nDEVICE = setup_notebook()\ndef f(): pass"
    assert bound_names(src) == {"nn", "grading", "setup_notebook", "DEVICE", "f"}


@pytest.mark.parametrize("assignment", course.assignments())
def test_locked_cells_still_bind_every_name_an_earlier_release_bound(assignment):
    record = json.loads(RECORD.read_text())
    now = locked_names(assignment)
    gone = sorted(set(record.get(assignment, [])) - now)
    assert not gone, (
        f"{assignment}: the release's locked cells no longer bind {gone}. A hand-in made from an earlier "
        f"release keeps its own unlocked cells, which may read them (a NameError in the grader's kernel). "
        f"Keep binding them (e.g. keep the import), or remove them from {RECORD.name} knowing that.")
    new = sorted(now - set(record.get(assignment, [])))
    assert not new, f"{assignment}: record the names the locked cells now bind too: add {new} to {RECORD}"


def test_a_name_gone_from_the_setup_cell_is_caught(tmp_path):
    """The check fails on a release whose setup cell no longer imports ``grading`` (which the unlocked
    demonstration cells of the release before 6 December 2026 call)."""
    a = "04_in_the_wild"
    (tmp_path / "release" / a).mkdir(parents=True)
    for nb_path in (REPO / "release" / a).glob("*.ipynb"):
        nb = nbformat.read(nb_path, as_version=4)
        for cell in nb.cells:
            cell.source = cell.source.replace("demonstration_steps, grading, setup_notebook",
                                              "demonstration_steps, setup_notebook")
        nbformat.write(nb, tmp_path / "release" / a / nb_path.name)
    assert set(json.loads(RECORD.read_text())[a]) - locked_names(a, tmp_path) == {"grading"}
