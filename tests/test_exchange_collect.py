"""Collect accepts only what the named student handed in (``instructor/classroom/exchange.py``).

Two forged folders in a real nbgrader exchange, next to two honest submissions made with nbgrader's
own release, fetch and submit (its classes, run in the test's process: the collect is what is tested,
and each command in a new Python cost about 3 s of imports): ``bob+...`` owned by another OS account (a uid with no account here: what another account
on a shared exchange leaves), and ``alice+...+2099-01-01 ...`` stamped far in the future, owned by the
shared account. Plain nbgrader (``ExchangeCollect``) collects both as alice's and bob's submissions;
the course's configuration refuses both (an error naming each folder and why, a failed collect) and
collects the honest ones — from the command line and through nbgrader's API, which formgrader's
Collect button calls.
"""
from __future__ import annotations

import datetime
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

ASSIGNMENT = "00_orientation"
COURSE_ID = "inplace-autograd"
FUTURE = "2099-01-01 00:00:00.000000 UTC"
MARK = "FORGED-SUBMISSION-MARKER"
PLAIN = "--ExchangeFactory.collect=nbgrader.exchange.default.collect.ExchangeCollect"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="forging another account's folder needs root (chown)")


def _env() -> dict:
    return dict(os.environ, PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))


def _nbgrader(args, cwd, ok=True):
    proc = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=cwd, env=_env(), capture_output=True,
                          text=True, timeout=300)
    if ok:
        assert proc.returncode == 0, f"nbgrader {' '.join(args)}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return proc


def _unused_uid() -> int:
    for uid in range(54321, 60000):
        try:
            pwd.getpwuid(uid)
        except KeyError:
            return uid
    raise RuntimeError("no free uid")


def _chown_tree(path: Path, uid: int) -> None:
    for dirpath, dirnames, filenames in os.walk(path):
        for name in dirnames + filenames:
            os.lchown(os.path.join(dirpath, name), uid, uid)
    os.lchown(path, uid, uid)


def _instructor_steps(course: Path, release: bool = True) -> None:
    """``nbgrader generate_assignment 00_orientation --force`` then (``release``) ``release_assignment``,
    run in the course folder, in this process: through nbgrader's API (what formgrader's buttons call),
    on the configuration the commands read there. Also used by tests/test_exchange.py."""
    from nbgrader.apps import NbGraderAPI
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    config.CourseDirectory.root = str(course)
    cwd = os.getcwd()
    os.chdir(course)
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("PATH", _env()["PATH"])   # the gradebook runs alembic by name
            api = NbGraderAPI(config=config)
            steps = [lambda: api.generate_assignment(ASSIGNMENT, force=True)]
            if release:
                steps.append(lambda: api.release_assignment(ASSIGNMENT))
            for step in steps:
                reply = step()
                assert reply["success"], reply.get("error") or reply.get("log")
    finally:
        os.chdir(cwd)


def _student_step(home: Path, student: str, step: str, assignment: str = ASSIGNMENT,
                  course_id: str = COURSE_ID) -> None:
    """``nbgrader fetch_assignment|submit|fetch_feedback ASSIGNMENT --course COURSE --student STUDENT``
    run in ``home``, in this process: the class the command runs (nbgrader's default exchange; the ones
    the Assignments panel's handlers run too), configured as the command configures it (``home``'s
    nbgrader_config.py, then the command line's course and student), without a new Python paying
    nbgrader's imports again (about 3 s of CPU per command; issue 37). Also used by tests/test_exchange.py."""
    from nbgrader.auth import Authenticator
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.exchange.default import ExchangeFetchAssignment, ExchangeFetchFeedback, ExchangeSubmit
    from traitlets.config.loader import PyFileConfigLoader

    cfg = PyFileConfigLoader("nbgrader_config.py", path=str(home)).load_config()
    cfg.CourseDirectory.course_id = course_id
    cfg.CourseDirectory.student_id = student
    cfg.CourseDirectory.assignment_id = assignment
    cfg.CourseDirectory.root = str(home)
    cls = {"fetch_assignment": ExchangeFetchAssignment, "submit": ExchangeSubmit,
           "fetch_feedback": ExchangeFetchFeedback}[step]
    cwd = os.getcwd()
    os.chdir(home)   # where the command runs: the assignment's folder is found (fetch: made) here
    try:
        cls(coursedir=CourseDirectory(config=cfg), authenticator=Authenticator(config=cfg), config=cfg).start()
    finally:
        os.chdir(cwd)


