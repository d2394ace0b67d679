"""Every formgrader the course's environment starts is the course's (issue 36, item 2).

nbgrader switches its own formgrader on in every environment it is installed in. Its submission page
sanitizes cell by cell only: ``<!--`` alone in one markdown cell and ``<a title="--><img src=x
onerror=...>">`` in the next come out as a live ``<img onerror>`` in the instructor's session. The
course's venv (``make setup``: ``python -m autograder.course_formgrader install``) switches it off and the
course's formgrader on, for any ``jupyter server``/``jupyter lab`` started from it.

* attack: ``jupyter server`` from the venv, started the nbgrader way (in the course folder, nothing but
  the environment's own config), and again with nbgrader's formgrader switched back on in the user's
  config (``jupyter server extension enable --user``, as nbgrader's docs say): the submission page is
  the course's (a Content-Security-Policy header with a nonce) and holds no live ``onerror``;
* control: the same server with the course's config taken away (nbgrader's formgrader on, the course's
  off) serves nbgrader's page: no policy, and the payload's ``<img onerror>`` is live in it;
* the config is made by the Makefile's setup rule, idempotently, and students' views switch it off.
"""
from __future__ import annotations

import json
import os
import re
import secrets
import signal
import subprocess
import sys
import time
import urllib.request
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from autograder import course_formgrader
from autograder.lab import student_env, student_view

REPO = Path(__file__).resolve().parents[1]
COURSE_ID = "inplace-autograd"
ASSIGNMENT, NOTEBOOK, STUDENT = "a1", "mine", "mallory"
PAYLOAD = "console.log(/PWNED/.source)"


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Live(HTMLParser):
    """Elements with an event-handler attribute, as an HTML parser sees the page (comments skipped)."""

    def __init__(self):
        super().__init__()
        self.handlers: list[tuple[str, str]] = []

    def handle_starttag(self, tag, attrs):
        self.handlers += [(tag, k) for k, _ in attrs if k.startswith("on")]


def live_handlers(page: str) -> list[tuple[str, str]]:
    p = _Live()
    p.feed(page)
    return p.handlers


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """A course folder (the repository's nbgrader_config.py) whose gradebook holds one autograded
    submission with the cross-cell comment payload."""
    from nbgrader.api import Gradebook

    root = tmp_path_factory.mktemp("stock_formgrader")
    course = root / "course"
    course.mkdir()
    (course / "nbgrader_config.py").write_text(
        f"c = get_config()  # noqa\nload_subconfig({str(REPO / 'nbgrader_config.py')!r})  # noqa\n")
    nb = new_notebook(cells=[
        new_markdown_cell("My notes."),
        new_markdown_cell("<!--"),
        new_markdown_cell(f'<a title="--><img src=x onerror={PAYLOAD}>">see</a>'),
        new_code_cell("answer = 42", metadata={"nbgrader": {
            "grade": True, "solution": True, "grade_id": "answer", "points": 1, "locked": False,
            "schema_version": 3}}),
    ], metadata={"language_info": {"name": "python"}})
    autograded = course / "autograded" / STUDENT / ASSIGNMENT
    autograded.mkdir(parents=True)
    nbformat.write(nb, autograded / f"{NOTEBOOK}.ipynb")
    path = os.environ.get("PATH", "")
    os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + path  # nbgrader runs alembic from there
    try:
        with Gradebook(f"sqlite:///{course / 'gradebook.db'}", course_id=COURSE_ID) as gb:
            gb.add_assignment(ASSIGNMENT)
            gb.add_notebook(NOTEBOOK, ASSIGNMENT)
            gb.add_grade_cell("answer", NOTEBOOK, ASSIGNMENT, max_score=1, cell_type="code")
            gb.add_solution_cell("answer", NOTEBOOK, ASSIGNMENT)
            gb.add_student(STUDENT)
            gb.add_submission(ASSIGNMENT, STUDENT)
            sid = gb.find_submission_notebook(NOTEBOOK, ASSIGNMENT, STUDENT).id
    finally:
        os.environ["PATH"] = path
    return {"root": root, "course": course, "sid": sid}


def _serve(course: dict, name: str, *, config_path: Path | None = None, user_config: dict | None = None,
           app: str = "server") -> dict:
    """``jupyter <app>`` from the venv in the course folder, the nbgrader way: the submission page's
    status, headers and text, and the server's log."""
    root = course["root"] / name
    user = root / "user"
    (user / "jupyter_server_config.d").mkdir(parents=True)
    if user_config is not None:
        (user / "jupyter_server_config.json").write_text(json.dumps(user_config))
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUPYTER")}
    env.update(PATH=str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", ""),
               JUPYTER_CONFIG_DIR=str(user), JUPYTER_RUNTIME_DIR=str(root / "runtime"))
    if config_path is not None:
        env["JUPYTER_CONFIG_PATH"] = str(config_path)
    port, token = _free_port(), secrets.token_hex(16)
    cmd = [str(Path(sys.executable).parent / "jupyter"), app, f"--ServerApp.port={port}", "--ServerApp.ip=127.0.0.1",
           "--ServerApp.port_retries=0", "--ServerApp.open_browser=False", f"--IdentityProvider.token={token}"]
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    log = root / "server.log"
    proc = subprocess.Popen(cmd, cwd=course["course"], env=env, stdout=log.open("w"), stderr=subprocess.STDOUT,
                            start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"jupyter {app} did not start:\n" + log.read_text()[-3000:])
                time.sleep(0.3)
        req = urllib.request.Request(f"{base}/formgrader/submissions/{course['sid']}/",
                                     headers={"Authorization": f"token {token}"})
        with urllib.request.urlopen(req, timeout=60) as resp:
            out = {"status": resp.status, "policy": resp.headers.get("Content-Security-Policy"),
                   "page": resp.read().decode()}
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    out["log"] = log.read_text()
    return out


