"""Formgrader's own buttons grade through the trusted pipeline (``instructor.classroom.formgrader``).

A real Jupyter server, configured as ``make lab-instructor`` configures it, serves a course folder
holding two submissions of 00_orientation: the honest ``ada`` (8/8) and the hostile
``patch_checks`` (it patches the check helpers so every in-kernel test passes: plain nbgrader gives
it 8/8, see tests/test_hostile.py). The test POSTs to formgrader's own handler URLs, as the
Manage Submissions page's JavaScript does, and reads the scores back from the gradebook.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import nbformat
import pytest

from autograder.lab import instructor_env
from instructor.authoring import samples

REPO = Path(__file__).resolve().parents[1]
ASSIGNMENT = "00_orientation"
TOKEN = "formgrader-test-token"
COURSE_CONFIG = """c = get_config()  # noqa
c.CourseDirectory.course_id = "inplace-autograd"
c.Execute.timeout = 15
c.Sandbox.wall_minutes = 1.5
c.Sandbox.case_seconds = 5
c.Sandbox.memory_gb = 2
c.Sandbox.processes = 200
"""



def test_instructor_lab_serves_formgrader_with_the_pipeline_buttons(tmp_path):
    """Fast: the lab's config swaps nbgrader's formgrader for ours, whose routes keep every nbgrader
    handler but the three that grade."""
    from nbgrader.server_extensions.formgrader import apihandlers

    from instructor.classroom import formgrader

    env = instructor_env(tmp_path / "cfg")
    assert env["JUPYTER_CONFIG_PATH"].split(os.pathsep)[0] == str(tmp_path / "cfg")
    server = json.loads((tmp_path / "cfg" / "jupyter_server_config.d" / "zz-course-instructor.json").read_text())
    assert server["ServerApp"]["jpserver_extensions"] == {"nbgrader.server_extensions.formgrader": False,
                                                          "instructor.classroom.formgrader": True}
    ours = {pattern: cls for pattern, cls, *_ in formgrader.routes()}
    theirs = {pattern: cls for pattern, cls, *_ in apihandlers.default_handlers}
    swapped = {p for p in theirs if ours[p] is not theirs[p]}
    assert swapped == {r"/formgrader/api/submission/([^/]+)/([^/]+)/autograde",
                       r"/formgrader/api/assignment/([^/]+)/([^/]+)/generate_feedback",
                       r"/formgrader/api/assignment/([^/]+)/generate_feedback",
                       # the rows of Manage Submissions and of a student's assignments, with late marks
                       r"/formgrader/api/submissions/([^/]+)", r"/formgrader/api/submission/([^/]+)/([^/]+)",
                       r"/formgrader/api/student_submissions/([^/]+)"}
    assert not {apihandlers.AutogradeHandler, apihandlers.GenerateFeedbackHandler,
                apihandlers.GenerateAllFeedbackHandler} & set(ours.values())
    for p in swapped - {r"/formgrader/api/submission/([^/]+)/([^/]+)/autograde",
                        r"/formgrader/api/assignment/([^/]+)/([^/]+)/generate_feedback",
                        r"/formgrader/api/assignment/([^/]+)/generate_feedback"}:
        assert issubclass(ours[p], theirs[p]), p  # nbgrader's handler, its reply with one more field


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _call(base: str, path: str, method: str = "GET", timeout: float = 300):
    req = urllib.request.Request(base + path, method=method, data=b"" if method == "POST" else None,
                                 headers={"Authorization": f"token {TOKEN}"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return resp.headers.get("Content-Type", ""), resp.read().decode()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("formgrader")
    course = root / "course"
    course.mkdir()
    (course / "nbgrader_config.py").write_text(COURSE_CONFIG)
    honest = next(s for s in samples.load_samples(ASSIGNMENT) if s.student == "ada")
    hostile = samples.parse_sample(REPO / "tests" / "hostile" / ASSIGNMENT / "patch_checks.py")
    for s in (honest, hostile):
        name, nb = samples.build_notebook(s)
        dest = course / "submitted" / s.student / ASSIGNMENT
        dest.mkdir(parents=True)
        nbformat.write(nb, dest / name)
    env = instructor_env(root / "jupyter-config")  # what make lab-instructor uses
    env.update(JUPYTER_RUNTIME_DIR=str(root / "runtime"), JUPYTER_DATA_DIR=str(root / "data"))
    port = _free_port()
    cmd = [sys.executable, "-m", "jupyter_server", f"--ServerApp.root_dir={course}", f"--ServerApp.port={port}",
           "--ServerApp.port_retries=0", "--ServerApp.open_browser=False", f"--IdentityProvider.token={TOKEN}"]
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    log = (root / "server.log").open("w")
    proc = subprocess.Popen(cmd, cwd=course, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 60
        while True:
            try:
                _call(base, "/formgrader/api/status", timeout=5)
                break
            except OSError:
                if proc.poll() is not None or time.time() > deadline:
                    pytest.fail("the Jupyter server did not start:\n" + (root / "server.log").read_text()[-3000:])
                time.sleep(0.5)
        yield base, course, root / "server.log"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def _gradebook_score(course: Path, student: str) -> float:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", course_id="inplace-autograd") as gb:
        return gb.find_submission(ASSIGNMENT, student).score


def _button(base: str, path: str) -> dict:
    content_type, body = _call(base, path, method="POST")
    assert "json" not in content_type, "formgrader's JS runs JSON.parse on the reply text, as nbgrader sends it"
    return json.loads(body)


@pytest.mark.slow
def test_formgrader_buttons_run_the_trusted_pipeline(server):
    base, course, server_log = server
    assert "Loading formgrader with the trusted pipeline" in server_log.read_text()

    ada = _button(base, f"/formgrader/api/submission/{ASSIGNMENT}/ada/autograde")
    assert ada["success"], ada
    assert "trusted pipeline" in ada["log"] and "ada/00_orientation: 8/8" in ada["log"], ada["log"]
    assert _gradebook_score(course, "ada") == 8

    hostile = _button(base, f"/formgrader/api/submission/{ASSIGNMENT}/patch_checks/autograde")
    assert hostile["success"], hostile
    assert "patch_checks/00_orientation: 2/8" in hostile["log"], hostile["log"]
    assert "integrity:" in hostile["log"], hostile["log"]
    assert _gradebook_score(course, "patch_checks") == 2  # plain nbgrader's button gives 8
    _, shown = _call(base, f"/formgrader/api/submission/{ASSIGNMENT}/patch_checks")
    assert json.loads(shown)["score"] == 2  # what the Manage Submissions page shows

    # Generate Feedback: the files are the ones just graded, so the pipeline's grade is reused and the
    # feedback rendered from the gradebook carries the grader's notes.
    fb = _button(base, f"/formgrader/api/assignment/{ASSIGNMENT}/patch_checks/generate_feedback")
    assert fb["success"], fb
    assert "reused" in fb["log"], fb["log"]
    html = "".join(p.read_text() for p in (course / "feedback" / "patch_checks" / ASSIGNMENT).glob("*.html"))
    assert "Notes from the grader" in html
    assert _gradebook_score(course, "patch_checks") == 2

    # The assignment-wide button does every submission the same way.
    every = _button(base, f"/formgrader/api/assignment/{ASSIGNMENT}/generate_feedback")
    assert every["success"], every
    assert "ada/00_orientation: 8/8" in every["log"] and "patch_checks/00_orientation: 2/8" in every["log"]
    assert list((course / "feedback" / "ada" / ASSIGNMENT).glob("*.html"))


@pytest.mark.slow
def test_formgrader_exports_hand_graded_points_and_a_row_per_hand_in(server):
    """After the buttons above graded ada (8/8) and patch_checks (2/8): formgrader's side bar links
    to Export Grades; the downloads carry the gradebook's points (a hand-set score included), and a
    hand-in that could not be graded gets a row with its reason, not a silent gap."""
    import csv
    import io
    import zipfile

    from nbgrader.api import Gradebook

    base, course, _ = server
    _, page = _call(base, "/formgrader/manage_assignments")
    assert 'href="/formgrader/export">Export Grades</a>' in page, "the side bar links to the export page"
    _, export_page = _call(base, "/formgrader/export")
    assert "/formgrader/export/canvas" in export_page and "Export Grades" in export_page

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", course_id="inplace-autograd") as gb:
        gb.update_or_create_student("ada", first_name="Ada", last_name="Lovelace", email="ada@example.edu")
        # assignment 0 has no written answer: the instructor overrides a test cell by hand instead
        sub = gb.find_submission(ASSIGNMENT, "patch_checks")
        cell = next(gr for nb in sub.notebooks for gr in nb.grades if gr.auto_score == 0)
        cell.manual_score = cell.max_score   # the instructor overrides one cell by hand in Manual Grading
        gb.db.commit()
        expected_patch = gb.find_submission(ASSIGNMENT, "patch_checks").score
    assert expected_patch > 2
    (course / "submitted" / "zed" / ASSIGNMENT).mkdir(parents=True)
    (course / "submitted" / "zed" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").write_text('{"cells": [')

    content_type, body = _call(base, "/formgrader/export/canvas")
    assert content_type.startswith("text/csv")
    rows = list(csv.reader(io.StringIO(body)))
    assert rows[0][:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"] and rows[0][5] == ASSIGNMENT
    by_login = {r[3]: r for r in rows[2:]}
    assert by_login["ada"][0] == "Lovelace, Ada" and float(by_login["ada"][5]) == 8
    assert float(by_login["patch_checks"][5]) == expected_patch
    assert by_login["zed"][5] == "", "a broken hand-in is an empty cell, never 0"
    _, moodle = _call(base, "/formgrader/export/moodle")
    zed = next(r for r in csv.reader(io.StringIO(moodle)) if r[0] == "zed")
    assert "corrupt notebook" in zed[2], zed
    req = urllib.request.Request(base + "/formgrader/export/gradescope", headers={"Authorization": f"token {TOKEN}"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        names = zipfile.ZipFile(io.BytesIO(resp.read())).namelist()
    assert names == [f"gradescope-{ASSIGNMENT}.csv"]
    try:   # without the token: the login page (or a refusal), never the grades
        with urllib.request.urlopen(base + "/formgrader/export/canvas", timeout=30) as resp:
            assert "login" in resp.url and "SIS Login ID" not in resp.read().decode()
    except urllib.error.HTTPError as err:
        assert err.code in (401, 403)
