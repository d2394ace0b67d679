"""One Executor face for every place a batch is graded, and the dead-worker rule written once (#37, item 1:
the batch's executor). The end-to-end deaths (a pool, Dask, the service) are in test_parallel.py and
test_grading_service.py; these are the rule's own millisecond tests."""
from __future__ import annotations

import re

import pytest

from instructor.batch import course, parallel
from instructor.batch.parallel import MAX_WORKER_DEATHS, DeadWorkerRule, Executor, WorkerDied
from instructor.engine.pipeline import Outcome, Result
from instructor.layout import REPO


def _dies(times: int, then="graded"):
    calls = []

    def grade():
        calls.append(1)
        if len(calls) <= times:
            raise WorkerDied("x")
        return then
    return grade, calls


def test_a_submission_whose_worker_died_beside_others_is_graded_again_alone():
    grade, calls = _dies(0)
    assert DeadWorkerRule().alone_until_graded("k", "ann", "a", grade) == "graded" and len(calls) == 1


def test_one_death_alone_is_forgiven_once_more():
    grade, calls = _dies(MAX_WORKER_DEATHS - 1)
    assert DeadWorkerRule().alone_until_graded("k", "ann", "a", grade) == "graded"
    assert len(calls) == MAX_WORKER_DEATHS


def test_a_submission_that_kills_its_workers_alone_is_flagged_with_its_reason_not_tried_again():
    grade, calls = _dies(99)
    res = DeadWorkerRule().alone_until_graded("k", "ann", "a", grade)
    assert len(calls) == MAX_WORKER_DEATHS                    # not tried forever
    assert isinstance(res, Outcome) and not res.ok
    assert res.error == f"the submission killed its grading worker {MAX_WORKER_DEATHS} times; not retried"
    assert res.flags == [res.error]


def test_dask_s_deaths_are_counted_per_submission():
    rule = DeadWorkerRule()
    assert rule.died_alone(1, "ann", "a") is None            # first death: placed again
    assert rule.died_alone(2, "bob", "a") is None            # another submission's count is its own
    flagged = rule.died_alone(1, "ann", "a")
    assert isinstance(flagged, Result) and flagged.student == "ann" and "2 times" in flagged.error


def test_every_place_is_an_executor():
    for cls in (parallel.PoolExecutor, parallel.DaskExecutor, parallel.ServiceExecutor, course.InProcessExecutor):
        assert issubclass(cls, Executor) and cls.run is not Executor.run, cls
    with pytest.raises(NotImplementedError):
        Executor().run([0], lambda i, res: None)


def test_the_rule_is_written_once():
    """No runner counts deaths or words the flag itself: one place (DeadWorkerRule)."""
    sources = {p: p.read_text(encoding="utf-8") for p in (REPO / "instructor").rglob("*.py")}
    worded = [p for p, text in sources.items() if "killed its grading worker" in text]
    assert worded == [REPO / "instructor" / "batch" / "parallel.py"], worded
    counted = [p for p, text in sources.items() if re.search(r"\bMAX_WORKER_DEATHS\b", text)]
    assert counted == [REPO / "instructor" / "batch" / "parallel.py"], counted
    assert parallel.__file__ and len(re.findall(r"killed its grading worker", sources[counted[0]])) == 1
