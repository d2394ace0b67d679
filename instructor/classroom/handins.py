"""Hand-ins from anywhere: an LMS's bulk download, a roster, a renamed copy.

A class that hands in through Canvas or Moodle gives the instructor one zip of every student's file,
named the LMS's way; a student on Binder or Colab hands in a downloaded ``.ipynb`` that JupyterLab may
have renamed (``01_version_counter-Copy1.ipynb``). This module maps each file to its student and
assignment and lays it out as nbgrader's ``<student>/<assignment>/<notebook>.ipynb``, which ``grade``
reads. Every file it cannot map is listed with the reason, and with the student it belongs to when that
is known (a row in ``grades.csv``); nothing is dropped silently.

* **Canvas** ("Download Submissions"): ``<lastfirst>[_LATE]_<user id>_<submission id>_<file name>``,
  Canvas adding ``-1``, ``-2`` … to a re-submitted file's name.
* **Moodle** ("Download all submissions"): a folder per student,
  ``<Full Name>_<participant id>_assignsubmission_file_/<file name>``, or the same flattened into one
  file name.
* The **assignment** comes from the file's name when it is a release notebook's, else from the
  notebook's nbgrader cell ids: the release notebook sharing the most of them, at least half.
* The **student** is who the LMS's user id says, never the display name alone: a student can rename
  herself in the LMS, she cannot change her user id. With a roster (:func:`read_roster`: the course's
  ``id,first_name,last_name,email[,lms_id]``, a Canvas gradebook export or a Moodle participants
  export) a hand-in belongs to the row whose ``lms_id`` is the LMS's user id; a row without an
  ``lms_id`` is matched by name. Without a roster, the LMS's name made an nbgrader id. When one
  student's hand-ins come from two different LMS user ids, **none** of them is graded: each is listed,
  and the student's row says why.

Every archive is read within bounds, one member at a time, and never held whole in memory: a member
larger than ``IN_MEMORY_BYTES`` is streamed to a spool file beside the output folder as it is
decompressed. Bounds: ``MAX_NOTEBOOK_BYTES`` per file, ``MAX_HANDIN_BYTES`` and
``MAX_HANDIN_NOTEBOOKS`` per hand-in zip (checked on the zip's own directory before anything is read,
and again on the bytes actually read), ``MAX_HANDIN_ENTRIES`` entries and ``MAX_HANDIN_DIRECTORY``
bytes of directory in a hand-in zip (read from its end record before its directory is parsed, the
entries counted again after), ``MAX_DOWNLOAD_BYTES`` and ``MAX_MEMBERS`` for the whole download.
A hand-in over a bound is refused with a message naming it; the rest of the class is read. Only
stored and deflated members are read (what LMSs and ``autograder.export()`` write; bzip2 and LZMA
decompress without a bound per call). No member is extracted by its own path, so ``../`` names and
links inside a zip reach nothing. The output folder must be new or empty: a course command never
overwrites a file.

Zip file names: a zip that does not set its UTF-8 flag (Debian's ``zip``, Windows' "Send to") may
still hold UTF-8 names; a name is read from Info-ZIP's Unicode Path extra field (0x7075) when it has
one, else as UTF-8 when its bytes are valid UTF-8, else as cp437 (the zip default); the summary says
so whenever it mattered.
"""
from __future__ import annotations

import csv
import io
import itertools
import os
import re
import shutil
import struct
import tempfile
import unicodedata
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Iterator

from ..layout import NB_EXT, REPO, notebook_owner
from ..batch.course import recognise  # which assignment a hand-in is: the course's one rule

MAX_NOTEBOOK_BYTES = 50 * 2 ** 20   # a course notebook with its outputs is well under 5 MB
MAX_HANDIN_BYTES = 64 * 2 ** 20     # everything one hand-in zip unpacks to
MAX_HANDIN_NOTEBOOKS = 8            # notebooks in one hand-in zip (autograder.export() writes one)
MAX_HANDIN_ENTRIES = 256            # entries of one hand-in zip, files and folders
MAX_HANDIN_DIRECTORY = 2 ** 20      # bytes of one hand-in zip's central directory (parsed whole by zipfile)
MAX_DOWNLOAD_BYTES = 4 * 2 ** 30    # everything one download unpacks to
MAX_MEMBERS = 20_000                # entries of a download, and notebooks read from it
IN_MEMORY_BYTES = 2 ** 20           # a member larger than this is streamed to disk as it is read
CHUNK = 2 ** 20
ZIP_METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflated"}
ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, zlib.error, NotImplementedError,
              RuntimeError, ValueError)   # what reading a damaged or odd member can raise
