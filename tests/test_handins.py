"""Hand-ins from an LMS's bulk download (Canvas, Moodle), renamed copies, and the roster that maps them."""
from __future__ import annotations

import json
import stat
import zipfile
from pathlib import Path

import pytest

from instructor.batch import course
from instructor.classroom.handins import HandinError, import_bulk, read_roster, recognise
from instructor.layout import REPO

A1 = "01_version_counter"
A2 = "02_names_and_storage"


def _release(assignment: str) -> bytes:
    return (REPO / "release" / assignment / f"{assignment}.ipynb").read_bytes()


def _zip(path: Path, members: dict[str, bytes], links: dict[str, str] = {}) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
        for name, target in links.items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, target)
    return path


ROSTER = "id,first_name,last_name,email,lms_id\njsmith,Jane,Smith,jane@example.edu,\njdoe,John,Doe,john@example.edu,222\n"


@pytest.fixture()
def roster(tmp_path):
    p = tmp_path / "roster.csv"
    p.write_text(ROSTER)
    return read_roster(p)


def test_a_canvas_download_is_mapped_by_name_and_cell_ids_and_every_other_file_is_listed(tmp_path, roster):
    broken = b'{"cells": [ this is not json'
    stranger = json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}).encode()
    src = _zip(tmp_path / "submissions.zip", {
        f"smithjane_111_901_{A1}.ipynb": _release(A1),
        f"doejohn_LATE_222_902_{A1}-Copy1.ipynb": _release(A1),            # renamed: found by its cell ids
        f"doejohn_222_903_{A2}-1.ipynb": _release(A2),                      # Canvas's re-submission suffix
        "smithjane_111_904_notes.txt": b"my notes",
        "smithjane_111_905_other.ipynb": broken,
        "smithjane_111_906_untitled.ipynb": stranger,
        "roezoe_333_907_" + A2 + ".ipynb": _release(A2),                    # not on the roster
        "homework.ipynb": _release(A1),                                     # not Canvas's naming
        "../../escape_444_908_" + A1 + ".ipynb": _release(A1),             # no member reaches outside dest
    }, links={"smithjane_111_909_link.ipynb": "/etc/shadow"})
    out = import_bulk(src, tmp_path / "handins", "canvas", roster)
    got = {(m.student, m.assignment): m for m in out.mapped}
    assert set(got) == {("jsmith", A1), ("jdoe", A1), ("jdoe", A2)}, out.summary()
    assert got[("jdoe", A1)].late and not got[("jsmith", A1)].late
    assert "cell ids" in got[("jdoe", A1)].how and "file name" in got[("jsmith", A1)].how
    assert got[("jdoe", A1)].path == tmp_path / "handins" / "jdoe" / A1 / f"{A1}.ipynb"
    why = dict(out.unmapped)
    assert "not a notebook" in why["smithjane_111_904_notes.txt"]
    assert "not a valid Jupyter notebook" in why["smithjane_111_905_other.ipynb"]
    assert "which assignment" in why["smithjane_111_906_untitled.ipynb"]
    assert "not on the roster" in why["roezoe_333_907_" + A2 + ".ipynb"]
    assert "its name is not <lastfirst>_<user id>" in why["homework.ipynb"]
    assert "symbolic link" in why["smithjane_111_909_link.ipynb"]
    assert "not on the roster" in why["../../escape_444_908_" + A1 + ".ipynb"]
    assert not list(tmp_path.parent.glob("escape*")) and not list(tmp_path.glob("escape*"))
    assert all(p.is_relative_to(tmp_path / "handins") for p in (tmp_path / "handins").rglob("*"))
    # what grade reads: the folder is nbgrader's layout, with nothing it would skip
    subs, problems = course.collect_submissions(tmp_path / "handins")
    assert {(s.student, s.assignment) for s in subs} == set(got) and not problems


def test_a_moodle_download_in_folders_or_flat_is_mapped_without_a_roster(tmp_path):
    src = tmp_path / "moodle"
    (src / "Zoë Roe_77_assignsubmission_file_").mkdir(parents=True)
    (src / "Zoë Roe_77_assignsubmission_file_" / f"{A2}.ipynb").write_bytes(_release(A2))
    (src / f"Al Bo_78_assignsubmission_file_{A1}.ipynb").write_bytes(_release(A1))
    out = import_bulk(src, tmp_path / "handins", "auto")
    assert {(m.student, m.assignment) for m in out.mapped} == {("zoe_roe", A2), ("al_bo", A1)}, out.summary()
    assert not out.unmapped


