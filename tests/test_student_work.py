"""A student's answers survive every course command.

Students work in ``workspace/<assignment>/`` (``make lab`` copies the released notebooks there, only
where missing). ``make release`` — and anything else that regenerates ``release/`` — first copies a
release notebook that holds changes of its own (a student who filled it in where the README used to
send them) into ``workspace/``.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest

from autograder.lab import prepare_workspace
from instructor.batch import course

REPO = Path(__file__).resolve().parents[1]
ASSIGNMENT = "00_orientation"


def _fill(path: Path, marker: str) -> None:
    nb = nbformat.read(path, as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution") and c.cell_type == "code")
    cell.source = f"# {marker}\n" + cell.source
    nbformat.write(nb, path)


def _has(path: Path, marker: str) -> bool:
    return marker in path.read_text(encoding="utf-8")


def _course_copy(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    for part in ("source", "release"):
        shutil.copytree(REPO / part / ASSIGNMENT, root / part / ASSIGNMENT)
    return root


def test_lab_workspace_is_copied_once_and_never_overwritten(tmp_path):
    root = _course_copy(tmp_path)
    ws, made = prepare_workspace(root)
    [mine] = made
    assert mine == ws / ASSIGNMENT / mine.name and mine.read_bytes() == (root / "release" / ASSIGNMENT / mine.name).read_bytes()
    _fill(mine, "MY ANSWER 42")
    ws, made = prepare_workspace(root)  # the next `make lab`
    assert made == [] and _has(mine, "MY ANSWER 42")


@pytest.mark.slow
def test_release_keeps_answers_written_in_release(tmp_path):
    root = _course_copy(tmp_path)
    [released] = sorted((root / "release" / ASSIGNMENT).glob("*.ipynb"))
    ws, [mine] = prepare_workspace(root)
    _fill(mine, "WORKSPACE ANSWER")
    _fill(released, "ANSWER IN RELEASE")  # the old README's way
    course.release([ASSIGNMENT], root=root)
    assert not _has(released, "ANSWER IN RELEASE"), "release/ was not regenerated"
    assert _has(mine, "WORKSPACE ANSWER"), "release touched the workspace copy"
    kept = sorted((root / "workspace" / ASSIGNMENT).glob("*-from-release-*.ipynb"))
    assert len(kept) == 1 and _has(kept[0], "ANSWER IN RELEASE"), kept
    course.release([ASSIGNMENT], root=root)  # unchanged release: nothing more is copied
    assert len(sorted((root / "workspace" / ASSIGNMENT).glob("*.ipynb"))) == 2


def test_the_course_has_its_own_exchange(tmp_path):
    """Release and collect work from formgrader and the Assignments panel with no root: nbgrader's
    exchange is grading/exchange in the course, made by the labs, writable by every user."""
    import stat

    from autograder.lab import prepare_exchange
    from instructor.layout import load_config

    exchange = prepare_exchange(tmp_path)
    assert exchange == tmp_path / "grading" / "exchange"
    assert stat.S_IMODE(exchange.stat().st_mode) == 0o1777
    assert load_config(REPO).Exchange.root == str(REPO / "grading" / "exchange")