UTF8_FLAG = 0x800
UNICODE_PATH_EXTRA = 0x7075

STUDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")

CANVAS = re.compile(r"^(?P<name>[^_/]+?)(?P<late>_LATE)?_(?P<uid>\d+)_(?P<sub>\d+)_(?P<file>.+)$")
MOODLE_DIR = re.compile(r"^(?P<name>.+?)_(?P<uid>\d+)_assignsubmission_file_?$")
MOODLE_FLAT = re.compile(r"^(?P<name>.+?)_(?P<uid>\d+)_assignsubmission_file_(?P<file>.+)$")
RESUBMITTED = re.compile(r"-\d+(?=\.ipynb$)")


class HandinError(ValueError):
    """A roster or a download that cannot be read at all; the message names the file and the fault."""


@dataclass(frozen=True)
class Student:
    id: str
    first_name: str = ""
    last_name: str = ""
    email: str = ""
    lms_id: str = ""
    lms: str = ""       # whose user id lms_id is: "canvas", "moodle", or "" (the course's own roster: not said)


@dataclass
class Mapped:
    student: str
    assignment: str
    path: Path          # where it was written: <dest>/<student>/<assignment>/<notebook>.ipynb
    origin: str         # its name in the download
    how: str            # how its assignment was recognised
    late: bool = False  # the LMS marked it late
    lms: str = ""       # canvas or moodle


class Skipped(tuple):
    """A file that was not mapped: ``(name in the download, why)``, with the student and the assignment
    it belongs to where they are known (``None`` otherwise), so that their row can say why."""

    def __new__(cls, origin: str, why: str, student: str | None = None, assignment: str | None = None):
        self = super().__new__(cls, (origin, why))
        self.student, self.assignment = student, assignment
        return self


@dataclass
class Imported:
    mapped: list[Mapped] = field(default_factory=list)
    unmapped: list[Skipped] = field(default_factory=list)   # (name in the download, why), see Skipped
    notes: list[str] = field(default_factory=list)          # what the instructor should know (file-name encoding)
    conflicts: dict[str, str] = field(default_factory=dict)  # student -> why none of their hand-ins is graded

    def summary(self) -> str:
        lines = [f"{len(self.mapped)} notebook(s) mapped, {len(self.unmapped)} file(s) not mapped"]
        for m in self.mapped:
            lines.append(f"  {m.origin} -> {m.student}/{m.assignment} ({m.how}{', late' if m.late else ''})")
        for origin, why in self.unmapped:
            lines.append(f"  NOT MAPPED {origin}: {why}")
        for student, why in sorted(self.conflicts.items()):
            lines.append(f"  IDENTITY {student}: {why}")
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


# --------------------------------------------------------------------------- roster

ROSTER_KINDS = ("the course's id,first_name,last_name,email[,lms_id]; a Canvas gradebook export "
                "(Student,ID,SIS User ID,SIS Login ID,Section,...); a Moodle participants export "
                "(First name,Last name or Surname,ID number,Email address,...)")


def _roster_kind(header: list[str]) -> str | None:
    h = set(header)
    if {"student", "sis login id"} <= h:
        return "canvas"
    if "first name" in h and ({"last name", "surname"} & h):
        return "moodle"
    if "id" in h:
        return "course"
    return None


