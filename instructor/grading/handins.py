"""Hand-ins from anywhere: an LMS's bulk download, a roster, a renamed copy.

A class that hands in through Canvas or Moodle gives the instructor one zip of every student's file,
named the LMS's way; a student on Binder or Colab hands in a downloaded ``.ipynb`` that JupyterLab may
have renamed (``01_version_counter-Copy1.ipynb``). This module maps each file to its student and
assignment and lays it out as nbgrader's ``<student>/<assignment>/<notebook>.ipynb``, which ``grade``
reads. Every file it cannot map is listed with the reason; nothing is dropped silently.

* **Canvas** ("Download Submissions"): ``<lastfirst>[_LATE]_<user id>_<submission id>_<file name>``,
  Canvas adding ``-1``, ``-2`` … to a re-submitted file's name.
* **Moodle** ("Download all submissions"): a folder per student,
  ``<Full Name>_<participant id>_assignsubmission_file_/<file name>``, or the same flattened into one
  file name.
* The **assignment** comes from the file's name when it is a release notebook's, else from the
  notebook's nbgrader cell ids: the release notebook sharing the most of them, at least half.
* The **student**: with a roster (``read_roster``: a CSV of ``id,first_name,last_name,email`` and an
  optional ``lms_id``), the row whose ``lms_id`` is the LMS's user id, else whose name is the file's;
  without a roster, the LMS's name for the student, made an nbgrader id.

The zip is read member by member into memory (bounded): no member is extracted by its own path, so
``../`` names and links inside a zip reach nothing. The output folder must be new or empty: a course
command never overwrites a file.
"""
from __future__ import annotations

import csv
import io
import re
import unicodedata
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ..layout import NB_EXT, REPO, assignments, notebook_owner, source_notebooks
from .pipeline import read_notebook

MAX_NOTEBOOK_BYTES = 50 * 2 ** 20   # a course notebook with its outputs is well under 5 MB
MAX_MEMBERS = 20_000
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


@dataclass
class Mapped:
    student: str
    assignment: str
    path: Path          # where it was written: <dest>/<student>/<assignment>/<notebook>.ipynb
    origin: str         # its name in the download
    how: str            # how its assignment was recognised
    late: bool = False  # the LMS marked it late


@dataclass
class Imported:
    mapped: list[Mapped] = field(default_factory=list)
    unmapped: list[tuple[str, str]] = field(default_factory=list)   # (name in the download, why)

    def summary(self) -> str:
        lines = [f"{len(self.mapped)} notebook(s) mapped, {len(self.unmapped)} file(s) not mapped"]
        for m in self.mapped:
            lines.append(f"  {m.origin} -> {m.student}/{m.assignment} ({m.how}{', late' if m.late else ''})")
        for origin, why in self.unmapped:
            lines.append(f"  NOT MAPPED {origin}: {why}")
        return "\n".join(lines)


# --------------------------------------------------------------------------- which assignment

def _grade_ids(nb) -> set:
    return {m.get("grade_id") for c in nb.cells
            if isinstance(m := c.get("metadata", {}).get("nbgrader"), dict)} - {None}


def recognise(nb, filename: str, root: Path = REPO) -> tuple[str, str, str] | None:
    """``(assignment, notebook name, how)`` for a handed-in notebook, or None when neither its name nor
    its cell ids say (at least half of a release notebook's nbgrader cells, the largest share)."""
    owner = notebook_owner(root)
    best = None
    mine = _grade_ids(nb)
    for a in assignments(root):
        for src in source_notebooks(a, root):
            release_nb, _ = read_notebook(Path(root) / "release" / a / src.name)
            theirs = _grade_ids(release_nb) if release_nb is not None else set()
            if theirs and (best is None or len(mine & theirs) / len(theirs) > best[0]):
                best = (len(mine & theirs) / len(theirs), a, src.name, len(mine & theirs), len(theirs))
    by_ids = best if best and best[0] >= 0.5 else None
    named = owner.get(filename)
    if named and (by_ids is None or by_ids[1] == named):
        return named, filename, "from its file name"
    if by_ids:
        return by_ids[1], by_ids[2], f"from its cell ids: {by_ids[3]} of the {by_ids[4]} nbgrader cells of {by_ids[2]}"
    return None


