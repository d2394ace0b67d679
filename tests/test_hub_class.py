"""A class on the course's JupyterHub: due dates, the late penalty, and (slow, in Chromium) the whole
round of one assignment between an instructor and two students.

Fast tests: the late-penalty plugin (instructor/classroom/late.py) on its own and through nbgrader's
``AssignLatePenalties`` step with the course's configuration (the step the trusted pipeline keeps), and
``python -m instructor.classroom.hub due`` writing the gradebook's due date (UTC unless a zone is given).

The slow test mirrors tests/test_hub.py (a real hub on free ports as root, OS accounts ``icxc-*``
removed afterwards, also on failure); see its docstring for what it does.
"""
from __future__ import annotations

import datetime as dt
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from instructor.classroom import hub as hubmod  # noqa: E402
from instructor.classroom.late import PerDayPenalty, days_late  # noqa: E402

ASSIGNMENT = "00_orientation"
HOUR, DAY = 3600.0, 86400.0


# --------------------------------------------------------------------------- the plugin alone

def test_days_late_counts_started_days():
    assert days_late(0) == 0 and days_late(-5) == 0
    assert days_late(1) == 1 and days_late(HOUR) == 1 and days_late(DAY) == 1
    assert days_late(DAY + 1) == 2 and days_late(3 * DAY - 1) == 3
    assert days_late(10 * 60, grace_seconds=15 * 60) == 0 and days_late(16 * 60, grace_seconds=15 * 60) == 1


def test_per_day_penalty_on_time_one_hour_late_and_capped():
    plugin = PerDayPenalty(percent_per_day=10)
    assert plugin.penalty(8, 8, 0) == 0                    # on time: nothing off
    assert plugin.penalty(8, 8, HOUR) == pytest.approx(0.8)  # one hour late: one day's penalty
    assert plugin.penalty(8, 8, DAY) == pytest.approx(0.8)
    assert plugin.penalty(8, 8, DAY + 1) == pytest.approx(1.6)
    assert plugin.penalty(3, 8, 5 * DAY) == 3              # never more than the score
    assert plugin.penalty(0, 8, 30 * DAY) == 0             # never negative
    assert PerDayPenalty(percent_per_day=50).penalty(8, 8, 40 * DAY) == 8
    assert PerDayPenalty(percent_per_day=10, of="score").penalty(4, 8, HOUR) == pytest.approx(0.4)
    assert PerDayPenalty(percent_per_day=10, grace_minutes=30).penalty(8, 8, 20 * 60) == 0
    # used without nbgrader's preprocessor (no gradebook): a share of the score
    assert PerDayPenalty(percent_per_day=25).late_submission_penalty("s", 4, HOUR) == 1


def test_the_course_configuration_names_the_plugin_and_the_pipeline_keeps_the_step():
    from nbgrader.preprocessors import AssignLatePenalties

    from instructor.engine.pipeline import replay_config, sandboxed_config
    from instructor.layout import load_config

    config = load_config(REPO)
    assert config.AssignLatePenalties.plugin_class == "instructor.classroom.late.PerDayPenalty"
    assert AssignLatePenalties(config=config).plugin_class is PerDayPenalty
    for cfg in (sandboxed_config(REPO), replay_config(REPO)):
        assert AssignLatePenalties in cfg.Autograde.autograde_preprocessors


def _gradebook_with_a_submission(path: Path, due: dt.datetime, submitted: dt.datetime, auto: float):
    """A gradebook: one assignment (one notebook, one 8-point test cell), one submission scored ``auto``."""
    from nbgrader.api import Gradebook

    from instructor.engine.pipeline import prepare_environment

    prepare_environment()  # nbgrader runs `alembic` by name

    with Gradebook(f"sqlite:///{path}") as gb:
        gb.add_assignment(ASSIGNMENT, duedate=due)
        gb.add_notebook(ASSIGNMENT, assignment=ASSIGNMENT)
        gb.add_grade_cell("tests", ASSIGNMENT, ASSIGNMENT, max_score=8, cell_type="code")
        gb.add_student("s1")
        gb.add_submission(ASSIGNMENT, "s1", timestamp=submitted)
        grade = gb.find_grade("tests", ASSIGNMENT, ASSIGNMENT, "s1")
        grade.auto_score = auto
        gb.db.commit()