def test_two_hand_ins_of_one_assignment_keep_the_later_and_list_the_other(tmp_path):
    src = _zip(tmp_path / "s.zip", {f"smithjane_111_901_{A1}.ipynb": _release(A1),
                                    f"smithjane_111_950_{A1}-2.ipynb": _release(A1)})
    out = import_bulk(src, tmp_path / "h", "canvas")
    assert [m.origin for m in out.mapped] == [f"smithjane_111_950_{A1}-2.ipynb"]
    assert [o for o, _ in out.unmapped] == [f"smithjane_111_901_{A1}.ipynb"]
    assert "second hand-in" in out.unmapped[0][1]


def test_it_never_writes_into_a_folder_that_holds_files(tmp_path):
    src = _zip(tmp_path / "s.zip", {f"smithjane_111_901_{A1}.ipynb": _release(A1)})
    (tmp_path / "h").mkdir()
    mine = tmp_path / "h" / "mine.txt"
    mine.write_text("a student's own file")
    with pytest.raises(HandinError, match=r"h: exists and is not an empty folder"):
        import_bulk(src, tmp_path / "h", "canvas")
    assert mine.read_text() == "a student's own file"


@pytest.mark.parametrize("text, message", [
    ("first_name,last_name\nJane,Smith\n", r"roster.csv: the roster's first line must name its columns, with 'id'"),
    ("id,first_name\njsmith,Jane\njsmith,Janet\n", r"roster.csv: line 3: student id 'jsmith' again \(first on line 2\)"),
    ("id,first_name\n../x,Jane\n", r"roster.csv: line 2: student id '../x' is not usable"),
    ("", r"roster.csv: the roster's first line must name its columns"),
])
def test_a_bad_roster_names_the_file_and_the_line(tmp_path, text, message):
    p = tmp_path / "roster.csv"
    p.write_text(text)
    with pytest.raises(HandinError, match=message):
        read_roster(p)


def test_a_bad_download_names_the_file(tmp_path):
    bad = tmp_path / "grades.zip"
    bad.write_text("not a zip")
    with pytest.raises(HandinError, match=r"grades.zip: not a zip file or a folder"):
        import_bulk(bad, tmp_path / "h")
    with pytest.raises(HandinError, match=r"nothing.zip: no such file or folder"):
        import_bulk(tmp_path / "nothing.zip", tmp_path / "h")


def test_a_renamed_copy_is_recognised_by_cell_ids_and_a_stranger_is_not():
    nb, _ = course.read_notebook(REPO / "release" / A2 / f"{A2}.ipynb")
    assert recognise(nb, f"{A2}-Copy1.ipynb")[:2] == (A2, f"{A2}.ipynb")
    nb.cells = nb.cells[:2]   # too few of its graded cells left to say
    assert recognise(nb, "Untitled.ipynb") is None


def test_a_member_named_outside_the_folder_lands_inside_it(tmp_path):
    """``zipfile.extractall`` would strip ``..``; a hand-rolled ``dest / name`` would not. The member's
    own path never decides where a file goes: only the student id (made an nbgrader id) and the
    assignment's own notebook name do."""
    src = _zip(tmp_path / "s.zip", {f"../../../esc_444_908_{A1}.ipynb": _release(A1),
                                    f"/abs/Evil Name_5_assignsubmission_file_/{A2}.ipynb": _release(A2)})
    out = import_bulk(src, tmp_path / "deep" / "h", "auto")
    assert {(m.student, m.assignment) for m in out.mapped} == {("esc", A1), ("evil_name", A2)}, out.summary()
    written = [p for p in tmp_path.rglob("*.ipynb")]
    assert sorted(written) == sorted(m.path for m in out.mapped)
    assert all(p.is_relative_to(tmp_path / "deep" / "h") for p in written)


def test_a_hand_in_zip_from_export_inside_a_canvas_download_is_mapped(tmp_path):
    """End to end without the LMS: a student exports a renamed copy (validated by nbgrader's own
    Validator), Canvas renames the upload, the instructor imports the bulk download."""
    from autograder.handin import export

    work = tmp_path / "student"
    work.mkdir()
    mine = work / f"{A2}-Copy1.ipynb"
    mine.write_bytes(_release(A2))
    report = export(str(mine))
    assert report.graded_name == f"{A2}.ipynb" and report.validated
    assert report.failed, "an unanswered release notebook must report its open tasks"
    assert "still open" in str(report)
    again = export(str(mine), validate=False)
    assert again.zip_path != report.zip_path and report.zip_path.exists(), "an earlier hand-in is never overwritten"
    src = _zip(tmp_path / "canvas.zip", {f"roezoe_LATE_333_907_{report.zip_path.name}": report.zip_path.read_bytes(),
                                         "roezoe_333_908_empty.zip": _zip(tmp_path / "e.zip", {"a.txt": b"x"}).read_bytes()})
    out = import_bulk(src, tmp_path / "h", "canvas")
    [m] = out.mapped
    assert (m.student, m.assignment, m.path.name, m.late) == ("roezoe", A2, f"{A2}.ipynb", True)
    assert m.path.read_bytes() == mine.read_bytes()
    assert dict(out.unmapped) == {"roezoe_333_908_empty.zip": "a zip with no notebook (.ipynb) in it"}


