"""The course's structure, as files say it: assignments, their notebooks, graded cells, configuration.

The one module both halves of ``instructor/`` read: the grader (``sandbox/`` ... ``classroom/``) and the hidden
checks (``hidden/``). It imports nothing else of ``instructor``.
"""
from __future__ import annotations

from pathlib import Path

import nbformat

# what a graded cell is: the student package's rules (autograder.check reads them too), nbgrader's metadata only
from autograder.nbgrader_cells import cell_kind, is_test_cell, nbgrader_meta

REPO = Path(__file__).resolve().parents[1]
NB_EXT = ".ipynb"
#: Written by the course's collect beside ``timestamp.txt`` when it re-stamped a backdated hand-in with the
#: time its files were really changed (``instructor/classroom/exchange.py``); grading turns it into a note
#: the student and the instructor see. A file of that name a student handed in is never collected.
RESTAMP_NOTE = "restamped.txt"

__all__ = ["REPO", "NB_EXT", "assignments", "source_notebooks", "notebook_owner", "gradebook_layout", "load_config",
           "EDITIONS", "LANG_ENV", "edition_lang", "edition_root", "folder_edition", "notebook_language",
           "nbgrader_meta", "is_test_cell", "test_cell_ids"]


def assignments(root: Path = REPO) -> list[str]:
    """Assignment names: the folders of ``source/`` that hold a notebook, in course order."""
    src = Path(root) / "source"
    return sorted(p.name for p in src.iterdir() if p.is_dir() and any(p.glob("*" + NB_EXT)))


def source_notebooks(assignment: str, root: Path = REPO) -> list[Path]:
    return sorted((Path(root) / "source" / assignment).glob("*" + NB_EXT))


def notebook_owner(root: Path = REPO) -> dict[str, str]:
    """Map each notebook file name to its assignment (names are unique across the course)."""
    return {nb.name: a for a in assignments(root) for nb in source_notebooks(a, root)}


def gradebook_layout(assignment: str, root: Path = REPO) -> list[dict]:
    """The graded cells of an assignment, in notebook order, read from the source notebooks.

    Each item: notebook, grade_id, points, kind ('auto' for test cells, 'manual' for written
    answers, 'task' for tasks: :func:`autograder.nbgrader_cells.cell_kind`). The notebooks are the
    course's own, so a graded cell without a ``grade_id``, or points that are no number, is an error
    here (``autograder.check`` skips such a cell of a student's notebook, or counts it 0).
    """
    cells = []
    for path in source_notebooks(assignment, root):
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            kind = cell_kind(cell)
            if kind is not None:
                meta = nbgrader_meta(cell)
                cells.append(dict(notebook=path.stem, grade_id=meta["grade_id"],
                                  points=float(meta.get("points", 0)), kind=kind))
    return cells


def load_config(root: Path):
    """nbgrader's configuration from the repo's ``nbgrader_config.py``, rooted at ``root``."""
    from traitlets.config import Config
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(REPO)).load_config()
    local = Path(root).resolve() / "nbgrader_config.py"
    if local.is_file() and local.parent != REPO.resolve():
        # a course folder's own settings (e.g. shorter limits) override the repository's
        config.merge(PyFileConfigLoader(local.name, path=str(local.parent)).load_config())
    config.CourseDirectory.root = str(Path(root).resolve())
    return config if isinstance(config, Config) else Config(config)


def test_cell_ids(nb) -> list[str]:
    return [nbgrader_meta(c)["grade_id"] for c in nb.cells if is_test_cell(c)]


# --------------------------------------------------------------------------- the course's editions

#: The course in other languages: a course folder each inside the repository (``zh_CN/``: source/,
#: release/, notebooks/, its own nbgrader_config.py), generated from the English one (instructor/edition.py).
EDITIONS = ("zh_CN",)
#: The setting that picks the edition (make release|demo|lab|hub, the commands' --lang, the kernels).
LANG_ENV = "COURSE_LANG"


def edition_lang(lang: str | None) -> str | None:
    """None for the English course, else the edition's code; a language the course lacks is an error."""
    if lang is None or lang.strip() in ("", "en", "en_US", "C"):
        return None
    lang = lang.strip().replace("-", "_")
    if lang not in EDITIONS:
        raise SystemExit(f"error: the course has no edition in {lang!r}: {LANG_ENV} or --lang must be one of "
                         f"en, {', '.join(EDITIONS)}")
    return lang


def edition_root(lang: str | None, root: Path = REPO) -> Path:
    """The course folder of an edition: the repository for English, ``<root>/<lang>`` otherwise."""
    lang = edition_lang(lang)
    return Path(root) if lang is None else Path(root) / lang


def folder_edition(folder: Path) -> str | None:
    """The edition whose course folder ``folder`` is (``zh_CN`` for the repository's ``zh_CN/``), else None:
    grading there takes its assignments from it, never copies the English ones over them."""
    here = Path(folder).resolve()
    return next((lang for lang in EDITIONS if (REPO / lang).resolve() == here), None)


def notebook_language(nb) -> str | None:
    """The edition a notebook says it belongs to (``metadata.course.language``), if the course has it."""
    meta = nb.get("metadata") if isinstance(nb, dict) else None
    course = meta.get("course") if isinstance(meta, dict) else None
    lang = course.get("language") if isinstance(course, dict) else None
    return lang if isinstance(lang, str) and lang in EDITIONS else None