def _assert_the_course_s(seen: dict) -> None:
    assert seen["status"] == 200, seen["log"][-3000:]
    assert "PWNED" in seen["page"] or "see" in seen["page"], "the submission's cells are not on the page"
    m = re.search(r"script-src 'nonce-([A-Za-z0-9_\-]+)'", seen["policy"] or "")
    assert m, (seen["policy"], seen["log"][-3000:])
    assert f'nonce="{m.group(1)}"' in seen["page"]
    # formgrader's own template has onclick handlers on its score buttons (the policy allows them by hash)
    assert [h for h in live_handlers(seen["page"]) if h != ("span", "onclick")] == [], live_handlers(seen["page"])
    assert "formgrader is the course's" in seen["log"], seen["log"][-3000:]


@pytest.mark.slow
def test_jupyter_server_from_the_venv_serves_the_course_s_formgrader(course):
    """Attack: the cross-cell payload on the submission page of ``jupyter server`` from the course's venv,
    started as nbgrader's docs say (in the course folder, no extra config): the course's page."""
    assert course_formgrader.config_path().is_file(), "make setup writes the venv's formgrader config"
    _assert_the_course_s(_serve(course, "plain"))


@pytest.mark.slow
def test_nbgrader_s_formgrader_switched_back_on_is_still_not_reachable(course):
    """Attack: nbgrader's formgrader switched on again in the user's config (``jupyter server extension
    enable --user nbgrader.server_extensions.formgrader``, nbgrader's installation docs), with
    ``jupyter lab``: the course's formgrader loads first and answers every /formgrader/ URL."""
    seen = _serve(course, "user-enabled", app="lab", user_config={
        "ServerApp": {"jpserver_extensions": {course_formgrader.STOCK: True}}})
    assert f"{course_formgrader.STOCK} | extension was successfully loaded" in seen["log"]  # it did load
    _assert_the_course_s(seen)


@pytest.mark.slow
def test_control_without_the_course_s_config_nbgrader_s_page_runs_the_payload(course, tmp_path):
    """Control: the course's config taken away (nbgrader's formgrader on, the course's off, as in an
    environment ``make setup`` never touched): nbgrader's page, no policy, the ``<img onerror>`` live."""
    off = tmp_path / "no-course-config"
    (off / "jupyter_server_config.d").mkdir(parents=True)
    (off / "jupyter_server_config.d" / "zz-control.json").write_text(json.dumps(
        {"ServerApp": {"jpserver_extensions": {course_formgrader.STOCK: True, course_formgrader.EXTENSION: False}}}))
    seen = _serve(course, "control", config_path=off)
    assert seen["status"] == 200, seen["log"][-3000:]
    assert "script-src" not in (seen["policy"] or ""), seen["policy"]  # Jupyter's default: frame-ancestors only
    assert ("img", "onerror") in live_handlers(seen["page"]), seen["page"][-3000:]
    assert PAYLOAD in seen["page"]


def test_the_makefile_s_setup_writes_the_config_idempotently(tmp_path):
    """CI starts from a fresh clone: the venv's config comes from the $(STAMP) rule, which reruns when
    the module changes; writing it twice gives the same bytes; a student's view switches it off."""
    text = (REPO / "Makefile").read_text()
    rule = re.search(r"^\$\(STAMP\):([^\n]*)\n((?:\t[^\n]*\n)+)", text, re.M)
    assert rule, "the Makefile's $(STAMP) rule"
    assert "autograder/course_formgrader.py" in rule.group(1).split()
    assert "$(BIN)/python -m autograder.course_formgrader install" in rule.group(2)
    first = course_formgrader.install(tmp_path)
    data = first.read_bytes()
    assert course_formgrader.install(tmp_path) == first and first.read_bytes() == data
    assert json.loads(data)["ServerApp"]["jpserver_extensions"] == {course_formgrader.STOCK: False,
                                                                  course_formgrader.EXTENSION: True,
                                                                  course_formgrader.VALIDATE_VIEW: True}
    assert first.name > "nbgrader.json"  # read after nbgrader's own file: the later one wins
    assert course_formgrader.EXTENSION in student_view()[1]
    student_env(tmp_path / "student")
    off = json.loads((tmp_path / "student" / "jupyter_server_config.d" / "zz-course-student.json").read_text())
    assert off["ServerApp"]["jpserver_extensions"][course_formgrader.EXTENSION] is False


def test_in_a_students_environment_it_serves_no_formgrader(tmp_path):
    """Where ``autograder`` is installed without the course's instructor code (the hub's students'
    environment, the student image), the extension finds none and serves nothing; in the checkout it
    finds it."""
    pkg = tmp_path / "site-packages" / "autograder"
    pkg.mkdir(parents=True)
    assert course_formgrader.course_code(pkg) is None
    assert course_formgrader.course_code() == REPO

    class App:
        jpserver_extensions = {course_formgrader.EXTENSION: True}
        web_app = None

        class log:
            seen: list[str] = []

            @classmethod
            def info(cls, msg, *args):
                cls.seen.append(msg % args)

    saved = course_formgrader.course_code
    course_formgrader.course_code = lambda package=pkg: saved(pkg)
    try:
        course_formgrader._load_jupyter_server_extension(App)  # web_app None: any route added would fail
    finally:
        course_formgrader.course_code = saved
    assert any("no formgrader here" in s for s in App.log.seen), App.log.seen
