"""The LMS importer against what a student can make: a display name she chose, an archive she built,
and the hand-ins an instructor actually has (zips without the UTF-8 flag, corrupt files, late marks).

Each defence has its attack (the defence holds) and its control (the same bytes through the stock
path, the defence monkeypatched off, show the attack working); honest imports are in
tests/test_handins.py and must not move.
"""
from __future__ import annotations

import csv
import io
import json
import struct
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path

import pytest

from instructor.classroom import cli, export, handins
from instructor.batch import course
from instructor.batch.course import QuestionScore, Result
from instructor.classroom.handins import HandinError, import_bulk, read_roster
from instructor.layout import REPO

A1 = "01_version_counter"
A2 = "02_names_and_storage"
MiB = 2 ** 20


def _release(assignment: str) -> bytes:
    return (REPO / "release" / assignment / f"{assignment}.ipynb").read_bytes()


def _source(assignment: str) -> bytes:   # "his full marks": a different notebook from the empty release one
    return (REPO / "source" / assignment / f"{assignment}.ipynb").read_bytes()


def _zip(path: Path, members: dict[str, bytes], method=zipfile.ZIP_DEFLATED, level=None) -> Path:
    with zipfile.ZipFile(path, "w", method, compresslevel=level) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def _roster(tmp_path: Path, text: str, name: str = "roster.csv"):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return read_roster(p)


COURSE_ROSTER = "id,first_name,last_name,email\njsmith,John,Smith,john@example.edu\njdoe,Jane,Doe,jane@example.edu\n"


# --------------------------------------------------------------------------- 3: identity by LMS user id

def _impostor_download(tmp_path: Path, lms: str) -> Path:
    """John Smith (user 111) hands in his work; another student (user 555) renames herself "John Smith"
    in the LMS and hands in an empty notebook whose name sorts after his."""
    if lms == "canvas":
        return _zip(tmp_path / "canvas.zip", {f"smithjohn_111_901_{A1}.ipynb": _source(A1),
                                              f"smithjohn_555_999_{A1}.ipynb": _release(A1),
                                              f"doejane_222_902_{A1}.ipynb": _release(A1)})
    return _zip(tmp_path / "moodle.zip", {f"John Smith_111_assignsubmission_file_/{A1}.ipynb": _source(A1),
                                          f"John Smith_555_assignsubmission_file_/{A1}.ipynb": _release(A1),
                                          f"Jane Doe_222_assignsubmission_file_/{A1}.ipynb": _release(A1)})


@pytest.mark.parametrize("lms", ["canvas", "moodle"])
def test_a_student_renamed_as_another_in_the_lms_gets_neither_hand_in_graded(tmp_path, lms):
    roster = _roster(tmp_path, COURSE_ROSTER)   # no lms_id: names map
    out = import_bulk(_impostor_download(tmp_path, lms), tmp_path / "h", lms, roster)
    assert {(m.student, m.assignment) for m in out.mapped} == {("jdoe", A1)}, out.summary()
    flagged = [s for s in out.unmapped if s.student == "jsmith"]
    assert len(flagged) == 2 and all(s.assignment == A1 for s in flagged)
    for s in flagged:
        assert "2 different LMS users" in s[1] and "user id 111" in s[1] and "user id 555" in s[1], s[1]
    assert "jsmith" in out.conflicts and "IDENTITY jsmith" in out.summary()
    assert not (tmp_path / "h" / "jsmith").exists()


@pytest.mark.parametrize("lms", ["canvas", "moodle"])
def test_control_without_the_user_id_check_the_impostor_s_empty_notebook_is_graded_as_his(tmp_path, monkeypatch, lms):
    monkeypatch.setattr(handins, "_conflicts", lambda users: {})
    out = import_bulk(_impostor_download(tmp_path, lms), tmp_path / "h", lms, _roster(tmp_path, COURSE_ROSTER))
    got = {m.student: m for m in out.mapped}
    assert got["jsmith"].path.read_bytes() == _release(A1)          # hers, graded as his: 0 of 8
    assert "555" in got["jsmith"].origin
    [his] = [s for s in out.unmapped if "111" in s[0]]
    assert "a second hand-in" in his[1]                             # his own file, put aside


