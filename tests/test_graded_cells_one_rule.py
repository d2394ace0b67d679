"""What a graded cell is, written once: :mod:`autograder.nbgrader_cells` (issue 37).

No module of the student package or the grader reads a cell's ``metadata["nbgrader"]`` to decide what
the cell is (a test cell, an answer cell, its ``grade_id``): it asks ``nbgrader_cells``. The few places
that must touch the raw value (to remove or copy it, whatever its shape) are listed in :data:`ALLOWED`
with the reason; a new reader, or an allowed place that no longer touches it, fails here.

And the module's own rules hold on a student's hostile metadata: a list, a string, None, an id that
is no string, never crash.
"""
from __future__ import annotations

import ast
from pathlib import Path

import nbformat
import pytest

from autograder.nbgrader_cells import grade_id, is_answer_cell, is_test_cell, nbgrader_meta

REPO = Path(__file__).resolve().parents[1]
SCANNED = sorted([*(REPO / "autograder").glob("*.py"), *(REPO / "instructor").rglob("*.py")])

# (module, function) -> why it touches metadata["nbgrader"] itself
ALLOWED = {
    ("autograder/nbgrader_cells.py", "nbgrader_meta"): "the rule itself",
    ("instructor/engine/sanitize.py", "isolate_notebook"):
        "removes a metadata.nbgrader that is no dict or whose grade_id nbgrader would not accept: it must "
        "see the raw value (a list, a string) that nbgrader_meta shows as {}, and delete it",
    ("instructor/engine/canonical.py", "canonical_notebook"):
        "a student's own cell that claims nbgrader metadata of any shape loses it: presence and removal, "
        "not what the cell is",
    ("instructor/classroom/cli.py", "transplant"):
        "copies the edition's released metadata onto the student's cell: it needs the raw value (a cell "
        "without any stays without; nbgrader_meta would say {}) and writes it",
    ("instructor/authoring/samples.py", "build_notebook"):
        "a sample's '# %% metadata:' block writes into a released cell's metadata (setdefault): a write",
}

# (module, function) -> why it reads the "solution" flag itself instead of is_answer_cell
ALLOWED_SOLUTION_FLAG = {
    ("autograder/nbgrader_cells.py", "is_test_cell"): "the rule itself",
    ("autograder/nbgrader_cells.py", "cell_kind"): "the rule itself",
    ("autograder/nbgrader_cells.py", "_locked"): "the rule itself (nbgrader's is_locked)",
    ("autograder/nbgrader_cells.py", "checksum"): "the rule itself (nbgrader's compute_checksum)",
    ("autograder/nbgrader_cells.py", "is_answer_cell"): "the rule itself",
}

# Every reader of the solution flag asks is_answer_cell (check.py and confirm.py moved onto it in issue 37).
PENDING_SOLUTION_FLAG: dict = {}


def _is_key(node: ast.AST, key: str) -> ast.AST | None:
    """The receiver when ``node`` reads, writes or tests the key ``key``: ``x[key]``, ``x.get(key)``,
    ``x.setdefault(key)``, ``x.pop(key)``, ``key in x``, ``x.key``; else None."""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and node.slice.value == key:
        return node.value
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("get", "setdefault", "pop") and node.args
            and isinstance(node.args[0], ast.Constant) and node.args[0].value == key):
        return node.func.value
    if (isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant) and node.left.value == key
            and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops)):
        return node.comparators[0]
    if isinstance(node, ast.Attribute) and node.attr == key:
        return node.value
    return None


def _touches(key: str) -> dict[tuple[str, str], list[int]]:
    """(module, enclosing top-level function or class) -> the lines that use ``key`` as a key."""
    found: dict[tuple[str, str], list[int]] = {}
    for path in SCANNED:
        if "__pycache__" in path.parts:
            continue
        rel = path.relative_to(REPO).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"), rel)
        for top in tree.body:
            where = getattr(top, "name", "<module>")
            for node in ast.walk(top):
                receiver = _is_key(node, key)
                # nbgrader's preprocessors pass ``resources["nbgrader"]``: the notebook's name, no cell's metadata
                if receiver is None or ast.unparse(receiver).startswith("resources"):
                    continue
                found.setdefault((rel, where), []).append(node.lineno)
    return found


def test_only_the_listed_places_touch_metadata_nbgrader():
    found = _touches("nbgrader")
    readers = {f"{m}:{lines} (in {f})" for (m, f), lines in found.items() if (m, f) not in ALLOWED}
    assert not readers, ("these read a cell's metadata['nbgrader'] themselves: ask autograder.nbgrader_cells "
                         f"(nbgrader_meta, grade_id, is_answer_cell, is_test_cell, cell_kind) instead: {sorted(readers)}")
    stale = set(ALLOWED) - set(found)
    assert not stale, f"listed as allowed but no longer touch metadata['nbgrader'] (drop them): {sorted(stale)}"


def test_only_nbgrader_cells_reads_the_answer_flag_of_the_metadata():
    found = _touches("solution")
    allowed = ALLOWED_SOLUTION_FLAG | PENDING_SOLUTION_FLAG
    readers = {f"{m}:{lines} (in {f})" for (m, f), lines in found.items() if (m, f) not in allowed}
    assert not readers, f"these decide 'answer cell' themselves: use nbgrader_cells.is_answer_cell: {sorted(readers)}"
    stale = set(allowed) - set(found)
    assert not stale, f"listed but no longer read the 'solution' flag (drop them): {sorted(stale)}"


