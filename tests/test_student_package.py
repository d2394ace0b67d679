"""The student package writes each of its rules once (issue #37).

* What an autograd node saved: read through ``autograder/saved_by_node.py`` only (the explorers and the
  in-place locator both ask it), checked on the source: no other module names a ``_saved_*`` or
  ``_raw_saved_*`` attribute.
* The in-place locator in three files: the recorder (``inplace_recorder.py``) readable on its own, the
  messages (``inplace_messages.py``), and ``inplace.py`` with the rest, from which every name the course
  imports still comes.
* What a graded cell is: ``autograder/nbgrader_cells.py``, read by ``autograder/check.py`` and
  ``instructor/layout.py``; the checksum nbgrader computes is computed there only.
"""
from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from autograder import explorers, saved_by_node
from autograder.saved_by_node import probe, raw_saved, read_saved, role, saved_names, versions

REPO = Path(__file__).resolve().parents[1]
STUDENT = REPO / "autograder"


def _strings(source: str, where: str):
    """(line, text) of every string constant of ``source`` that is not a docstring (f-strings' pieces too)."""
    tree = ast.parse(source, where)
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield node.lineno, node.value


def _save_readers(source: str, where: str) -> list[str]:
    return [f"{where}:{line} {text!r}" for line, text in _strings(source, where)
            if "_saved_" in text or "_raw_saved_" in text]


# --------------------------------------------------------------------------- what a node saved

def test_only_saved_by_node_names_a_nodes_saved_attributes():
    bad = []
    for path in sorted(STUDENT.rglob("*.py")):
        if path.name == "saved_by_node.py" or "__pycache__" in path.parts:
            continue
        bad += _save_readers(path.read_text(encoding="utf-8"), str(path.relative_to(REPO)))
    assert not bad, "a node's saves read outside autograder/saved_by_node.py: " + "; ".join(bad)


def test_the_save_reader_rule_can_fail():
    source = ('"""Docs may say _saved_self."""\n'
              'def f(node, a):\n    """and _raw_saved_x here."""\n'
              '    return getattr(node, f"_raw_saved_{a}"), [n for n in dir(node) if n.startswith("_saved_")]\n')
    assert _save_readers(source, "fake.py") == ["fake.py:4 '_raw_saved_'", "fake.py:4 '_saved_'"]


def test_both_sides_use_the_one_reader():
    from autograder import inplace_recorder

    assert explorers.saved_names is saved_by_node.saved_names
    assert inplace_recorder.saved_names is saved_by_node.saved_names and inplace_recorder.probe is saved_by_node.probe


def test_a_save_read_intact_broken_and_freed():
    x = torch.randn(4, requires_grad=True)
    y = x.sigmoid()
    node = y.grad_fn
    assert saved_names(node) == ("_saved_result",) and role("_saved_result") == "result"
    assert probe(node, "_saved_result") == ("ok", None)
    y.mul_(2)
    state, message = probe(node, "_saved_result")
    assert state == "broken" and versions(message) == (1, 0)
    assert raw_saved(node, "_saved_result") is not None and raw_saved(node, "result")._version == 1
    assert explorers.saved_tensors(node)[0].stale
    z = x.exp()
    z.sum().backward()
    value, err = read_saved(z.grad_fn, "_saved_result")
    assert value is None and saved_by_node.is_freed(err) and not saved_by_node.is_broken(err)
    assert probe(z.grad_fn, "_saved_result") == ("freed", None)
    assert explorers.freed_saved(z) and not explorers.freed_saved(x.exp())


def test_a_custom_functions_saves_are_the_locators_not_the_explorers():
    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return 2 * a * g

    node = Square.apply(torch.randn(3, requires_grad=True)).grad_fn
    assert saved_names(node)[-1] == "saved_tensors" and "saved_tensors" not in saved_names(node, functions=False)
    assert probe(node, "saved_tensors", 0) == ("ok", None)
    assert role("saved_tensors", 0) == "saved_tensors[0]"
    with pytest.raises(IndexError):
        read_saved(node, "saved_tensors")[0][1]
    assert probe(node, "saved_tensors", 1) == ("freed", None)


