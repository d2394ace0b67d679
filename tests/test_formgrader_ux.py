"""formgrader as a new instructor meets it (issue 38, "Messages"): the course's extension
(``instructor.classroom.formgrader``) on a real Jupyter server.

1. A late hand-in's score carries its late mark ("late: 2 h 10 min, −0.8 points (3.2 counts)": nbgrader's
   score column is the score before the penalty), and a student with no name in the gradebook (the
   demo's accounts) shows as their id, never "None, None".
2. In Manual Grading, a score typed into an autograded cell's box (or its full/no credit buttons)
   replaces the autograder's: the page asks first, and says so next to the box.
3. The side bar links to the class report, served read-only under a strict policy, and says how to
   make it when there is none.

One server for the module: the one ``tests/test_page_takeover.py`` starts (its ``formgrader`` fixture:
three students, ``mallory``, ``eve`` and ``oscar``, without names, one notebook with two autograded
test cells at 0 of 4). Each browser check has a CONTROL: the same page without the course's script
(served in its place), where the old behaviour shows.
"""
from __future__ import annotations

import datetime
import json
import os
import re
import shutil
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from instructor.classroom import formgrader as fg
from instructor.classroom import report
from test_browser import CHROMIUM, CHROMIUM_ARGS, _require_browser
from test_page_takeover import (ASSIGNMENT, COURSE_ID, GRADE_IDS, MARK, NOTEBOOK, TOKEN, VIEWPORT,  # noqa: F401
                                _grading_ready, _manual_scores, _report_results, _reset_scores, formgrader)

DUE = datetime.datetime(2026, 1, 5, 12, 0, 0)
LATE = datetime.timedelta(hours=2, minutes=10)
EVE_LATE = "late: 2 h 10 min, \u22120.8 points (3.2 counts)"


@pytest.fixture(scope="module")
def ux(formgrader):  # noqa: F811 - test_page_takeover's server, shared by this module's tests
    """The takeover's course, made an ordinary class: a due date; ``eve`` 4/8, 2 h 10 min late, 0.8
    points off; ``oscar`` with a name; ``mallory`` and ``eve`` without one (as the demo's accounts)."""
    from nbgrader.api import Gradebook

    course = formgrader["course"]
    (course / "source" / ASSIGNMENT).mkdir(parents=True, exist_ok=True)  # a student's assignments list these
    stamps = {"mallory": DUE - datetime.timedelta(minutes=5), "oscar": DUE - datetime.timedelta(minutes=5),
              "eve": DUE + LATE}
    for student, stamp in stamps.items():  # handed in: nbgrader lists a hand-in from submitted/, its timestamp.txt
        folder = course / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy2(course / "autograded" / student / ASSIGNMENT / f"{NOTEBOOK}.ipynb", folder / f"{NOTEBOOK}.ipynb")
        (folder / "timestamp.txt").write_text(stamp.strftime("%Y-%m-%d %H:%M:%S.%f UTC"))
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", course_id=COURSE_ID) as gb:
        gb.find_assignment(ASSIGNMENT).duedate = DUE
        gb.update_or_create_student("oscar", first_name="Oscar", last_name="Wilde")
        for student, stamp in stamps.items():
            gb.find_submission(ASSIGNMENT, student).timestamp = stamp
        gb.find_grade(GRADE_IDS[0], NOTEBOOK, ASSIGNMENT, "eve").auto_score = 4.0
        gb.find_submission_notebook(NOTEBOOK, ASSIGNMENT, "eve").late_submission_penalty = 0.8
        gb.db.commit()
    return formgrader


def _get(base: str, path: str, token: bool = True):
    req = urllib.request.Request(base + path, headers={"Authorization": f"token {TOKEN}"} if token else {})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


# --------------------------------------------------------------------------- without a browser

def test_late_text_says_how_late_and_what_it_cost():
    assert fg.late_text(2 * 3600 + 10 * 60, 0.8, 4) == EVE_LATE
    assert fg.late_text(26 * 3600, 1, 0.5) == "late: 1 d 2 h, \u22121 point (0 counts)"
    assert fg.late_text(42, 0.0) == "late: 42 s, no penalty"  # within the grace period
    assert fg.late_text(0, 0.0) is None and fg.late_text(None, None) is None


