"""What a graded cell is: nbgrader's cell metadata, read by one set of rules.

nbgrader marks a notebook's cells in ``cell.metadata.nbgrader``:

* ``grade_id``: the cell's name, unique in the notebook;
* ``grade: true``: the cell is worth ``points``; a *test cell* when it is code and not also an answer;
* ``solution: true``: an answer cell (the student writes there); with ``grade`` too, a written answer
  graded by hand;
* ``task: true``: a task, graded by hand (a markdown cell, no answer cell of its own);
* ``locked``, ``checksum``: what nbgrader keeps to see whether a cell was changed since it was released.

So a cell is graded when it has ``grade`` or ``task``, and its kind (:func:`cell_kind`) is ``"auto"``
(a test cell: code, ``grade``, neither ``solution`` nor ``task``), ``"manual"`` (a written answer: a
graded answer cell, or a graded cell that is not code) or ``"task"``. :func:`checksum` is nbgrader's own
``compute_checksum``, so that the checksum stored at release tells whether an answer was changed since.

Read by both sides: the student package (:mod:`autograder.check`, which lists a notebook's questions;
:mod:`autograder.handin`) and the grader (``instructor/layout.py``: the gradebook's layout, the test cells;
the engine, the authoring tools, the batch). No other module reads ``metadata.nbgrader`` to decide what a
cell is (``tests/test_graded_cells_one_rule.py`` lists the few that touch it, and why). It imports nothing but the
standard library, and works on a notebook's JSON (dicts) and on ``nbformat``'s nodes alike. Where the two
callers differ, each keeps its own rule, said in its docstring: ``check`` reads the student's notebook (any
bytes: a cell without a ``grade_id`` or with points that are no number is skipped or worth 0, and a task
counts as a written answer), the grader the course's own source notebooks (a missing ``grade_id`` or a
bad ``points`` is an error there).
"""
from __future__ import annotations

import hashlib

__all__ = ["nbgrader_meta", "grade_id", "cell_source", "is_answer_cell", "is_test_cell", "is_locked", "cell_kind",
           "checksum"]


def nbgrader_meta(cell) -> dict:
    """The cell's ``metadata.nbgrader`` when it is a dict, else ``{}`` (not an nbgrader cell)."""
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return meta if isinstance(meta, dict) else {}


def grade_id(cell) -> str | None:
    """The cell's ``grade_id`` when it is a string, else None (no nbgrader metadata, no id, or an id that
    is no string: a student's list or number is no id, nor always hashable).

    For any notebook, the student's included. Where a missing id is an error (the course's own
    notebooks), the caller reads ``nbgrader_meta(cell)["grade_id"]`` and lets the KeyError say so."""
    gid = nbgrader_meta(cell).get("grade_id")
    return gid if isinstance(gid, str) else None


def cell_source(cell) -> str:
    """The cell's text (a notebook file may hold it as a list of lines)."""
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def is_answer_cell(cell) -> bool:
    """An answer cell (``solution``): the student writes there; any cell type (a written answer is
    markdown)."""
    return bool(nbgrader_meta(cell).get("solution"))


def is_test_cell(cell) -> bool:
    """A graded test cell: code, graded, not an answer."""
    m = nbgrader_meta(cell)
    return cell.get("cell_type") == "code" and bool(m.get("grade")) and not m.get("solution")


def cell_kind(cell) -> str | None:
    """How nbgrader grades the cell: ``"auto"`` (a test cell that is no task), ``"manual"`` (a written
    answer: a graded answer cell, or a graded cell that is not code), ``"task"``; None when not graded."""
    meta = nbgrader_meta(cell)
    if not (meta.get("grade") or meta.get("task")):
        return None
    if meta.get("task"):
        return "task"
    if meta.get("solution") or cell.get("cell_type") != "code":
        return "manual"
    return "auto"


def _locked(meta: dict) -> bool:
    """nbgrader's ``is_locked``: an answer cell never is, a graded cell always is, else its flag."""
    if meta.get("solution"):
        return False
    if meta.get("grade"):
        return True
    return bool(meta.get("locked", False))


def is_locked(cell) -> bool:
    """A cell the student may not change (nbgrader's ``is_locked``): the grader restores it from the
    release; an answer cell never is, a graded cell always is, else its ``locked`` flag."""
    return _locked(nbgrader_meta(cell))


def checksum(cell) -> str:
    """nbgrader's ``compute_checksum`` of a cell: an md5 of its source, type, grade/solution/locked flags,
    ``grade_id`` and (graded cells) points. Equal to the checksum stored at release when the cell was not
    changed since."""
    meta = nbgrader_meta(cell)
    m = hashlib.md5()
    for part in (cell_source(cell), cell.get("cell_type", ""), str(bool(meta.get("grade"))),
                 str(bool(meta.get("solution"))), str(_locked(meta)), meta.get("grade_id", "")):
        m.update(part.encode("utf-8"))
    if meta.get("grade"):
        m.update(str(float(meta.get("points", 0))).encode("utf-8"))
    return m.hexdigest()
