"""The instructor lab end to end from the GUI, in Chromium: formgrader and the Assignments panel on
one course-local exchange.

In a temporary course folder (the repository's ``nbgrader_config.py``, ``source/`` and ``release/`` of
one assignment), two JupyterLab servers start the way the README's commands start them, as root with
container options (``LAB_ARGS``), with ``--course`` naming that folder: the instructor's
(``python -m autograder.lab --instructor``, i.e. ``make lab-instructor``) and a student's
(``python -m autograder.lab``, i.e. ``make lab``, as the student ``alice``: her student id in her
Jupyter config folder, her own nbgrader cache). Both read the folder's copy of ``nbgrader_config.py``,
whose ``c.Exchange.root`` is then that folder's ``grading/exchange``. Chromium (Playwright driving
Debian's chromium, as tests/test_browser.py does) then clicks:

1. formgrader, Manage Assignments: **Release** (00_orientation);
2. student, Nbgrader > Assignment List: **Fetch** (into ``workspace/00_orientation/``, where ``make lab``
   has students work; the copy ``make lab`` made there is removed first, as for an assignment released
   after the lab started); the student's answers are written into the fetched notebook by the test
   (typing four answers into cells is not what is tested here), the panel's **Validate** passes
   it, then **Submit**;
3. formgrader: **Collect**; Manage Submissions: **Autograde** (the course's trusted pipeline; the
   row shows 8 / 8); Manage Assignments: **Generate Feedback**, then **Release Feedback**;
4. student: **Fetch Feedback**, then "(view feedback)": the feedback file with her score.

Every step but typing the answers is a click on the page's own button; none goes round the GUI. The
formgrader pages are opened at their own URL (``/formgrader/...``), the page the lab's Formgrader tab
shows in a frame. A fast test beside it checks, without a server, that the student view's nbgrader
settings send the Assignments list to ``workspace/`` and the course's exchange.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from instructor.authoring import samples
from test_binder import _stop
from test_browser import (CHROMIUM, CHROMIUM_ARGS, VIEWPORT, _close_dialog, _free_port, _require_browser,
                          _save_failure, _wait_for_server)

REPO = Path(__file__).resolve().parents[1]
ASSIGNMENT = "00_orientation"
COURSE_ID = "inplace-autograd"
STUDENT = "alice"
GRADING_MS = 240_000   # one submission through the sandbox and the confirmation, on a busy 2-core machine
# Shorter grading limits than the course's, as tests/test_formgrader.py sets: an honest submission
# grades in seconds; a broken one must not hold the test for minutes.
FAST_LIMITS = """
c.Execute.timeout = 30
c.Sandbox.wall_minutes = 3
c.Sandbox.case_seconds = 10
c.Sandbox.memory_gb = 2
"""


@contextlib.contextmanager
def _lab(course: Path, home: Path, *args: str, user: str | None = None):
    """``python -m autograder.lab ARGS`` in ``course`` with LAB_ARGS-style options; (base URL, token)."""
    port, token = _free_port(), secrets.token_hex(16)
    home.mkdir(parents=True)
    settings = home / "lab_settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    # no "Jupyter news?" toast over the panels
    (settings / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false"}))
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(home / "config"), JUPYTER_DATA_DIR=str(home / "data"),
               JUPYTER_RUNTIME_DIR=str(home / "runtime"), JUPYTERLAB_SETTINGS_DIR=str(home / "lab_settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"))
    if user:   # her own account's nbgrader setting (both servers run as root here); nbgrader reads it there
        (home / "config").mkdir()
        (home / "config" / "nbgrader_config.py").write_text(f"c = get_config()\nc.CourseDirectory.student_id = {user!r}\n")
    cmd = [sys.executable, "-m", "autograder.lab", *args, f"--course={course}", f"--port={port}", "--no-browser",
           "--ServerApp.ip=127.0.0.1", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
           "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    log = home / "jupyterlab.log"
    proc = subprocess.Popen(cmd, cwd=home, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT,
                            start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_for_server(port, token, proc, log)
        yield base, token, log
    finally:
        _stop(proc, base, token)


def _modal(page, timeout: float = 60_000) -> str:
    """Wait for formgrader's result dialog; assert it reports success, close it, return its text."""
    modal = page.locator("#success-modal, #error-modal").first
    modal.wait_for(state="visible", timeout=timeout)
    text = modal.inner_text()
    assert modal.get_attribute("id") == "success-modal", text[-3000:]
    modal.locator(".modal-footer button").click()
    page.locator("#success-modal").wait_for(state="detached")
    return text