def test_the_api_rows_carry_the_late_mark_and_nbgrader_s_do_not(ux):
    base = ux["base"]
    _, _, body = _get(base, f"/formgrader/api/submissions/{ASSIGNMENT}")
    rows = {r["student"]: r for r in json.loads(body)}
    assert rows["eve"]["course_late"] == EVE_LATE and rows["eve"]["score"] == 4  # the score before the penalty
    assert rows["mallory"]["course_late"] is None and rows["oscar"]["course_late"] is None
    _, _, one = _get(base, f"/formgrader/api/submission/{ASSIGNMENT}/eve")  # Manage Submissions after Autograde
    assert json.loads(one)["course_late"] == EVE_LATE
    _, _, mine = _get(base, "/formgrader/api/student_submissions/eve")
    assert [r["course_late"] for r in json.loads(mine)] == [EVE_LATE]
    # the control: nbgrader's own reply has no late mark at all (its page shows 4 / 8 and nothing else)
    from nbgrader.apps.api import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config

    c = Config()
    c.CourseDirectory.root = str(ux["course"])
    c.CourseDirectory.course_id = COURSE_ID
    stock = {r["student"]: r for r in NbGraderAPI(CourseDirectory(config=c), config=c).get_submissions(ASSIGNMENT)}
    assert stock["eve"]["score"] == 4 and "course_late" not in stock["eve"]
    assert not any("late" in k for k in stock["eve"])


def test_the_submission_page_runs_the_override_confirm_with_its_nonce(ux):
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{ux['course'] / 'gradebook.db'}", course_id=COURSE_ID) as gb:
        sid = gb.find_submission_notebook(NOTEBOOK, ASSIGNMENT, "oscar").id
    status, headers, body = _get(ux["base"], f"/formgrader/submissions/{sid}/")
    assert status == 200
    page = body.decode()
    nonce = re.search(r"'nonce-([^']+)'", headers["Content-Security-Policy"]).group(1)
    assert f'<script nonce="{nonce}">{fg.OVERRIDE_SCRIPT}</script>' in page
    assert page.index(fg.OVERRIDE_SCRIPT) > page.index("formgrade_models.js")  # after GradeUI is defined


def test_the_class_report_link_the_missing_message_and_the_strict_policy(ux):
    base, course = ux["base"], ux["course"]
    path = course / report.REPORT_NAME
    assert not path.exists()
    _, _, side = _get(base, "/formgrader/manage_assignments")
    assert 'href="/formgrader/report"' in side.decode() and ">Class Report</a>" in side.decode()
    status, headers, body = _get(base, "/formgrader/report")
    text = body.decode()
    assert status == 404 and "No class report yet" in text, text[:500]
    assert "Autograde / <code>python -m autograder grade</code> first" in re.sub(r"\s+", " ", text)
    assert f"python -m autograder report --workdir {course}" in text

    written = report.write_report(_report_results(), path, source="hostile", generated="g")
    status, headers, body = _get(base, "/formgrader/report")
    assert status == 200 and body == written.read_bytes()
    assert headers["Content-Security-Policy"] == fg.REPORT_CSP
    assert headers["Content-Type"].startswith("text/html") and headers["X-Content-Type-Options"] == "nosniff"
    assert "script-src" not in fg.REPORT_CSP and fg.REPORT_CSP.startswith("sandbox;")
    # without the token: the login page or a refusal, never the report
    status, _, body = _get(base, "/formgrader/report", token=False)
    assert b"re-teach" not in body.lower() and (status in (401, 403) or b"login" in body.lower())
    # a link in the course folder's place is not followed (the control: the same bytes as a file are served)
    elsewhere = course.parent / "elsewhere.html"
    elsewhere.write_bytes(b"<p>secret</p>")
    path.unlink()
    path.symlink_to(elsewhere)
    try:
        status, _, body = _get(base, "/formgrader/report")
        assert status == 404 and b"secret" not in body
    finally:
        path.unlink()
    path.write_bytes(elsewhere.read_bytes())
    try:
        assert _get(base, "/formgrader/report")[2] == b"<p>secret</p>"
    finally:
        path.unlink()


