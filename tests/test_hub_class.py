"""A class on the course's JupyterHub: due dates, the late penalty, and (slow, in Chromium) the whole
round of one assignment between an instructor and two students.

Fast tests: the late-penalty plugin (instructor/grading/late.py) on its own and through nbgrader's
``AssignLatePenalties`` step with the course's configuration (the step the trusted pipeline keeps), and
``python -m instructor.grading.hub due`` writing the gradebook's due date (UTC unless a zone is given).

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
import tempfile
import time
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from instructor.grading import hub as hubmod  # noqa: E402
from instructor.grading.late import PerDayPenalty, days_late  # noqa: E402

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

    from instructor.grading.pipeline import replay_config, sandboxed_config
    from instructor.layout import load_config

    config = load_config(REPO)
    assert config.AssignLatePenalties.plugin_class == "instructor.grading.late.PerDayPenalty"
    assert AssignLatePenalties(config=config).plugin_class is PerDayPenalty
    for cfg in (sandboxed_config(REPO), replay_config(REPO)):
        assert AssignLatePenalties in cfg.Autograde.autograde_preprocessors


def _gradebook_with_a_submission(path: Path, due: dt.datetime, submitted: dt.datetime, auto: float):
    """A gradebook: one assignment (one notebook, one 8-point test cell), one submission scored ``auto``."""
    from nbgrader.api import Gradebook

    from instructor.grading.pipeline import prepare_environment

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
        from instructor.grading.export import sheet_from_gradebook

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
    r = subprocess.run([sys.executable, "-m", "instructor.grading.hub", "due", ASSIGNMENT, "next friday",
                        "--prefix", str(hub.root)], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert r.returncode == 2 and "YYYY-MM-DD HH:MM" in r.stderr, r.stderr