def test_a_roster_row_with_an_lms_id_is_that_user_s_whatever_another_calls_herself(tmp_path):
    roster = _roster(tmp_path, "id,first_name,last_name,email,lms_id\njsmith,John,Smith,,111\njdoe,Jane,Doe,,222\n")
    src = _zip(tmp_path / "c.zip", {f"smithjohn_111_901_{A1}.ipynb": _source(A1),
                                    f"smithjohn_555_999_{A1}.ipynb": _release(A1),
                                    f"doejanet_222_902_{A1}.ipynb": _release(A1)})   # Jane renamed herself: still hers
    out = import_bulk(src, tmp_path / "h", "canvas", roster)
    got = {m.student: m for m in out.mapped}
    assert set(got) == {"jsmith", "jdoe"}, out.summary()
    assert got["jsmith"].path.read_bytes() == _source(A1)
    [impostor] = out.unmapped
    assert "555" in impostor[0] and "has the name of jsmith" in impostor[1] and impostor.student is None
    assert not out.conflicts


CANVAS_EXPORT = ("Student,ID,SIS User ID,SIS Login ID,Section,Assignment 1 (12)\n"
                 "    Points Possible,,,,,8\n"
                 "\"Smith, John\",111,900111,jsmith,Sec 1,\n"
                 "\"Doe, Jane\",222,900222,jdoe,Sec 1,\n"
                 "\"Student, Test\",999,,,Sec 1,\n")
MOODLE_EXPORT = ("First name,Surname,ID number,Username,Email address,Roles,Groups\n"
                 "Zoë,Müller,zm42,,zoe@example.edu,Student,\n"
                 "Al,Bo,,albo,al@example.edu,Student,\n"
                 "Cy,Dee,,,cy.dee@example.edu,Student,\n")


def test_the_lms_s_own_roster_exports_are_read(tmp_path):
    canvas = _roster(tmp_path, CANVAS_EXPORT, "canvas.csv")
    assert [(s.id, s.first_name, s.last_name, s.lms_id, s.lms) for s in canvas] == [
        ("jsmith", "John", "Smith", "111", "canvas"), ("jdoe", "Jane", "Doe", "222", "canvas")]
    moodle = _roster(tmp_path, MOODLE_EXPORT, "moodle.csv")
    assert [(s.id, s.first_name, s.last_name, s.email, s.lms_id) for s in moodle] == [
        ("zm42", "Zoë", "Müller", "zoe@example.edu", ""), ("albo", "Al", "Bo", "al@example.edu", ""),
        ("cy.dee", "Cy", "Dee", "cy.dee@example.edu", "")]
    # a Canvas export maps by ID: the impostor with John's name is not John
    src = _impostor_download(tmp_path, "canvas")
    out = import_bulk(src, tmp_path / "h", "canvas", canvas)
    got = {m.student: m for m in out.mapped}
    assert set(got) == {"jsmith", "jdoe"} and got["jsmith"].path.read_bytes() == _source(A1), out.summary()
    assert "has the name of jsmith (whose canvas user id is 111)" in dict(out.unmapped)[f"smithjohn_555_999_{A1}.ipynb"]


def test_a_canvas_roster_maps_a_moodle_download_by_name_as_its_ids_are_canvas_s(tmp_path):
    canvas = _roster(tmp_path, CANVAS_EXPORT, "canvas.csv")
    src = _zip(tmp_path / "m.zip", {f"John Smith_111_assignsubmission_file_/{A1}.ipynb": _source(A1),
                                    f"Jane Doe_9_assignsubmission_file_/{A1}.ipynb": _release(A1)})
    out = import_bulk(src, tmp_path / "h", "moodle", canvas)
    assert {m.student for m in out.mapped} == {"jsmith", "jdoe"}, out.summary()


