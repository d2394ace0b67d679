"""Grades in the CSV layouts that learning-management systems import: ``grade --export FORMAT``.

Three formats, each in the column layout its LMS documents for importing grades from a CSV file.
Every file is written through :class:`course.SafeWriter`, so a student id or a message that starts
like a spreadsheet formula (``=``, ``+``, ``-``, ``@``, their fullwidth twins, also after leading
spaces, line feeds or invisible characters; or tab, CR, LF: :func:`course.formula_like`) gets a
leading apostrophe: the LMS then sees the apostrophe too (it will not match a roster entry), which is
the safe failure. Scores are written as numbers (a negative one stays a number).

``canvas`` -> ``canvas.csv``
    Canvas's gradebook import (Canvas Instructor Guide, "How do I import grades in the
    Gradebook?", community.canvaslms.com/t5/Instructor-Guide/How-do-I-import-grades-in-the-Gradebook/ta-p/807;
    Ohio State's "Import a CSV file into Carmen grades", teaching.resources.osu.edu: student
    name/ID/SIS User ID, SIS Login ID, Section, then the assignment columns; the layout is the one
    Canvas's own gradebook export writes)::

        Student,ID,SIS User ID,SIS Login ID,Section,<assignment>,<assignment>,...
        Points Possible,,,,,<points>,<points>,...
        <name>,<Canvas user id from the roster>,,<nbgrader student id>,,<score>,<score>,...

    The five identity columns come first, in this order; then one column per assignment, headed
    with the assignment's name (Canvas matches an existing assignment by ``Name (canvas id)`` or by
    its name, and creates a new one from an unknown name, with the points of the ``Points
    Possible`` row, the second row). Canvas identifies the student by ``ID`` (its own numeric user
    id, which nbgrader never knows: it is filled from the roster's ``lms_id``, a Canvas gradebook
    export's ``ID``, and left blank without one), ``SIS User ID`` or ``SIS Login ID``; a
    name is not a reliable key (two students can share one). The nbgrader student id goes in
    **SIS Login ID**:
    nbgrader's id is the JupyterHub user name, and a hub behind the institution's single sign-on
    uses the same login as Canvas's SIS login, whereas ``SIS User ID`` is the registrar's student
    number, which nbgrader does not have. ``Student`` holds "Last, First" where nbgrader's
    gradebook knows the names, else the student id (display only). Canvas's import has no comment
    column: why a student has no grade is in ``grades.csv``.

``moodle`` -> ``moodle.csv``
    Moodle's "Import grades > CSV file" (MoodleDocs, "Grade import", docs.moodle.org/en/Grade_import;
    code: ``grade/import/csv``). The import form maps the columns: under "Identify user by" the
    instructor maps *from* ``Username`` *to* ``username`` (Moodle also offers user id, ID number and
    email), then maps each grade column to a grade item (or "new grade item", which takes the column
    name) and each feedback column to that item's feedback::

        Username,<assignment>,<assignment> (Feedback),<assignment>,<assignment> (Feedback),...
        <nbgrader student id>,<score>,<short feedback>,...

    The feedback column name follows Moodle's own export ("<item> (Feedback)"). MoodleDocs warns
    that importing feedback alone overwrites the linked grades, so each assignment's grade and
    feedback columns always come as a pair. An empty grade cell means "no grade" to Moodle's
    importer (not 0).

``gradescope`` -> ``gradescope-<assignment>.csv`` (one file per assignment)
    Gradescope takes scores one assignment at a time, so one file per assignment. Its public
    guides describe the roster CSV ("Adding Students and Staff", guides.gradescope.com: a header
    row, Name, Email, and optionally SID) and the per-assignment "Download Grades" CSV (First Name,
    Last Name, SID, Email, ..., Total Score, Max Points, ...); a score upload is matched to the
    roster by Email or SID. This file uses those column names, the minimum of them (the exact
    score-upload page was not found in the sources searched: check the column mapping on upload)::

        Name,SID,Email,Total Score
        <name>,<nbgrader student id>,<email>,<score>

    ``SID`` carries the nbgrader student id; ``Email`` is filled only where nbgrader's gradebook
    knows it. No comment column: why a student has no grade is in ``grades.csv``.

What the score is
    ``grade --export`` (:func:`export_results`) writes each submission's points so far: the
    autograded ones and those already graded by hand in formgrader (``grade`` reads them back from the
    gradebook), out of **every** point of the assignment (the Points Possible row, and Moodle's and
    Gradescope's scale): a written answer counts in the maximum from the start, so the LMS never
    shows 15 of 15 for an 18-point assignment. Points still to be graded by hand are said in Moodle's
    feedback cell; Canvas and Gradescope files cannot carry a comment, so run the export again after
    hand grading (the scores rise; the maximum stays). A submission that could not be graded
    (``Result.ok`` false, or a file skipped with a reason) gets an **empty** grade cell, never 0, with
    the reason in Moodle's feedback column. Names and emails come from ``--roster`` (the class list)
    or, failing that, from nbgrader's gradebook in the course folder.

    The nbgrader export plugins (:class:`CanvasExportPlugin`, :class:`MoodleExportPlugin`,
    :class:`GradescopeExportPlugin`) read nbgrader's gradebook instead, so they export what the
    gradebook holds after hand grading in formgrader: ``submission.score`` minus its late penalty,
    out of the assignment's ``max_score`` (as nbgrader's own ``CsvExportPlugin``), with an empty
    cell (not 0, unlike ``CsvExportPlugin``) for a student with no submission. From the course
    folder (nbgrader puts the working directory on ``sys.path``)::

        nbgrader export --exporter=instructor.classroom.export.CanvasExportPlugin --to canvas.csv
        nbgrader export --exporter=instructor.classroom.export.GradescopeExportPlugin --to OUTDIR

    ``--to`` is the file for Canvas and Moodle, the folder for Gradescope; ``--assignment`` and
    ``--student`` filter as for nbgrader's CSV export.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from ..batch import course

if TYPE_CHECKING:
    from nbgrader.api import Gradebook

FORMATS = ("canvas", "moodle", "gradescope")
COMMENT_CHARS = 300  # feedback cells stay short: the full story is in grades.csv and the feedback

CANVAS_IDENTITY = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
CANVAS_POINTS_ROW = "Points Possible"
MOODLE_ID = "Username"
GRADESCOPE_HEADER = ["Name", "SID", "Email", "Total Score"]


# --------------------------------------------------------------------------- what is exported

@dataclass
class Entry:
    """One student's grade on one assignment: ``score`` None means not graded (an empty cell)."""
    score: float | None
    comment: str = ""