def test_the_scan_sees_the_shapes_a_reader_takes():
    """The check above is only as good as :func:`_is_key`: each way of reading the key is seen."""
    for src in ('cell["metadata"]["nbgrader"]', 'cell.get("metadata", {}).get("nbgrader", {})',
                'cell.metadata.setdefault("nbgrader", {})', '"nbgrader" in cell.metadata',
                'cell.metadata.nbgrader', 'm.pop("nbgrader")'):
        assert any(_is_key(n, "nbgrader") is not None for n in ast.walk(ast.parse(src))), src
    for src in ('resources["nbgrader"]', 'settings["nbgrader_exporter"]', '"nbgrader" + x'):
        hits = [r for n in ast.walk(ast.parse(src)) if (r := _is_key(n, "nbgrader")) is not None]
        assert all(ast.unparse(r).startswith("resources") for r in hits), src


# ------------------------------------------------------------------------- the rules, on hostile cells

def _cell(nbgrader=..., cell_type="code", **extra):
    cell = {"cell_type": cell_type, "source": "x = 1", "metadata": dict(extra)}
    if nbgrader is not ...:
        cell["metadata"]["nbgrader"] = nbgrader
    return cell


HOSTILE_META = [..., None, [], ["grade_id", "q1"], "q1", 7, {"grade_id": ["q1"]}, {"grade_id": 7},
                {"grade_id": {"a": 1}}, {"grade_id": None}, {}]


@pytest.mark.parametrize("meta", HOSTILE_META, ids=repr)
def test_grade_id_is_none_without_a_string_id(meta):
    assert grade_id(_cell(meta)) is None
    assert nbgrader_meta(_cell(meta)) == (meta if isinstance(meta, dict) else {})


def test_grade_id_is_the_string_id():
    assert grade_id(_cell({"grade_id": "q1", "grade": True, "points": "2"})) == "q1"
    assert grade_id(_cell({"grade_id": ""})) == ""    # empty: a string, and false (no id to callers that ask `if`)
    assert grade_id({"cell_type": "code", "source": ""}) is None    # no metadata at all
    node = nbformat.v4.new_code_cell("x", metadata={"nbgrader": {"grade_id": "q2", "solution": True}})
    assert grade_id(node) == "q2" and is_answer_cell(node)


@pytest.mark.parametrize("meta", HOSTILE_META, ids=repr)
def test_no_answer_and_no_test_cell_without_the_flags(meta):
    assert not is_answer_cell(_cell(meta))
    assert not is_test_cell(_cell(meta))


@pytest.mark.parametrize("flags, answer, test", [
    ({"solution": True}, True, False),
    ({"solution": "yes"}, True, False),          # nbgrader's truthiness, as every caller had it
    ({"solution": False, "grade": True}, False, True),
    ({"solution": True, "grade": True}, True, False),   # a graded answer: written, graded by hand
    ({"solution": 0, "grade": 1}, False, True),
    ({"grade": True, "points": "many"}, False, True),   # points that are no number change nothing here
])
def test_answer_and_test_cells(flags, answer, test):
    assert is_answer_cell(_cell(flags)) is answer
    assert is_test_cell(_cell(flags)) is test
    assert is_answer_cell(_cell(flags, cell_type="markdown")) is answer   # a written answer is markdown
    assert not is_test_cell(_cell(flags, cell_type="markdown"))


# ------------------------------------------------------------------------- the callers, on hostile cells

def test_callers_skip_ids_that_are_no_string():
    """The student-side readers: an id that is a list (unhashable: a crash before) or a number names no
    cell; string ids are found as before."""
    from autograder.handin import _graded_cells
    from instructor.batch.course import grade_ids

    cells = [_cell(m) for m in HOSTILE_META] + [_cell({"grade_id": "q1", "grade": True}), _cell({"grade_id": ""}),
                                               _cell({"grade_id": "q2", "solution": True}, cell_type="markdown")]
    assert set(_graded_cells({"cells": cells})) == {"q1", "q2"}   # an empty id names no graded cell here, as before
    nb = nbformat.from_dict({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    assert grade_ids(nb) == {"", "q1", "q2"}   # nor a release's cell there (the ids are intersected), as before


def test_failing_tests_and_visible_outcomes_read_test_cells_only(tmp_path):
    from instructor.authoring.visible import cell_outcomes
    from instructor.engine.pipeline import failing_tests

    error = nbformat.v4.new_output("error", ename="AssertionError", evalue="no", traceback=[])
    cells = [nbformat.v4.new_code_cell("t", metadata={"nbgrader": {"grade_id": "q_tests", "grade": True}}),
             nbformat.v4.new_code_cell("a", metadata={"nbgrader": {"grade_id": "q", "solution": True, "grade": True}}),
             nbformat.v4.new_code_cell("o", metadata={"nbgrader": ["hostile"]}),
             nbformat.v4.new_markdown_cell("m", metadata={"nbgrader": {"grade_id": "w", "grade": True}})]
    for c in cells[:3]:
        c.outputs = [error]
    nb = nbformat.v4.new_notebook(cells=cells)
    path = tmp_path / "n.ipynb"
    nbformat.write(nb, path)
    assert failing_tests(path) == [("q_tests", "AssertionError: no")]
    assert {g: o.outcome for g, o in cell_outcomes(nb).items()} == {"q_tests": "fail"}
