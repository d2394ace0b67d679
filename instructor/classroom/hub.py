"""The course on one JupyterHub machine: accounts, the course folder, the students' Python, permissions.

``make hub`` runs ``python -m instructor.classroom.hub setup`` (as root), then JupyterHub with
``hub/jupyterhub_config.py``, which reads what ``setup`` wrote in ``<prefix>/state/hub.json``.
Everything lives under one prefix (default ``/srv/inplace-hub``)::

    <prefix>/                 root 0755
      state/                  root 0700   hub.json, the hub's database and cookie secret, passwords
      course/                 <service account>:<graders> 2770   the course folder formgrader serves:
                              source/, instructor/, release/, the gradebook, submitted/, autograded/
      exchange/               root 1777   nbgrader's exchange (release, submit, feedback)
      env/                    root 0755   the Python every server runs: a copy of the course's
                              environment with the student package ``autograder`` installed (not
                              editable: it names no file of the checkout)
      etc/student/            root 0755   Jupyter config of students' servers (student view, exchange)
      etc/grader/             root 0755   Jupyter config of the formgrader service
      grading-tmp/            <service account> 0700   TMPDIR of the formgrader service (grading's workspaces)

Accounts (one Unix group for each role; ``--names-prefix`` puts a prefix before every name):

* ``inplace-grader``: the shared grader account; JupyterHub runs formgrader as this account, as the
  hub service ``inplace-course`` (nbgrader's "one class, several graders" set-up). No password.
* ``inplace-graders``: the grader group (the instructor, a second grader, the grader account): may read
  and write the course folder and open the formgrader service.
* ``inplace-students``: the students. Their servers run as themselves (JupyterHub's local process
  spawner); their homes are 0700. They can read ``env/``, ``etc/student/`` and what the exchange lets
  them (released assignments, their own feedback); never ``course/`` or ``state/``.

``--demo`` makes an instructor, a second grader and two students with passwords; ``roster CSV``
(or ``setup --roster CSV``) makes one account per row of a class list (``id,first_name,last_name,email``,
read by :func:`instructor.classroom.handins.read_roster`) and adds each student to the gradebook.

Due dates: ``due ASSIGNMENT "2026-12-10 17:00"`` (or ``setup --due "ASSIGNMENT=2026-12-10 17:00"``) sets the
assignment's due date in the course gradebook, where formgrader shows it and nbgrader's late penalty
(``nbgrader_config.py``: :class:`instructor.classroom.late.PerDayPenalty`) reads it. The time is UTC unless a
zone follows it (``2026-12-10 17:00 Europe/Berlin``, ``2026-12-10 17:00 +01:00``); ``none`` clears it.
"""
from __future__ import annotations

import argparse
import contextlib
import grp
import json
import os
import pwd
import re
import secrets
import shutil
import socket
import stat
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..layout import REPO, edition_lang, load_config
from .handins import HandinError, read_roster

DEFAULT_PREFIX = Path("/srv/inplace-hub")
COURSE_ID = "inplace-autograd"
# Login names useradd accepts on Debian without --badname, and that JupyterHub keeps as they are.
LOGIN = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")


class HubError(RuntimeError):
    """Set-up cannot go on; the message says what to fix."""


@dataclass
class Names:
    """Every account and group name of one deployment."""
    prefix: str = ""

    @property
    def graders(self) -> str:
        return f"{self.prefix}inplace-graders"

    @property
    def students(self) -> str:
        return f"{self.prefix}inplace-students"

    @property
    def grader_account(self) -> str:
        return f"{self.prefix}inplace-grader"

    @property
    def service(self) -> str:
        return "inplace-course"


@dataclass
class Hub:
    """What ``setup`` decided, saved in ``<prefix>/state/hub.json`` for the hub's config file."""
    prefix: str
    names_prefix: str = ""
    port: int = 8000
    ip: str = ""
    hub_api_port: int = 8081
    proxy_api_port: int = 8001
    service_port: int = 9999
    authenticator: str = "pam"
    repo: str = str(REPO)
    graders: list[str] = field(default_factory=list)    # hub users in the grader group (formgrader access)
    students: list[str] = field(default_factory=list)
    created: list[str] = field(default_factory=list)    # accounts this deployment made (removed by `remove`)
    groups_created: list[str] = field(default_factory=list)
    lang: str = ""      # the edition the students get (zh_CN: the Chinese one, zh_CN/ of the checkout); "": English

    @property
    def names(self) -> Names:
        return Names(self.names_prefix)

    @property
    def root(self) -> Path:
        return Path(self.prefix)

    @property
    def state(self) -> Path:
        return self.root / "state"

    @property
    def course(self) -> Path:
        return self.root / "course"

    @property
    def exchange(self) -> Path:
        return self.root / "exchange"

    @property
    def env(self) -> Path:
        return self.root / "env"

    @property
    def python(self) -> Path:
        return self.env / "bin" / "python"

    @property
    def grading_socket(self) -> Path:
        """The root-owned grading service's socket (:mod:`instructor.service`), in a folder root's, group the graders."""
        return self.root / "grading-service" / "grading.sock"

    def save(self) -> None:
        self.state.mkdir(parents=True, exist_ok=True)
        os.chmod(self.state, 0o700)
        tmp = self.state / "hub.json.new"
        tmp.write_text(json.dumps(asdict(self), indent=1))
        tmp.replace(self.state / "hub.json")

    @classmethod
    def load(cls, prefix: Path) -> "Hub":
        path = Path(prefix) / "state" / "hub.json"
        try:
            return cls(**json.loads(path.read_text()))
        except FileNotFoundError:
            raise HubError(f"{path}: no hub set up here; run `python -m instructor.classroom.hub setup "
                           f"--prefix {prefix}` first") from None