# --------------------------------------------------------------------------- the locator's files

#: every name of autograder.inplace before it was split, that a notebook, a test, a hidden check or a doc uses
INPLACE_NAMES = ("locate_inplace", "InplaceLocator", "run_located", "assert_no_inplace_on_saved",
                 "assert_no_write_on_saved", "InplaceOnSavedError", "parse_version_error", "VersionError", "explain",
                 "SavedTensor", "InplaceWrite", "Site", "measure_overhead", "main", "load_ipython_extension",
                 "unload_ipython_extension", "why_backward_fails", "cell_name", "_overlaps", "_WATCHES")


def test_every_name_of_the_locator_is_still_importable_from_autograder_inplace():
    import autograder.inplace as inplace
    from autograder import inplace_messages, inplace_recorder

    missing = [n for n in INPLACE_NAMES + tuple(inplace.__all__) if not hasattr(inplace, n)]
    assert not missing, missing
    assert inplace.SavedTensor is inplace_recorder.SavedTensor and inplace.Site is inplace_recorder.Site
    assert inplace.parse_version_error is inplace_messages.parse_version_error


def test_the_recorder_stands_alone():
    """The recorder imports no other part of the locator than the messages' parser (for a save it first
    sees broken): a student reads it without the context manager, the extension or the reports."""
    tree = ast.parse((STUDENT / "inplace_recorder.py").read_text(encoding="utf-8"))
    local = {(n.module, a.name) for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level
             for a in n.names}
    assert {m for m, _ in local} == {"inplace_messages", "saved_by_node"}, local
    assert {a for m, a in local if m == "inplace_messages"} == {"parse_version_error"}
    assert ast.get_docstring(tree).startswith("The in-place locator's recorder")


def test_the_locators_own_files_are_never_the_users_line():
    from autograder import inplace_recorder

    own = sorted(p.name for p in STUDENT.glob("inplace*.py"))
    assert own == sorted(inplace_recorder._OWN_FILES)
    for name in own:
        assert inplace_recorder._is_internal(str(STUDENT / name)), name
    assert not inplace_recorder._is_internal(__file__)


# --------------------------------------------------------------------------- what a graded cell is

def _md5_calls(source: str, where: str) -> list[str]:
    tree = ast.parse(source, where)
    return [f"{where}:{n.lineno}" for n in ast.walk(tree)
            if isinstance(n, ast.Call) and "md5" in ast.unparse(n.func)]


def _nbgrader_keys(source: str, where: str) -> list[str]:
    return [f"{where}:{line}" for line, text in _strings(source, where) if text == "nbgrader"]


#: readers of nbgrader's metadata in the student package that keep a rule of their own: the hand-in's
#: "cells with a grade_id" (which cells the released notebook and the student's copy share), not "graded"
OWN_RULE = {"autograder/handin.py"}


def test_only_nbgrader_cells_computes_the_checksum_or_reads_the_metadata():
    md5, keys = [], []
    for path in sorted([*STUDENT.rglob("*.py"), *(REPO / "instructor").rglob("*.py")]):
        rel = path.relative_to(REPO).as_posix()
        if rel == "autograder/nbgrader_cells.py" or "__pycache__" in path.parts:
            continue
        source = path.read_text(encoding="utf-8")
        md5 += _md5_calls(source, rel)
        if (rel.startswith("autograder/") and rel not in OWN_RULE) or rel == "instructor/layout.py":
            keys += _nbgrader_keys(source, rel)
    assert not md5, "nbgrader's checksum computed outside autograder/nbgrader_cells.py: " + "; ".join(md5)
    assert not keys, "nbgrader's cell metadata read outside autograder/nbgrader_cells.py: " + "; ".join(keys)


