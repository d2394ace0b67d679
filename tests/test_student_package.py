"""The student package writes each of its rules once (issue #37).

* What an autograd node saved: read through ``autograder/saved_by_node.py`` only (the explorers and the
  in-place locator both ask it), checked on the source: no other module names a ``_saved_*`` or
  ``_raw_saved_*`` attribute.
* The in-place locator in three files: the recorder (``inplace_recorder.py``) readable on its own, the
  messages (``inplace_messages.py``), and ``inplace.py`` with the rest, from which every name the course
  imports still comes.
"""
from __future__ import annotations

import ast
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
