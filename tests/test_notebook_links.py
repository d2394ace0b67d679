"""Every relative link in the lessons (notebooks/) leads to a file in the layout the course makes.

Students work in ``workspace/<assignment>/`` (``make lab`` and 00_start_here's check cell copy the released
notebooks there: :func:`autograder.lab.prepare_workspace`); ``release/`` is the course's copy, rewritten at
each release, so no lesson links there.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from autograder.lab import prepare_workspace

REPO = Path(__file__).resolve().parents[1]
LESSONS = sorted((REPO / "notebooks").glob("*.ipynb"))
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _links(path: Path) -> list[str]:
    nb = json.loads(path.read_text())
    out = []
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            src = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            out += [l for l in LINK.findall(src) if not re.match(r"[a-z]+:|#", l)]
    return out


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    """A course folder as a student's starts: release/ and notebooks/, then workspace/ made as make lab makes it."""
    root = tmp_path_factory.mktemp("course")
    (root / "release").symlink_to(REPO / "release", target_is_directory=True)
    (root / "notebooks").symlink_to(REPO / "notebooks", target_is_directory=True)
    _, made = prepare_workspace(root)
    assert made, "prepare_workspace made no copies"
    return root


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda p: p.name)
def test_lesson_links_lead_to_the_students_copies(lesson, course):
    for link in _links(lesson):
        parts = Path(link.split("#")[0]).parts
        assert "release" not in parts, f"{lesson.name}: {link} points to release/, students work in workspace/"
        resolved = course / "notebooks"   # ".." taken literally, as the browser does (not through the symlink)
        for part in parts:
            resolved = resolved.parent if part == ".." else resolved / part
        assert resolved.exists(), f"{lesson.name}: {link} leads to nothing in the course's layout"


def test_start_here_links_every_assignment_in_workspace():
    links = _links(REPO / "notebooks" / "00_start_here.ipynb")
    for nb in sorted((REPO / "release").glob("*/*.ipynb")):
        assert f"../workspace/{nb.parent.name}/{nb.name}" in links, f"00_start_here does not link {nb.parent.name}"


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda p: p.name)
def test_the_lessons_own_copies_link_to_the_same_files(lesson, course):
    """`make lab` opens the lessons from workspace/lessons/ (issue 38: running one in notebooks/ autosaved
    the tracked file): their links, rewritten one folder down, reach the same files."""
    copy = course / "workspace" / "lessons" / lesson.name
    assert copy.is_file(), f"prepare_workspace made no copy of {lesson.name}"
    originals, copies = _links(lesson), _links(copy)
    assert len(originals) == len(copies)
    for link in copies:
        resolved = copy.parent
        for part in Path(link.split("#")[0]).parts:
            resolved = resolved.parent if part == ".." else resolved / part
        assert resolved.exists(), f"workspace/lessons/{lesson.name}: {link} leads to nothing"
    assert [l.replace("../workspace/", "../") for l in originals] == copies


def test_a_lesson_copy_is_never_overwritten_and_lab_opens_the_copy(course, monkeypatch):
    from autograder import lab

    copy = course / "workspace" / "lessons" / "00_start_here.ipynb"
    copy.write_text(copy.read_text().replace("Start here", "Start here (my notes)"))
    _, made = prepare_workspace(course)
    assert made == [] and "(my notes)" in copy.read_text()
    seen = {}
    monkeypatch.setattr(lab.os, "execvpe", lambda exe, cmd, env: seen.setdefault("cmd", cmd))
    monkeypatch.setattr(lab.os, "chdir", lambda path: None)
    lab.main(["--course", str(course)])
    assert "--LabApp.default_url=/lab/tree/workspace/lessons/00_start_here.ipynb" in seen["cmd"]