@pytest.mark.parametrize("text, message", [
    ("Student,ID,SIS User ID,SIS Login ID,Section\n\"Smith, John\",111,,,S\n",
     r"canvas.csv: line 2: student id '' \(its SIS User ID\) is not usable"),
    ("Student,ID,SIS User ID,SIS Login ID,Section\n\"Smith, John\",111,,js,S\n\"Doe, Jane\",111,,jd,S\n",
     r"canvas.csv: line 3: LMS user id '111' again \(first on line 2\)"),
    ("id,lms_id\njs,abc\n", r"canvas.csv: line 2: LMS user id 'abc' is not a number"),
    ("name,mail\nx,y\n", r"canvas.csv: the roster's first line must name its columns.*a Canvas gradebook export"),
])
def test_a_bad_lms_roster_names_the_file_line_and_column(tmp_path, text, message):
    with pytest.raises(HandinError, match=message):
        _roster(tmp_path, text, "canvas.csv")


# --------------------------------------------------------------------------- 5: archives within bounds

def _bomb(tmp_path: Path, n: int, size: int) -> bytes:
    """A hand-in zip of ``n`` notebooks of ``size`` bytes of blanks each: tiny packed, huge unpacked."""
    return _zip(tmp_path / "bomb-inner.zip", {f"nb{i}.ipynb": b" " * size for i in range(n)}, level=1).read_bytes()


def test_a_zip_bomb_hand_in_is_refused_by_name_and_the_class_is_mapped(tmp_path, monkeypatch):
    monkeypatch.setattr(handins, "MAX_HANDIN_BYTES", 2 * MiB)
    monkeypatch.setattr(handins, "MAX_NOTEBOOK_BYTES", 2 * MiB)
    src = _zip(tmp_path / "c.zip", {"bombbob_7_900_bomb.zip": _bomb(tmp_path, 16, MiB),           # 16 MiB unpacked
                                    "manyzed_8_901_many.zip": _bomb(tmp_path, 9, 10),               # 9 notebooks
                                    f"doejane_222_902_{A1}.ipynb": _release(A1)})
    out = import_bulk(src, tmp_path / "h", "canvas")
    assert [(m.student, m.assignment) for m in out.mapped] == [("doejane", A1)], out.summary()
    why = dict(out.unmapped)
    assert "16 notebooks unpacking to 16,777,216 bytes" in why["bombbob_7_900_bomb.zip"]
    assert "zip bomb" in why["bombbob_7_900_bomb.zip"]
    assert "a hand-in of 9 notebooks" in why["manyzed_8_901_many.zip"]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".handins-spool")] == []   # spool removed


def test_a_zip_of_too_many_entries_is_not_opened_and_a_bzip2_member_not_read(tmp_path):
    many = _zip(tmp_path / "many.zip", {f"f{i}.txt": b"" for i in range(handins.MAX_HANDIN_ENTRIES + 1)}).read_bytes()
    bz = _zip(tmp_path / "bz.zip", {f"{A1}.ipynb": _release(A1)}, method=zipfile.ZIP_BZIP2).read_bytes()
    src = _zip(tmp_path / "c.zip", {"manyann_1_1_h.zip": many, "bzbo_2_2_h.zip": bz})
    out = import_bulk(src, tmp_path / "h", "canvas")
    why = dict(out.unmapped)
    assert f"a zip of {handins.MAX_HANDIN_ENTRIES + 1} entries" in why["manyann_1_1_h.zip"]
    assert "compressed with method 12" in why[f"bzbo_2_2_h.zip!{A1}.ipynb"] and not out.mapped


def test_a_zip_whose_end_record_understates_its_entries_is_refused_after_its_directory(tmp_path):
    many = bytearray(_zip(tmp_path / "many.zip", {f"f{i}.txt": b"" for i in range(300)}).read_bytes())
    end = many.rindex(b"PK\x05\x06")
    struct.pack_into("<HH", many, end + 8, 1, 1)      # "1 entry" on this disk and in all
    with zipfile.ZipFile(io.BytesIO(bytes(many))) as zf:
        assert len(zf.infolist()) == 300               # zipfile reads the directory by its size, not its count
    out = import_bulk(_zip(tmp_path / "c.zip", {"liar_1_1_h.zip": bytes(many)}), tmp_path / "h", "canvas")
    [(name, why)] = out.unmapped
    assert "a zip of 300 entries (its end record says 1)" in why