@pytest.mark.parametrize("late_by, auto, expected", [
    (dt.timedelta(minutes=-5), 8, None),     # on time: no penalty row at all
    (dt.timedelta(hours=1), 8, 0.8),         # one hour: one day's 10 % of 8 points
    (dt.timedelta(days=1, hours=1), 8, 1.6),
    (dt.timedelta(days=30), 2, 2),           # capped at the score
])
def test_nbgrader_assigns_the_course_penalty_in_the_gradebook(tmp_path, late_by, auto, expected):
    """nbgrader's own AssignLatePenalties step, configured from the course's nbgrader_config.py, as the
    trusted pipeline runs it after SaveAutoGrades: the notebook's late_submission_penalty in the gradebook,
    and the score formgrader and the exports show."""
    from nbgrader.api import Gradebook
    from nbgrader.preprocessors import AssignLatePenalties

    from instructor.layout import load_config

    db = tmp_path / "gradebook.db"
    due = dt.datetime(2026, 12, 10, 17, 0)
    _gradebook_with_a_submission(db, due, due + late_by, auto)
    step = AssignLatePenalties(config=load_config(REPO))
    resources = {"nbgrader": {"notebook": ASSIGNMENT, "assignment": ASSIGNMENT, "student": "s1",
                              "db_url": f"sqlite:///{db}"}}
    step.preprocess(nbformat.v4.new_notebook(), resources)
    with Gradebook(f"sqlite:///{db}") as gb:
        nb = gb.find_submission_notebook(ASSIGNMENT, ASSIGNMENT, "s1")
        assert nb.late_submission_penalty == (pytest.approx(expected) if expected is not None else None)
        sub = gb.find_submission(ASSIGNMENT, "s1")
        assert sub.late_submission_penalty == pytest.approx(expected or 0)
        from instructor.classroom.export import sheet_from_gradebook

        entry = sheet_from_gradebook(gb, ["s1"]).grades[("s1", ASSIGNMENT)]
        assert entry.score == pytest.approx(auto - (expected or 0))
        assert ("late:" in entry.comment) == bool(expected), entry
        if expected:
            assert f"late: {expected:g} point(s) off" in entry.comment, entry


# --------------------------------------------------------------------------- due dates

def test_parse_due_is_utc_unless_a_zone_is_given():
    p = hubmod.parse_due
    assert p("2026-12-10 17:00") == dt.datetime(2026, 12, 10, 17, 0)
    assert p("2026-12-10 17:00 UTC") == p("2026-12-10T17:00:00Z") == dt.datetime(2026, 12, 10, 17, 0)
    assert p("2026-12-10 17:00 Europe/Berlin") == dt.datetime(2026, 12, 10, 16, 0)   # CET, +01:00
    assert p("2026-07-10 17:00 Europe/Berlin") == dt.datetime(2026, 7, 10, 15, 0)    # CEST, +02:00
    assert p("2026-12-10 9:30 -05:00") == dt.datetime(2026, 12, 10, 14, 30)
    for bad in ("tomorrow", "2026-12-10", "2026-13-01 10:00", "2026-12-10 17:00 Mars/Olympus"):
        with pytest.raises(hubmod.HubError, match="due date"):
            p(bad)