# --------------------------------------------------------------------------- in Chromium

def _without(page: bytes, script: str) -> str:
    """The page as served, less the course's ``script`` (the control)."""
    text = page.decode()
    out = re.sub(r"<script[^>]*>" + re.escape(script) + r"</script>\n?", "", text)
    assert out != text, "the course's script is not in the page"
    return out


def _open(browser, url: str, fulfil=None):
    """A page at ``url`` (``fulfil``: (html, csp) served in its place), its dialogs and console."""
    context = browser.new_context(extra_http_headers={"Authorization": f"token {TOKEN}"}, viewport=VIEWPORT)
    seen = {"dialogs": [], "console": [], "marks": [], "answer": "dismiss"}

    def route(r):
        u = r.request.url
        if u.startswith(MARK):
            seen["marks"].append(u)
            return r.fulfill(status=204)
        if fulfil is not None and u.split("?")[0] == url.split("?")[0]:
            html, csp = fulfil
            return r.fulfill(status=200, body=html, headers={"Content-Type": "text/html; charset=utf-8",
                                                             **({"Content-Security-Policy": csp} if csp else {})})
        return r.continue_()

    def dialog(d):
        seen["dialogs"].append(d.message)
        d.accept() if seen["answer"] == "accept" else d.dismiss()

    context.route("**/*", route)
    page = context.new_page()
    page.on("dialog", dialog)
    page.on("console", lambda m: seen["console"].append(m.text))
    page.on("pageerror", lambda e: seen["console"].append(f"uncaught: {e}"))
    page.goto(url, wait_until="load", timeout=60_000)
    return context, page, seen


ROWS = """() => Object.fromEntries([...document.querySelectorAll('tbody tr')].map(
    tr => [tr.children[1] ? tr.children[1].innerText.trim() : '', [...tr.children].map(td => td.innerText.trim())]))"""


