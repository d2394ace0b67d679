"""The exchange's time and its folders: what a student cannot set decides (issue 36, items 3-time and 4).

**Time.** A student makes her hand-in folder in ``inbound/`` after the due date, names and stamps it an hour
before, and backdates its modification times (``os.utime``). Its ``st_ctime`` she cannot set. The course's
collect (``instructor/classroom/exchange.py``) collects it re-stamped with that change time, so the late penalty
(``instructor/classroom/late.py``) applies; with the defence monkeypatched off it is collected with the forged
stamp and no penalty; an honest hand-in is collected as it was.

**Folders.** The exchange root is 1777: an OS account made here (a student) creates
``exchange/<course>/outbound/<assignment>/`` before the instructor's first release. Without the defence the
release fails ("You don't own the directory") and nbgrader's list and fetch give the class her notebook; the
hub's ``own_exchange`` (what ``hub setup`` does) takes the course folder back for the course's account, and
the students' list/fetch (``autograder/exchange_trust.py``) and the course's collect refuse a course folder
the course's account does not own.
"""
from __future__ import annotations

import datetime
import json
import logging
import os
import pwd
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from instructor.classroom import exchange as course_exchange  # noqa: E402
from instructor.classroom.late import PerDayPenalty  # noqa: E402

COURSE_ID = "inplace-autograd"
ASSIGNMENT = "00_orientation"
FMT = "%Y-%m-%d %H:%M:%S.%f UTC"
SQUAT_MARK = "SQUATTER-NOTEBOOK-MARKER"
RELEASE_MARK = "INSTRUCTOR-RELEASE-MARKER"


def _utc_now() -> datetime.datetime:
    return course_exchange.utc_now()


@pytest.fixture(autouse=True)
def _alembic_on_path(monkeypatch):
    """nbgrader's gradebook runs ``alembic`` by name."""
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))


def _config(exchange: Path, course: Path):
    from traitlets.config import Config

    cfg = Config()
    cfg.Exchange.root = str(exchange)
    cfg.CourseDirectory.root = str(course)
    cfg.CourseDirectory.course_id = COURSE_ID
    cfg.CourseDirectory.assignment_id = ASSIGNMENT
    cfg.CourseDirectory.db_url = f"sqlite:///{course / 'gradebook.db'}"
    return cfg


_TEMPLATE_DB: list[Path] = []


def _template_db() -> Path:
    """One gradebook with the assignment and the students, made once (nbgrader makes a new one by running
    its migrations: seconds) and copied for each test (opening a copy is milliseconds)."""
    import tempfile

    from nbgrader.api import Gradebook

    if not _TEMPLATE_DB:
        path = Path(tempfile.mkdtemp(prefix="ixtr-gb-")) / "gradebook.db"
        with Gradebook(f"sqlite:///{path}", course_id=COURSE_ID) as gb:
            gb.update_or_create_assignment(ASSIGNMENT)
            for s in ("alice", "bob"):
                gb.update_or_create_student(s)
        _TEMPLATE_DB.append(path)
    return _TEMPLATE_DB[0]


@pytest.fixture(scope="module", autouse=True)
def _remove_template_db():
    yield
    for path in _TEMPLATE_DB:
        shutil.rmtree(path.parent, ignore_errors=True)


def _course(tmp_path: Path, due: datetime.datetime | None) -> tuple[Path, Path]:
    """An exchange with the course's folders (as the account running the test) and a course folder whose
    gradebook holds the assignment with the due date ``due`` (naive UTC) and the students."""
    from nbgrader.api import Gradebook

    exchange, course = tmp_path / "exchange", tmp_path / "course"
    exchange.mkdir()
    os.chmod(exchange, 0o1777)
    for sub, mode in (("", 0o755), ("outbound", 0o755), ("inbound", 0o2733), ("feedback", 0o711)):
        (exchange / COURSE_ID / sub).mkdir(exist_ok=True)
        os.chmod(exchange / COURSE_ID / sub, mode)
    course.mkdir()
    shutil.copy(_template_db(), course / "gradebook.db")
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", course_id=COURSE_ID) as gb:
        gb.update_or_create_assignment(ASSIGNMENT, duedate=due)
    return exchange, course