def read_roster(path: Path) -> list[Student]:
    """A class list, in one of three layouts (told apart by the header):

    * the course's own CSV: ``id`` (required), ``first_name``, ``last_name``, ``email``, ``lms_id``
      (the LMS's user id: Canvas's ``ID``, Moodle's participant id in its download's folder names);
    * **Canvas**'s gradebook export (Grades > Export): the student id is ``SIS Login ID`` (else
      ``SIS User ID``), the ``lms_id`` is Canvas's ``ID``, the name is ``Student`` ("Last, First");
      its "Points Possible" row and Canvas's "Student, Test" are left out;
    * **Moodle**'s participants export: the student id is ``ID number``, else ``Username``, else the
      ``Email address`` up to its ``@``; no ``lms_id`` (the participants table has none), so names map.

    Each bad row is named by its line; two rows with one student id or one ``lms_id`` are refused."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as err:
        raise HandinError(f"{path}: cannot read the roster ({getattr(err, 'strerror', None) or err})") from None
    lines = list(csv.reader(io.StringIO(text)))
    header = [h.strip().lower() for h in lines[0]] if lines else []
    kind = _roster_kind(header)
    if kind is None:
        raise HandinError(f"{path}: the roster's first line must name its columns, with 'id' among them "
                          f"(found: {', '.join(header) or 'an empty file'}); e.g. id,first_name,last_name,email; "
                          f"accepted: {ROSTER_KINDS}")
    out, seen, seen_lms, errors = [], {}, {}, []
    for n, cells in enumerate(lines[1:], start=2):
        if not any(c.strip() for c in cells):
            continue
        row = {h: (cells[i].strip() if i < len(cells) else "") for i, h in enumerate(header)}
        if kind == "canvas":
            name = row.get("student", "")
            if name == "Points Possible" or (name == "Student, Test" and not row.get("sis login id")
                                             and not row.get("sis user id")):
                continue   # Canvas's points row and its test student
            last, _, first = name.partition(",")
            sid = row.get("sis login id") or row.get("sis user id", "")
            where = "SIS Login ID" if row.get("sis login id") else "SIS User ID"
            lms_id, lms = row.get("id", ""), "canvas"
            first, last, email = first.strip(), last.strip(), row.get("email", "")
        elif kind == "moodle":
            email = row.get("email address", "")
            sid = row.get("id number") or row.get("username") or email.partition("@")[0]
            where = ("ID number" if row.get("id number") else "Username" if row.get("username")
                     else "Email address (up to its @)")
            first, last = row.get("first name", ""), row.get("last name") or row.get("surname", "")
            lms_id, lms = "", "moodle"
        else:
            sid, where = row.get("id", ""), "id"
            first, last, email = row.get("first_name", ""), row.get("last_name", ""), row.get("email", "")
            lms_id, lms = row.get("lms_id", ""), ""
        if not STUDENT_ID.match(sid):
            column = "" if where == "id" else f" (its {where})"
            errors.append(f"line {n}: student id {sid!r}{column} is not usable (letters, digits, '_', '-', '.'; "
                          "starting with a letter or digit; at most 64)")
            continue
        if sid in seen:
            errors.append(f"line {n}: student id {sid!r} again (first on line {seen[sid]})")
            continue
        if lms_id and not lms_id.isdigit():
            errors.append(f"line {n}: LMS user id {lms_id!r} is not a number (the id in the LMS's download names)")
            continue
        if lms_id and lms_id in seen_lms:
            errors.append(f"line {n}: LMS user id {lms_id!r} again (first on line {seen_lms[lms_id]}); "
                          "one user id is one student")
            continue
        seen[sid] = n
        if lms_id:
            seen_lms[lms_id] = n
        out.append(Student(sid, first, last, email, lms_id, lms if lms_id else ""))
    if errors:
        raise HandinError(f"{path}: " + "; ".join(errors))
    return out


def _fold(s: str) -> str:
    """A name compared the way LMSs write it: no accents, no case, letters and digits only."""
    s = unicodedata.normalize("NFKD", s)
    return "".join(ch for ch in s.lower() if ch.isalnum() and not unicodedata.combining(ch))


def _as_id(name: str) -> str:
    s = unicodedata.normalize("NFKD", name)
    s = re.sub(r"[^A-Za-z0-9]+", "_", "".join(ch for ch in s if not unicodedata.combining(ch))).strip("_").lower()
    return s[:64] or "unnamed"


def _who(name: str, uid: str, lms: str, roster: list[Student] | None) -> tuple[str | None, str]:
    """(student id or None, why not). The LMS user id first; a name only for a roster row that has no
    ``lms_id`` of this LMS (a row that has one is that user's, whatever another user calls herself)."""
    if roster is None:
        return _as_id(name), ""
    for s in roster:
        if s.lms_id and s.lms_id == uid and s.lms in ("", lms):
            return s.id, ""
    wanted = _fold(name)
    hits = [s for s in roster if wanted and wanted in
            ({_fold(s.last_name + s.first_name), _fold(s.first_name + s.last_name)} - {""})]
    free = [s for s in hits if not s.lms_id or s.lms not in ("", lms)]   # no user id of this LMS
    if len(free) == 1:
        return free[0].id, ""
    if len(free) > 1:
        return None, (f"{lms} name {name!r} matches {len(free)} students of the roster "
                      f"({', '.join(s.id for s in free)}); add an lms_id column ({lms} user id {uid})")
    if hits:
        return None, (f"{lms} student {name!r} (user id {uid}) has the name of "
                      + ", ".join(f"{s.id} (whose {s.lms or 'LMS'} user id is {s.lms_id})" for s in hits)
                      + " on the roster, not the user id: a hand-in is a student's by the LMS user id")
    return None, f"{lms} student {name!r} (user id {uid}) is not on the roster"


# --------------------------------------------------------------------------- reading within bounds

class _Body:
    """A member's bytes as they are read: in memory up to ``IN_MEMORY_BYTES``, then in a spool file."""

    _names = itertools.count()

    def __init__(self, spool: Path):
        self.spool, self.size, self.data, self.path, self._f = spool, 0, bytearray(), None, None

    def write(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self._f is None and self.size > IN_MEMORY_BYTES:
            self._to_disk()
        if self._f is not None:
            self._f.write(chunk)
        else:
            self.data += chunk

    def _to_disk(self) -> None:
        self.path = self.spool / f"{next(self._names)}.part"
        self._f = open(self.path, "xb")
        self._f.write(self.data)
        self.data = bytearray()

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None

    def keep(self) -> None:
        """Put it on disk (a kept hand-in waits there, not in memory, until the download is read)."""
        if self.path is None:
            self._to_disk()
        self.close()

    def open(self):
        self.close()
        return io.BytesIO(bytes(self.data)) if self.path is None else open(self.path, "rb")

    def read(self) -> bytes:
        with self.open() as f:
            return f.read()

    def copy_to(self, target: Path) -> None:
        with self.open() as f, open(target, "xb") as out:   # never over an existing file
            shutil.copyfileobj(f, out, CHUNK)

    def discard(self) -> None:
        self.close()
        self.data = bytearray()
        if self.path is not None:
            self.path.unlink(missing_ok=True)


@dataclass
class _Budget:
    """What is left of the download's bounds."""
    bytes_left: int
    notebooks_left: int
    spent: str = ""


def _stream(f, body: _Body, limit: int, budget: _Budget) -> str:
    """Copy ``f`` into ``body`` chunk by chunk; why it stopped (over ``limit`` or the download's
    bound), or ''."""
    while chunk := f.read(CHUNK):
        if body.size + len(chunk) > limit:
            return f"larger than {limit:,} bytes once unpacked; not read further"
        if len(chunk) > budget.bytes_left:
            budget.spent = (f"the download unpacks to more than {MAX_DOWNLOAD_BYTES:,} bytes; "
                            "the files after this one were not read (grade them in a second run)")
            return budget.spent
        budget.bytes_left -= len(chunk)
        body.write(chunk)
    body.close()
    return ""


def _directory(fp) -> tuple[int, int] | None:
    """(entries, bytes) of a zip's central directory as its end record declares them, read before the
    directory is (zipfile parses all of it at once)."""
    end = getattr(zipfile, "_EndRecData", None)
    if end is None:
        return None
    try:
        rec = end(fp)
    except (OSError, struct.error):
        return None
    return None if rec is None else (rec[zipfile._ECD_ENTRIES_TOTAL], rec[zipfile._ECD_SIZE])


def _unicode_path(extra: bytes, raw: bytes) -> str | None:
    """The name in Info-ZIP's Unicode Path extra field (0x7075), when its CRC is the header name's."""
    i = 0
    while i + 4 <= len(extra):
        kind, size = struct.unpack_from("<HH", extra, i)
        data = extra[i + 4:i + 4 + size]
        if kind == UNICODE_PATH_EXTRA and len(data) > 5 and data[0] == 1 \
                and struct.unpack_from("<I", data, 1)[0] == zlib.crc32(raw):
            try:
                return data[5:].decode("utf-8")
            except UnicodeDecodeError:
                return None
        i += 4 + size
    return None


def _zip_name(info: zipfile.ZipInfo) -> tuple[str, str]:
    """(the member's name, how it was decoded when the zip did not say: '', 'extra', 'utf-8', 'cp437')."""
    if info.flag_bits & UTF8_FLAG:
        return info.filename, ""
    try:
        raw = info.orig_filename.encode("cp437")   # zipfile read the bytes as cp437: these are the bytes
    except UnicodeEncodeError:
        return info.filename, ""
    named = _unicode_path(info.extra, raw)
    if named is not None:
        return named.replace("\\", "/") if os.sep == "\\" else named, "extra"
    if raw.isascii():
        return info.filename, ""
    try:
        return raw.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        return info.filename, "cp437"


@dataclass
class _Item:
    name: str               # as listed: a hand-in zip's notebook is "<zip>!<notebook>"
    outer: str              # the download member's own name (what the LMS named it)
    inner: str | None       # the notebook's name inside a hand-in zip
    body: _Body | None
    why: str = ""


class _Reader:
    """Walks a download (zip or folder) one member at a time, within the bounds."""

    def __init__(self, src: Path, spool: Path):
        self.src, self.spool = src, spool
        self.budget = _Budget(MAX_DOWNLOAD_BYTES, MAX_MEMBERS)
        self.decoded: dict[str, list[str]] = {"extra": [], "utf-8": [], "cp437": []}

    def _named(self, info: zipfile.ZipInfo) -> str:
        name, how = _zip_name(info)
        if how:
            self.decoded[how].append(name)
        return name

    def items(self) -> Iterator[_Item]:
        if self.src.is_dir():
            yield from self._folder()
        else:
            yield from self._zip()

    def _folder(self) -> Iterator[_Item]:
        for n, p in enumerate(sorted(self.src.rglob("*"))):
            rel = p.relative_to(self.src).as_posix()
            if _hidden(rel):
                continue
            if n >= MAX_MEMBERS:
                yield _Item(rel, rel, None, None, f"the folder has more than {MAX_MEMBERS:,} entries; not read")
            elif p.is_symlink():
                yield _Item(rel, rel, None, None, "a symbolic link; not followed")
            elif p.is_file():
                size = p.stat().st_size
                if size > MAX_NOTEBOOK_BYTES:
                    yield _Item(rel, rel, None, None, f"{size:,} bytes, over the {MAX_NOTEBOOK_BYTES:,}-byte limit")
                    continue
                with open(p, "rb") as f:
                    yield from self._member(rel, f)

    def _zip(self) -> Iterator[_Item]:
        try:
            with open(self.src, "rb") as fp:
                entries = (_directory(fp) or (0, 0))[0]
            if entries > MAX_MEMBERS:
                raise HandinError(f"{self.src}: {entries:,} entries, more than the {MAX_MEMBERS:,} a class download has")
            zf = zipfile.ZipFile(self.src)
        except (zipfile.BadZipFile, OSError) as err:
            raise HandinError(f"{self.src}: not a zip file or a folder ({err})") from None
        with zf:
            infos = zf.infolist()
            if len(infos) > MAX_MEMBERS:
                raise HandinError(f"{self.src}: {len(infos):,} entries, more than the {MAX_MEMBERS:,} a class download has")
            for info in infos:
                if info.is_dir():
                    continue
                name = self._named(info)
                if _hidden(name):
                    continue
                why = self._refuse(info, MAX_NOTEBOOK_BYTES)
                if not why:
                    try:
                        f = zf.open(info)
                    except ZIP_ERRORS as err:
                        why = f"cannot be read from the zip ({err})"
                if why:
                    yield _Item(name, name, None, None, why)
                    continue
                with f:
                    yield from self._member(name, f)

    def _refuse(self, info: zipfile.ZipInfo, limit: int) -> str:
        if self.budget.spent:
            return self.budget.spent
        if (info.external_attr >> 16) & 0o170000 == 0o120000:
            return "a symbolic link inside the zip; not followed"
        if info.flag_bits & 0x1:
            return "encrypted; not read (hand in the notebook without a password)"
        if info.compress_type not in ZIP_METHODS:
            return (f"compressed with method {info.compress_type} (only stored and deflated are read: "
                    "an LMS and autograder.export() write those)")
        if info.file_size > limit:
            return f"{info.file_size:,} bytes, over the {limit:,}-byte limit"
        return ""

    def _member(self, name: str, f) -> Iterator[_Item]:
        """One member of the download, read to a body; a hand-in zip opened (one level)."""
        if self.budget.spent:
            yield _Item(name, name, None, None, self.budget.spent)
            return
        body = _Body(self.spool)
        try:
            why = _stream(f, body, MAX_NOTEBOOK_BYTES, self.budget)
        except ZIP_ERRORS as err:
            why = f"cannot be read ({err})"
        if why:
            body.discard()
            yield _Item(name, name, None, None, why)
        elif not name.lower().endswith(".zip"):
            yield _Item(name, name, None, body)
        else:
            try:
                yield from self._handin_zip(name, body)
            finally:
                body.discard()

    def _handin_zip(self, name: str, body: _Body) -> Iterator[_Item]:
        """The notebooks of one hand-in zip (``autograder.export()``'s, uploaded to the LMS): all of
        them within the hand-in's bounds, or none."""
        fp = body.open()
        try:
            entries, directory = _directory(fp) or (0, 0)
            if entries > MAX_HANDIN_ENTRIES or directory > MAX_HANDIN_DIRECTORY:
                yield _Item(name, name, None, None, f"a zip of {entries:,} entries in a directory of {directory:,} bytes, "
                                                    f"more than a hand-in has ({MAX_HANDIN_ENTRIES:,} entries, "
                                                    f"{MAX_HANDIN_DIRECTORY:,} bytes); not opened (a zip bomb?)")
                return
            try:
                inner = zipfile.ZipFile(fp)
            except ZIP_ERRORS as err:
                yield _Item(name, name, None, None, f"a zip that cannot be opened ({err})")
                return
            with inner:
                infos = inner.infolist()
                if len(infos) > MAX_HANDIN_ENTRIES:   # its end record understated them
                    yield _Item(name, name, None, None, f"a zip of {len(infos):,} entries (its end record says "
                                                        f"{entries:,}), more than the {MAX_HANDIN_ENTRIES:,} a hand-in "
                                                        "has; not read (a zip bomb?)")
                    return
                notebooks = [i for i in infos if not i.is_dir() and i.filename.endswith(NB_EXT)
                             and not PurePosixPath(i.filename).name.startswith(".")]
                if not notebooks:
                    yield _Item(name, name, None, None, "a zip with no notebook (.ipynb) in it")
                    return
                declared = sum(i.file_size for i in notebooks)
                if len(notebooks) > MAX_HANDIN_NOTEBOOKS or declared > MAX_HANDIN_BYTES:
                    yield _Item(name, name, None, None,
                                f"a hand-in of {len(notebooks):,} notebooks unpacking to {declared:,} bytes, over "
                                f"the bounds of one hand-in ({MAX_HANDIN_NOTEBOOKS} notebooks, "
                                f"{MAX_HANDIN_BYTES:,} bytes); not read (a zip bomb?)")
                    return
                if len(notebooks) > self.budget.notebooks_left:
                    yield _Item(name, name, None, None, f"more than {MAX_MEMBERS:,} notebooks in the download; not read")
                    return
                self.budget.notebooks_left -= len(notebooks)
                out, left = [], MAX_HANDIN_BYTES
                try:
                    for i in notebooks:
                        inner_path = self._named(i)
                        inner_name, label = PurePosixPath(inner_path).name, f"{name}!{inner_path}"
                        why = self._refuse(i, MAX_NOTEBOOK_BYTES)
                        if why:
                            out.append(_Item(label, name, inner_name, None, why))
                            continue
                        got, limit = _Body(self.spool), min(MAX_NOTEBOOK_BYTES, left)
                        with inner.open(i) as f:
                            why = _stream(f, got, limit, self.budget)
                        if why:
                            got.discard()
                            if self.budget.spent or limit < MAX_NOTEBOOK_BYTES:   # the download's or the hand-in's
                                for item in out:
                                    if item.body is not None:
                                        item.body.discard()
                                out = []
                                yield _Item(name, name, None, None, self.budget.spent or (
                                    f"the hand-in unpacks to more than {MAX_HANDIN_BYTES:,} bytes, more than its zip "
                                    "says; not read (a zip bomb?)"))
                                return
                            out.append(_Item(label, name, inner_name, None, why))
                            continue
                        left -= got.size
                        out.append(_Item(label, name, inner_name, got))
                except ZIP_ERRORS as err:
                    for item in out:
                        if item.body is not None:
                            item.body.discard()
                    yield _Item(name, name, None, None, f"a zip that cannot be read ({err})")
                    return
                yield from out
        finally:
            fp.close()

    def notes(self, src: Path) -> list[str]:
        out = []
        for how, what in [("extra", "read from the Unicode Path field Info-ZIP's zip adds"),
                          ("utf-8", "not marked UTF-8 by the zip but valid UTF-8: read as UTF-8")]:
            names = self.decoded[how]
            if names:
                out.append(f"{len(names)} file name(s) in {src.name} {what} (e.g. {names[0]!r})")
        if self.decoded["cp437"]:
            names = self.decoded["cp437"]
            out.append(f"{len(names)} file name(s) in {src.name} are neither marked UTF-8 nor valid UTF-8: read as "
                       f"cp437, the zip default (e.g. {names[0]!r}); if they look garbled, the zip was made with "
                       "another encoding: unpack it with the right one and pass the folder with --lms")
        return out


def _hidden(name: str) -> bool:
    return PurePosixPath(name).name.startswith(".") or "__MACOSX" in PurePosixPath(name).parts


# --------------------------------------------------------------------------- the download

def _parse_name(name: str, lms: str) -> tuple[str, str | None, str, str, bool, str]:
    """(lms, student name, user id, file name, late, why not) for one member's path."""
    parts = PurePosixPath(name).parts
    base = parts[-1]
    if lms in ("auto", "moodle"):
        for part in parts[:-1]:
            m = MOODLE_DIR.match(part)
            if m:
                return "moodle", m["name"], m["uid"], base, False, ""
        m = MOODLE_FLAT.match(base)
        if m:
            return "moodle", m["name"], m["uid"], m["file"], False, ""
    if lms in ("auto", "canvas"):
        m = CANVAS.match(base)
        if m:
            return "canvas", m["name"], m["uid"], RESUBMITTED.sub("", m["file"]), bool(m["late"]), ""
    expected = {"canvas": "<lastfirst>_<user id>_<submission id>_<file>",
                "moodle": "<Full Name>_<id>_assignsubmission_file_/<file>",
                "auto": "Canvas's <lastfirst>_<user id>_<submission id>_<file> or Moodle's "
                        "<Full Name>_<id>_assignsubmission_file_/<file>"}[lms]
    return lms, None, "", base, False, f"its name is not {expected}"


@dataclass
class _Candidate:
    name: str
    body: _Body
    notebook: str
    how: str
    late: bool
    lms: str


def import_bulk(src: Path, dest: Path, lms: str = "auto", roster: list[Student] | None = None,
                root: Path = REPO) -> Imported:
    """Map every file of an LMS bulk download (a zip, or the folder it was unpacked into) to
    ``dest/<student>/<assignment>/<notebook>.ipynb``; see the module's docstring."""
    src, dest = Path(src), Path(dest)
    if lms not in ("auto", "canvas", "moodle"):
        raise HandinError(f"{lms!r}: the LMS is canvas, moodle or auto")
    if not src.exists():
        raise HandinError(f"{src}: no such file or folder")
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise HandinError(f"{dest}: exists and is not an empty folder; a course command never overwrites files "
                          "(give a new folder)")
    dest.parent.mkdir(parents=True, exist_ok=True)
    owner = notebook_owner(root)
    out = Imported()
    candidates: dict[tuple[str, str], list[_Candidate]] = {}
    users: dict[str, dict[tuple[str, str], str]] = {}   # student -> {(lms, user id): the LMS's name}
    with tempfile.TemporaryDirectory(prefix=".handins-spool-", dir=dest.parent) as tmp:
        reader = _Reader(src, Path(tmp))
        garbled = reader.decoded["cp437"]
        for item in reader.items():
            kept = False
            try:
                kept = _one(item, lms, roster, root, owner, out, candidates, users, garbled)
            finally:
                if item.body is not None and not kept:
                    item.body.discard()
        out.notes += reader.notes(src)
        out.conflicts.update(_conflicts(users))
        for student, why in out.conflicts.items():
            for key in [k for k in candidates if k[0] == student]:
                for c in candidates.pop(key):
                    out.unmapped.append(Skipped(c.name, why, student, key[1]))
                    c.body.discard()
        for (student, assignment), cs in sorted(candidates.items()):
            cs.sort(key=lambda c: c.name)
            chosen = cs[-1]
            for c in cs[:-1]:
                out.unmapped.append(Skipped(c.name, f"a second hand-in of {assignment} by {student}; the other one "
                                                    f"({chosen.name}) is graded", student, assignment))
                c.body.discard()
            target = dest / student / assignment / chosen.notebook
            target.parent.mkdir(parents=True, exist_ok=True)
            chosen.body.copy_to(target)
            chosen.body.discard()
            out.mapped.append(Mapped(student, assignment, target, chosen.name, chosen.how, chosen.late, chosen.lms))
    return out


def _conflicts(users: dict[str, dict[tuple[str, str], str]]) -> dict[str, str]:
    """Student -> why none of their hand-ins is graded: they come from more than one LMS user id."""
    out = {}
    for student, ids in users.items():
        if len(ids) > 1:
            out[student] = (
                f"hand-ins of {student} come from {len(ids)} different LMS users ("
                + "; ".join(f"{which} user id {uid}, named {name!r}" for (which, uid), name in sorted(ids.items()))
                + "): none of them is graded; a student's LMS user id cannot be changed by her, her name can. "
                  "Find out in the LMS who is who, then give the roster an lms_id (Canvas's ID) for this student")
    return out


def _one(item: _Item, lms: str, roster, root, owner, out: Imported, candidates, users, garbled) -> bool:
    """Map one item; True when its body was kept as a candidate."""
    which, who_name, uid, filename, late, why = _parse_name(item.outer, lms)
    if item.why or why:
        out.unmapped.append(Skipped(item.name, item.why or why))
        return False
    student, who_why = _who(who_name, uid, which, roster)
    if student is not None:   # every file counts, a broken one too: whose user ids reach this student
        users.setdefault(student, {}).setdefault((which, uid), who_name)
    elif item.outer in garbled:
        who_why += (" (its name was read as cp437, the zip default, as the zip does not mark UTF-8 and the name is "
                    "not valid UTF-8: a garbled name matches no one)")
    name = item.name
    if item.inner is not None:   # a hand-in zip: the notebook inside it names the file
        filename = item.inner
    guess = owner.get(filename)
    if not filename.endswith(NB_EXT):
        out.unmapped.append(Skipped(name, "not a notebook (.ipynb)", student))
        return False
    nb, why = _read_bytes(item.body.read())
    if why:
        out.unmapped.append(Skipped(name, why, student, guess))
        return False
    found = recognise(nb, filename, root)
    del nb
    if found is None:
        out.unmapped.append(Skipped(name, "which assignment is this? Its name matches no notebook in source/ and its "
                                          "cell ids match no released notebook", student))
        return False
    if student is None:
        out.unmapped.append(Skipped(name, who_why))
        return False
    assignment, notebook, how = found
    item.body.keep()
    candidates.setdefault((student, assignment), []).append(_Candidate(name, item.body, notebook, how, late, which))
    return True


def _read_bytes(data: bytes):
    """Parse a notebook from bytes with the grader's own reader (same reasons for a bad file)."""
    import nbformat

    try:
        raw = data.decode("utf-8")
    except UnicodeDecodeError:
        return None, "not a text file (is it really a notebook?)"
    del data
    try:
        nb = nbformat.reads(raw, as_version=4)
        nbformat.validate(nb)
    except Exception as err:  # nbformat and json raise several types
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        return None, f"not a valid Jupyter notebook ({first[:160]})"
    return nb, None