# --------------------------------------------------------------------------- accounts

def _run(argv: list[str], **kw) -> subprocess.CompletedProcess:
    r = subprocess.run(argv, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise HubError(f"{' '.join(argv)}: {(r.stderr or r.stdout).strip()}")
    return r


def user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


def group_exists(name: str) -> bool:
    try:
        grp.getgrnam(name)
        return True
    except KeyError:
        return False


def in_group(user: str, group: str) -> bool:
    try:
        g = grp.getgrnam(group)
        return user in g.gr_mem or pwd.getpwnam(user).pw_gid == g.gr_gid
    except KeyError:
        return False


def ensure_group(hub: Hub, name: str) -> None:
    if not group_exists(name):
        _run(["groupadd", name])
        hub.groups_created.append(name)


def ensure_user(hub: Hub, name: str, groups: list[str], *, comment: str = "", password: str | None = None,
                home: bool = True, adopt: bool = False) -> bool:
    """Make the account (home 0700) unless it exists; add it to ``groups``; set ``password`` if given.
    True when it was made now. An existing account this hub did not make is refused unless ``adopt``
    (a class list's student already in the students' group): set-up never takes over someone's account."""
    made = False
    if user_exists(name) and name not in hub.created and not adopt:
        raise HubError(f"an account {name!r} already exists on this machine and was not made by this hub; "
                       "choose other names (--names-prefix) or remove it")
    if not user_exists(name):
        _run(["useradd", "--create-home" if home else "--no-create-home", "--shell", "/bin/bash",
              "--comment", re.sub(r"[:\n\r]", " ", comment)[:100], "--user-group", name])
        hub.created.append(name)
        made = True
    for g in groups:
        _run(["usermod", "--append", "--groups", g, name])
    if home:
        h = Path(pwd.getpwnam(name).pw_dir)
        if h.is_dir():
            os.chmod(h, 0o700)  # Debian's useradd leaves homes 0755 (UMASK 022): other students could read them
    if password is not None:
        _run(["chpasswd"], input=f"{name}:{password}\n")
    return made


PASSWORDS = "initial-passwords.csv"


def remove(hub: Hub) -> list[str]:
    """Remove the accounts and groups this deployment made (``userdel -r``), newest first; the initial
    passwords file before anything else (it would let anyone who reads it in later log in as a new account
    of the same name). The prefix's course folder (gradebook, submissions, feedback), exchange and
    environment stay: :func:`left_behind` names them."""
    with contextlib.suppress(FileNotFoundError):
        (hub.state / PASSWORDS).unlink()
    gone = []
    for name in reversed(hub.created):
        if user_exists(name):
            subprocess.run(["pkill", "-KILL", "-u", name], capture_output=True)
            subprocess.run(["userdel", "--remove", "--force", name], capture_output=True)
            gone.append(name)
    for g in reversed(hub.groups_created):
        if group_exists(g):
            subprocess.run(["groupdel", g], capture_output=True)
    hub.created, hub.groups_created = [], []
    if hub.state.is_dir():
        hub.save()
    return gone


def left_behind(hub: Hub) -> list[str]:
    """What ``remove`` keeps, one line each: the grades and hand-ins are the instructor's to delete."""
    keep = [(hub.course, "the course folder: gradebook.db, submissions, autograded notebooks, feedback"),
            (hub.exchange, "the exchange: released assignments and hand-ins not collected yet"),
            (hub.env, "the students' Python environment"),
            (hub.state, "the hub's state (hub.json, logs, the grading service's socket folder)")]
    return [f"{path}  ({what})" for path, what in keep if path.exists()]


# --------------------------------------------------------------------------- roster

def roster_accounts(path: Path, names: Names) -> list[tuple[object, str, int]]:
    """(student, login name, line) per row of the class list; every bad row named by file and line.
    The roster's format errors come from :func:`read_roster` (which also numbers rows from line 2)."""
    students = read_roster(Path(path))
    out, errors = [], []
    reserved = {names.grader_account, names.graders, names.students, "root"}
    for n, st in enumerate(students, start=2):
        login = f"{names.prefix}{st.id}"
        if not LOGIN.match(login):
            errors.append(f"line {n}: student id {st.id!r} cannot be a login name on this machine (lower-case "
                          f"letters, digits, '_' and '-', starting with a letter or '_', at most 32 characters"
                          f"{' with the prefix ' + repr(names.prefix) if names.prefix else ''})")
        elif login in reserved:
            errors.append(f"line {n}: student id {st.id!r} is reserved for the hub itself")
        elif user_exists(login) and not in_group(login, names.students):
            errors.append(f"line {n}: an account {login!r} already exists on this machine and is not a student "
                          f"of this course (not in group {names.students}); refusing to make it one")
        else:
            out.append((st, login, n))
    if errors:
        raise HandinError(f"{path}: " + "; ".join(errors))
    return out


def import_roster(hub: Hub, path: Path, *, password: str | None = None) -> list[tuple[str, str]]:
    """Accounts and gradebook students for every row of the class list. The whole file is checked
    before any account is made. Returns (login, initial password) of the accounts made now."""
    rows = roster_accounts(path, hub.names)
    made = []
    for st, login, _ in rows:
        pw = password or secrets.token_urlsafe(9)
        name = " ".join(p for p in (st.first_name, st.last_name) if p)
        if ensure_user(hub, login, [hub.names.students], comment=f"{name},,,{st.email}" if name else "",
                       password=None, adopt=True):
            _run(["chpasswd"], input=f"{login}:{pw}\n")
            made.append((login, pw))
        if login not in hub.students:
            hub.students.append(login)
    add_to_gradebook(hub, [(login, st) for st, login, _ in rows])
    hub.save()
    if made:
        _note_passwords(hub, made)
    return made


def _note_passwords(hub: Hub, made: list[tuple[str, str]]) -> None:
    """Initial passwords, for the instructor to hand out: a file only root may read."""
    fd = os.open(hub.state / PASSWORDS, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "a") as f:
        f.writelines(f"{login},{pw}\n" for login, pw in made)


def add_grader(hub: Hub, login: str, *, password: str | None = None) -> str | None:
    """Another grader: an account in the grader group (reads and writes the course folder) and in the
    hub's formgrade group (opens formgrader; the hub reads this at start: restart it). An existing
    account is added as it is (its password kept); a new one gets ``password`` or a random one,
    returned."""
    if not LOGIN.match(login):
        raise HubError(f"{login!r} cannot be a login name on this machine (lower-case letters, digits, '_' "
                       "and '-', starting with a letter or '_', at most 32 characters)")
    if login in (hub.names.grader_account, "root") or login in hub.students or in_group(login, hub.names.students):
        raise HubError(f"{login!r} is a student of this course or the hub's own account: not a grader")
    new = not user_exists(login)
    pw = (password or secrets.token_urlsafe(9)) if new else None
    ensure_user(hub, login, [hub.names.graders], comment="grader", password=pw, adopt=True)
    if login not in hub.graders:
        hub.graders.append(login)
    hub.save()
    if pw:
        _note_passwords(hub, [(login, pw)])
    return pw


def add_to_gradebook(hub: Hub, students: list[tuple[str, object]]) -> None:
    """nbgrader students (id = login name: nbgrader submit names the account) in the course gradebook."""
    db = hub.course / "gradebook.db"
    with _open_gradebook(hub) as gb:
        for login, st in students:
            gb.update_or_create_student(login, first_name=getattr(st, "first_name", "") or None,
                                        last_name=getattr(st, "last_name", "") or None,
                                        email=getattr(st, "email", "") or None,
                                        lms_user_id=getattr(st, "lms_id", "") or None)
    _give_course(hub, db)


# --------------------------------------------------------------------------- due dates

_DUE = re.compile(r"(\d{4}-\d{2}-\d{2})[ T](\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?)\s*(.*)")


def parse_due(text: str):
    """A due date as nbgrader's gradebook keeps it: a naive ``datetime`` in UTC. ``YYYY-MM-DD HH:MM``
    (``:SS`` optional, ``T`` allowed) is UTC unless a zone follows: ``UTC``/``Z``, an offset
    (``+01:00``, ``-0500``) or an IANA name (``Europe/Berlin``; its daylight-saving time on that date)."""
    import datetime as dt
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    m = _DUE.fullmatch(text.strip())
    if not m:
        raise HubError(f"due date {text!r}: write it as YYYY-MM-DD HH:MM, optionally followed by a zone "
                       "(UTC, +01:00, Europe/Berlin); without one it is UTC")
    clock = m[2] if len(m[2].split(":")[0]) == 2 else "0" + m[2]
    try:
        when = dt.datetime.fromisoformat(f"{m[1]}T{clock}")
    except ValueError as err:
        raise HubError(f"due date {text!r}: {err}") from None
    zone = m[3].strip()
    if not zone or zone.upper() in ("UTC", "Z", "GMT", "+00:00", "+0000"):
        tz = dt.timezone.utc
    elif off := re.fullmatch(r"([+-])(\d{2}):?(\d{2})", zone):
        delta = dt.timedelta(hours=int(off[2]), minutes=int(off[3]))
        tz = dt.timezone(-delta if off[1] == "-" else delta)
    else:
        try:
            tz = ZoneInfo(zone)
        except (ZoneInfoNotFoundError, ValueError):
            raise HubError(f"due date {text!r}: unknown time zone {zone!r} (UTC, an offset such as +01:00, "
                           "or a name such as Europe/Berlin)") from None
    return when.replace(tzinfo=tz).astimezone(dt.timezone.utc).replace(tzinfo=None)


def _open_gradebook(hub: Hub):
    from nbgrader.api import Gradebook

    bindir = str(Path(sys.executable).parent)  # nbgrader runs `alembic` by name
    if bindir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")
    return Gradebook(f"sqlite:///{hub.course / 'gradebook.db'}", course_id=COURSE_ID)


def set_due(hub: Hub, assignment: str, when: str | None):
    """The assignment's due date in the course gradebook (made if needed), as formgrader shows it and
    nbgrader's late penalty reads it; ``when`` None (or "none") clears it. Returns the stored UTC time."""
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", assignment) or assignment.startswith("."):
        raise HubError(f"{assignment!r} is not an assignment name")
    if not (hub.course / "source" / assignment).is_dir():
        known = sorted(p.name for p in (hub.course / "source").iterdir() if p.is_dir()) \
            if (hub.course / "source").is_dir() else []
        raise HubError(f"no assignment {assignment!r} in {hub.course / 'source'} (known: {', '.join(known) or 'none'})")
    due = None if when is None or when.strip().lower() == "none" else parse_due(when)
    with _open_gradebook(hub) as gb:
        a = gb.update_or_create_assignment(assignment)
        a.duedate = due
        gb.db.commit()
    _give_course(hub, hub.course / "gradebook.db")
    return due


# --------------------------------------------------------------------------- files

def tracked_files(repo: Path) -> list[str]:
    r = subprocess.run(["git", "-C", str(repo), "ls-files", "-z"], capture_output=True, timeout=60)
    if r.returncode != 0:
        raise HubError(f"{repo}: not a git checkout ({r.stderr.decode(errors='replace').strip()})")
    return [p for p in r.stdout.decode().split("\0") if p]


def copy_course(hub: Hub) -> None:
    """The course folder: the checkout's tracked files as they are now (source/, release/, instructor/,
    autograder/, nbgrader_config.py, ...), plus the hub's exchange in its nbgrader_config.py."""
    repo = Path(hub.repo)
    hub.course.mkdir(parents=True, exist_ok=True)
    for rel in tracked_files(repo):
        src, dst = repo / rel, hub.course / rel
        if not src.is_file() or dst.exists():
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)
    cfg = hub.course / "nbgrader_config.py"
    text = cfg.read_text()
    marker = "# --- JupyterHub deployment (instructor/classroom/hub.py)"
    if "# --- JupyterHub deployment (" not in text:   # also a block an earlier version of this file wrote
        cfg.write_text(text + f"\n{marker}: the exchange every account shares\n"
                       f"c.Exchange.root = {str(hub.exchange)!r}\n")
    owner = f"c.CourseExchangeCollect.course_accounts = [{hub.names.grader_account!r}]  # owns exchange/<course>/\n"
    if owner not in cfg.read_text():  # so that root's collect, too, accepts the course folder own_exchange made
        cfg.write_text(cfg.read_text() + owner)
    hub.exchange.mkdir(parents=True, exist_ok=True)
    os.chmod(hub.exchange, 0o1777)  # as /tmp: everyone may add, nobody may remove another's (nbgrader's layout)


