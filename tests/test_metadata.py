"""Lint the notebooks: nbgrader metadata, no outputs, no leaked solutions, release == generated."""
from __future__ import annotations

import filecmp
import re
import shutil
from pathlib import Path

import nbformat
import pytest

from instructor.batch import course

REPO = course.REPO
SOURCE = sorted((REPO / "source").rglob("*.ipynb"))
RELEASE = sorted((REPO / "release").rglob("*.ipynb"))
LESSONS = sorted((REPO / "notebooks").rglob("*.ipynb"))
ALL = [p for p in SOURCE + RELEASE + LESSONS if ".ipynb_checkpoints" not in p.parts]


def _meta(cell):
    return cell.metadata.get("nbgrader", {})


@pytest.mark.parametrize("path", ALL, ids=lambda p: str(p.relative_to(REPO)))
def test_no_stored_outputs(path):
    nb = nbformat.read(path, as_version=4)
    dirty = [i for i, c in enumerate(nb.cells)
             if c.cell_type == "code" and (c.outputs or c.execution_count is not None)]
    assert not dirty, f"{path.relative_to(REPO)}: cells {dirty} have stored outputs; clear them before committing"


def test_grade_ids_are_unique_across_the_course_and_say_what_they_grade():
    seen = {}
    for path in SOURCE:
        for cell in nbformat.read(path, as_version=4).cells:
            gid = _meta(cell).get("grade_id")
            if gid is None:
                continue
            assert gid not in seen, f"grade_id {gid} used in {seen.get(gid)} and {path.name}"
            seen[gid] = path.name
            assert not re.fullmatch(r"cell-[0-9a-f]+", gid), f"{path.name}: '{gid}' does not say what it grades"
    assert seen, "no graded cells found in source/"


@pytest.mark.parametrize("path", SOURCE, ids=lambda p: p.parent.name)
def test_graded_cells_have_points_and_solutions_have_markers(path):
    nb = nbformat.read(path, as_version=4)
    tests = [c for c in nb.cells if _meta(c).get("grade")]
    assert tests, f"{path.name} has no graded cell"
    for cell in nb.cells:
        meta = _meta(cell)
        if meta.get("grade"):
            assert float(meta.get("points", 0)) > 0, f"{path.name}: {meta['grade_id']} has no points"
        if meta.get("solution") and cell.cell_type == "code":
            assert "### BEGIN SOLUTION" in cell.source, f"{path.name}: {meta['grade_id']} has no solution markers"
            first = cell.source.lstrip().splitlines()[0]
            assert first.startswith(("def ", "class ", "import ", "from ", "#", "@")) or "=" in first, \
                f"{path.name}: {meta['grade_id']} should start with the signature the student completes"
        if meta.get("grade") and not meta.get("solution") and cell.cell_type == "code":
            assert "assert" in cell.source or "check_" in cell.source or "fail(" in cell.source, \
                f"{path.name}: test cell {meta['grade_id']} asserts nothing"
        if meta.get("grade") and meta.get("solution") and cell.cell_type == "markdown":
            assert "### BEGIN SOLUTION" in cell.source and re.search(r"(?i)rubric", cell.source), \
                f"{path.name}: written answer {meta['grade_id']} needs a model answer and a rubric between SOLUTION markers"


@pytest.mark.parametrize("path", RELEASE, ids=lambda p: p.parent.name)
def test_release_leaks_no_solution_and_no_hidden_test(path):
    text = path.read_text()
    for marker in ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"):
        assert marker not in text, f"{path.relative_to(REPO)} contains '{marker}'"
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        meta = _meta(cell)
        if meta.get("solution") and cell.cell_type == "code":
            assert "raise NotImplementedError" in cell.source, f"{meta['grade_id']}: stub must fail loudly"


def test_release_is_what_nbgrader_generates_from_source(tmp_path):
    """release/ is generated, never hand-edited: regenerate from source/ and compare bytes."""
    shutil.copytree(REPO / "source", tmp_path / "source")
    course.release(root=tmp_path)
    cmp = filecmp.dircmp(REPO / "release", tmp_path / "release", ignore=[".ipynb_checkpoints", "__pycache__"])

    def diffs(d, prefix=""):
        out = [prefix + f for f in d.diff_files + d.left_only + d.right_only]
        for name, sub in d.subdirs.items():
            out += diffs(sub, f"{prefix}{name}/")
        return out

    changed = diffs(cmp)
    assert not changed, f"release/ differs from what source/ generates: {changed}; run 'make release' and commit"


def test_release_is_deterministic(tmp_path):
    shutil.copytree(REPO / "source", tmp_path / "source")
    first = {p.relative_to(tmp_path): p.read_bytes() for p in course.release(root=tmp_path)}
    second = {p.relative_to(tmp_path): p.read_bytes() for p in course.release(root=tmp_path)}
    assert first == second