def _assignment_row(page):
    row = page.locator("table tbody tr", has=page.locator("td.name", has_text=ASSIGNMENT))
    row.wait_for()
    return row


def _assignments_panel(page, base: str, token: str):
    page.goto(f"{base}/lab?token={token}")
    page.get_by_role("menuitem", name="Nbgrader", exact=True).click()
    page.get_by_role("menuitem", name="Assignment List", exact=True).click()
    panel = page.locator("#nbgrader-assignment-list")
    panel.locator("#course_list_default", has_text=COURSE_ID).wait_for()
    return panel


def _refresh(panel):
    panel.locator("#refresh_assignments_list").click()


def test_student_view_points_the_assignments_list_at_the_workspace(tmp_path, monkeypatch):
    """Fast: what nbgrader's Assignments list reads in the `make lab` view -- its config loaded in the
    server's folder, then again inside the assignment folder -- names the course's exchange and
    ``workspace/`` (nbgrader's default, ".", would fetch and submit a copy beside the student's)."""
    from nbgrader.exchange import ExchangeFactory
    from nbgrader.server_extensions.assignment_list.handlers import AssignmentList

    from autograder.lab import prepare_workspace, student_env, student_exchange_config

    course = tmp_path / "course"
    shutil.copytree(REPO / "release" / ASSIGNMENT, course / "release" / ASSIGNMENT)
    shutil.copy(REPO / "nbgrader_config.py", course)
    view = tmp_path / "view"
    env = student_env(view)
    student_exchange_config(view, course)
    prepare_workspace(course)
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", env["JUPYTER_CONFIG_PATH"])
    monkeypatch.chdir(course)   # where the lab starts the server
    lister = AssignmentList()
    lister.root_dir = str(course)
    with lister.get_assignment_dir_config() as config:
        exchange = ExchangeFactory(config=config).FetchAssignment(config=config)
        assert Path(exchange.assignment_dir) == course / "workspace"
        assert Path(exchange.root) == course / "grading" / "exchange"
        assert exchange.replace_missing_files   # her copy there is never replaced by a fetch
        assert config.CourseDirectory.course_id == COURSE_ID