@pytest.fixture(scope="module")
def exchange_course(tmp_path_factory):
    """A course folder on the course's own configuration (its ``nbgrader_config.py`` loads the
    repository's), its exchange, alice's and bob's honest submissions and the two forgeries."""
    tmp = tmp_path_factory.mktemp("collect")
    ex = tmp / "exchange"
    ex.mkdir()
    os.chmod(ex, 0o777)
    course = tmp / "course"
    shutil.copytree(REPO / "source" / ASSIGNMENT, course / "source" / ASSIGNMENT)
    (course / "nbgrader_config.py").write_text(
        "c = get_config()\n"
        f"load_subconfig({str(REPO / 'nbgrader_config.py')!r})  # the course's configuration\n"
        f"c.Exchange.root = {str(ex)!r}\n")
    _instructor_steps(course)
    for student in ("alice", "bob"):
        home = tmp / student
        home.mkdir()
        (home / "nbgrader_config.py").write_text(f"c = get_config()\nc.Exchange.root = {str(ex)!r}\n"
                                                 f"c.Exchange.cache = {str(home / '.cache')!r}\n")
        _student_step(home, student, "fetch_assignment")
        _student_step(home, student, "submit")
    inbound = ex / COURSE_ID / "inbound"
    honest = {p.name.split("+")[0]: p for p in inbound.iterdir()}
    assert sorted(honest) == ["alice", "bob"]

    def forge(student: str, stamp: str) -> Path:
        fake = inbound / f"{student}+{ASSIGNMENT}+{stamp}"
        shutil.copytree(honest[student], fake)
        nb = fake / f"{ASSIGNMENT}.ipynb"
        nb.write_text(nb.read_text().replace("YOUR CODE HERE", MARK, 1))
        (fake / "timestamp.txt").write_text(stamp)   # consistent, as a careful forger writes it
        return fake

    # bob's: one second newer than bob's own, in the past, made by another account
    newer = course_exchange.parse_utc(honest["bob"].name.split("+")[2]) + datetime.timedelta(seconds=1)
    other_uid = _unused_uid()
    by_other = forge("bob", newer.strftime("%Y-%m-%d %H:%M:%S.%f") + " UTC")
    _chown_tree(by_other, other_uid)
    # alice's: stamped far in the future, owned by the account everyone shares here (root)
    future = forge("alice", FUTURE)
    assert MARK in (by_other / f"{ASSIGNMENT}.ipynb").read_text()
    return {"course": course, "inbound": inbound, "by_other": by_other, "future": future, "uid": other_uid}