def test_export_refuses_a_notebook_the_grader_could_not_score(tmp_path):
    from autograder.handin import HandinRefused, export

    nb = json.loads(_release(A2))
    nb["cells"] = [c for c in nb["cells"] if not c.get("metadata", {}).get("nbgrader", {}).get("grade")]
    p = tmp_path / f"{A2}.ipynb"
    p.write_text(json.dumps(nb))
    with pytest.raises(HandinRefused, match="graded cells were deleted"):
        export(str(p), validate=False)
    p.write_text("{not json")
    with pytest.raises(HandinRefused, match=r"not a readable notebook"):
        export(str(p), validate=False)
    assert not list(tmp_path.glob("*.zip"))


@pytest.mark.slow
def test_grade_reads_a_canvas_zip_with_a_roster_and_lists_what_it_could_not_map(tmp_path):
    import csv
    import os
    import subprocess
    import sys

    import nbformat

    from instructor.authoring import samples

    [ada] = [s for s in samples.load_samples("00_orientation") if s.student == "ada"]
    name, nb = samples.build_notebook(ada)
    body = nbformat.writes(nb).encode()
    src = _zip(tmp_path / "canvas-download.zip", {
        f"lovelaceada_LATE_41_901_{Path(name).stem}-Copy1.ipynb": body,
        "strangerzed_99_902_" + name: body,
    })
    roster = tmp_path / "roster.csv"
    roster.write_text("id,first_name,last_name,email,lms_id\nada,Ada,Lovelace,ada@example.edu,\n")
    env = dict(os.environ, PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    proc = subprocess.run([sys.executable, "-m", "autograder", "grade", str(src), "--roster", str(roster),
                           "--workdir", str(tmp_path / "course"), "--out", str(tmp_path), "--no-progress", "-j", "1"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out   # one file could not be mapped
    assert f"lovelaceada_LATE_41_901_{Path(name).stem}-Copy1.ipynb -> ada/00_orientation" in out
    assert f"{src / ('strangerzed_99_902_' + name)}: not mapped to a student and assignment: canvas student 'strangerzed'" in out
    rows = {r["student"]: r for r in csv.DictReader((tmp_path / "grades.csv").open())}
    assert float(rows["ada"]["auto_score"]) == ada.expect_auto, rows
    assert (tmp_path / "handins" / "canvas-download-1" / "ada" / "00_orientation" / name).is_file()


def test_grade_collects_renamed_copies_by_cell_ids_and_one_copy_per_notebook(tmp_path):
    sub = tmp_path / "submitted"
    (sub / "ann" / A1).mkdir(parents=True)
    (sub / "ann" / A1 / f"{A1}-Copy1.ipynb").write_bytes(_release(A1))       # the only one: graded as A1
    (sub / "bo" / A1).mkdir(parents=True)
    (sub / "bo" / A1 / f"{A1}.ipynb").write_bytes(_release(A1))
    (sub / "bo" / A1 / f"{A1}-Copy1.ipynb").write_bytes(_release(A1))        # the named one wins
    (sub / "cy" / A1).mkdir(parents=True)
    (sub / "cy" / A1 / f"{A2}-Copy1.ipynb").write_bytes(_release(A2))        # another assignment's cells
    (sub / "dee").mkdir()
    (sub / "dee" / "Untitled.ipynb").write_bytes(_release(A2))               # flat layout, renamed
    subs, problems = course.collect_submissions(sub)
    got = {(s.student, s.assignment): s for s in subs}
    assert set(got) == {("ann", A1), ("bo", A1), ("dee", A2)}, problems
    assert got[("ann", A1)].graded_as == {f"{A1}-Copy1.ipynb": f"{A1}.ipynb"}
    assert [p.name for p in got[("bo", A1)].notebooks] == [f"{A1}.ipynb"] and not got[("bo", A1)].graded_as
    assert got[("dee", A2)].name_of(got[("dee", A2)].notebooks[0]) == f"{A2}.ipynb"
    why = {(p.path.parent.name, p.path.name): p.message for p in problems}
    assert "another copy of" in why[(A1, f"{A1}-Copy1.ipynb")] and "named" in why[(A1, f"{A1}-Copy1.ipynb")]
    assert "cell ids are not those of one" in why[(A1, f"{A2}-Copy1.ipynb")]