def use_edition(hub: Hub) -> None:
    """The course folder serves the edition ``hub.lang`` (``zh_CN``): its source/, release/ and lessons in
    place of the English ones (the same assignments, cells and grade ids), and its release's stubs in the
    course folder's nbgrader_config.py. Nothing for the English course."""
    if not hub.lang:
        return
    edition = hub.course / hub.lang
    if not (edition / "source").is_dir():
        raise HubError(f"{edition}: the {hub.lang} edition is not in the checkout (python -m autograder release "
                       f"--lang {hub.lang}, then commit zh_CN/)")
    for d in ("source", "release", "notebooks"):
        shutil.rmtree(hub.course / d, ignore_errors=True)
        shutil.copytree(edition / d, hub.course / d)
    stubs = load_config(edition).ClearSolutions
    cfg = hub.course / "nbgrader_config.py"
    marker = f"# --- the {hub.lang} edition (instructor/classroom/hub.py)"
    if marker not in cfg.read_text():
        cfg.write_text(cfg.read_text() + f"\n{marker}: the stubs of its release\n"
                       f"c.ClearSolutions.code_stub = {dict(stubs.code_stub)!r}\n"
                       f"c.ClearSolutions.text_stub = {stubs.text_stub!r}\n")


# The students' side of the exchange (autograder/exchange_trust.py, in the students' environment): list,
# fetch, fetch_feedback and submit only use folders of the course's exchange that the course's account owns.
EXCHANGE_TRUST = (
    "# Only folders of the course's exchange owned by the course's account are listed, fetched, trusted\n"
    "c.ExchangeFactory.list = 'autograder.exchange_trust.CourseExchangeList'\n"
    "c.ExchangeFactory.fetch_assignment = 'autograder.exchange_trust.CourseExchangeFetchAssignment'\n"
    "c.ExchangeFactory.fetch_feedback = 'autograder.exchange_trust.CourseExchangeFetchFeedback'\n"
    "c.ExchangeFactory.submit = 'autograder.exchange_trust.CourseExchangeSubmit'\n"
    "c.CourseOwnedExchange.course_accounts = [{account!r}]\n")

