"""The course's late-submission policy: a share of a notebook's points off per started day late.

nbgrader's autograde (the course's trusted pipeline included: :func:`instructor.engine.pipeline.sandboxed_config` and
:func:`instructor.engine.pipeline.replay_config` keep nbgrader's ``AssignLatePenalties`` step) compares the submission's
``timestamp.txt`` (written by ``nbgrader submit``, kept by the course's collect, which re-stamps it with the
folder's latest change time when it was backdated: :class:`.exchange.CourseExchangeCollect`) with the assignment's
due date in the gradebook (``python -m instructor.classroom.hub due ASSIGNMENT WHEN``, or formgrader's
Manage Assignments). For a late submission it asks ``AssignLatePenalties.plugin_class`` for each
notebook's penalty; ``nbgrader_config.py`` names :class:`PerDayPenalty`::

    c.AssignLatePenalties.plugin_class = "instructor.classroom.late.PerDayPenalty"
    c.PerDayPenalty.percent_per_day = 10     # of the notebook's points, per started day (24 h) late
    c.PerDayPenalty.grace_minutes = 0        # a submission this little late loses nothing
    c.PerDayPenalty.of = "max_score"         # or "score": a share of what the notebook earned

One hour late is one started day. The penalty is never more than the notebook's score (nbgrader
checks that too) and never negative. The gradebook keeps it as the notebook's
``late_submission_penalty``: formgrader's feedback shows "Late submission penalty (Score: -N)" and
the course's exports (:mod:`.export`) subtract it ("late: N point(s) off").
"""
from __future__ import annotations

import math

from nbgrader.plugins import LateSubmissionPlugin
from traitlets import Enum, Float

__all__ = ["PerDayPenalty", "days_late"]

DAY = 24 * 3600.0


def days_late(seconds_late: float, grace_seconds: float = 0.0) -> int:
    """Started days late: 0 on time or within the grace period, 1 for one second to 24 hours late."""
    if seconds_late is None or seconds_late <= grace_seconds:
        return 0
    return math.ceil(seconds_late / DAY)


class PerDayPenalty(LateSubmissionPlugin):
    """``percent_per_day`` percent of the notebook's points off per started day late, capped at the score."""

    percent_per_day = Float(10.0, min=0.0, help="Percent of the notebook's points taken off per started day "
                            "(24 hours) late.").tag(config=True)
    grace_minutes = Float(0.0, min=0.0, help="A submission at most this many minutes late loses nothing "
                          "(days are still counted from the due date).").tag(config=True)
    of = Enum(("max_score", "score"), default_value="max_score",
              help="What the percentage is of: the notebook's maximum points ('max_score'), or the points "
                   "the submission earned ('score').").tag(config=True)

    def max_score(self, score: float) -> float:
        """The notebook's maximum points, from the gradebook nbgrader's AssignLatePenalties has open
        (its ``parent``); the score when there is none (the plugin used on its own)."""
        parent = self.parent
        try:
            nb = parent.gradebook.find_submission_notebook(parent.notebook_id, parent.assignment_id,
                                                           parent.student_id)
            return float(nb.max_score)
        except Exception:  # noqa: BLE001 - no gradebook: the plugin used without nbgrader's preprocessor
            return float(score)

    def penalty(self, score: float, max_score: float, seconds_late: float) -> float:
        days = days_late(seconds_late, self.grace_minutes * 60)
        basis = max_score if self.of == "max_score" else score
        off = days * self.percent_per_day / 100.0 * max(0.0, float(basis))
        return round(min(max(0.0, off), max(0.0, float(score))), 6)

    def late_submission_penalty(self, student_id: str, score: float, total_seconds_late: float) -> float:
        score = float(score or 0.0)
        off = self.penalty(score, self.max_score(score) if self.of == "max_score" else score, total_seconds_late)
        self.log.warning("%s: %s started day(s) late, %g%% of the notebook's %s per day: %g point(s) off",
                         student_id, days_late(total_seconds_late, self.grace_minutes * 60), self.percent_per_day,
                         "points" if self.of == "max_score" else "score", off)
        return off