@pytest.mark.browser
def test_formgrader_pages_mark_late_name_by_id_confirm_overrides_and_the_controls_do_not(ux):
    _require_browser()
    from nbgrader.api import Gradebook
    from playwright.sync_api import sync_playwright

    base, course = ux["base"], ux["course"]
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", course_id=COURSE_ID) as gb:
        sid = gb.find_submission_notebook(NOTEBOOK, ASSIGNMENT, "oscar").id
    manage = f"{base}/formgrader/manage_submissions/{ASSIGNMENT}"
    _, _, manage_page = _get(base, f"/formgrader/manage_submissions/{ASSIGNMENT}")
    _, sub_headers, sub_page = _get(base, f"/formgrader/submissions/{sid}/")
    report_url = f"{base}/formgrader/report"
    hostile_report = (f'<p id="r">report</p><script>document.getElementById("r").textContent = "ran"</script>'
                      f'<img src="{MARK}report-img">').encode()
    (course / report.REPORT_NAME).write_bytes(hostile_report)
    box = f"#{GRADE_IDS[0]}"

    def rows(browser, url, fulfil=None, wait="mallory"):
        context, page, seen = _open(browser, url, fulfil)
        try:
            page.wait_for_function(f"() => document.body.innerText.includes({json.dumps(wait)}) && "
                                   "!document.body.innerText.includes('Loading, please wait')", timeout=20_000)
            page.wait_for_timeout(300)
            return page.evaluate(ROWS), page.evaluate("() => document.body.innerText"), seen
        finally:
            context.close()

    def override(browser, fulfil=None):
        """Type 3 into the first test cell's box (cancelling, then confirming), click the second's
        full credit (cancelling): the dialogs seen and the gradebook's manual scores after each step."""
        _reset_scores(course, "oscar")
        context, page, seen = _open(browser, f"{base}/formgrader/submissions/{sid}/", fulfil)
        steps = {}
        try:
            _grading_ready(page)
            steps["note"] = page.evaluate("() => [...document.querySelectorAll('.course-override-note')]"
                                          ".map(e => e.innerText)")
            for answer in ("dismiss", "accept"):
                seen["answer"] = answer
                page.fill(box, "3")
                page.press(box, "Tab")
                page.wait_for_timeout(800)
                steps[answer] = (_manual_scores(course, "oscar"), page.input_value(box))
            seen["answer"] = "dismiss"
            page.click(f".nbgrader_cell:has(#{GRADE_IDS[1]}) button.full-credit")
            page.wait_for_timeout(800)
            steps["full-credit"] = _manual_scores(course, "oscar")
            return steps, seen
        finally:
            context.close()

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            shown, text, seen = rows(browser, manage)
            control_shown, control_text, _ = rows(browser, manage, (_without(manage_page, fg.PAGES_SCRIPT), None))
            _, students_text, _ = rows(browser, f"{base}/formgrader/manage_students")
            eve_rows, _, _ = rows(browser, f"{base}/formgrader/manage_students/eve", wait=ASSIGNMENT)
            steps, confirm_seen = override(browser)
            control_steps, control_seen = override(browser, (_without(sub_page, fg.OVERRIDE_SCRIPT),
                                                             sub_headers["Content-Security-Policy"]))
            served = {}
            for variant, fulfil in (("defended", None), ("control", (hostile_report.decode(), None))):
                context, page, rseen = _open(browser, report_url, fulfil)
                page.wait_for_timeout(500)
                served[variant] = (page.inner_text("#r"), rseen["marks"])
                context.close()
        finally:
            browser.close()
            (course / report.REPORT_NAME).unlink()
            _reset_scores(course, "oscar")

    # 1. late marks and names: the eve row's score cell holds its late mark; no one is "None, None"
    assert shown["eve"][4] == f"4 / 8\n{EVE_LATE}", shown["eve"]
    assert shown["mallory"][0] == "mallory" and shown["oscar"][0] == "Wilde, Oscar" and shown["eve"][0] == "eve"
    assert "late" not in shown["oscar"][4] and "late" not in shown["mallory"][4]
    assert "None, None" not in text and "None, None" not in students_text and "mallory" in students_text
    assert any(EVE_LATE in cell for row in eve_rows.values() for cell in row), eve_rows  # a student's assignments
    # ... the control (nbgrader's page as it is): the score alone, the nameless as "None, None"
    assert control_shown["eve"][4] == "4 / 8" and control_shown["mallory"][0] == "None, None", control_shown
    assert "late:" not in control_text
    # 2. an autograded cell's box asks first; "Cancel" keeps the autograder's score, "OK" overrides
    untouched = {g: None for g in GRADE_IDS}
    assert steps["note"] == [fg.OVERRIDE_NOTE] * len(GRADE_IDS), steps
    assert len(confirm_seen["dialogs"]) == 3 and "REPLACES the autograder" in confirm_seen["dialogs"][0]
    assert steps["dismiss"] == (untouched, ""), steps
    assert steps["accept"][0] == {GRADE_IDS[0]: 3.0, GRADE_IDS[1]: None}, steps
    assert steps["full-credit"] == {GRADE_IDS[0]: 3.0, GRADE_IDS[1]: None}, steps  # cancelled: not saved
    assert [m for m in confirm_seen["console"] if "Content Security Policy" in m or "uncaught" in m] == []
    # ... the control (the page without the course's script): no question, the override saved at once
    assert control_seen["dialogs"] == [] and control_steps["note"] == [], control_steps
    assert control_steps["dismiss"][0] == {GRADE_IDS[0]: 3.0, GRADE_IDS[1]: None}, control_steps
    assert control_steps["full-credit"] == {GRADE_IDS[0]: 3.0, GRADE_IDS[1]: 4.0}, control_steps
    # 3. the report's policy: a script or a remote image in it does nothing; the control (no policy) runs both
    assert served["defended"] == ("report", []), served
    assert served["control"][0] == "ran" and served["control"][1], served