def test_a_damaged_or_encrypted_member_is_listed_and_the_rest_mapped(tmp_path):
    src = _zip(tmp_path / "c.zip", {f"aa_1_1_{A1}.ipynb": _release(A1), f"bb_2_2_{A1}.ipynb": _release(A1),
                                    f"cc_3_3_{A1}.ipynb": _release(A1)})
    blob = bytearray(src.read_bytes())
    with zipfile.ZipFile(src) as zf:
        first = zf.getinfo(f"aa_1_1_{A1}.ipynb")
    blob[first.header_offset:first.header_offset + 4] = b"JUNK"            # its local header overwritten
    entry = blob.rindex(b"bb_2_2_") - 46                                   # bb's central entry: the last of its name
    assert blob[entry:entry + 4] == b"PK\x01\x02"
    blob[entry + 8] |= 0x1                                                 # "encrypted"
    src.write_bytes(bytes(blob))
    out = import_bulk(src, tmp_path / "h", "canvas")
    assert [m.student for m in out.mapped] == ["cc"], out.summary()
    why = dict(out.unmapped)
    assert "cannot be read from the zip (Bad magic number for file header)" in why[f"aa_1_1_{A1}.ipynb"]
    assert "encrypted; not read" in why[f"bb_2_2_{A1}.ipynb"]
    # control: without catching what a damaged member raises, one file stops the whole import
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(handins, "ZIP_ERRORS", ())
        with pytest.raises(zipfile.BadZipFile, match="Bad magic number"):
            import_bulk(src, tmp_path / "h2", "canvas")


def test_the_download_s_bound_stops_reading_and_says_so(tmp_path, monkeypatch):
    body = _release(A1)
    monkeypatch.setattr(handins, "MAX_DOWNLOAD_BYTES", int(2.5 * len(body)))
    src = _zip(tmp_path / "c.zip", {f"a{c}_{i}_9{i}_{A1}.ipynb": body for i, c in enumerate("abcd", start=1)})
    out = import_bulk(src, tmp_path / "h", "canvas")
    assert len(out.mapped) == 2, out.summary()
    assert [s[0][:2] for s in out.unmapped] == ["ac", "ad"]
    assert all("the download unpacks to more than" in s[1] for s in out.unmapped)


def test_a_large_member_goes_to_disk_as_it_is_read(tmp_path, monkeypatch):
    """Honest import with the in-memory threshold below a notebook's size: the same result, read through
    the spool file (the path every member over 1 MiB takes)."""
    monkeypatch.setattr(handins, "IN_MEMORY_BYTES", 1000)
    spooled = []
    real = handins._Body._to_disk
    monkeypatch.setattr(handins._Body, "_to_disk", lambda self: (spooled.append(1), real(self))[1])
    src = _zip(tmp_path / "c.zip", {f"doejane_222_902_{A1}.ipynb": _release(A1),
                                    "roezoe_3_4_h.zip": _zip(tmp_path / "i.zip", {f"{A2}.ipynb": _release(A2)}).read_bytes()})
    out = import_bulk(src, tmp_path / "h", "canvas")
    assert {(m.student, m.assignment) for m in out.mapped} == {("doejane", A1), ("roezoe", A2)}, out.summary()
    assert (tmp_path / "h" / "roezoe" / A2 / f"{A2}.ipynb").read_bytes() == _release(A2)
    assert len(spooled) >= 3