@dataclass
class Sheet:
    """A grade sheet, whatever it was read from: columns, rows and cells, in output order."""
    assignments: dict[str, float | None] = field(default_factory=dict)  # name -> points possible
    students: dict[str, tuple[str, str]] = field(default_factory=dict)  # id -> (display name, email)
    lms_ids: dict[str, str] = field(default_factory=dict)  # id -> Canvas's user id (canvas.csv's ID), from the roster
    grades: dict[tuple[str, str], Entry] = field(default_factory=dict)  # (student, assignment) -> entry

    def entry(self, student: str, assignment: str) -> Entry | None:
        return self.grades.get((student, assignment))


def _short(parts: Iterable[str]) -> str:
    text = " | ".join(" ".join(str(p).split()) for p in parts if p)
    return text if len(text) <= COMMENT_CHARS else text[:COMMENT_CHARS - 3] + "..."


def result_comment(r: course.Result) -> str:
    """The short feedback for one result: why it has no grade, or what it was flagged for and
    what the score leaves out."""
    if not r.ok:
        return _short(["not graded: " + (r.error or "grading failed")])
    parts = list(r.flags) + ["integrity: " + line for line in r.integrity]
    if r.manual_pending:
        parts.append(f"{r.manual_pending:g} point(s) still to be graded by hand, not in the score yet")
    return _short(parts)


def points_so_far(r: course.Result) -> float:
    """Autograded points plus the points already graded by hand."""
    return sum(q.score for q in r.questions if q.score is not None)


def _points_possible(assignment: str, results: list[course.Result]) -> float | None:
    graded = [sum(q.max_score for q in r.questions) for r in results if r.ok and r.assignment == assignment]
    if graded:
        return max(graded)
    try:  # nobody was graded: the course's own layout says what the assignment is worth
        layout = course.gradebook_layout(assignment)
    except (OSError, ValueError):
        return None
    return sum(c["points"] for c in layout if c["kind"] != "task") if layout else None


def sheet_from_results(results: list[course.Result], problems: Iterable[course.Problem] = (),
                       people: dict[str, tuple[str, str]] | None = None,
                       lms_ids: dict[str, str] | None = None) -> Sheet:
    """The sheet of one ``grade`` run: a row per student, a column per assignment (both sorted),
    and an empty cell with the reason for every file that was skipped (a :class:`course.Problem`
    that names its student and assignment) and was not graded otherwise; a problem that names its
    student but no assignment (a hand-in whose assignment could not be told) gives that student a
    row, its reason in every cell left empty. ``people``: student id -> (display name, email), from
    the roster or the gradebook; ``lms_ids``: student id -> Canvas user id (:func:`lms_ids_from`)."""
    sheet = Sheet(lms_ids=dict(lms_ids or {}))
    people = people or {}
    skipped: dict[tuple[str, str], list[str]] = {}
    anywhere: dict[str, list[str]] = {}   # student -> reasons with no assignment
    for p in problems:
        if p.student and p.assignment:
            skipped.setdefault((p.student, p.assignment), []).append(f"{Path(p.path).name}: {p.message}")
        elif p.student:
            anywhere.setdefault(p.student, []).append(f"{Path(p.path).name}: {p.message}")
    keys = {(r.student, r.assignment) for r in results} | set(skipped)
    for a in sorted({a for _, a in keys}):
        sheet.assignments[a] = _points_possible(a, results)
    for s in sorted({s for s, _ in keys} | set(anywhere)):
        sheet.students[s] = people.get(s, (s, ""))
    for key, why in skipped.items():
        sheet.grades[key] = Entry(None, _short(["not graded: " + " | ".join(why)]))
    for s, why in anywhere.items():
        for a in sheet.assignments:
            if (s, a) not in keys:
                sheet.grades[(s, a)] = Entry(None, _short(["not graded: " + " | ".join(why)]))
    for r in results:
        sheet.grades[(r.student, r.assignment)] = Entry(points_so_far(r) if r.ok else None, result_comment(r))
    return sheet


def people_from(roster=None, course_root: Path | None = None) -> dict[str, tuple[str, str]]:
    """Student id -> (display name "Last, First", email): the gradebook's students, then the roster's
    (a list of :class:`handins.Student`) over them."""
    people: dict[str, tuple[str, str]] = {}
    if course_root is not None and (Path(course_root) / "gradebook.db").is_file():
        from nbgrader.api import Gradebook

        with Gradebook(f"sqlite:///{Path(course_root) / 'gradebook.db'}") as gb:
            for st in gb.students:
                people[st.id] = (_display_name(st), st.email or "")
    for st in roster or ():
        people[st.id] = (_display_name(st), st.email or "")
    return people


def lms_ids_from(roster=None) -> dict[str, str]:
    """Student id -> Canvas user id, from a roster (:class:`handins.Student`) whose ``lms_id`` is
    Canvas's (a Canvas gradebook export) or not said (the course's own roster's ``lms_id`` column)."""
    return {st.id: st.lms_id for st in roster or () if st.lms_id and st.lms in ("", "canvas")}


def _display_name(student) -> str:
    first, last = (student.first_name or "").strip(), (student.last_name or "").strip()
    return f"{last}, {first}" if first and last else (last or first or student.id)


def sheet_from_gradebook(gradebook: Gradebook, students: Iterable[str] = (),
                         assignments: Iterable[str] = ()) -> Sheet:
    """The sheet of nbgrader's gradebook (every assignment x every student, optionally only
    some): the score is nbgrader's submission score less its late penalty; no submission is an
    empty cell with the comment "no submission"."""
    from nbgrader.api import MissingEntry

    only_students, only_assignments = {str(s) for s in students}, {str(a) for a in assignments}
    sheet = Sheet()
    chosen = [s for s in gradebook.students if not only_students or s.id in only_students]
    for s in chosen:
        sheet.students[s.id] = (_display_name(s), s.email or "")
    for a in gradebook.assignments:
        if only_assignments and a.name not in only_assignments:
            continue
        sheet.assignments[a.name] = a.max_score
        for s in chosen:
            try:
                sub = gradebook.find_submission(a.name, s.id)
            except MissingEntry:
                sheet.grades[(s.id, a.name)] = Entry(None, "no submission")
                continue
            penalty = sub.late_submission_penalty or 0.0
            notes = []
            if penalty:
                notes.append(f"late: {penalty:g} point(s) off")
            if sub.needs_manual_grade:
                notes.append("hand grading not finished")
            if any(nb.flagged for nb in sub.notebooks):
                notes.append("flagged for review")
            sheet.grades[(s.id, a.name)] = Entry(max(0.0, (sub.score or 0.0) - penalty), _short(notes))
    return sheet


# --------------------------------------------------------------------------- the three layouts

def _cell(entry: Entry | None):
    return "" if entry is None or entry.score is None else float(entry.score)


def _points(points: float | None):
    return "" if points is None else float(points)


def _write(path: Path, rows: list[list]) -> Path:
    """Write through :class:`course.SafeWriter`, all at once (a rename: never half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("w", newline="", encoding="utf-8") as f:
        w = course.SafeWriter(f)
        for row in rows:
            w.writerow(row)
    os.replace(tmp, path)
    return path


def canvas_rows(sheet: Sheet) -> list[list]:
    names = list(sheet.assignments)
    rows = [CANVAS_IDENTITY + names,
            [CANVAS_POINTS_ROW, "", "", "", ""] + [_points(sheet.assignments[a]) for a in names]]
    for sid, (name, _email) in sheet.students.items():
        rows.append([name, sheet.lms_ids.get(sid, ""), "", sid, ""] + [_cell(sheet.entry(sid, a)) for a in names])
    return rows


def moodle_rows(sheet: Sheet) -> list[list]:
    names = list(sheet.assignments)
    rows = [[MOODLE_ID] + [h for a in names for h in (a, f"{a} (Feedback)")]]
    for sid in sheet.students:
        row = [sid]
        for a in names:
            entry = sheet.entry(sid, a)
            row += [_cell(entry), entry.comment if entry else ""]
        rows.append(row)
    return rows


def gradescope_rows(sheet: Sheet, assignment: str) -> list[list]:
    rows = [list(GRADESCOPE_HEADER)]
    for sid, (name, email) in sheet.students.items():
        entry = sheet.entry(sid, assignment)
        if entry is not None:
            rows.append([name, sid, email, _cell(entry)])
    return rows


def gradescope_filename(assignment: str) -> str:
    return "gradescope-" + (re.sub(r"[^A-Za-z0-9._-]+", "_", assignment).strip("._") or "assignment") + ".csv"


def write_canvas(sheet: Sheet, path: Path) -> Path:
    return _write(Path(path), canvas_rows(sheet))


def write_moodle(sheet: Sheet, path: Path) -> Path:
    return _write(Path(path), moodle_rows(sheet))


def write_gradescope(sheet: Sheet, folder: Path) -> list[Path]:
    return [_write(Path(folder) / gradescope_filename(a), gradescope_rows(sheet, a)) for a in sheet.assignments]


def write_sheet(sheet: Sheet, fmt: str, dest_dir: Path) -> list[Path]:
    dest_dir = Path(dest_dir)
    if fmt == "canvas":
        return [write_canvas(sheet, dest_dir / "canvas.csv")]
    if fmt == "moodle":
        return [write_moodle(sheet, dest_dir / "moodle.csv")]
    if fmt == "gradescope":
        return write_gradescope(sheet, dest_dir)
    raise ValueError(f"unknown export format {fmt!r}; choose from {', '.join(FORMATS)}")


def sheet_for_course(course_root: Path) -> Sheet:
    """What formgrader's Export page downloads: nbgrader's gradebook (hand grading included, late
    penalties off), and over it a row for every hand-in the gradebook cannot explain: a submission
    whose grading failed (the ledger's reason) and a file in ``submitted/`` that could not be graded
    (broken, a link, a stray copy) — each an empty cell with its reason, never a silent gap."""
    from nbgrader.api import Gradebook

    course_root = Path(course_root)
    with Gradebook(f"sqlite:///{course_root / 'gradebook.db'}") as gb:
        sheet = sheet_from_gradebook(gb)
    failed: dict[tuple[str, str], str] = {}     # the latest grading of these failed: no score stands
    skipped: dict[tuple[str, str], list[str]] = {}   # files handed in that could not be graded
    try:
        from .report import ReportError, results_from_ledger

        for r in results_from_ledger(course_root):
            if not r.ok:
                failed[(r.student, r.assignment)] = "not graded: " + (r.error or "grading failed").splitlines()[0]
    except ReportError:
        pass
    if (course_root / "submitted").is_dir():
        _, problems = course.collect_submissions(course_root / "submitted")
        for p in problems:
            if p.student and p.assignment:
                skipped.setdefault((p.student, p.assignment), []).append(f"{Path(p.path).name}: {p.message}")
    for key in sorted(set(failed) | set(skipped)):
        student, assignment = key
        sheet.students.setdefault(student, (student, ""))
        if assignment not in sheet.assignments:
            sheet.assignments[assignment] = _points_possible(assignment, [])
        entry = sheet.grades.get(key)
        graded = key not in failed and entry is not None and entry.score is not None
        if graded:   # a graded notebook, and beside it a file that could not be graded
            entry.comment = _short([entry.comment] + ["also handed in, not graded: " + w for w in skipped[key]])
        else:
            sheet.grades[key] = Entry(None, _short([failed.get(key, "not graded")] + skipped.get(key, [])))
    sheet.students = dict(sorted(sheet.students.items()))
    return sheet


def download(sheet: Sheet, fmt: str) -> tuple[str, bytes, str]:
    """(file name, bytes, content type) of one format, for a browser download: Gradescope's files
    come as one zip."""
    import io
    import tempfile
    import zipfile

    with tempfile.TemporaryDirectory() as tmp:
        paths = write_sheet(sheet, fmt, Path(tmp))
        if fmt != "gradescope":
            return paths[0].name, paths[0].read_bytes(), "text/csv; charset=utf-8"
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
            for path in paths:
                zf.writestr(path.name, path.read_bytes())
        return "gradescope.zip", buf.getvalue(), "application/zip"


# --------------------------------------------------------------------------- grade --export

def parse_formats(values: Iterable[str]) -> list[str]:
    """``["canvas,moodle", "gradescope"]`` -> the formats, in order, once each."""
    out: list[str] = []
    for value in values:
        for name in str(value).split(","):
            name = name.strip().lower()
            if not name:
                continue
            if name not in FORMATS:
                raise ValueError(f"unknown export format {name!r}; choose from {', '.join(FORMATS)}")
            if name not in out:
                out.append(name)
    return out


def format_arg(value: str) -> str:
    """argparse ``type=`` for ``--export``: checks the names, keeps the text."""
    import argparse

    try:
        parse_formats([value])
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return value


def export_results(results: list[course.Result], dest_dir: Path, formats: Iterable[str],
                   problems: Iterable[course.Problem] = (),
                   people: dict[str, tuple[str, str]] | None = None,
                   lms_ids: dict[str, str] | None = None) -> dict[str, list[Path]]:
    """Write one file per format (Gradescope: one per assignment) into ``dest_dir``;
    ``{format: [paths]}``. ``people``: :func:`people_from`; ``lms_ids``: :func:`lms_ids_from`."""
    chosen = parse_formats(formats)
    if not chosen:
        return {}
    sheet = sheet_from_results(results, problems, people, lms_ids)
    return {fmt: write_sheet(sheet, fmt, dest_dir) for fmt in chosen}


# --------------------------------------------------------------------------- nbgrader export
# The plugin classes are made on first use (PEP 562 module ``__getattr__``): subclassing
# nbgrader's ExportPlugin imports nbgrader's database layer (about a second), which the course's
# command line only pays for when it grades. ``nbgrader export --exporter=...`` and ``from
# instructor.classroom.export import CanvasExportPlugin`` both get the class as usual.

_PLUGINS = {
    "CanvasExportPlugin": ("canvas", "canvas.csv",
                           "nbgrader's gradebook as a Canvas gradebook import CSV "
                           "(``--to``: the file, default canvas.csv)."),
    "MoodleExportPlugin": ("moodle", "moodle.csv",
                           "nbgrader's gradebook as a Moodle grade import CSV "
                           "(``--to``: the file, default moodle.csv)."),
    "GradescopeExportPlugin": ("gradescope", ".",
                               "nbgrader's gradebook as Gradescope score uploads, one "
                               "``gradescope-<assignment>.csv`` per assignment "
                               "(``--to``: the folder, default the current one)."),
}


def _export_with(plugin, gradebook) -> None:
    dest = Path(plugin.to or plugin.default_to)
    sheet = sheet_from_gradebook(gradebook, plugin.student, plugin.assignment)
    if plugin.fmt == "gradescope":
        written = write_gradescope(sheet, dest)
    elif plugin.fmt == "canvas":
        written = [write_canvas(sheet, dest)]
    else:
        written = [write_moodle(sheet, dest)]
    for path in written:
        plugin.log.info("Exported %s grades to %s", plugin.fmt, path)


def __getattr__(name: str):
    if name not in _PLUGINS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from nbgrader.plugins.export import ExportPlugin

    fmt, default_to, doc = _PLUGINS[name]
    cls = type(name, (ExportPlugin,), {
        "__module__": __name__, "__qualname__": name, "__doc__": doc,
        "fmt": fmt, "default_to": default_to, "export": _export_with,
    })
    globals()[name] = cls
    return cls