def _hand_in(exchange: Path, student: str, stamp: datetime.datetime, *, backdate: bool = False) -> Path:
    """A hand-in folder as nbgrader's submit makes it (a notebook, timestamp.txt), stamped ``stamp``;
    ``backdate``: its modification and access times set to the stamp too, as a careful forger would."""
    folder = exchange / COURSE_ID / "inbound" / f"{student}+{ASSIGNMENT}+{stamp.strftime(FMT)}"
    folder.mkdir()
    (folder / f"{ASSIGNMENT}.ipynb").write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4,
                                                              "nbformat_minor": 5, "student": student}))
    (folder / "timestamp.txt").write_text(stamp.strftime(FMT))
    if backdate:
        t = stamp.replace(tzinfo=datetime.timezone.utc).timestamp()
        for p in (*folder.iterdir(), folder):
            os.utime(p, (t, t))
    return folder


def _collect(exchange: Path, course: Path, caplog) -> course_exchange.CourseExchangeCollect:
    from nbgrader.auth import Authenticator
    from nbgrader.coursedir import CourseDirectory

    cfg = _config(exchange, course)
    collector = course_exchange.CourseExchangeCollect(coursedir=CourseDirectory(config=cfg),
                                                      authenticator=Authenticator(config=cfg), config=cfg)
    collector.log = logging.getLogger("test-exchange-trust")
    with caplog.at_level(logging.INFO, logger="test-exchange-trust"):
        collector.start()
    return collector


def _collected_stamp(course: Path, student: str) -> datetime.datetime:
    text = (course / "submitted" / student / ASSIGNMENT / "timestamp.txt").read_text()
    return course_exchange.parse_utc(text)


def _penalty(course: Path, student: str, stamp: datetime.datetime) -> float:
    """The late penalty autograde would give a notebook worth 8 points handed in at ``stamp``: the
    gradebook's own lateness (due date vs. submission time) through the course's PerDayPenalty."""
    from nbgrader.api import Gradebook

    import warnings

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", course_id=COURSE_ID) as gb, warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*not in session.*")   # nbgrader's add_submission, harmless
        sub = gb.add_submission(ASSIGNMENT, student, timestamp=stamp)
        late = sub.total_seconds_late
    return PerDayPenalty().late_submission_penalty(student, 8.0, late)


# --------------------------------------------------------------------------------------------- time

def _backdated_class(tmp_path):
    """Due two hours ago; alice hands in now, stamped three hours ago with backdated mtimes."""
    now = _utc_now()
    exchange, course = _course(tmp_path, due=now - datetime.timedelta(hours=2))
    forged = now - datetime.timedelta(hours=3)
    folder = _hand_in(exchange, "alice", forged, backdate=True)
    assert datetime.datetime.utcfromtimestamp(folder.stat().st_mtime) < now - datetime.timedelta(hours=2)
    return exchange, course, folder, forged, now