# --------------------------------------------------------------------------- roster

def read_roster(path: Path) -> list[Student]:
    """A class list: CSV with a header naming ``id`` (required), ``first_name``, ``last_name``, ``email``
    and ``lms_id`` (optional). Each bad row is named by its line."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as err:
        raise HandinError(f"{path}: cannot read the roster ({getattr(err, 'strerror', None) or err})") from None
    rows = list(csv.DictReader(io.StringIO(text)))
    header = [h.strip().lower() for h in (csv.reader(io.StringIO(text)).__next__() if text.strip() else [])]
    if "id" not in header:
        raise HandinError(f"{path}: the roster's first line must name its columns, with 'id' among them "
                          f"(found: {', '.join(header) or 'an empty file'}); e.g. id,first_name,last_name,email")
    out, seen, errors = [], {}, []
    for n, row in enumerate(rows, start=2):
        row = {(k or "").strip().lower(): (v or "").strip() for k, v in row.items()}
        sid = row.get("id", "")
        if not STUDENT_ID.match(sid):
            errors.append(f"line {n}: student id {sid!r} is not usable (letters, digits, '_', '-', '.'; "
                          "starting with a letter or digit; at most 64)")
            continue
        if sid in seen:
            errors.append(f"line {n}: student id {sid!r} again (first on line {seen[sid]})")
            continue
        seen[sid] = n
        out.append(Student(sid, row.get("first_name", ""), row.get("last_name", ""), row.get("email", ""),
                           row.get("lms_id", "")))
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
    """(student id or None, why not)."""
    if roster is None:
        return _as_id(name), ""
    for s in roster:
        if s.lms_id and s.lms_id == uid:
            return s.id, ""
    wanted = _fold(name)
    hits = [s for s in roster if wanted and wanted in
            ({_fold(s.last_name + s.first_name), _fold(s.first_name + s.last_name)} - {""})]
    if len(hits) == 1:
        return hits[0].id, ""
    if len(hits) > 1:
        return None, (f"{lms} name {name!r} matches {len(hits)} students of the roster "
                      f"({', '.join(s.id for s in hits)}); add an lms_id column ({lms} user id {uid})")
    return None, f"{lms} student {name!r} (user id {uid}) is not on the roster"


# --------------------------------------------------------------------------- the download

def _members(src: Path) -> list[tuple[str, bytes | None, str]]:
    """(name in the download, bytes or None, why not readable) for every file of a zip or a folder."""
    out = []
    if src.is_dir():
        for p in sorted(src.rglob("*")):
            rel = p.relative_to(src).as_posix()
            if p.is_symlink():
                out.append((rel, None, "a symbolic link; not followed"))
            elif p.is_file():
                size = p.stat().st_size
                out.append((rel, None, f"{size:,} bytes, over the {MAX_NOTEBOOK_BYTES:,}-byte limit")
                           if size > MAX_NOTEBOOK_BYTES else (rel, p.read_bytes(), ""))
        return out
    try:
        zf = zipfile.ZipFile(src)
    except (zipfile.BadZipFile, OSError) as err:
        raise HandinError(f"{src}: not a zip file or a folder ({err})") from None
    with zf:
        infos = zf.infolist()
        if len(infos) > MAX_MEMBERS:
            raise HandinError(f"{src}: {len(infos):,} entries, more than the {MAX_MEMBERS:,} a class download has")
        for info in infos:
            if info.is_dir():
                continue
            name = info.filename
            if (info.external_attr >> 16) & 0o170000 == 0o120000:
                out.append((name, None, "a symbolic link inside the zip; not followed"))
            elif info.file_size > MAX_NOTEBOOK_BYTES:
                out.append((name, None, f"{info.file_size:,} bytes, over the {MAX_NOTEBOOK_BYTES:,}-byte limit"))
            else:
                with zf.open(info) as f:
                    data = f.read(MAX_NOTEBOOK_BYTES + 1)
                out.append((name, None, "larger than its zip entry says; not read")
                           if len(data) > MAX_NOTEBOOK_BYTES else (name, data, ""))
    return out


def _expand(members: list[tuple[str, bytes | None, str]]) -> list[tuple[str, bytes | None, str, str | None]]:
    """Members with every hand-in zip (``autograder.export()``'s, uploaded to the LMS) opened, one level:
    (name in the download, bytes, why not, the notebook's name inside the zip or None)."""
    out = []
    for name, data, why in members:
        if why or not name.lower().endswith(".zip"):
            out.append((name, data, why, None))
            continue
        try:
            inner = zipfile.ZipFile(io.BytesIO(data))
        except zipfile.BadZipFile as err:
            out.append((name, None, f"a zip that cannot be opened ({err})", None))
            continue
        with inner:
            notebooks = [i for i in inner.infolist() if i.filename.endswith(NB_EXT) and not i.is_dir()
                         and not PurePosixPath(i.filename).name.startswith(".")]
            if not notebooks:
                out.append((name, None, "a zip with no notebook (.ipynb) in it", None))
            for i in notebooks:
                if i.file_size > MAX_NOTEBOOK_BYTES:
                    out.append((f"{name}!{i.filename}", None,
                                f"{i.file_size:,} bytes, over the {MAX_NOTEBOOK_BYTES:,}-byte limit", None))
                    continue
                with inner.open(i) as f:
                    body = f.read(MAX_NOTEBOOK_BYTES + 1)
                out.append((name, None, "larger than its zip entry says; not read", None)
                           if len(body) > MAX_NOTEBOOK_BYTES
                           else (name, body, "", PurePosixPath(i.filename).name))
    return out


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
    out = Imported()
    chosen: dict[tuple[str, str], tuple[int, str, bytes, str, str, bool]] = {}
    for order, (name, data, why, inner) in enumerate(_expand(_members(src))):
        if PurePosixPath(name).name.startswith(".") or "__MACOSX" in PurePosixPath(name).parts:
            continue
        if why:
            out.unmapped.append((name, why))
            continue
        which, who_name, uid, filename, late, why = _parse_name(name, lms)
        if why:
            out.unmapped.append((name, why))
            continue
        if inner is not None:   # a hand-in zip: the notebook inside it names the file
            name, filename = f"{name}!{inner}", inner
        if not filename.endswith(NB_EXT):
            out.unmapped.append((name, "not a notebook (.ipynb)"))
            continue
        nb, why = _read_bytes(data)
        if why:
            out.unmapped.append((name, why))
            continue
        found = recognise(nb, filename, root)
        if found is None:
            out.unmapped.append((name, "which assignment is this? Its name matches no notebook in source/ and its "
                                       "cell ids match no released notebook"))
            continue
        student, why = _who(who_name, uid, which, roster)
        if student is None:
            out.unmapped.append((name, why))
            continue
        assignment, notebook, how = found
        key = (student, assignment)
        if key in chosen:
            older = chosen[key]
            out.unmapped.append((older[1] if name > older[1] else name,
                                 f"a second hand-in of {assignment} by {student}; the other one "
                                 f"({max(name, older[1])}) is graded"))
            if name < older[1]:
                continue
        chosen[key] = (order, name, data, notebook, how, late)
    for (student, assignment), (_, name, data, notebook, how, late) in sorted(chosen.items()):
        target = dest / student / assignment / notebook
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "xb") as f:   # never over an existing file
            f.write(data)
        out.mapped.append(Mapped(student, assignment, target, name, how, late))
    return out


def _read_bytes(data: bytes):
    """Parse a notebook from bytes with the grader's own reader (same reasons for a bad file)."""
    import nbformat

    try:
        raw = data.decode("utf-8")
    except UnicodeDecodeError:
        return None, "not a text file (is it really a notebook?)"
    try:
        nb = nbformat.reads(raw, as_version=4)
        nbformat.validate(nb)
    except Exception as err:  # nbformat and json raise several types
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        return None, f"not a valid Jupyter notebook ({first[:160]})"
    return nb, None