# nbgrader's own modes for the course's folders (nbgrader/exchange/default/release_assignment.py and
# release_feedback.py, not group-shared): the course folder and outbound/ 0755, inbound/ 2733 (students
# write, nobody lists), feedback/ 0711 (a student opens only the file whose name they can compute).
EXCHANGE_MODES = {"": 0o755, "outbound": 0o755, "inbound": 0o2733, "feedback": 0o711}


def own_exchange(hub: Hub, account: str | None = None) -> list[str]:
    """``exchange/<course>/{outbound,inbound,feedback}``, owned by the course's account (default: the grader
    account; group: the graders' group) with nbgrader's modes, before any student logs in: the exchange
    root is 1777, so a student who made the course's folder first would own it (the instructor's release
    fails, her ``outbound/<assignment>`` is offered to the class). What an account other than root, the
    course's account and the graders made there first (the course folder, one of the three, or an entry of
    ``outbound/`` or ``feedback/``) is moved, never deleted, to ``state/exchange-squatted/<time>/`` (root's
    alone) and named in the list returned; what root or a grader made is handed to the course's account."""
    import time

    account = account or hub.names.grader_account
    pw = pwd.getpwnam(account)
    gid = grp.getgrnam(hub.names.graders).gr_gid if group_exists(hub.names.graders) else pw.pw_gid
    graders = grp.getgrnam(hub.names.graders).gr_mem if group_exists(hub.names.graders) else []
    trusted = {0, pw.pw_uid} | {pwd.getpwnam(m).pw_uid for m in graders if user_exists(m)}
    hub.exchange.mkdir(parents=True, exist_ok=True)
    os.chown(hub.exchange, 0, 0)
    os.chmod(hub.exchange, 0o1777)
    course = hub.exchange / COURSE_ID
    aside = hub.state / "exchange-squatted" / time.strftime("%Y%m%d-%H%M%S")
    moved: list[str] = []

    def move_aside(path: Path, why: str) -> None:
        aside.mkdir(parents=True, exist_ok=True)
        os.chmod(hub.state, 0o700)
        dest = aside / str(path.relative_to(hub.exchange)).replace(os.sep, "__")
        shutil.move(str(path), str(dest))
        moved.append(f"{path} ({why}) -> {dest}")
        print(f"WARNING: {path} {why}: moved to {dest}", file=sys.stderr)

    def foreign(path: Path, folder: bool = True) -> str | None:
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode) or (folder and not stat.S_ISDIR(st.st_mode)):
            return "is not a folder" if folder else "is a link"
        if st.st_uid not in trusted:
            try:
                owner = pwd.getpwuid(st.st_uid).pw_name
            except KeyError:
                owner = f"uid {st.st_uid}"
            return f"was made by {owner}, not by the course's account {account}, root or a grader"
        return None

    def give(path: Path) -> None:  # root's or a grader's: the course account's from now on
        for dirpath, dirnames, filenames in os.walk(path):
            for name in dirnames + filenames:
                os.lchown(os.path.join(dirpath, name), pw.pw_uid, gid)
        os.lchown(path, pw.pw_uid, gid)

    for sub, mode in EXCHANGE_MODES.items():
        path = course / sub if sub else course
        if os.path.lexists(path) and (why := foreign(path)):
            move_aside(path, why)
        path.mkdir(exist_ok=True)
        os.chown(path, pw.pw_uid, gid)
        os.chmod(path, mode)
    for sub in ("outbound", "feedback"):
        for entry in sorted((course / sub).iterdir()):
            if why := foreign(entry, folder=(sub == "outbound")):
                move_aside(entry, why)
            elif os.lstat(entry).st_uid != pw.pw_uid:
                give(entry)
    return moved