def _collected(course: Path, student: str) -> str:
    return (course / "submitted" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_text()


def test_without_the_defence_plain_nbgrader_collects_both_forgeries(exchange_course, tmp_path):
    """The control: nbgrader's own ExchangeCollect (the course's configuration with that one class
    swapped back) takes both forged folders as alice's and bob's submissions, with a warning only."""
    course = tmp_path / "plain-course"
    shutil.copytree(exchange_course["course"], course, ignore=shutil.ignore_patterns("submitted", "replaced_submissions"))
    proc = _nbgrader(["collect", ASSIGNMENT, PLAIN], course)
    assert MARK in _collected(course, "bob"), "plain nbgrader did not collect the folder another account made"
    assert MARK in _collected(course, "alice"), "plain nbgrader did not collect the folder stamped in 2099"
    assert (course / "submitted" / "alice" / ASSIGNMENT / "timestamp.txt").read_text().strip() == FUTURE
    assert "cheating attempt?" in proc.stderr  # nbgrader's warning, and nothing more

    # and the course's collect, run after it, refuses both and puts the students' own in their place
    proc = _nbgrader(["collect", ASSIGNMENT, "--update"], course, ok=False)
    assert proc.returncode != 0, proc.stderr[-2000:]
    for student in ("alice", "bob"):
        assert MARK not in _collected(course, student), f"{student}'s forged copy is still the collected one"
    aside = list((course / "replaced_submissions").glob(f"*/*/{ASSIGNMENT}/{ASSIGNMENT}.ipynb"))
    assert sorted(p.parents[1].name for p in aside) == ["alice", "bob"]
    assert all(MARK in p.read_text() for p in aside)   # moved aside, never deleted


def test_the_course_collect_refuses_both_forgeries_and_collects_the_honest_ones(exchange_course):
    course = exchange_course["course"]
    shutil.rmtree(course / "submitted", ignore_errors=True)
    proc = _nbgrader(["collect", ASSIGNMENT], course, ok=False)
    assert proc.returncode != 0, "a collect that refused submissions must not look like a clean one"
    log = proc.stdout + proc.stderr
    for student in ("alice", "bob"):
        assert MARK not in _collected(course, student), f"{student}: the forged folder was collected"
    assert f"REFUSED, not collected: {exchange_course['by_other']}" in log, log[-3000:]
    assert f"is owned by uid {exchange_course['uid']}" in log and "under bob's name" in log, log[-3000:]
    assert f"REFUSED, not collected: {exchange_course['future']}" in log
    assert "in the future" in log
    assert "cheating attempt?" not in log   # refused, not collected with a warning


def test_formgraders_collect_button_refuses_them_too(exchange_course):
    """formgrader's Collect calls ``NbGraderAPI.collect`` with the configuration it read from the course
    folder; its reply (``success``, ``log``) is what the dialog shows."""
    from nbgrader.apps import NbGraderAPI
    from traitlets.config.loader import PyFileConfigLoader

    course = exchange_course["course"]
    shutil.rmtree(course / "submitted", ignore_errors=True)
    config = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    config.CourseDirectory.root = str(course)
    api = NbGraderAPI(config=config)
    assert type(api.exchange.Collect(coursedir=api.coursedir, authenticator=api.authenticator,
                                     parent=api)).__name__ == "CourseExchangeCollect"
    cwd = os.getcwd()
    os.chdir(course)
    try:
        reply = api.collect(ASSIGNMENT)
    finally:
        os.chdir(cwd)
    assert reply["success"] is False, reply
    assert f"[ERROR] REFUSED, not collected: {exchange_course['by_other']}" in reply["log"], reply["log"]
    assert f"[ERROR] REFUSED, not collected: {exchange_course['future']}" in reply["log"]
    assert "REFUSED" in reply["error"]
    for student in ("alice", "bob"):
        assert MARK not in _collected(course, student)


@pytest.mark.parametrize("mutate, why", [
    (lambda p: (p / "timestamp.txt").write_text("2020-01-01 00:00:00.000000 UTC"), "edited after it was handed in"),
    (lambda p: (p / "timestamp.txt").unlink(), "has no timestamp.txt"),
    (lambda p: (p / "stolen.ipynb").symlink_to("/etc/shadow"), "holds a symbolic link"),
    (lambda p: os.mkfifo(p / "pipe"), "not a regular file or folder"),
])
def test_a_tampered_folder_is_refused(exchange_course, tmp_path, mutate, why):
    """Checked one folder at a time (no collect): what else a student's own folder must not hold."""
    from nbgrader.apps import NbGraderAPI
    from traitlets.config.loader import PyFileConfigLoader

    honest = next(p for p in exchange_course["inbound"].iterdir() if p.name.startswith("alice+")
                  and FUTURE not in p.name)
    copy = tmp_path / honest.name
    shutil.copytree(honest, copy)
    config = PyFileConfigLoader("nbgrader_config.py", path=str(exchange_course["course"])).load_config()
    api = NbGraderAPI(config=config)
    collector = api.exchange.Collect(coursedir=api.coursedir, authenticator=api.authenticator, parent=api)
    collector.course_path = str(exchange_course["inbound"].parent)
    rec = collector._path_to_record(str(copy))
    assert collector.refusal(str(copy), rec) is None   # the honest folder as it was handed in
    mutate(copy)
    assert why in (collector.refusal(str(copy), rec) or "")
