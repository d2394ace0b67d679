"""``autograder.export()``: hand in from anywhere — a zip an LMS takes, the notebook validated first.

On Binder, Colab or a laptop there is no nbgrader exchange to submit to. In the last cell of your
notebook, after saving it (Ctrl+S)::

    import autograder
    autograder.export()

It reads the *saved* notebook file (the one this kernel runs: see :func:`autograder.check.find_notebook`),
validates it the way nbgrader's Validate button does (the notebook runs top to bottom in a fresh kernel;
the visible tests are reported), and writes ``<notebook>-handin.zip`` beside it holding the notebook under
the name the course grades (``01_version_counter.ipynb``, whatever your copy is called) and
``HANDIN.txt`` (when, which file, its SHA-256). Upload that zip to your course's LMS assignment;
the instructor's ``grade`` reads the LMS's bulk download of everyone's zips.

What stops a hand-in: a file that is not a notebook, or one whose graded cells were deleted, changed
type, or (for the locked test cells) edited — the grader could not score it. Failing or unanswered
tasks do **not** stop it: handing in partial work is allowed, and the report says what is still open.
An existing zip is never overwritten: a new one gets ``-2``, ``-3`` …
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from .check import NotebookNotFound, find_notebook
from .nbgrader_cells import grade_id
from .i18n import _

__all__ = ["export", "HandinReport", "HandinRefused", "NotebookNotFound"]


class HandinRefused(ValueError):
    """The notebook cannot be graded as it is; the message says what to fix. Shown as its message alone."""

    def _render_traceback_(self) -> list[str]:
        return [f"{type(self).__name__}: {self}"]


@dataclass
class HandinReport:
    zip_path: Path
    notebook: Path
    graded_name: str
    validated: bool
    failed: list[str] = field(default_factory=list)      # tasks whose test cells fail (or are not answered yet)

    def __str__(self) -> str:
        lines = [_(f"hand-in written: {self.zip_path}"),
                 _(f"  holds {self.notebook.name} as {self.graded_name}; upload this zip to your course's LMS")]
        if not self.validated:
            lines.append(_("  not validated (validate=False): the grader will run it anyway"))
        elif self.failed:
            lines.append(_(f"  still open ({len(self.failed)}): {', '.join(self.failed)}"
                           " — you may hand in partial work, or fix these and export again"))
        else:
            lines.append(_("  every visible test passes (the hidden ones run when it is graded)"))
        return "\n".join(lines)

    def _repr_pretty_(self, p, cycle) -> None:
        p.text(str(self))


def _graded_cells(nb: dict) -> dict[str, dict]:
    """The notebook's nbgrader cells by ``grade_id`` (:func:`~autograder.nbgrader_cells.grade_id`: an id
    that is no string, or empty, names no cell)."""
    return {gid: c for c in nb.get("cells", []) if (gid := grade_id(c))}


def _course_name(path: Path, nb: dict) -> str:
    """The file name the course grades: the released notebook whose graded cells this one carries."""
    stem = path.stem.split("-Copy")[0].split(" (")[0]
    here = Path(__file__).resolve().parents[1] / "release"
    if here.is_dir():
        mine = set(_graded_cells(nb))
        best = (0.0, None)
        for released in sorted(here.glob("*/*.ipynb")):
            theirs = set(_graded_cells(json.loads(released.read_text(encoding="utf-8"))))
            share = len(mine & theirs) / len(theirs) if theirs else 0.0
            if share > best[0]:
                best = (share, released.name)
        if best[1] and best[0] >= 0.5:
            return best[1]
    return stem + ".ipynb"


def _structure(path: Path) -> dict:
    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise HandinRefused(_(f"{path}: not a readable notebook ({err}); save it from Jupyter (Ctrl+S) and "
                              "export again")) from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise HandinRefused(_(f"{path}: not a Jupyter notebook (no list of cells)"))
    if not _graded_cells(nb):
        raise HandinRefused(_(f"{path}: this notebook has no graded cells: is it a course assignment? Open the "
                              "assignment's notebook (in workspace/) and export from there"))
    return nb


def _validate(path: Path, nb: dict) -> tuple[list[str], list[str]]:
    """(problems that stop a hand-in, the tasks whose test cells fail), from nbgrader's own Validator."""
    from nbgrader.validator import Validator

    v = Validator()
    v.log.setLevel("ERROR")
    res = v.validate(str(path))
    stop = []
    for c in res.get("type_changed", []):
        stop.append(_(f"a graded cell changed type ({c.get('old_type')} -> {c.get('new_type')}): "
                      f"{c.get('source', '')[:60]!r}"))
    for c in res.get("changed", []):
        stop.append(_(f"a locked test cell was edited: {c.get('source', '')[:60]!r} (undo the edit: Edit > Undo, or "
                      "copy the cell back from a fresh copy of the assignment)"))
    return stop, [task_name(c.get("source", ""), nb) for c in res.get("failed", [])]


def task_name(source: str, nb: dict) -> str:
    """What a student calls a failing test cell: the task it checks (``cube_sum_grad_tests`` ->
    ``cube_sum_grad``, as the feedback names it), found by the cell's source in the notebook; its first
    line only when no graded cell has that source."""
    source = source.strip()
    for gid, cell in _graded_cells(nb).items():
        text = cell.get("source", "")
        if (text if isinstance(text, str) else "".join(text)).strip() == source:
            return gid[:-len("_tests")] if gid.endswith("_tests") else gid
    return (source.splitlines() or ["?"])[0][:60]


def export(notebook: str | None = None, *, validate: bool = True, out: str | None = None) -> HandinReport:
    """Write ``<notebook>-handin.zip`` (or ``out``) for your LMS; see the module's docstring."""
    path = find_notebook(notebook)
    nb = _structure(path)
    name = _course_name(path, nb)
    release = Path(__file__).resolve().parents[1] / "release" / Path(name).stem / name
    if release.is_file():   # a clone or Binder: the released notebook says which graded cells must be there
        missing = sorted(set(_graded_cells(json.loads(release.read_text(encoding="utf-8")))) - set(_graded_cells(nb)))
        if missing:
            raise HandinRefused(_(f"{path}: graded cells were deleted: {', '.join(missing)}. Copy them back from a "
                                  "fresh copy of the assignment, then export again"))
    failed: list[str] = []
    if validate:
        stop, failed = _validate(path, nb)
        if stop:
            raise HandinRefused(_(f"{path}: the grader could not score this notebook: {'; '.join(stop)}"))
    target = Path(out) if out else path.with_name(f"{path.stem}-handin.zip")
    n = 2
    while target.exists():
        target = target.with_name(f"{target.stem.rsplit('-handin', 1)[0]}-handin-{n}.zip")
        n += 1
    data = path.read_bytes()
    stamp = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    note = (f"notebook: {path.name}\ngraded as: {name}\nexported: {stamp}\n"
            f"sha256: {hashlib.sha256(data).hexdigest()}\n")
    with zipfile.ZipFile(target, "x", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(name, data)
        zf.writestr("HANDIN.txt", note)
    return HandinReport(target, path, name, validate, failed)