def student_env(hub: Hub, source_venv: Path | None = None) -> None:
    """The Python every server runs (students', formgrader's): a copy of the course environment
    (hard links: instant on one file system; else a full copy), with the student package installed as
    files of its own instead of the checkout's editable link, and a kernel that names this copy.
    Nothing in it refers to the checkout, which students cannot read."""
    src = Path(source_venv or sys.prefix)
    env = hub.env
    if not (env / "pyvenv.cfg").is_file():
        if env.exists():
            shutil.rmtree(env)
        if subprocess.run(["cp", "-al", str(src), str(env)], capture_output=True).returncode != 0:
            shutil.rmtree(env, ignore_errors=True)
            _run(["cp", "-a", str(src), str(env)])
    _readable_interpreter(hub)
    site = next(env.glob("lib/python3*/site-packages"))
    # hard-linked files are shared with the source venv: unlink, never write in place
    for p in list(site.glob("__editable__*inplace_course*")):
        p.unlink()
    pkg = site / "autograder"
    if pkg.exists():
        shutil.rmtree(pkg)
    shutil.copytree(Path(hub.repo) / "autograder", pkg, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for spec in env.glob("share/jupyter/kernels/*/kernel.json"):
        data = json.loads(spec.read_text())
        if data.get("argv") and str(src) in data["argv"][0]:
            data["argv"][0] = str(hub.python)
            spec.unlink()
            spec.write_text(json.dumps(data, indent=1))
    _rewrite_shebangs(env, src)
    for p in (env, site, pkg):
        os.chmod(p, 0o755)


def _rewrite_shebangs(env: Path, src: Path) -> None:
    """Scripts in ``bin/`` (jupyter, nbgrader, pip, ...) name the source environment's interpreter,
    inside the checkout students cannot enter: name the copy's instead (a new file, not the link)."""
    old, new = f"#!{src}/bin/python".encode(), f"#!{env}/bin/python".encode()
    for script in (env / "bin").iterdir():
        if script.is_symlink() or not script.is_file():
            continue
        with open(script, "rb") as f:
            head = f.read(len(old) + 8)
        if not head.startswith(old):
            continue
        data = script.read_bytes()
        mode = stat.S_IMODE(script.stat().st_mode)
        script.unlink()
        script.write_bytes(new + data[len(old):])
        os.chmod(script, mode)


def _world_readable(path: Path) -> bool:
    """Can an account that is neither owner nor group member open ``path`` (every folder above it)?"""
    path = Path(os.path.realpath(path))
    if not os.stat(path).st_mode & stat.S_IROTH:
        return False
    return all(os.stat(p).st_mode & stat.S_IXOTH for p in path.parents)


def _readable_interpreter(hub: Hub) -> None:
    """A virtual environment runs its base interpreter (``home`` in pyvenv.cfg). Where that lies in a
    folder other accounts cannot enter (pyenv under /root; its binary finds its libpython there too),
    point the environment at the system's interpreter of the same version (Debian's python3.11):
    compiled modules are compatible within one minor version."""
    cfg = hub.env / "pyvenv.cfg"
    lines = cfg.read_text().splitlines()
    conf = dict(line.split(" = ", 1) for line in lines if " = " in line)
    home = Path(conf["home"])
    name = f"python{sys.version_info.major}.{sys.version_info.minor}"
    if _world_readable(home / name):
        return
    system = next((Path(d) / name for d in ("/usr/bin", "/usr/local/bin")
                   if (Path(d) / name).is_file() and _world_readable(Path(d) / name)), None)
    if system is None:
        raise HubError(f"{home / name}: the environment's interpreter is in a folder other accounts cannot "
                       f"enter, and there is no {name} in /usr/bin (Debian: apt-get install {name}); "
                       "students' servers could not start")
    new = {"home": str(system.parent), "executable": str(system)}
    text = "\n".join(f"{k} = {new[k]}" if (k := line.split(" = ", 1)[0]) in new else line for line in lines)
    cfg.unlink()  # hard-linked with the source environment's: never write it in place
    cfg.write_text(text + "\n")
    for link in (hub.env / "bin").iterdir():
        if link.is_symlink() and os.readlink(link).startswith(str(home)):
            link.unlink()
            link.symlink_to(system)


def jupyter_configs(hub: Hub) -> None:
    """Jupyter config of the students' servers (nbgrader's student view, the hub's exchange) and of
    the formgrader service (the course's trusted formgrader, the course folder on sys.path)."""
    from autograder.lab import student_env as write_student_view

    student = hub.root / "etc" / "student"
    write_student_view(student)
    (student / "nbgrader_config.py").write_text(
        "# written by instructor/classroom/hub.py: what a student's Assignments list needs\n"
        f"c = get_config()  # noqa: F821\nc.CourseDirectory.course_id = {COURSE_ID!r}\n"
        f"c.Exchange.root = {str(hub.exchange)!r}\n" + EXCHANGE_TRUST.format(account=hub.names.grader_account))
    grader = hub.root / "etc" / "grader"
    (grader / "jupyter_server_config.d").mkdir(parents=True, exist_ok=True)
    (grader / "jupyter_server_config.d" / "zz-course-grader.json").write_text(json.dumps(
        {"ServerApp": {"jpserver_extensions": {"nbgrader.server_extensions.formgrader": False,
                                                "instructor.classroom.formgrader": True}}}, indent=1))
    (grader / "jupyter_server_config.py").write_text(
        "# written by instructor/classroom/hub.py: the trusted formgrader (instructor.classroom.formgrader)\n"
        f"import os, sys\nif {str(hub.course)!r} not in sys.path:\n    sys.path.insert(0, {str(hub.course)!r})\n"
        "# The service's hub token goes to its hub client only, not into the environment that grading\n"
        "# processes inherit: as a non-root grader, bubblewrap itself runs with that environment and a\n"
        "# submission can read it (/proc/1/environ inside the sandbox is bubblewrap's).\n"
        "# (This file may be read more than once in one server: the token is kept in the process.)\n"
        "_token = (os.environ.pop('JUPYTERHUB_API_TOKEN', '') or os.environ.pop('JPY_API_TOKEN', '')\n"
        "          or getattr(sys, '_inplace_hub_token', ''))\n"
        "os.environ.pop('JPY_API_TOKEN', None)\n"
        "sys._inplace_hub_token = _token\n"
        "if _token:\n    c.HubAuth.api_token = _token  # noqa: F821\n")
    for d in [hub.root / "etc", *(p for p in (hub.root / "etc").rglob("*"))]:
        os.chmod(d, 0o755 if d.is_dir() else 0o644)


def _give_course(hub: Hub, path: Path) -> None:
    uid = pwd.getpwnam(hub.names.grader_account).pw_uid
    gid = grp.getgrnam(hub.names.graders).gr_gid
    os.chown(path, uid, gid)
    os.chmod(path, 0o660)


def lock_down(hub: Hub) -> None:
    """The permission step: the course folder belongs to the grader account and the grader group
    (setgid folders, so what formgrader writes stays the group's) and nobody else may even enter it;
    the state folder is root's alone; the prefix and the environment are readable by everyone."""
    uid = pwd.getpwnam(hub.names.grader_account).pw_uid
    gid = grp.getgrnam(hub.names.graders).gr_gid
    for dirpath, dirnames, filenames in os.walk(hub.course):
        os.chown(dirpath, uid, gid)
        os.chmod(dirpath, 0o2770)
        for f in filenames:
            p = os.path.join(dirpath, f)
            if os.path.islink(p):
                continue
            os.chown(p, uid, gid)
            mode = os.stat(p).st_mode
            os.chmod(p, 0o770 if mode & stat.S_IXUSR else 0o660)
    # Grading's temporary folders (the pipeline's workspaces hold folders of mode 0777 for the sandbox,
    # and students have shells on this machine): in a folder of the grader account's, not in /tmp.
    scratch = hub.root / "grading-tmp"
    scratch.mkdir(exist_ok=True)
    os.chown(scratch, uid, gid)
    os.chmod(scratch, 0o700)
    # The root-owned grading service's socket: only root and the graders' group may reach it (the
    # service makes the same folder when it starts, and checks each peer again).
    service = hub.grading_socket.parent
    service.mkdir(exist_ok=True)
    os.chown(service, 0, gid)
    os.chmod(service, 0o750)
    service_tmp = service / "tmp"   # the service's TMPDIR: its workspaces (folders of mode 0777 inside)
    service_tmp.mkdir(exist_ok=True)
    os.chown(service_tmp, 0, 0)
    os.chmod(service_tmp, 0o700)
    os.chmod(hub.root, 0o755)
    hub.state.mkdir(exist_ok=True)
    os.chown(hub.state, 0, 0)
    os.chmod(hub.state, 0o700)
    os.chmod(hub.exchange, 0o1777)


def lock_checkout(repo: Path) -> None:
    """The checkout holds source/, instructor/ and the hidden checks: accounts that are neither its
    owner nor in its group may no longer enter it (``chmod o-rwx`` on its top folder; owner and group
    stay). The hub never needs it readable: servers run ``<prefix>/env`` and formgrader ``<prefix>/course``.
    Sandboxed grading from the checkout keeps working: bubblewrap binds what a run needs below a
    fresh root, whatever the modes of the folders above. Undo: ``chmod o+rx <checkout>``."""
    repo = Path(repo)
    os.chmod(repo, stat.S_IMODE(os.stat(repo).st_mode) & ~0o007)


def checkout_is_open(repo: Path) -> bool:
    return bool(os.stat(repo).st_mode & 0o005)


def listen_address(ip: str | None, demo: bool) -> str:
    """The address a new hub listens on: the one asked for; else, for a demo hub (accounts whose passwords
    were printed on a terminal), this machine only; else every interface ("")."""
    return ip if ip is not None else ("127.0.0.1" if demo else "")


def progress(step: str) -> None:
    """One line on stderr per step of the set-up, so that a long one is not silent."""
    print(f"hub setup: {step} ...", file=sys.stderr, flush=True)


def release_all(hub: Hub, assignments: list[str] | None = None) -> None:
    """Generate and release every assignment to the exchange, as the grader account (a progress bar: each
    assignment takes about 20 s)."""
    from tqdm.auto import tqdm

    names = assignments or sorted(p.name for p in (hub.course / "source").iterdir() if p.is_dir())
    env = {"PATH": f"{hub.env / 'bin'}:/usr/bin:/bin", "HOME": pwd.getpwnam(hub.names.grader_account).pw_dir,
           "LANG": "C.UTF-8"}
    for a in tqdm(names, desc="hub setup: releasing", unit="assignment", file=sys.stderr):
        for step in (["generate_assignment", "--force", a], ["release_assignment", "--force", a]):
            _run([shutil.which("runuser") or "/usr/sbin/runuser", "-u", hub.names.grader_account, "--", str(hub.python), "-m", "nbgrader", *step],
                 cwd=hub.course, env=env, timeout=600)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --------------------------------------------------------------------------- set-up

def setup(prefix: Path, *, names_prefix: str = "", demo: bool = False, demo_password: str | None = None,
          roster: Path | None = None, port: int = 8000, ip: str | None = None, ports: dict | None = None,
          lock: bool = True, lock_repo: bool = False, release: bool = False,
          source_venv: Path | None = None, due: dict[str, str] | None = None,
          lang: str | None = None) -> tuple[Hub, list[tuple[str, str]]]:
    """Everything the hub needs, idempotent. Returns the hub and the (login, password) pairs made now.
    Says what it is doing on stderr, step by step (releasing the assignments takes minutes)."""
    if os.geteuid() != 0:
        raise HubError("the hub's set-up makes accounts and sets owners: run it as root (sudo make hub)")
    for tool in ("useradd", "usermod", "groupadd", "chpasswd", "runuser"):
        if not shutil.which(tool):
            raise HubError(f"{tool} is not installed (Debian: apt-get install passwd util-linux)")
    prefix = Path(prefix).resolve()
    try:
        hub = Hub.load(prefix)
    except HubError:
        # a demo hub (known accounts) listens on this machine only unless told otherwise; a class hub on all
        hub = Hub(prefix=str(prefix), names_prefix=names_prefix, port=port, ip=listen_address(ip, demo),
                  **(ports or {}))
    else:
        if ip is not None:
            hub.ip = ip
    if lang is not None:
        hub.lang = edition_lang(lang) or ""
    if roster is not None:  # a bad class list stops set-up before any account is made
        roster_accounts(roster, hub.names)
    for when in (due or {}).values():  # so does a due date that does not parse
        if when.strip().lower() != "none":
            parse_due(when)
    prefix.mkdir(parents=True, exist_ok=True)
    hub.save()
    n = hub.names
    ensure_group(hub, n.graders)
    ensure_group(hub, n.students)
    hub.save()
    ensure_user(hub, n.grader_account, [n.graders], comment="shared grader account (formgrader)")
    _run(["usermod", "--lock", n.grader_account])  # nobody logs in as it: JupyterHub runs formgrader as it
    made: list[tuple[str, str]] = []
    if demo:
        progress("demo accounts")
        for login, role in ((f"{n.prefix}instructor", "graders"), (f"{n.prefix}grader2", "graders"),
                            (f"{n.prefix}student1", "students"), (f"{n.prefix}student2", "students")):
            pw = demo_password or secrets.token_urlsafe(9)   # each account its own, unless one was asked for
            ensure_user(hub, login, [n.graders if role == "graders" else n.students], comment=f"demo {role}",
                        password=pw)
            made.append((login, pw))
            group = hub.graders if role == "graders" else hub.students
            if login not in group:
                group.append(login)
    hub.save()
    progress("the course folder (tracked files of the checkout)")
    copy_course(hub)
    use_edition(hub)
    progress("the exchange's course folders")
    own_exchange(hub)  # the course's folders in the exchange, the course account's before any student logs in
    progress("the students' Python environment")
    student_env(hub, source_venv)
    jupyter_configs(hub)
    if lock:
        progress("permissions")
        lock_down(hub)
    if demo:
        add_to_gradebook(hub, [(s, None) for s in hub.students])
    if made:
        _note_passwords(hub, made)
    if roster is not None:
        progress(f"the class list {roster}")
        made += import_roster(hub, roster)
    for assignment, when in (due or {}).items():
        set_due(hub, assignment, when)
    if release:
        release_all(hub)
    if lock_repo:
        lock_checkout(Path(hub.repo))
    hub.save()
    return hub, made


def _show_due(due) -> str:
    return "date cleared (no late penalty)" if due is None else due.strftime("%Y-%m-%d %H:%M:%S UTC")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m instructor.classroom.hub",
                                     description="The course's JupyterHub: accounts, course folder, permissions.")
    sub = parser.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("setup", help="make (or bring up to date) a hub's accounts and folders")
    s.add_argument("--prefix", type=Path, default=DEFAULT_PREFIX)
    s.add_argument("--demo", action="store_true", help="an instructor, a second grader and two students")
    s.add_argument("--demo-password", help="their password (default: a random one, printed)")
    s.add_argument("--roster", type=Path, help="class list CSV: id,first_name,last_name,email")
    s.add_argument("--port", type=int, default=8000, help="the port browsers connect to")
    s.add_argument("--ip", default=None, help="the address the hub listens on (default: all; with --demo, "
                                               "127.0.0.1 only: pass --ip 0.0.0.0 to let other machines in)")
    s.add_argument("--names-prefix", default="", help="put this before every account and group name")
    s.add_argument("--release", action="store_true", help="generate and release every assignment to the exchange")
    s.add_argument("--lang", default=None, help="the edition the students get: zh_CN (the Chinese one; default: "
                                                "$COURSE_LANG, else English, or what an earlier set-up chose)")
    s.add_argument("--lock-checkout", action="store_true",
                   help="chmod o-rwx this checkout: students must not read source/ or instructor/ (make hub does)")
    s.add_argument("--due", action="append", default=[], metavar="ASSIGNMENT=WHEN",
                   help="an assignment's due date, e.g. '00_orientation=2026-12-10 17:00' (UTC unless a zone "
                        "follows: '... 17:00 Europe/Berlin', '... 17:00 +01:00'); repeat for more")
    dd = sub.add_parser("due", help="set (or clear: none) an assignment's due date in the course gradebook; "
                                    "later submissions lose nbgrader_config.py's late penalty")
    dd.add_argument("assignment")
    dd.add_argument("when", help="YYYY-MM-DD HH:MM, UTC unless a zone follows (UTC, +01:00, Europe/Berlin); none clears")
    dd.add_argument("--prefix", type=Path, default=DEFAULT_PREFIX)
    r = sub.add_parser("roster", help="accounts and gradebook students from a class list")
    r.add_argument("csv", type=Path)
    r.add_argument("--prefix", type=Path, default=DEFAULT_PREFIX)
    g = sub.add_parser("grader", help="add a grader (an existing account, or a new one); then restart the hub")
    g.add_argument("login")
    g.add_argument("--prefix", type=Path, default=DEFAULT_PREFIX)
    d = sub.add_parser("remove", help="remove every account and group the hub made (userdel -r)")
    d.add_argument("--prefix", type=Path, default=DEFAULT_PREFIX)
    args = parser.parse_args(argv)
    try:
        if args.cmd == "setup":
            due = {}
            for item in args.due:
                name, sep, when = item.partition("=")
                if not sep or not name.strip():
                    raise HubError(f"--due {item!r}: write ASSIGNMENT=WHEN, e.g. '00_orientation=2026-12-10 17:00'")
                due[name.strip()] = when
            hub, made = setup(args.prefix, names_prefix=args.names_prefix, demo=args.demo,
                              demo_password=args.demo_password, roster=args.roster, port=args.port, ip=args.ip,
                              release=args.release, lock_repo=args.lock_checkout, due=due,
                              lang=args.lang if args.lang is not None else os.environ.get("COURSE_LANG"))
            for name, when in due.items():
                print(f"  {name} due {_show_due(None if when.strip().lower() == 'none' else parse_due(when))}")
            print(f"hub set up in {hub.root}: course {hub.course}, exchange {hub.exchange}, environment {hub.env}")
            for login, pw in made:
                print(f"  account {login}  password {pw}")
            if made:
                print(f"  (also in {hub.state / PASSWORDS}, readable by root only; `remove` deletes it first)")
            print(f"  listening on {hub.ip or 'every interface'}, port {hub.port}"
                  + ("  (this machine only: --ip 0.0.0.0 lets other machines in)" if hub.ip == "127.0.0.1" else ""))
            if checkout_is_open(Path(hub.repo)):
                print(f"WARNING: {hub.repo} is open to every account (mode {os.stat(hub.repo).st_mode & 0o777:o}): "
                      "a student's terminal can read its source/ and instructor/. Pass --lock-checkout, or keep "
                      "the checkout in a folder students cannot enter.", file=sys.stderr)
        elif args.cmd == "due":
            hub = Hub.load(args.prefix)
            print(f"{args.assignment} due {_show_due(set_due(hub, args.assignment, args.when))}")
        elif args.cmd == "roster":
            hub = Hub.load(args.prefix)
            for login, pw in import_roster(hub, args.csv):
                print(f"  account {login}  password {pw}")
        elif args.cmd == "grader":
            hub = Hub.load(args.prefix)
            pw = add_grader(hub, args.login)
            print(f"grader {args.login}" + (f"  password {pw}" if pw else " (existing account, password kept)")
                  + ": restart the hub to give them formgrader")
        elif args.cmd == "remove":
            hub = Hub.load(args.prefix)
            had_passwords = (hub.state / PASSWORDS).exists()
            print("removed: " + (", ".join(remove(hub)) or "no account"))
            if had_passwords:
                print(f"deleted {hub.state / PASSWORDS} (the initial passwords)")
            kept = left_behind(hub)
            if kept:
                print("kept (grades and hand-ins are yours to delete, e.g. with rm -rf "
                      f"{hub.root} once they are exported):\n  " + "\n  ".join(kept))
    except (HubError, HandinError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
