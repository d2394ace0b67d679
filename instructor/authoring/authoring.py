"""Cell constructors with the right nbgrader metadata, for writing ``source/`` notebooks from code.

The notebook in ``source/<assignment>/`` is the single source of truth; these helpers only make
creating one less error-prone (nbgrader's metadata is easy to get subtly wrong by hand)::

    from instructor.authoring.authoring import notebook, md, code, solution, tests, answer, write
    cells = [md("# Title"), solution("my_func", "def my_func():\\n    ### BEGIN SOLUTION\\n ..."),
             tests("my_func_tests", 2, "assert ...")]
    write(notebook(cells), "source/04_new/04_new.ipynb")

Ids name what is graded (``decode_matches_legacy``, not ``cell-7f3a``); test cells end in
``_tests`` by convention; every cell gets a stable nbformat id derived from its grade id or
position, so regenerating gives the same bytes.
"""
from __future__ import annotations

import re
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from autograder.nbgrader_cells import grade_id as _grade_id, is_test_cell, nbgrader_meta

__all__ = ["md", "code", "readonly", "solution", "tests", "answer", "notebook", "write"]


def _meta(grade_id: str, *, grade: bool, solution: bool, locked: bool, points: float | None = None,
          task: bool = False) -> dict:
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3,
            "solution": solution, "task": task}
    if points is not None:
        meta["points"] = points
    return {"nbgrader": meta}


def md(text: str):
    return new_markdown_cell(text.strip("\n"))


def code(src: str):
    return new_code_cell(src.strip("\n"))


def readonly(grade_id: str, src: str, markdown: bool = False):
    """A cell students cannot edit (its content is restored at autograde)."""
    maker = new_markdown_cell if markdown else new_code_cell
    return maker(src.strip("\n"), metadata=_meta(grade_id, grade=False, solution=False, locked=True))


def solution(grade_id: str, src: str):
    """A code cell the student fills in; ``### BEGIN/END SOLUTION`` marks what the stub replaces."""
    return new_code_cell(src.strip("\n"), metadata=_meta(grade_id, grade=False, solution=True, locked=False))


def tests(grade_id: str, points: float, src: str):
    """An autograded test cell (``### BEGIN/END HIDDEN TESTS`` for what students do not see)."""
    return new_code_cell(src.strip("\n"),
                         metadata=_meta(grade_id, grade=True, solution=False, locked=True, points=points))


def answer(grade_id: str, points: float, text: str):
    """A written answer graded by hand; put the model answer and rubric between SOLUTION markers."""
    return new_markdown_cell(text.strip("\n"),
                             metadata=_meta(grade_id, grade=True, solution=True, locked=False, points=points))


def notebook(cells: list) -> nbformat.NotebookNode:
    nb = new_notebook(cells=cells, metadata={
        "kernelspec": {"display_name": "Python 3 (course)", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    })
    seen: dict[str, int] = {}
    for i, cell in enumerate(nb.cells):
        gid = _grade_id(cell) or f"{cell.cell_type[:2]}-{i:03d}"
        base = re.sub(r"[^A-Za-z0-9_-]", "-", gid)[:60]
        seen[base] = seen.get(base, 0) + 1
        cell.id = base if seen[base] == 1 else f"{base}-{seen[base]}"
    return nb


def write(nb: nbformat.NotebookNode, path: str | Path) -> Path:
    nbformat.validate(nb)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


HIDDEN_BLOCK = re.compile(r"### BEGIN HIDDEN TESTS\n.*?### END HIDDEN TESTS", re.S)


def relay_hidden_tests(path: Path) -> list[str]:
    """Make every graded test cell's hidden block the verdict relay ``confirmed("<grade_id>")``.

    The hidden checks themselves live in ``instructor/hidden/``; a test cell's hidden block only
    reports their verdict (see :mod:`autograder.verdicts`). Returns the grade ids rewritten.
    """
    nb = nbformat.read(path, as_version=4)
    done = []
    for cell in nb.cells:
        if not is_test_cell(cell):
            continue
        gid = nbgrader_meta(cell)["grade_id"]   # the course's own notebook: a test cell without an id is an error
        relay = ("### BEGIN HIDDEN TESTS\nfrom autograder.verdicts import confirmed\n"
                 f"confirmed({gid!r})\n### END HIDDEN TESTS")
        if HIDDEN_BLOCK.search(cell.source):
            cell.source = HIDDEN_BLOCK.sub(lambda m: relay, cell.source)
        else:
            cell.source = cell.source.rstrip("\n") + "\n" + relay
        done.append(gid)
    nbformat.write(nb, path)
    return done
