"""``grade`` without ``--jobs``: every core, but no more than one worker per
:data:`instructor.batch.course.SUBMISSIONS_PER_WORKER` submissions (a worker is a process importing the
grading code and starting its own sandbox; below about ten notebooks that costs more than it saves on
two cores: docs/performance.md, "Workers only where they pay")."""
from __future__ import annotations

from instructor.batch.course import SUBMISSIONS_PER_WORKER, auto_jobs
from instructor.classroom import cli


def test_a_handful_of_submissions_is_graded_in_the_grading_process():
    for todo in (0, 1, 2, SUBMISSIONS_PER_WORKER, 2 * SUBMISSIONS_PER_WORKER - 1):
        assert auto_jobs(todo, cores=2) == 1, todo
        assert auto_jobs(todo, cores=16) == 1, todo


def test_a_class_gets_one_worker_per_submissions_up_to_the_cores():
    assert auto_jobs(2 * SUBMISSIONS_PER_WORKER, cores=2) == 2
    assert auto_jobs(100, cores=2) == 2
    assert auto_jobs(3 * SUBMISSIONS_PER_WORKER, cores=16) == 3
    assert auto_jobs(1000, cores=16) == 16
    assert auto_jobs(1000, cores=1) == 1


def test_an_explicit_jobs_is_kept_and_no_jobs_is_left_to_the_grader():
    parser = cli.build_parser()
    assert parser.parse_args(["grade", "subs"]).jobs is None
    assert parser.parse_args(["grade", "subs", "--jobs", "2"]).jobs == 2
    assert parser.parse_args(["demo"]).jobs is None