def test_the_graded_cell_rules_can_fail():
    source = 'import hashlib\nmeta = cell["metadata"].get("nbgrader", {})\nm = hashlib.md5()\n'
    assert _md5_calls(source, "x.py") == ["x.py:3"] and _nbgrader_keys(source, "x.py") == ["x.py:2"]


def test_check_and_the_layout_read_with_the_one_module():
    from autograder import nbgrader_cells
    from instructor import layout

    check = sys.modules["autograder.check"]   # (autograder.check is the function)

    assert layout.nbgrader_meta is nbgrader_cells.nbgrader_meta and layout.is_test_cell is nbgrader_cells.is_test_cell
    assert check.checksum is nbgrader_cells.checksum and check.cell_kind is nbgrader_cells.cell_kind


def _release_notebooks():
    return sorted((REPO / "release").glob("*/*.ipynb"))


def test_the_checksum_is_nbgraders():
    """Every cell nbgrader stamped at release: our checksum is the stored one and nbgrader's own."""
    import nbformat
    from nbgrader.utils import compute_checksum

    from autograder.nbgrader_cells import checksum, nbgrader_meta

    stamped = 0
    for path in _release_notebooks():
        for cell in nbformat.read(path, as_version=4).cells:
            meta = nbgrader_meta(cell)
            if "checksum" in meta:
                stamped += 1
                assert checksum(cell) == meta["checksum"] == compute_checksum(cell), (path.name, meta.get("grade_id"))
    assert stamped > 20
    answer = nbformat.v4.new_code_cell("x = 1", metadata={"nbgrader": {
        "grade": False, "solution": True, "locked": False, "grade_id": "a", "schema_version": 3}})
    before = checksum(answer)
    answer.source = "x = 2"
    assert checksum(answer) != before and checksum(answer) == compute_checksum(answer)


def test_check_and_the_layout_see_the_same_graded_cells():
    """Each assignment's graded cells as the grader lays them out (source notebooks) and as check() lists
    them (the released notebooks): the same ids, points and kinds (check() calls a task 'manual')."""
    from autograder.check import graded_cells
    from instructor.layout import assignments, gradebook_layout

    for assignment in assignments():
        layout = [(c["grade_id"], c["points"], "manual" if c["kind"] == "task" else c["kind"])
                  for c in gradebook_layout(assignment)]
        listed = [(c.grade_id, c.points, c.kind) for path in sorted((REPO / "release" / assignment).glob("*.ipynb"))
                  for c in graded_cells(json.loads(path.read_text(encoding="utf-8")))]
        assert layout == listed and layout, assignment


def test_a_cell_of_each_kind():
    from autograder.nbgrader_cells import cell_kind, is_test_cell

    def cell(kind, **meta):
        return {"cell_type": kind, "metadata": {"nbgrader": meta}, "source": ""}

    cases = [(cell("code", grade=True, points=2, grade_id="t"), "auto", True),
             (cell("code", grade=True, solution=True, grade_id="w"), "manual", False),
             (cell("markdown", grade=True, solution=True, grade_id="m"), "manual", False),
             (cell("markdown", grade=True, grade_id="g"), "manual", False),
             (cell("markdown", task=True, grade_id="k"), "task", False),
             (cell("code", grade=True, task=True, grade_id="tk"), "task", True),
             (cell("code", solution=True, grade_id="s"), None, False),
             (cell("code", locked=True, grade_id="l"), None, False),
             ({"cell_type": "code", "metadata": {"nbgrader": "junk"}, "source": ""}, None, False)]
    assert [(cell_kind(c), is_test_cell(c)) for c, _, _ in cases] == [(k, t) for _, k, t in cases]


def test_the_cell_rules_import_no_torch_nbgrader_or_grader():
    """instructor/layout.py (floor 0, reached by the sandbox) imports them: they must stay this light."""
    tree = ast.parse((STUDENT / "nbgrader_cells.py").read_text(encoding="utf-8"))
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert imported <= {"__future__", "hashlib"}, imported
    code = ("import sys, autograder.nbgrader_cells\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'nbgrader', 'instructor')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout
