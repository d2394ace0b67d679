"""``grade --export canvas|moodle|gradescope``: each LMS's documented import layout, from hand-built
results (no grading run) and, through the nbgrader export plugins, from a real gradebook."""
from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from instructor.classroom import cli, export  # noqa: E402
from instructor.batch import course  # noqa: E402
from instructor.batch.course import Problem, QuestionScore, Result  # noqa: E402

# nbgrader's own add_submission warns about SQLAlchemy session state (its tests do too)
pytestmark = pytest.mark.filterwarnings("ignore:.*not in session.*")

A1, A2 = "a1_basics", "a2_more"
FORMULA = "=2+5"


def _ok(student, assignment, scores, manual=None, flags=(), integrity=()):
    qs = [QuestionScore(f"q{i}", s, m, "auto") for i, (s, m) in enumerate(scores)]
    if manual is not None:
        qs.append(QuestionScore("written", None, manual, "manual"))
    return Result(student, assignment, True, qs, flags=list(flags), integrity=list(integrity))


def _results() -> list[Result]:
    return [
        _ok("alice", A1, [(2, 2), (1.5, 3)], manual=4, flags=["patched the checks"]),
        _ok("alice", A2, [(10, 10)]),
        Result("bob", A1, False, error="kernel died"),
        _ok("bob", A2, [(0, 10)], integrity=["tests passed in the kernel, failed outside"]),
        _ok(FORMULA, A1, [(1, 2), (0, 3)]),
    ]


def _read(path: Path) -> list[list[str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


def test_canvas_layout(tmp_path):
    out = export.export_results(_results(), tmp_path, ["canvas"])
    assert out == {"canvas": [tmp_path / "canvas.csv"]}
    assert _read(tmp_path / "canvas.csv") == [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", A1, A2],
        ["Points Possible", "", "", "", "", "9", "10"],         # every point: 5 autograded + 4 by hand
        ["'" + FORMULA, "", "", "'" + FORMULA, "", "1", ""],   # neutralised; no A2 submission: empty
        ["alice", "", "", "alice", "", "3.5", "10"],           # so far: the 4 points by hand are not graded yet
        ["bob", "", "", "bob", "", "", "0"],                   # not graded: empty, not 0; a real 0 stays 0
    ]


def test_moodle_layout(tmp_path):
    export.export_results(_results(), tmp_path, ["moodle"])
    rows = _read(tmp_path / "moodle.csv")
    assert rows[0] == ["Username", A1, f"{A1} (Feedback)", A2, f"{A2} (Feedback)"]
    assert rows[1] == ["'" + FORMULA, "1", "", "", ""]
    assert rows[2] == ["alice", "3.5", "patched the checks | 4 point(s) still to be graded by hand, not in the score yet", "10", ""]
    assert rows[3] == ["bob", "", "not graded: kernel died", "0",
                       "integrity: tests passed in the kernel, failed outside"]
    assert len(rows) == 4


def test_gradescope_one_file_per_assignment(tmp_path):
    out = export.export_results(_results(), tmp_path, ["gradescope"])
    assert out == {"gradescope": [tmp_path / f"gradescope-{A1}.csv", tmp_path / f"gradescope-{A2}.csv"]}
    assert _read(tmp_path / f"gradescope-{A1}.csv") == [
        ["Name", "SID", "Email", "Total Score"],
        ["'" + FORMULA, "'" + FORMULA, "", "1"],
        ["alice", "alice", "", "3.5"],
        ["bob", "bob", "", ""],
    ]
    assert _read(tmp_path / f"gradescope-{A2}.csv") == [
        ["Name", "SID", "Email", "Total Score"],
        ["alice", "alice", "", "10"],
        ["bob", "bob", "", "0"],
    ]


def test_skipped_file_is_an_empty_cell_with_its_reason(tmp_path):
    problems = [Problem(Path("in/carol/a1_basics/nb.ipynb"), "corrupt JSON", "carol", A1),
                Problem(Path("in/stray.txt"), "not a notebook")]  # no student or assignment: no row
    export.export_results(_results(), tmp_path, ["moodle", "canvas"], problems)
    moodle = {r[0]: r for r in _read(tmp_path / "moodle.csv")}
    assert moodle["carol"] == ["carol", "", "not graded: nb.ipynb: corrupt JSON", "", ""]
    canvas = {r[0]: r for r in _read(tmp_path / "canvas.csv")}
    assert canvas["carol"][5:] == ["", ""]


def test_canvas_id_comes_from_the_roster_s_canvas_user_id(tmp_path):
    """Canvas matches a row by ID first; the roster knows it (a Canvas gradebook export's ID, or the
    course roster's lms_id), a Moodle roster's does not count. Without it (test_canvas_layout) ID is empty."""
    from instructor.classroom.handins import Student

    roster = [Student("alice", "Alice", "A", "", "111", "canvas"), Student("bob", lms_id="222"),
              Student(FORMULA, lms_id="333", lms="moodle")]
    assert export.lms_ids_from(roster) == {"alice": "111", "bob": "222"}
    export.export_results(_results(), tmp_path, ["canvas"], lms_ids=export.lms_ids_from(roster))
    ids = {r[3]: r[1] for r in _read(tmp_path / "canvas.csv")[2:]}
    assert ids == {"alice": "111", "bob": "222", "'" + FORMULA: ""}


def test_a_problem_naming_a_student_but_no_assignment_gives_that_student_a_row(tmp_path):
    """A hand-in whose assignment could not be told (a corrupt Untitled.ipynb): its student still has a
    row, the reason in each empty cell, never over a grade."""
    problems = [Problem(Path("dl.zip/Untitled.ipynb"), "not a valid Jupyter notebook", "carol"),
                Problem(Path("dl.zip/notes.txt"), "not a notebook (.ipynb)", "alice")]
    export.export_results(_results(), tmp_path, ["moodle", "canvas"], problems)
    moodle = {r[0]: r for r in _read(tmp_path / "moodle.csv")}
    why = "not graded: Untitled.ipynb: not a valid Jupyter notebook"
    assert moodle["carol"] == ["carol", "", why, "", why]
    assert moodle["alice"][1:3] == ["3.5", "patched the checks | 4 point(s) still to be graded by hand, not in the score yet"]
    assert {r[0] for r in _read(tmp_path / "canvas.csv")} >= {"carol"}


def test_formula_in_assignment_and_feedback_is_neutralised(tmp_path):
    rs = [_ok("dave", "@sum", [(1, 1)], flags=["-1 for trying"])]
    export.export_results(rs, tmp_path, ["canvas,moodle,gradescope"])
    assert _read(tmp_path / "canvas.csv")[0][-1] == "'@sum"
    assert _read(tmp_path / "moodle.csv") == [["Username", "'@sum", "'@sum (Feedback)"], ["dave", "1", "'-1 for trying"]]
    assert _read(tmp_path / "gradescope-sum.csv")[1] == ["dave", "dave", "", "1"]


#: Cells a spreadsheet may take for a formula although they do not start with = + - @ tab CR: OWASP's
#: characters after leading whitespace, a line feed, invisible characters, and fullwidth twins.
HIDDEN_FORMULAS = [" =2+5", "\n=HYPERLINK(\"http://x\")", "\r\n+1+1", "  \t@SUM(1)", "\u3000-2+3",
                   "\u200b=1+1", "\ufeff=1", "\uff1d1+1", "\uff0bcmd", "\u00a0=1", "\x0b=1", "\n"]


def _formula_for_a_spreadsheet(cell: str) -> bool:
    """Written independently of the course's check: what a spreadsheet that skips leading whitespace
    and zero-width characters would still run (OWASP's list and the fullwidth twins)."""
    if cell[:1] in ("\t", "\r", "\n"):
        return True
    rest = cell.lstrip(" \t\r\n\x0b\x0c\u00a0\u3000\u200b\ufeff")
    return rest[:1] in ("=", "+", "-", "@", "\uff1d", "\uff0b", "\uff0d", "\uff20")


@pytest.mark.parametrize("text", HIDDEN_FORMULAS)
def test_csv_cell_neutralises_a_formula_after_whitespace_or_in_fullwidth(text):
    assert course.csv_cell(text) == "'" + text
    assert course.formula_like(text)


@pytest.mark.parametrize("text", ["alice", "a=b", " plain words", "1-2", "", "O'Brien", "email@example.org"])
def test_csv_cell_leaves_plain_text_alone(text):
    assert course.csv_cell(text) == text


def test_numbers_stay_numbers_and_text_that_looks_negative_does_not():
    assert [course.csv_cell(v) for v in (-1, -2.5, 0, 3.0, 1.5, 12.34)] == ["-1", "-2.5", "0", "3", "1.5", "12.34"]
    assert course.csv_cell("-1") == "'-1"         # a student id is text, even one that reads as a number
    assert course.csv_cell(float("-inf")) == "'-inf"   # not a finite number: text, neutralised


def test_every_file_the_course_writes_neutralises_hidden_formulas(tmp_path):
    """grades.csv, grades_by_question.csv and all three LMS files: every student id, assignment name
    and message that hides a formula gets its apostrophe; no cell of any file is a formula."""
    rs = [_ok(text, A1 if i % 2 else text.strip() + "x", [(1, 2)], flags=[text]) for i, text in enumerate(HIDDEN_FORMULAS)]
    rs.append(Result("eve", A1, False, error="\n=cmd|' /C calc'!A0"))
    course.write_csv(rs, tmp_path)
    export.export_results(rs, tmp_path, ["canvas,moodle,gradescope"])
    files = sorted(tmp_path.glob("*.csv"))
    assert {p.name for p in files} >= {"grades.csv", "grades_by_question.csv", "canvas.csv", "moodle.csv"}
    assert any(p.name.startswith("gradescope-") for p in files)
    cells = [(p.name, c) for p in files for row in _read(p) for c in row]
    assert [(name, c) for name, c in cells if _formula_for_a_spreadsheet(c)] == []
    written = {c for _, c in cells}
    for text in HIDDEN_FORMULAS:
        assert "'" + text in written, f"{text!r} was not written neutralised"
    assert "'error: \n=cmd|' /C calc'!A0" not in written  # the status starts with "error: ": not a formula
    assert "error: \n=cmd|' /C calc'!A0" in written


def test_a_negative_score_is_a_number_in_every_file(tmp_path):
    """A late penalty can take a score below zero: grades.csv, grades_by_question.csv and the LMS
    files write it as the number it is, not as neutralised text."""
    rs = [_ok("neg", A1, [(-1.5, 2), (0, 3)])]
    course.write_csv(rs, tmp_path)
    export.export_results(rs, tmp_path, ["canvas,moodle,gradescope"])
    [row] = list(csv.DictReader((tmp_path / "grades.csv").open()))
    assert (row["auto_score"], row["auto_max"]) == ("-1.5", "5")
    by_q = list(csv.DictReader((tmp_path / "grades_by_question.csv").open()))
    assert [r["score"] for r in by_q] == ["-1.5", "0"]
    assert _read(tmp_path / "canvas.csv")[2][-1] == "-1.5"
    assert _read(tmp_path / "moodle.csv")[1][1] == "-1.5"
    assert _read(tmp_path / f"gradescope-{A1}.csv")[1][-1] == "-1.5"


def test_formats_parse_and_cli_option():
    assert export.parse_formats(["canvas,moodle", "gradescope", "Canvas"]) == ["canvas", "moodle", "gradescope"]
    with pytest.raises(ValueError):
        export.parse_formats(["blackboard"])
    args = cli.build_parser().parse_args(["grade", "subs", "--export", "canvas,moodle", "--export", "gradescope"])
    assert export.parse_formats(args.export) == ["canvas", "moodle", "gradescope"]
    assert cli.build_parser().parse_args(["grade", "subs"]).export is None
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["grade", "subs", "--export", "canvas,sakai"])


def test_grade_export_writes_and_prints(tmp_path, monkeypatch, capsys):
    """The command's own path, with grading replaced by hand-built results."""
    monkeypatch.setattr(course, "grade", lambda subs, workdir, **kw: _results())
    subs = [course.Submission("alice", A1, [])]
    status = cli._grade_and_report(subs, [], tmp_path / "work", tmp_path / "out", progress=False,
                                   exports=["canvas,gradescope"])
    assert status == 1  # bob's A1 could not be graded
    printed = capsys.readouterr().out
    for name in ["canvas.csv", f"gradescope-{A1}.csv", f"gradescope-{A2}.csv"]:
        assert (tmp_path / "out" / name).is_file()
        assert str(tmp_path / "out" / name) in printed
    assert not (tmp_path / "out" / "moodle.csv").exists()
    assert (tmp_path / "out" / "grades.csv").is_file()


# --------------------------------------------------------------------------- nbgrader export plugins

@pytest.fixture(scope="module")
def gradebook_db(tmp_path_factory):
    """A real nbgrader gradebook: ps1 (2 autograded + 3 hand-graded points) and ps2 (4 points);
    ``=2+5`` submitted ps1 (hand grading not done), ``bar`` submitted both (ps1 late)."""
    from nbgrader.api import Gradebook

    url = f"sqlite:///{tmp_path_factory.mktemp('gradebook') / 'gradebook.db'}"
    # a new gradebook asks the ``alembic`` command for its schema version: the venv's, on PATH
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PATH", str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
        gb = Gradebook(url)
    with gb:
        for name, cells in [("ps1", [("test1", "code", 2), ("essay", "markdown", 3)]), ("ps2", [("test2", "code", 4)])]:
            gb.add_assignment(name)
            gb.add_notebook("p1", name)
            for cell, kind, points in cells:
                gb.add_grade_cell(cell, "p1", name, max_score=points, cell_type=kind)
        gb.add_student(FORMULA, first_name="Eve", last_name="Adams", email="eve@example.org")
        gb.add_student("bar", first_name="Ben", last_name="Bar")
        gb.add_submission("ps1", FORMULA)

        def grade(cell, assignment, student, **score):  # as autograde / formgrader leave it
            g = gb.find_grade(cell, "p1", assignment, student)
            for k, v in score.items():
                setattr(g, k, v)
            g.needs_manual_grade = False

        grade("test1", "ps1", FORMULA, auto_score=2)  # the essay is left to grade by hand
        gb.find_submission_notebook("p1", "ps1", FORMULA).flagged = True
        sub = gb.add_submission("ps1", "bar")
        grade("test1", "ps1", "bar", auto_score=1)
        grade("essay", "ps1", "bar", manual_score=3)
        sub.notebooks[0].late_submission_penalty = 1
        gb.add_submission("ps2", "bar")
        grade("test2", "ps2", "bar", auto_score=4)
        gb.db.commit()
    return url


def test_plugins_export_a_real_gradebook(gradebook_db, tmp_path):
    from nbgrader.api import Gradebook
    from traitlets.utils.importstring import import_item

    canvas = import_item("instructor.classroom.export.CanvasExportPlugin")  # as --exporter= loads it
    from nbgrader.plugins.export import ExportPlugin
    assert issubclass(canvas, ExportPlugin)
    with Gradebook(gradebook_db) as gb:
        canvas(to=str(tmp_path / "c.csv")).export(gb)
        export.MoodleExportPlugin(to=str(tmp_path / "m.csv")).export(gb)
        export.CanvasExportPlugin(to=str(tmp_path / "only.csv"), assignment=["ps2"], student=["bar"]).export(gb)
    assert _read(tmp_path / "c.csv") == [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "ps1", "ps2"],
        ["Points Possible", "", "", "", "", "5", "4"],
        ["Adams, Eve", "", "", "'" + FORMULA, "", "2", ""],   # ps2 not submitted: empty, not 0
        ["Bar, Ben", "", "", "bar", "", "3", "4"],              # 1 + 3 hand-graded - 1 late
    ]
    assert _read(tmp_path / "m.csv") == [
        ["Username", "ps1", "ps1 (Feedback)", "ps2", "ps2 (Feedback)"],
        ["'" + FORMULA, "2", "hand grading not finished | flagged for review", "", "no submission"],
        ["bar", "3", "late: 1 point(s) off", "4", ""],
    ]
    assert _read(tmp_path / "only.csv") == [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "ps2"],
        ["Points Possible", "", "", "", "", "4"],
        ["Bar, Ben", "", "", "bar", "", "4"],
    ]


def test_nbgrader_export_command_uses_the_plugin(gradebook_db, tmp_path):
    """``nbgrader export --exporter=...GradescopeExportPlugin``: one file per assignment."""
    out = tmp_path / "gs"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    nbgrader = Path(sys.executable).with_name("nbgrader")
    run = subprocess.run([str(nbgrader), "export", "--db", gradebook_db, "--to", str(out),
                          "--exporter=instructor.classroom.export.GradescopeExportPlugin"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert _read(out / "gradescope-ps1.csv") == [
        ["Name", "SID", "Email", "Total Score"],
        ["Adams, Eve", "'" + FORMULA, "eve@example.org", "2"],
        ["Bar, Ben", "bar", "", "3"],
    ]
    assert _read(out / "gradescope-ps2.csv") == [
        ["Name", "SID", "Email", "Total Score"],
        ["Adams, Eve", "'" + FORMULA, "eve@example.org", ""],
        ["Bar, Ben", "bar", "", "4"],
    ]


def test_hand_graded_points_count_once_graded_and_the_maximum_holds_them_from_the_start(tmp_path):
    pending = _ok("alice", A1, [(2, 2), (1.5, 3)], manual=4)
    graded = _ok("alice", A1, [(2, 2), (1.5, 3)], manual=4)
    graded.questions[-1].score = 3.0          # formgrader: 3 of 4 by hand
    for result, score, note in [(pending, "3.5", "4 point(s) still to be graded by hand"), (graded, "6.5", None)]:
        export.export_results([result], tmp_path, ["canvas", "moodle"])
        canvas = _read(tmp_path / "canvas.csv")
        assert canvas[1][5] == "9" and canvas[2][5] == score, canvas
        comment = _read(tmp_path / "moodle.csv")[1][2]
        assert (note in comment) if note else comment == "", comment


def test_names_and_emails_come_from_the_roster_over_the_gradebook(gradebook_db, tmp_path):
    from instructor.classroom.handins import Student

    course_root = Path(gradebook_db.replace("sqlite:///", "")).parent
    people = export.people_from([Student("bar", "Benedict", "Barr", "ben@example.edu")], course_root)
    assert people[FORMULA] == ("Adams, Eve", "eve@example.org")          # the gradebook's
    assert people["bar"] == ("Barr, Benedict", "ben@example.edu")         # the roster's, over the gradebook's
    export.export_results([_ok("bar", A1, [(1, 2)]), _ok(FORMULA, A1, [(2, 2)])], tmp_path, ["gradescope", "canvas"],
                          people=people)
    rows = _read(tmp_path / f"gradescope-{A1}.csv")
    assert ["Barr, Benedict", "bar", "ben@example.edu", "1"] in rows
    assert ["Adams, Eve", "'" + FORMULA, "eve@example.org", "2"] in rows
    assert ["Barr, Benedict", "", "", "bar", "", "1"] in _read(tmp_path / "canvas.csv")