@pytest.mark.slow
@pytest.mark.browser
def test_release_fetch_submit_collect_grade_feedback_in_the_browser(tmp_path):
    _require_browser()
    from playwright.sync_api import sync_playwright

    started = time.monotonic()
    course = tmp_path / "course"
    for part in ("source", "release"):
        shutil.copytree(REPO / part / ASSIGNMENT, course / part / ASSIGNMENT)
    (course / "nbgrader_config.py").write_text((REPO / "nbgrader_config.py").read_text() + FAST_LIMITS)
    exchange = course / "grading" / "exchange"
    ada = next(s for s in samples.load_samples(ASSIGNMENT) if s.student == "ada")

    with _lab(course, tmp_path / "instructor", "--instructor") as (fg_base, fg_token, fg_log), \
            _lab(course, tmp_path / "student", user=STUDENT) as (st_base, st_token, st_log), \
            sync_playwright() as p:
        assert "Loading formgrader with the trusted pipeline" in fg_log.read_text()
        assert exchange.is_dir() and (exchange.stat().st_mode & 0o1777) == 0o1777
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            teacher = browser.new_page(viewport=VIEWPORT)
            student = browser.new_page(viewport=VIEWPORT)
            for page in (teacher, student):
                page.set_default_timeout(60_000)

            # 1. formgrader, Manage Assignments: Release
            teacher.goto(f"{fg_base}/formgrader/manage_assignments?token={fg_token}")
            row = _assignment_row(teacher)
            row.locator("td.release a").click()
            assert "Successfully released" in _modal(teacher)
            row.locator("td.status", has_text="released").wait_for()
            assert (exchange / COURSE_ID / "outbound" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").is_file()

            # 2. the student: Fetch, answer, Submit, all in her workspace
            work = course / "workspace" / ASSIGNMENT
            assert (work / f"{ASSIGNMENT}.ipynb").is_file()   # what make lab copied from release/
            shutil.rmtree(work)
            panel = _assignments_panel(student, st_base, st_token)
            released = panel.locator("#released_assignments_list")
            released.get_by_role("button", name="Fetch", exact=True).click()
            fetched_nb = work / f"{ASSIGNMENT}.ipynb"
            fetched = panel.locator("#fetched_assignments_list")
            fetched.get_by_role("button", name="Submit", exact=True).wait_for()
            assert fetched_nb.is_file() and not (course / ASSIGNMENT).exists()
            _, filled = samples.build_notebook(ada)    # her answers, in the fetched notebook
            nbformat.write(filled, fetched_nb)
            # the panel's Validate on her notebook (the `make lab` view reads the course's config)
            fetched.get_by_text(ASSIGNMENT, exact=True).first.click()   # unfold its notebooks
            fetched.get_by_role("button", name="Validate", exact=True).click()
            message = student.locator(".jp-Dialog #validation-message")
            message.wait_for(timeout=GRADING_MS)
            assert "validation-success" in (message.get_attribute("class") or ""), message.inner_text()[:3000]
            _close_dialog(student)
            fetched.get_by_role("button", name="Submit", exact=True).click()
            submitted = panel.locator("#submitted_assignments_list")
            submitted.get_by_role("button", name="Fetch Feedback", exact=True).wait_for()
            inbound = list((exchange / COURSE_ID / "inbound").glob(f"{STUDENT}+{ASSIGNMENT}+*"))
            assert len(inbound) == 1, inbound

            # 3. formgrader: Collect, Autograde (the trusted pipeline), Generate and Release Feedback
            row.locator("td.collect a").click()
            assert "Successfully collected" in _modal(teacher)
            assert (course / "submitted" / STUDENT / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").is_file()
            row.locator("td.num-submissions a", has_text="1").click()
            sub = teacher.locator("table tbody tr", has=teacher.locator("td", has_text=STUDENT))
            sub.locator("td.autograde a").click()
            log = _modal(teacher, timeout=GRADING_MS)
            assert "trusted pipeline" in log and f"{STUDENT}/{ASSIGNMENT}: 8/8" in log, log[-3000:]
            sub.locator("td.score", has_text="8 / 8").wait_for()

            teacher.goto(f"{fg_base}/formgrader/manage_assignments?token={fg_token}")
            row = _assignment_row(teacher)
            row.locator("td.generate-feedback a").click()
            log = _modal(teacher, timeout=GRADING_MS)
            assert "reused" in log and f"{STUDENT}/{ASSIGNMENT}: 8/8" in log, log[-3000:]
            row = _assignment_row(teacher)
            row.locator("td.release-feedback a").click()
            assert "Successfully released feedback" in _modal(teacher)

            # 4. the student: Fetch Feedback, then view it
            _refresh(panel)
            panel.get_by_text("(feedback available to fetch)").wait_for()
            submitted.get_by_role("button", name="Fetch Feedback", exact=True).click()
            panel.get_by_text("(view feedback)").first.wait_for()
            panel.get_by_text("(view feedback)").first.click()
            listing = student.locator(".jp-DirListing-content")
            listing.get_by_text(f"{ASSIGNMENT}.html").wait_for()
            [html] = (work / "feedback").glob(f"*/{ASSIGNMENT}.html")
            student.goto(f"{st_base}/files/{html.relative_to(course).as_posix()}?token={st_token}")
            text = student.locator("body").inner_text()
            assert re.search(r"Score:\s*8(\.0)?\s*/\s*8", text), text[:2000]
            assert "BEGIN HIDDEN TESTS" not in student.content()
        except Exception:
            _save_failure(browser)
            raise
        finally:
            browser.close()
    elapsed = time.monotonic() - started
    print(f"exchange in the browser: {elapsed:.0f} s")