def test_a_backdated_hand_in_is_restamped_and_pays_the_late_penalty(tmp_path, caplog):
    exchange, course, folder, forged, now = _backdated_class(tmp_path)
    collector = _collect(exchange, course, caplog)
    stamp = _collected_stamp(course, "alice")
    assert stamp >= now - datetime.timedelta(seconds=5), f"collected with {stamp}, the forged {forged} kept?"
    assert not collector.refused                       # kept: a student's work is never lost
    assert (course / "submitted" / "alice" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").is_file()
    log = caplog.text
    assert f"RE-STAMPED: {folder} is stamped {forged}" in log, log
    assert "the due date" in log and "late" in log
    assert _penalty(course, "alice", stamp) == pytest.approx(0.8)   # 10% of 8 points, one started day


def test_the_student_and_the_instructor_are_told_why_it_was_restamped(tmp_path, caplog):
    """collect writes its note beside timestamp.txt; grading turns it into a flag, the line the feedback's
    "Notes from the grader", grades.csv and the exports show."""
    from instructor.engine import pipeline
    from instructor.layout import RESTAMP_NOTE

    exchange, course, folder, forged, now = _backdated_class(tmp_path)
    _collect(exchange, course, caplog)
    collected = course / "submitted" / "alice" / ASSIGNMENT
    note = (collected / RESTAMP_NOTE).read_text()
    assert f"{forged:%Y-%m-%d %H:%M:%S}" in note and "late penalty" in note, note
    sub = pipeline.Submission("alice", ASSIGNMENT, [collected / f"{ASSIGNMENT}.ipynb"])
    res = pipeline.Result("alice", ASSIGNMENT, ok=False)
    pipeline.stage(sub, collected, tmp_path, res)
    assert res.flags == [f"re-stamped: {note}"], res.flags


def test_a_note_the_student_hands_in_herself_is_not_collected(tmp_path, caplog):
    from instructor.layout import RESTAMP_NOTE

    now = _utc_now()
    exchange, course = _course(tmp_path, due=now + datetime.timedelta(hours=1))
    folder = _hand_in(exchange, "bob", now - datetime.timedelta(seconds=30))
    (folder / RESTAMP_NOTE).write_text("handed in at 2020-01-01 00:00:00 UTC")
    _collect(exchange, course, caplog)
    collected = course / "submitted" / "bob" / ASSIGNMENT
    assert (collected / f"{ASSIGNMENT}.ipynb").is_file() and not (collected / RESTAMP_NOTE).exists()


def test_without_the_defence_the_backdated_hand_in_escapes_the_penalty(tmp_path, caplog, monkeypatch):
    """The control: the re-stamp monkeypatched off, the forged stamp is collected and no penalty applies."""
    monkeypatch.setattr(course_exchange.CourseExchangeCollect, "_restamp_if_backdated", lambda self, path, rec: None)
    exchange, course, folder, forged, now = _backdated_class(tmp_path)
    _collect(exchange, course, caplog)
    assert _collected_stamp(course, "alice") == forged
    assert "RE-STAMPED" not in caplog.text
    assert _penalty(course, "alice", forged) == 0.0


def test_the_change_time_of_a_file_counts_not_only_the_folders(tmp_path):
    """A notebook rewritten in place inside an existing folder changes its own ctime, not the folder's:
    the latest change time among the folder and its files is the hand-in time."""
    import time

    now = _utc_now()
    exchange, _ = _course(tmp_path, due=None)
    folder = _hand_in(exchange, "alice", now, backdate=True)
    time.sleep(1.1)
    nb = folder / f"{ASSIGNMENT}.ipynb"
    nb.write_text(nb.read_text())                      # rewritten in place: the folder's entries unchanged
    t = (now - datetime.timedelta(hours=3)).replace(tzinfo=datetime.timezone.utc).timestamp()
    os.utime(nb, (t, t))
    folder_ctime, nb_ctime = folder.stat().st_ctime, nb.stat().st_ctime
    assert nb_ctime > folder_ctime + 1
    real = course_exchange.handed_in_at(str(folder))
    assert real == datetime.datetime.fromtimestamp(nb_ctime, datetime.timezone.utc).replace(tzinfo=None)


def test_a_change_while_it_is_collected_counts_too(tmp_path, caplog, monkeypatch):
    """The student rewrites her notebook between the collect's check and its copy: the copy is of the
    new notebook, so the change time after the copy is the hand-in time."""
    import time

    now = _utc_now()
    exchange, course = _course(tmp_path, due=now - datetime.timedelta(hours=1))
    folder = _hand_in(exchange, "alice", now)
    time.sleep(1.1)
    nb = folder / f"{ASSIGNMENT}.ipynb"
    real_copytree = course_exchange.shutil.copytree

    def rewrite_then_copy(src, dest, **kw):
        nb.write_text(nb.read_text().replace('"student"', '"rewritten"'))
        return real_copytree(src, dest, **kw)

    monkeypatch.setattr(course_exchange.shutil, "copytree", rewrite_then_copy)
    monkeypatch.setattr(course_exchange.CourseExchangeCollect, "clock_skew_seconds", 0.5)
    _collect(exchange, course, caplog)
    collected = course / "submitted" / "alice" / ASSIGNMENT
    assert '"rewritten"' in (collected / f"{ASSIGNMENT}.ipynb").read_text()
    assert _collected_stamp(course, "alice") == course_exchange.handed_in_at(str(folder)) > now
    assert "RE-STAMPED" in caplog.text


def test_an_honest_hand_in_is_collected_as_it_was(tmp_path, caplog):
    now = _utc_now()
    exchange, course = _course(tmp_path, due=now + datetime.timedelta(hours=1))
    stamp = now - datetime.timedelta(seconds=30)       # nbgrader's submit: stamp first, files a moment later
    folder = _hand_in(exchange, "bob", stamp)
    before = (folder / "timestamp.txt").read_bytes()
    collector = _collect(exchange, course, caplog)
    assert (course / "submitted" / "bob" / ASSIGNMENT / "timestamp.txt").read_bytes() == before
    assert not collector.restamped and "RE-STAMPED" not in caplog.text
    assert _penalty(course, "bob", _collected_stamp(course, "bob")) == 0.0


def test_an_honest_late_hand_in_keeps_its_stamp_and_its_penalty(tmp_path, caplog):
    now = _utc_now()
    exchange, course = _course(tmp_path, due=now - datetime.timedelta(hours=2))
    _hand_in(exchange, "bob", now)
    _collect(exchange, course, caplog)
    assert _collected_stamp(course, "bob") == course_exchange.parse_utc(now.strftime(FMT))
    assert "RE-STAMPED" not in caplog.text
    assert _penalty(course, "bob", _collected_stamp(course, "bob")) == pytest.approx(0.8)


# --------------------------------------------------------------------------------------------- folders

needs_root = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("useradd") or not shutil.which("runuser"),
                                reason="making an OS account for the squatter needs root, useradd and runuser")