def test_due_sets_the_assignment_due_date_in_the_course_gradebook(tmp_path, monkeypatch):
    """``due ASSIGNMENT WHEN`` (the command line, as root on a hub): the gradebook's due date, which
    formgrader's Manage Assignments shows and the late penalty reads; ``none`` clears it."""
    from nbgrader.api import Gradebook
    from nbgrader.apps import NbGraderAPI

    hub = hubmod.Hub(prefix=str(tmp_path / "p"))
    (hub.course / "source" / ASSIGNMENT).mkdir(parents=True)
    hub.save()
    monkeypatch.setattr(hubmod, "_give_course", lambda hub, path: None)   # no grader account here
    assert hubmod.set_due(hub, ASSIGNMENT, "2026-12-10 17:00 Europe/Berlin") == dt.datetime(2026, 12, 10, 16, 0)
    with Gradebook(f"sqlite:///{hub.course / 'gradebook.db'}") as gb:
        assert gb.find_assignment(ASSIGNMENT).duedate == dt.datetime(2026, 12, 10, 16, 0)
    from traitlets.config import Config

    cfg = Config()
    cfg.CourseDirectory.root = str(hub.course)
    cfg.CourseDirectory.course_id = hubmod.COURSE_ID
    cfg.Exchange.root = str(tmp_path / "exchange")
    shown = NbGraderAPI(config=cfg).get_assignment(ASSIGNMENT)
    assert shown["duedate"] == "2026-12-10T16:00:00" and shown["display_duedate"] == "2026-12-10 16:00:00 UTC", shown
    with pytest.raises(hubmod.HubError, match="no assignment 'nope'"):
        hubmod.set_due(hub, "nope", "2026-12-10 17:00")
    assert hubmod.set_due(hub, ASSIGNMENT, "none") is None
    with Gradebook(f"sqlite:///{hub.course / 'gradebook.db'}") as gb:
        assert gb.find_assignment(ASSIGNMENT).duedate is None
    # the command line: a bad date is refused with the form to use, exit 2
    r = subprocess.run([sys.executable, "-m", "instructor.classroom.hub", "due", ASSIGNMENT, "next friday",
                        "--prefix", str(hub.root)], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert r.returncode == 2 and "YYYY-MM-DD HH:MM" in r.stderr, r.stderr


# --------------------------------------------------------------------------- a class on a real hub

NP = "icxc-"   # not test_hub.py's icxt-: the two may run side by side
ACCOUNTS = ("student1", "student2", "instructor", "grader2", "inplace-grader")


def _hub_why_not() -> str | None:
    from test_hub import WHY_NOT

    if WHY_NOT:
        return WHY_NOT
    chromium = os.environ.get("COURSE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not os.access(chromium, os.X_OK):
        return f"no chromium at {chromium}"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "needs playwright (pip install playwright)"
    return None


def _remove_accounts(prefix: Path) -> None:
    try:
        hubmod.remove(hubmod.Hub.load(prefix))
    except hubmod.HubError:
        pass
    for name in ACCOUNTS:
        if hubmod.user_exists(NP + name):  # never leave an account behind
            subprocess.run(["pkill", "-KILL", "-u", NP + name], capture_output=True)
            subprocess.run(["userdel", "--remove", "--force", NP + name], capture_output=True)
    for g in ("inplace-graders", "inplace-students"):
        subprocess.run(["groupdel", NP + g], capture_output=True)


@pytest.fixture
def class_hub():
    """A hub as tests/test_hub.py's ``deployed`` makes it (set-up with demo accounts, locked down,
    JupyterHub on free ports), with this module's account names; removed afterwards, also on failure."""
    from test_hub import PASSWORD, _proxy, _stop, hub_base
    import requests

    _proxy()
    for name in ACCOUNTS:
        if hubmod.user_exists(NP + name):
            pytest.fail(f"account {NP + name} is left from an earlier run: userdel -r {NP + name}")
    base = hub_base("icxc-hub-")
    prefix = base / "p"
    proc = None
    ports = {"hub_api_port": hubmod.free_port(), "proxy_api_port": hubmod.free_port(),
             "service_port": hubmod.free_port()}
    port = hubmod.free_port()
    try:
        tomorrow = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=1)).strftime("%Y-%m-%d %H:%M")
        hub, _ = hubmod.setup(prefix, names_prefix=NP, demo=True, demo_password=PASSWORD, port=port,
                              ip="127.0.0.1", ports=ports, due={ASSIGNMENT: tomorrow})   # setup --due
        log = open(base / "hub.log", "wb")
        proc = subprocess.Popen([sys.executable, "-m", "jupyterhub", "-f", str(REPO / "hub" / "jupyterhub_config.py")],
                                cwd=hub.state, env=dict(os.environ, HUB_PREFIX=str(prefix)), stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 90
        while True:
            try:
                if requests.get(f"{url}/hub/api/", timeout=5).status_code == 200 and requests.get(
                        f"{url}/services/{hub.names.service}/api/status", timeout=5,
                        allow_redirects=False).status_code in (200, 302, 403):
                    break
            except requests.ConnectionError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail("the hub did not start:\n" + (base / "hub.log").read_text()[-4000:])
            time.sleep(0.5)
        yield {"hub": hub, "url": url, "log": base / "hub.log", "password": PASSWORD, "due": tomorrow}
    finally:
        if proc is not None:
            _stop(proc, prefix / "state")
        _remove_accounts(prefix)
        shutil.rmtree(base, ignore_errors=True)
        assert not any(hubmod.user_exists(NP + n) for n in ACCOUNTS)


HUB_WHY_NOT = _hub_why_not()


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.skipif(HUB_WHY_NOT is not None, reason=HUB_WHY_NOT or "")
def test_a_class_on_the_hub_release_submit_late_forged_grade_feedback(class_hub):
    """One assignment (00_orientation) through a class on a real hub, in Chromium where a person clicks:

    1. the instructor sets its due date (``setup --due``, ``hub due``; formgrader shows it) and presses
       **Release**;
    2. two students sign in (PAM passwords, their own OS accounts), **Fetch** it in the Assignments
       panel, answer (the sample answers of tests/samples/00_orientation/ada.py written into the
       fetched notebook), the first **Validate**\\s, both **Submit**: the first on time; then the due
       date is moved to a moment after the first submission (the deadline passes), and the second
       submits after it (nbgrader writes the true time in timestamp.txt);
    3. the first student also submits under the second's name (``nbgrader submit
       --CourseDirectory.student_id=...``): formgrader's **Collect** refuses that folder, naming it, and
       collects both students' own;
    4. the instructor presses **Autograde** for each (the trusted pipeline), comments a cell by hand
       (formgrader's API: 00_orientation has no written answer), **Generate Feedback**, **Release Feedback**;
    5. each student fetches their own feedback (the second in the panel) and cannot read the other's;
       the late one shows nbgrader's "Late submission penalty", the gradebook and formgrader's Moodle
       export take 0.8 points (10 % of 8, one started day) off.
    """
    from playwright.sync_api import sync_playwright
    from nbgrader.api import Gradebook
    from nbgrader.utils import parse_utc

    from instructor.authoring import samples
    from test_browser import CHROMIUM, CHROMIUM_ARGS, VIEWPORT, _close_dialog, _save_failure
    from test_exchange_gui import _modal
    from test_hub import Client, as_user, can_read

    t0 = time.monotonic()
    hub, url, pw = class_hub["hub"], class_hub["url"], class_hub["password"]
    s1, s2, teacher_login = f"{NP}student1", f"{NP}student2", f"{NP}instructor"
    svc = f"{url}/services/{hub.names.service}/formgrader"
    exchange = hub.exchange / hubmod.COURSE_ID
    ada = next(s for s in samples.load_samples(ASSIGNMENT) if s.student == "ada")
    gradebook = f"sqlite:///{hub.course / 'gradebook.db'}"

    def hub_cli(*argv):
        r = subprocess.run([sys.executable, "-m", "instructor.classroom.hub", *argv, "--prefix", str(hub.root)],
                           capture_output=True, text=True, cwd=REPO, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr
        return r.stdout

    def nbgrader_as(user, *step):
        env = ["env", "-i", f"PATH={hub.env}/bin:/usr/bin:/bin", f"HOME=/home/{user}", "LANG=C.UTF-8",
               f"JUPYTER_CONFIG_PATH={hub.root / 'etc' / 'student'}"]
        return subprocess.run(["runuser", "-u", user, "--", *env, str(hub.python), "-m", "nbgrader", *step],
                              cwd=f"/home/{user}", capture_output=True, text=True, timeout=120)

    def answer(user, marker):
        """The sample's answers in the student's fetched notebook, written as the student would save it."""
        path = Path(f"/home/{user}/{ASSIGNMENT}/{ASSIGNMENT}.ipynb")
        assert path.is_file(), list(Path(f"/home/{user}").rglob("*.ipynb"))
        _, nb = samples.build_notebook(ada)
        nb.cells.append(nbformat.v4.new_markdown_cell(f"handed in by {marker}"))
        nbformat.write(nb, path)
        uid = hubmod.pwd.getpwnam(user)
        os.chown(path, uid.pw_uid, uid.pw_gid)

    # 1. the due date, tomorrow (set-up's --due, then the `due` command, as the instructor would fix it)
    tomorrow = class_hub["due"]
    with Gradebook(gradebook) as gb:
        assert gb.find_assignment(ASSIGNMENT).duedate == dt.datetime.strptime(tomorrow, "%Y-%m-%d %H:%M")
    assert f"{ASSIGNMENT} due {tomorrow}:00 UTC" in hub_cli("due", ASSIGNMENT, tomorrow)

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            def sign_in(user):
                page = browser.new_context(viewport=VIEWPORT).new_page()
                page.set_default_timeout(120_000)
                page.goto(f"{url}/hub/login")
                page.fill("input[name=username]", user)
                page.fill("input[name=password]", pw)
                page.click("[type=submit]")
                return page

            def assignments_panel(page, user):
                page.wait_for_url(f"**/user/{user}/lab**")
                page.wait_for_selector(".jp-Launcher")
                page.get_by_role("menuitem", name="Nbgrader", exact=True).click()
                page.get_by_role("menuitem", name="Assignment List", exact=True).click()
                panel = page.locator("#nbgrader-assignment-list")
                panel.locator("#course_list_default", has_text=hubmod.COURSE_ID).wait_for()
                return panel

            teacher = sign_in(teacher_login)
            teacher.wait_for_load_state("networkidle")
            teacher.goto(f"{svc}/manage_assignments")
            row = teacher.locator("table tbody tr", has=teacher.locator("td.name", has_text=ASSIGNMENT))
            row.wait_for()
            assert tomorrow in row.locator("td.duedate").inner_text(), row.inner_text()
            row.locator("td.release a").click()
            assert "Successfully released" in _modal(teacher)
            assert (exchange / "outbound" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").is_file()

            # 2. the students: sign in, Fetch, answer; the first validates and submits on time
            pages = {s1: sign_in(s1), s2: sign_in(s2)}
            panels = {}
            for user, page in pages.items():
                panel = panels[user] = assignments_panel(page, user)
                panel.locator("#released_assignments_list").get_by_role("button", name="Fetch", exact=True).click()
                panel.locator("#fetched_assignments_list").get_by_role("button", name="Submit", exact=True).wait_for()
                answer(user, user)
            fetched = panels[s1].locator("#fetched_assignments_list")
            fetched.get_by_text(ASSIGNMENT, exact=True).first.click()   # unfold its notebooks
            fetched.get_by_role("button", name="Validate", exact=True).click()
            message = pages[s1].locator(".jp-Dialog #validation-message")
            message.wait_for(timeout=180_000)
            assert "validation-success" in (message.get_attribute("class") or ""), message.inner_text()[:3000]
            _close_dialog(pages[s1])
            fetched.get_by_role("button", name="Submit", exact=True).click()
            panels[s1].locator("#submitted_assignments_list").get_by_role(
                "button", name="Fetch Feedback", exact=True).wait_for()
            [mine] = list(exchange.glob(f"inbound/{s1}+{ASSIGNMENT}+*"))
            on_time = parse_utc((mine / "timestamp.txt").read_text().strip())   # naive UTC, as nbgrader reads it
            # the deadline passes: due one second after the first submission, the second submits after it
            due = on_time + dt.timedelta(seconds=1)
            hub_cli("due", ASSIGNMENT, due.strftime("%Y-%m-%d %H:%M:%S"))
            while dt.datetime.now(dt.timezone.utc).replace(tzinfo=None) <= due + dt.timedelta(seconds=1):
                time.sleep(0.2)
            panels[s2].locator("#fetched_assignments_list").get_by_role("button", name="Submit", exact=True).click()
            panels[s2].locator("#submitted_assignments_list").get_by_role(
                "button", name="Fetch Feedback", exact=True).wait_for()

            # 3. the first student hands in under the second's name
            answer(s1, f"{s1} pretending to be {s2}")
            forged = nbgrader_as(s1, "submit", ASSIGNMENT, f"--CourseDirectory.student_id={s2}")
            assert forged.returncode == 0, forged.stderr  # nbgrader's submit itself believes the name
            forged_dirs = [d for d in exchange.glob(f"inbound/{s2}+{ASSIGNMENT}+*")
                           if d.stat().st_uid == hubmod.pwd.getpwnam(s1).pw_uid]
            assert len(forged_dirs) == 1, forged_dirs

            # 4. the instructor: Collect (refuses the forged folder, by name), Autograde each, comment,
            #    Generate and Release Feedback
            teacher.goto(f"{svc}/manage_assignments")
            row = teacher.locator("table tbody tr", has=teacher.locator("td.name", has_text=ASSIGNMENT))
            row.locator("td.collect a").click()
            modal = teacher.locator("#success-modal, #error-modal").first
            modal.wait_for(state="visible", timeout=120_000)
            text = modal.inner_text()
            assert modal.get_attribute("id") == "error-modal", text[-3000:]
            assert forged_dirs[0].name in text and s1 in text, text[-3000:]   # the folder, and who made it
            modal.locator(".modal-footer button").click()
            for user, marker in ((s1, s1), (s2, s2)):
                nb = (hub.course / "submitted" / user / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_text()
                assert f"handed in by {marker}" in nb and "pretending" not in nb, user
            teacher.goto(f"{svc}/manage_submissions/{ASSIGNMENT}")
            for user in (s1, s2):
                sub = teacher.locator("table tbody tr", has=teacher.locator("td", has_text=user))
                sub.locator("td.autograde a").click()
                log = _modal(teacher, timeout=300_000)
                assert "trusted pipeline" in log and f"{user}/{ASSIGNMENT}: 8/8" in log, log[-3000:]
            with Gradebook(gradebook) as gb:
                assert gb.find_assignment(ASSIGNMENT).duedate == due.replace(microsecond=0)
                first, second = gb.find_submission(ASSIGNMENT, s1), gb.find_submission(ASSIGNMENT, s2)
                assert first.total_seconds_late == 0 and not first.late_submission_penalty
                assert 0 < second.total_seconds_late < 3600, second.total_seconds_late
                assert second.late_submission_penalty == pytest.approx(0.8), second.late_submission_penalty
                assert second.score == 8
            # a comment by hand (formgrader's API, as the instructor's browser session sends it)
            api = Client(url)
            assert api.login(teacher_login, pw) == 302
            api.s.get(f"{svc}/manage_submissions/{ASSIGNMENT}", timeout=60)
            xsrf = next(k.value for k in api.s.cookies if k.name == "_xsrf" and k.path.startswith("/services/"))
            subs = api.s.get(f"{svc}/api/submitted_notebooks/{ASSIGNMENT}/{ASSIGNMENT}", timeout=60).json()
            nb_id = next(s["id"] for s in subs if s["student"] == s2)
            comments = api.s.get(f"{svc}/api/comments", params={"submission_id": nb_id}, timeout=60).json()
            note = "Handed in after the deadline: 10% off. Well argued otherwise."
            r = api.s.put(f"{svc}/api/comment/{comments[0]['id']}", headers={"X-XSRFToken": xsrf}, timeout=60,
                          json={**comments[0], "manual_comment": note})
            assert r.status_code == 200, r.text
            teacher.goto(f"{svc}/manage_assignments")
            row = teacher.locator("table tbody tr", has=teacher.locator("td.name", has_text=ASSIGNMENT))
            row.locator("td.generate-feedback a").click()
            _modal(teacher, timeout=300_000)
            row = teacher.locator("table tbody tr", has=teacher.locator("td.name", has_text=ASSIGNMENT))
            row.locator("td.release-feedback a").click()
            assert "Successfully released feedback" in _modal(teacher)

            # 5. feedback: the second student in the panel, the first with nbgrader's command
            panel = panels[s2]
            panel.locator("#refresh_assignments_list").click()
            panel.get_by_text("(feedback available to fetch)").wait_for()
            panel.locator("#submitted_assignments_list").get_by_role("button", name="Fetch Feedback", exact=True).click()
            panel.get_by_text("(view feedback)").first.wait_for()
            r = nbgrader_as(s1, "fetch_feedback", ASSIGNMENT)
            assert r.returncode == 0, r.stderr
            feedback = {u: list(Path(f"/home/{u}/{ASSIGNMENT}/feedback").glob(f"*/{ASSIGNMENT}.html")) for u in (s1, s2)}
            assert all(len(f) == 1 for f in feedback.values()), feedback
            late_page, on_time_page = feedback[s2][0].read_text(), feedback[s1][0].read_text()
            assert "Late submission penalty (Score: -0.8)" in late_page, late_page[:3000]
            assert "Late submission penalty" not in on_time_page
            assert note in late_page and note not in on_time_page
            assert f"handed in by {s2}" in late_page and f"handed in by {s1}" in on_time_page
            assert not can_read(s1, feedback[s2][0]) and not can_read(s2, feedback[s1][0])
            assert not can_read(s1, exchange / "feedback")   # the released files are not listed to students
            # the exports: formgrader's Moodle download has the late score and says why
            import csv
            import io

            csv_text = api.s.get(f"{svc}/export/moodle", timeout=60).text
            rows = {r[0]: r[1:] for r in csv.reader(io.StringIO(csv_text))}
            assert float(rows[s2][0]) == pytest.approx(7.2) and rows[s2][1] == "late: 0.8 point(s) off", csv_text
            assert float(rows[s1][0]) == 8 and rows[s1][1] == "", csv_text
        except Exception:
            _save_failure(browser)
            raise
        finally:
            browser.close()
    print(f"a class on the hub: {time.monotonic() - t0:.0f} s after set-up")


# --------------------------------------------------------------------------- `grade` on a folder of its own

@pytest.mark.slow
def test_grade_on_another_folder_keeps_the_hand_in_time_and_the_late_penalty(tmp_path, monkeypatch):
    """``python -m autograder grade`` on a ``submitted/`` folder outside its course folder (nbgrader's layout:
    the notebook and ``timestamp.txt``): the hand-in time travels with the notebook, so a submission half a day
    after the due date loses the course's 10 % of 8 points; one on time loses nothing. (Before, only the
    notebooks were copied and nbgrader saw no late hand-in.)"""
    from nbgrader.api import Gradebook

    from instructor.authoring import samples

    ada = next(s for s in samples.load_samples(ASSIGNMENT) if s.student == "ada")
    name, nb = samples.build_notebook(ada)
    for student, stamp in (("late", "2026-01-01 12:00:00.000000 UTC"), ("ontime", "2025-12-31 23:00:00.000000 UTC")):
        folder = tmp_path / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / name)
        (folder / "timestamp.txt").write_text(stamp)
    course = tmp_path / "course"
    course.mkdir()
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))  # alembic
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        gb.update_or_create_assignment(ASSIGNMENT, duedate=dt.datetime(2026, 1, 1, 0, 0))
    env = dict(os.environ, PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    r = subprocess.run([sys.executable, "-m", "autograder", "grade", str(tmp_path / "submitted"), "--workdir",
                        str(course), "--out", str(tmp_path / "out"), "--no-progress", "--jobs", "1"], cwd=REPO,
                       env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        late, ontime = (gb.find_submission(ASSIGNMENT, s) for s in ("late", "ontime"))
        assert gb.find_assignment(ASSIGNMENT).duedate == dt.datetime(2026, 1, 1, 0, 0)
        assert (late.score, late.late_submission_penalty) == (8, pytest.approx(0.8)), late.to_dict()
        assert (ontime.score, ontime.late_submission_penalty) == (8, 0), ontime.to_dict()
