"""The confirmation runs every cell but the tests, nothing left out by reading the code; the course's
slow demonstration cells do less there (``autograder.runtime.grading()``, ``COURSE_GRADING=1`` set by
the driver). Issue 37, item 4."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import torch

from autograder import attack, runtime
from instructor.engine.confirm import DRIVER


def test_grading_follows_the_environment_at_each_call(monkeypatch):
    monkeypatch.delenv(runtime.GRADING_ENV, raising=False)
    assert runtime.grading() is False
    monkeypatch.setenv(runtime.GRADING_ENV, "1")
    assert runtime.grading() is True
    monkeypatch.setenv(runtime.GRADING_ENV, "0")
    assert runtime.grading() is False


def test_the_attack_figures_draw_nothing_while_grading(monkeypatch):
    monkeypatch.setenv(runtime.GRADING_ENV, "1")
    assert attack.show_attack(None, None, None) is None       # returns before touching its arguments
    assert attack.show_vanish(None, None, None, None) is None


def test_the_driver_runs_every_cell_and_sets_grading(tmp_path):
    """A name read only through a string (``getattr(fn, "__globals__")[...]``, which no static reading
    of the code sees) is there when the probe calls the answer: the cell that binds it ran, shortened
    because the driver set ``COURSE_GRADING=1`` (the process was started without it)."""
    cells = ["from autograder import grading\nSTEPS = 2 if grading() else 400",
             "history = list(range(STEPS))  # a demonstration: nothing names it",
             "def answer():\n    return len(getattr(answer, '__globals__')['history'])"]
    probe = "def probe(ns, case):\n    return student(ns, 'answer')()\n"
    job = {"cells": cells, "case_timeout": 60.0, "cell_timeout": 60.0, "cell_limits": [],
           "checks": [{"grade_id": "q", "function": "answer", "source": probe, "cases": [{}]}]}
    torch.save(job, tmp_path / "job.pt")
    shutil.copy2(DRIVER, tmp_path / "probe_driver.py")
    env = {k: v for k, v in os.environ.items() if k != runtime.GRADING_ENV}
    proc = subprocess.run([sys.executable, "probe_driver.py", "job.pt", "out"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert torch.load(tmp_path / "out" / "q.pt", weights_only=True) == [2]
    assert torch.load(tmp_path / "out" / "summary.pt", weights_only=True)["cell_errors"] == []


def test_demonstration_steps_are_full_in_a_notebook_and_shortened_when_graded(monkeypatch, capsys):
    monkeypatch.delenv(runtime.GRADING_ENV, raising=False)
    assert runtime.demonstration_steps(400, 20) == 400
    assert capsys.readouterr().out == ""          # a student's own run says nothing
    monkeypatch.setenv(runtime.GRADING_ENV, "1")
    assert runtime.demonstration_steps(400, 20) == 20
    assert "ran 20 of its 400 rounds" in capsys.readouterr().out


def test_the_kernel_is_told_only_that_it_is_graded_and_its_language():
    """What passes from ``start_kernel(env=...)`` into the sandboxed kernel about its notebook: the
    language and ``COURSE_GRADING=1``; no other value of it, nothing else of the grader's environment."""
    from instructor.sandbox.kernel import GRADING_ENV, notebook_settings

    assert GRADING_ENV == runtime.GRADING_ENV
    assert notebook_settings({"COURSE_GRADING": "1", "COURSE_LANG": "zh_CN", "HOME": "/root"}) == \
        {"COURSE_GRADING": "1", "COURSE_LANG": "zh_CN"}
    for other in ("0", "", "1; rm -rf /", "yes"):
        assert notebook_settings({"COURSE_GRADING": other}) == {}, other
    assert notebook_settings(None) == {} and notebook_settings({}) == {}