SQUATTER = "ixtr-squatter"


@pytest.fixture
def open_tmp():
    """A scratch folder other accounts may enter (pytest's own is 0700 under root's)."""
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="ixtr-"))
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _os_account(name: str):
    """An OS account made for the test (removed after, also when the test fails)."""
    if subprocess.run(["id", name], capture_output=True).returncode == 0:
        subprocess.run(["userdel", "--force", name], capture_output=True)
    subprocess.run(["useradd", "--no-create-home", "--shell", "/bin/sh", "--user-group", name], check=True,
                   capture_output=True)
    try:
        yield pwd.getpwnam(name)
    finally:
        subprocess.run(["pkill", "-KILL", "-u", name], capture_output=True)
        subprocess.run(["userdel", "--force", name], capture_output=True)
        subprocess.run(["groupdel", name], capture_output=True)


@pytest.fixture
def squatter():
    yield from _os_account(SQUATTER)


@pytest.fixture
def course_account():
    yield from _os_account("ixtr-course")


def _squat(exchange: Path) -> Path:
    """What the student does, as herself, before the instructor's first release."""
    target = exchange / COURSE_ID / "outbound" / ASSIGNMENT
    nb = json.dumps({"cells": [{"cell_type": "code", "source": f"# {SQUAT_MARK}", "metadata": {}, "outputs": [],
                                "execution_count": None}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    script = (f"umask 022 && mkdir -p {str(target)!r} && printf '%s' {nb!r} > {str(target / (ASSIGNMENT + '.ipynb'))!r}"
              f" && chmod -R a+rX {str(exchange / COURSE_ID)!r}")
    subprocess.run(["runuser", "-u", SQUATTER, "--", "/bin/sh", "-c", script], check=True, capture_output=True,
                   cwd="/")
    return target


def _squatted_exchange(tmp_path: Path, squatter) -> tuple[Path, Path]:
    exchange = tmp_path / "exchange"
    exchange.mkdir()
    os.chmod(exchange, 0o1777)
    _squat(exchange)
    assert (exchange / COURSE_ID).stat().st_uid == squatter.pw_uid
    course = tmp_path / "course"
    (course / "release" / ASSIGNMENT).mkdir(parents=True)
    (course / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").write_text(json.dumps(
        {"cells": [{"cell_type": "markdown", "source": RELEASE_MARK, "metadata": {}}], "metadata": {},
         "nbformat": 4, "nbformat_minor": 5}))
    return exchange, course


def _release(exchange: Path, course: Path):
    """The instructor's release (this test's course account: the account running it, root)."""
    from nbgrader.apps import NbGraderAPI

    cfg = _config(exchange, course)
    cwd = os.getcwd()
    os.chdir(course)
    try:
        return NbGraderAPI(config=cfg).release_assignment(ASSIGNMENT)
    finally:
        os.chdir(cwd)


def _student(exchange: Path, home: Path, trusted: bool, course_accounts=("root",)):
    """A student's list and fetch, with nbgrader's own classes or the hub's (autograder/exchange_trust.py)."""
    from nbgrader.auth import Authenticator
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.exchange import ExchangeError
    from nbgrader.exchange.default import ExchangeFetchAssignment, ExchangeList
    from traitlets.config import Config

    from autograder import exchange_trust

    cfg = Config()
    cfg.Exchange.root = str(exchange)
    cfg.Exchange.cache = str(home / ".cache")
    cfg.CourseDirectory.course_id = COURSE_ID
    cfg.CourseDirectory.root = str(home)
    cfg.CourseOwnedExchange.course_accounts = list(course_accounts)
    lister, fetcher = ((exchange_trust.CourseExchangeList, exchange_trust.CourseExchangeFetchAssignment) if trusted
                       else (ExchangeList, ExchangeFetchAssignment))
    home.mkdir(exist_ok=True)
    cwd = os.getcwd()
    os.chdir(home)
    try:
        listed = lister(coursedir=CourseDirectory(config=cfg), authenticator=Authenticator(config=cfg), config=cfg)
        listed.log = logging.getLogger("test-exchange-trust")
        names = [a["assignment_id"] for a in listed.start()]
        cfg.CourseDirectory.assignment_id = ASSIGNMENT
        fetch = fetcher(coursedir=CourseDirectory(config=cfg), authenticator=Authenticator(config=cfg), config=cfg)
        fetch.log = logging.getLogger("test-exchange-trust")
        try:
            fetch.start()
            error = None
        except ExchangeError as err:
            error = str(err)
    finally:
        os.chdir(cwd)
    got = home / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    return names, (got.read_text() if got.is_file() else None), error


@needs_root
def test_without_the_defence_the_squat_blocks_the_release_and_is_fetched(open_tmp, squatter, caplog):
    """The control: nbgrader as it comes. The instructor's release fails; the class is offered and
    fetches the squatter's notebook."""
    exchange, course = _squatted_exchange(open_tmp, squatter)
    with caplog.at_level(logging.ERROR):
        reply = _release(exchange, course)
    assert reply["success"] is False and "You don't own the directory" in (reply["log"] + reply.get("error", "")), reply
    names, notebook, error = _student(exchange, open_tmp / "alice", trusted=False)
    assert names == [ASSIGNMENT] and error is None
    assert notebook is not None and SQUAT_MARK in notebook, "nbgrader's fetch did not give the squatter's notebook"


@needs_root
def test_the_students_list_and_fetch_refuse_a_folder_the_course_did_not_make(open_tmp, squatter, caplog):
    exchange, course = _squatted_exchange(open_tmp, squatter)
    with caplog.at_level(logging.ERROR, logger="test-exchange-trust"):
        names, notebook, error = _student(exchange, open_tmp / "alice", trusted=True)
    assert names == [], "the squatter's assignment was offered"
    assert notebook is None
    assert error and "Refused" in error and f"belongs to {SQUATTER}" in error and "course's account" in error, error
    assert f"Not listed: {exchange / COURSE_ID / 'outbound' / ASSIGNMENT}" in caplog.text


def _squat_inbound(exchange: Path) -> Path:
    """The squatter, owning the course's folder, also makes inbound/ and a hand-in under alice's name."""
    stamp = (_utc_now() - datetime.timedelta(minutes=5)).strftime(FMT)
    folder = exchange / COURSE_ID / "inbound" / f"alice+{ASSIGNMENT}+{stamp}"
    script = (f"mkdir -m 0777 {str(folder.parent)!r} && mkdir {str(folder)!r} && "
              f"printf '%s' '{SQUAT_MARK}' > {str(folder / (ASSIGNMENT + '.ipynb'))!r} && "
              f"printf '%s' {stamp!r} > {str(folder / 'timestamp.txt')!r}")
    subprocess.run(["runuser", "-u", SQUATTER, "--", "/bin/sh", "-c", script], check=True, capture_output=True,
                   cwd="/")
    return folder


@needs_root
def test_the_course_collect_refuses_a_course_folder_another_account_owns(open_tmp, squatter, caplog):
    from nbgrader.exchange import ExchangeError

    exchange, _ = _squatted_exchange(open_tmp, squatter)
    _squat_inbound(exchange)
    (open_tmp / "gb").mkdir()
    _, course_dir = _course(open_tmp / "gb", due=None)
    with pytest.raises(ExchangeError, match=f"belongs to {SQUATTER}.*nothing collected"):
        _collect(exchange, course_dir, caplog)
    assert not (course_dir / "submitted").exists()


@needs_root
def test_without_the_check_the_course_folders_owner_hands_in_for_anyone(open_tmp, squatter, caplog, monkeypatch):
    """The control: the owner of the course's folder counts as an account that hands in for students
    (the exchange's own account), so the squatter's folder is collected as alice's."""
    monkeypatch.setattr(course_exchange.CourseExchangeCollect, "_refuse_foreign_course", lambda self: None)
    exchange, _ = _squatted_exchange(open_tmp, squatter)
    _squat_inbound(exchange)
    (open_tmp / "gb").mkdir()
    _, course_dir = _course(open_tmp / "gb", due=None)
    _collect(exchange, course_dir, caplog)
    assert (course_dir / "submitted" / "alice" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_text() == SQUAT_MARK


@needs_root
def test_hub_setup_takes_the_course_folder_back_and_the_release_works(open_tmp, squatter, caplog):
    from instructor.classroom import hub as hubmod

    exchange, course = _squatted_exchange(open_tmp, squatter)
    hub = hubmod.Hub(prefix=str(open_tmp), names_prefix="ixtr-")
    hub.state.mkdir()
    moved = hubmod.own_exchange(hub, account="root")
    assert len(moved) == 1 and str(exchange / COURSE_ID) in moved[0] and SQUATTER in moved[0], moved
    kept = list((open_tmp / "state" / "exchange-squatted").glob(f"*/{COURSE_ID}/outbound/{ASSIGNMENT}/*.ipynb"))
    assert len(kept) == 1 and SQUAT_MARK in kept[0].read_text()          # moved aside, never deleted
    modes = {sub: os.stat(exchange / COURSE_ID / sub) for sub in ("", "outbound", "inbound", "feedback")}
    assert {s: oct(st.st_mode & 0o7777) for s, st in modes.items()} == {
        "": "0o755", "outbound": "0o755", "inbound": "0o2733", "feedback": "0o711"}
    assert all(st.st_uid == 0 for st in modes.values())
    # students can no longer make anything in the course's folder
    r = subprocess.run(["runuser", "-u", SQUATTER, "--", "/bin/mkdir", str(exchange / COURSE_ID / "outbound" / "x")],
                       capture_output=True, text=True)
    assert r.returncode != 0 and "Permission denied" in r.stderr
    assert _release(exchange, course)["success"] is True
    names, notebook, error = _student(exchange, open_tmp / "alice", trusted=True)
    assert names == [ASSIGNMENT] and error is None
    assert RELEASE_MARK in notebook and SQUAT_MARK not in notebook


@needs_root
def test_own_exchange_leaves_the_course_accounts_own_release_alone(tmp_path):
    """An honest exchange (released by the course's account) is kept as it is: nothing moved."""
    from instructor.classroom import hub as hubmod

    exchange = tmp_path / "exchange"
    (exchange / COURSE_ID / "outbound" / ASSIGNMENT).mkdir(parents=True)
    (exchange / COURSE_ID / "outbound" / ASSIGNMENT / "x.ipynb").write_text("{}")
    hub = hubmod.Hub(prefix=str(tmp_path))
    hub.state.mkdir()
    assert hubmod.own_exchange(hub, account="root") == []
    assert (exchange / COURSE_ID / "outbound" / ASSIGNMENT / "x.ipynb").read_text() == "{}"


@needs_root
def test_own_exchange_hands_what_root_made_to_the_course_account(open_tmp, course_account):
    """A course folder root made (a release run as root) is not a squat: kept, handed to the course's account."""
    from instructor.classroom import hub as hubmod

    exchange = open_tmp / "exchange"
    (exchange / COURSE_ID / "outbound" / ASSIGNMENT).mkdir(parents=True)
    (exchange / COURSE_ID / "outbound" / ASSIGNMENT / "x.ipynb").write_text("{}")
    (exchange / COURSE_ID / "feedback").mkdir()
    (exchange / COURSE_ID / "feedback" / "abc.html").write_text("feedback")
    hub = hubmod.Hub(prefix=str(open_tmp), names_prefix="ixtr-")
    hub.state.mkdir()
    assert hubmod.own_exchange(hub, account=course_account.pw_name) == []
    for p in (exchange / COURSE_ID, exchange / COURSE_ID / "outbound" / ASSIGNMENT / "x.ipynb",
              exchange / COURSE_ID / "feedback" / "abc.html", exchange / COURSE_ID / "inbound"):
        assert p.stat().st_uid == course_account.pw_uid, p
    assert (exchange / COURSE_ID / "outbound" / ASSIGNMENT / "x.ipynb").read_text() == "{}"


def test_the_students_servers_use_the_course_owned_classes(tmp_path):
    """What ``hub setup`` writes for the students' servers (``etc/student/nbgrader_config.py``) selects the
    classes above, with the grader account as the course's account."""
    from nbgrader.exchange import ExchangeFactory
    from traitlets.config.loader import PyFileConfigLoader

    from autograder import exchange_trust
    from instructor.classroom import hub as hubmod

    hub = hubmod.Hub(prefix=str(tmp_path), names_prefix="ixtr-")
    hubmod.jupyter_configs(hub)
    cfg = PyFileConfigLoader("nbgrader_config.py", path=str(tmp_path / "etc" / "student")).load_config()
    factory = ExchangeFactory(config=cfg)
    assert factory.list is exchange_trust.CourseExchangeList
    assert factory.fetch_assignment is exchange_trust.CourseExchangeFetchAssignment
    assert factory.fetch_feedback is exchange_trust.CourseExchangeFetchFeedback
    assert factory.submit is exchange_trust.CourseExchangeSubmit
    assert exchange_trust.CourseExchangeList(config=cfg).course_accounts == ["ixtr-inplace-grader"]