MEMORY_RUN = r"""
import json, resource, sys
sys.path.insert(0, sys.argv[1])
import nbformat  # noqa: F401  (loaded before the cap, as the grader has it)
from instructor.classroom import handins
src, dest, headroom, mode = sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
if mode == "unbounded":   # the control: no per-hand-in bound, everything held in memory (the old importer)
    handins.MAX_HANDIN_BYTES = handins.MAX_HANDIN_NOTEBOOKS = handins.IN_MEMORY_BYTES = 1 << 40
vm = int(next(l for l in open("/proc/self/status") if l.startswith("VmSize")).split()[1]) * 1024
rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
resource.setrlimit(resource.RLIMIT_AS, (vm + headroom, vm + headroom))
out = handins.import_bulk(src, dest, "canvas")
print(json.dumps({"mapped": [m.student for m in out.mapped], "unmapped": [list(s) for s in out.unmapped],
                  "rss0_kb": rss0, "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""
HEADROOM = 256 * MiB


@pytest.fixture(scope="module")
def bomb_download(tmp_path_factory):
    """A 1.7 MB Canvas download: one bomb hand-in of 8 notebooks of 48 MiB (384 MiB unpacked, each
    notebook under the per-file limit) and one honest notebook."""
    tmp = tmp_path_factory.mktemp("bomb")
    return _zip(tmp / "download.zip", {"bombbob_7_900_bomb.zip": _bomb(tmp, 8, 48 * MiB),
                                       f"doejane_222_902_{A1}.ipynb": _release(A1)}, method=zipfile.ZIP_STORED)


def _import_capped(src: Path, dest: Path, mode: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", MEMORY_RUN, str(REPO), str(src), str(dest), str(HEADROOM), mode],
                          capture_output=True, text=True, timeout=300)


def test_a_zip_bomb_under_a_memory_cap_is_refused_and_the_class_imported(bomb_download, tmp_path):
    run = _import_capped(bomb_download, tmp_path / "h", "bounded")
    assert run.returncode == 0, run.stderr[-2000:]
    got = json.loads(run.stdout)
    assert got["mapped"] == ["doejane"]
    [(name, why)] = got["unmapped"]
    assert name == "bombbob_7_900_bomb.zip" and "402,653,184 bytes" in why and "zip bomb" in why
    assert got["maxrss_kb"] - got["rss0_kb"] < 64 * 1024, got   # measured: a few MB over the start


def test_control_the_same_bomb_without_the_bounds_blows_the_memory_cap(bomb_download, tmp_path):
    run = _import_capped(bomb_download, tmp_path / "h", "unbounded")
    assert run.returncode != 0, run.stdout
    assert "MemoryError" in run.stderr, run.stderr[-2000:]
    assert not (tmp_path / "h" / "doejane").exists()   # nobody imported


# --------------------------------------------------------------------------- 7: what an instructor has

def _unflagged(path: Path, names: dict[str, bytes], members: dict[str, bytes], extra: dict | None = None) -> Path:
    """A zip whose member names are the raw bytes ``names[placeholder]`` with the UTF-8 flag off (as
    Debian's zip and Windows write them): written under ASCII placeholders of the same length, which
    are then replaced byte for byte (offsets unchanged)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            info = zipfile.ZipInfo(name)
            info.compress_type = zipfile.ZIP_DEFLATED
            if name in (extra or {}):
                info.extra = extra[name]
            zf.writestr(info, data)
    blob = path.read_bytes()
    for placeholder, raw in names.items():
        assert len(placeholder.encode()) == len(raw) and blob.count(placeholder.encode()) == 2
        blob = blob.replace(placeholder.encode(), raw)
    path.write_bytes(blob)
    with zipfile.ZipFile(path) as zf:
        assert not any(i.flag_bits & handins.UTF8_FLAG for i in zf.infolist())
    return path


MOODLE_NAMES = ["Zoë Müller", "José Núñez", "Ana Ångström", "Łukasz Żak", "Al Bo"]
MOODLE_ROSTER = ("id,first_name,last_name,email\nzmuller,Zoë,Müller,\njnunez,José,Núñez,\naangstrom,Ana,Ångström,\n"
                 "lzak,Łukasz,Żak,\nalbo,Al,Bo,\n")


def _moodle_rezipped(tmp_path: Path) -> Path:
    names, members = {}, {}
    for i, person in enumerate(MOODLE_NAMES):
        raw = f"{person}_{70 + i}_assignsubmission_file_/{A1}.ipynb".encode("utf-8")
        placeholder = f"P{i}".ljust(len(raw), "x")
        names[placeholder], members[placeholder] = raw, _release(A1)
    return _unflagged(tmp_path / "moodle-rezipped.zip", names, members)


def test_utf8_names_without_the_flag_are_read_as_utf8_and_said(tmp_path):
    out = import_bulk(_moodle_rezipped(tmp_path), tmp_path / "h", "moodle", _roster(tmp_path, MOODLE_ROSTER))
    assert sorted(m.student for m in out.mapped) == ["aangstrom", "albo", "jnunez", "lzak", "zmuller"], out.summary()
    assert "4 file name(s) in moodle-rezipped.zip not marked UTF-8 by the zip but valid UTF-8" in out.summary()


def test_control_the_stock_cp437_reading_maps_nobody_with_an_accent(tmp_path, monkeypatch):
    monkeypatch.setattr(handins, "_zip_name", lambda info: (info.filename, ""))
    out = import_bulk(_moodle_rezipped(tmp_path), tmp_path / "h", "moodle", _roster(tmp_path, MOODLE_ROSTER))
    assert [m.student for m in out.mapped] == ["albo"]
    assert sum("is not on the roster" in why for _, why in out.unmapped) == 4


def test_the_unicode_path_extra_field_names_a_member_and_a_garbled_name_is_said(tmp_path):
    raw = f"Zo\xeb M\xfcller_77_assignsubmission_file_/{A1}.ipynb".encode("latin-1")   # not UTF-8
    real = f"Zoë Müller_77_assignsubmission_file_/{A1}.ipynb".encode()
    field = struct.pack("<BI", 1, zlib.crc32(raw)) + real
    placeholder = "Q".ljust(len(raw), "x")
    src = _unflagged(tmp_path / "m.zip", {placeholder: raw}, {placeholder: _release(A1)},
                     extra={placeholder: struct.pack("<HH", handins.UNICODE_PATH_EXTRA, len(field)) + field})
    roster = _roster(tmp_path, MOODLE_ROSTER)
    out = import_bulk(src, tmp_path / "h", "moodle", roster)
    assert [m.student for m in out.mapped] == ["zmuller"], out.summary()
    assert "read from the Unicode Path field" in out.summary()
    # control: without the extra field the name is cp437 guesswork, not on the roster, and the reason says so
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(handins, "_unicode_path", lambda extra, raw: None)
        out = import_bulk(src, tmp_path / "h2", "moodle", roster)
    assert not out.mapped
    [(name, why)] = out.unmapped
    assert "not on the roster" in why and "read as cp437" in why
    assert "neither marked UTF-8 nor valid UTF-8" in out.summary()


# ----- every rostered student has a row with a reason; late and canvas ID in the files

CLASS_ROSTER = ("Student,ID,SIS User ID,SIS Login ID,Section\n"
                "\"Smith, John\",,,jsmith,S\n"          # no Canvas ID: mapped by name
                "\"Doe, Jane\",222,,jdoe,S\n"
                "\"Roe, Zoe\",333,,zroe,S\n"
                "\"Poe, Ed\",444,,epoe,S\n"
                "\"Muller, Al\",555,,amuller,S\n")


def _class_download(tmp_path: Path) -> Path:
    return _zip(tmp_path / "canvas-download.zip", {
        f"smithjohn_111_901_{A1}.ipynb": _source(A1),
        f"smithjohn_666_999_{A1}.ipynb": _release(A1),       # someone renamed "John Smith"
        f"doejane_LATE_222_902_{A1}.ipynb": _release(A1),    # late, by Canvas's mark
        f"roezoe_333_903_{A1}.ipynb": b'{"cells": [ not json',   # corrupt, named as the assignment
        "poeed_444_904_Untitled.ipynb": b"\xff\xfe\x00",         # corrupt, no assignment to tell
    })                                                       # amuller: nothing


def _grade_class(tmp_path: Path, monkeypatch) -> tuple[int, dict, dict, dict]:
    monkeypatch.setattr(course, "grade", lambda subs, workdir, **kw: [
        Result(s.student, s.assignment, True, [QuestionScore("q", 8.0, 8.0, "auto")]) for s in subs])
    roster = tmp_path / "roster.csv"
    roster.write_text(CLASS_ROSTER)
    out = tmp_path / "out"
    status = cli.main(["grade", str(_class_download(tmp_path)), "--roster", str(roster), "--workdir",
                       str(tmp_path / "work"), "--out", str(out), "--export", "canvas,moodle", "--no-progress", "-j", "1"])
    rows = {}
    for r in csv.DictReader((out / "grades.csv").open()):
        rows.setdefault(r["student"], []).append(r)
    canvas = {r[3]: r for r in csv.reader((out / "canvas.csv").open())}
    moodle = {r[0]: r for r in csv.reader((out / "moodle.csv").open())}
    return status, rows, canvas, moodle


def test_every_rostered_student_has_a_row_with_its_reason_in_grades_and_exports(tmp_path, monkeypatch, capsys):
    status, rows, canvas, moodle = _grade_class(tmp_path, monkeypatch)
    assert status == 1
    assert set(rows) == {"jsmith", "jdoe", "zroe", "epoe", "amuller"}, rows
    [js] = rows["jsmith"]
    assert js["assignment"] == A1 and js["status"].startswith("not graded:") and "different LMS users" in js["status"]
    [jd] = rows["jdoe"]
    assert jd["status"] == "graded" and "late: canvas marked this hand-in late" in jd["flags"]
    [zr] = rows["zroe"]
    assert zr["assignment"] == A1 and "not a valid Jupyter notebook" in zr["status"]
    [ep] = rows["epoe"]
    assert ep["assignment"] == "" and "not a text file" in ep["status"]
    [am] = rows["amuller"]
    assert am["assignment"] == A1 and "no hand-in" in am["status"]
    for sid in ["jsmith", "jdoe", "zroe", "epoe", "amuller"]:
        assert sid in canvas and sid in moodle, (sid, canvas, moodle)
    assert canvas["jdoe"][1] == "222" and canvas["zroe"][1] == "333" and canvas["jsmith"][1] == ""
    assert canvas["jdoe"][5] == "8" and canvas["jsmith"][5] == "" and canvas["epoe"][5] == ""
    assert "different LMS users" in moodle["jsmith"][2] and "late" in moodle["jdoe"][2]
    assert "not a text file" in moodle["epoe"][2] and "no hand-in" in moodle["amuller"][2]
    assert "IDENTITY jsmith" in capsys.readouterr().out


class _StockSkipped(tuple):
    def __new__(cls, origin, why, student=None, assignment=None):
        self = super().__new__(cls, (origin, why))
        self.student = self.assignment = None
        return self


def test_control_the_stock_import_leaves_those_students_out_and_grades_the_impostor(tmp_path, monkeypatch):
    monkeypatch.setattr(handins, "_conflicts", lambda users: {})
    monkeypatch.setattr(handins, "Skipped", _StockSkipped)
    monkeypatch.setattr(cli, "_absent", lambda *a: [])
    monkeypatch.setattr(cli, "_late", lambda imported: {})
    monkeypatch.setattr(export, "lms_ids_from", lambda roster: {})
    status, rows, canvas, moodle = _grade_class(tmp_path, monkeypatch)
    assert set(rows) == {"jsmith", "jdoe"}                      # zroe, epoe, amuller: no row anywhere
    assert not {"zroe", "epoe", "amuller"} & (set(canvas) | set(moodle))
    assert rows["jsmith"][0]["status"] == "graded"              # the impostor's file, graded as his
    assert rows["jdoe"][0]["flags"] == "" and canvas["jdoe"][1] == ""
