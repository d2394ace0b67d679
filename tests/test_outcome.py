"""One submission's outcome as plain data, apart from the files grading wrote (#37, item 3): one
serializer (``Outcome.to_json`` / ``from_json``) for the service's wire and the ledger, and one
constructor for a submission that could not be graded (``Outcome.failed``)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from instructor.batch import client
from instructor.batch.course import Ledger
from instructor.engine.pipeline import Outcome, QuestionScore, Result, Submission


def _graded() -> Result:
    return Result("ann", "00_orientation", True,
                  [QuestionScore("cube_sum_grad_tests", 2.0, 2.0, "auto"),
                   QuestionScore("written_answer", None, 3.0, "manual")],
                  seconds=3.5, flags=["cell 3 ended the Python process"], integrity=["x: kept 0"],
                  confirm_seconds=1.25, sandboxed=True, verdicts={"cube_sum_grad_tests": {"passed": True}},
                  phases={"confirm": 1.25}, started=1.0, notes=["a note"],
                  feedback=[Path("/srv/feedback/ann.html")], autograded=[Path("/srv/autograded/ann.ipynb")],
                  executed={"00_orientation.ipynb": "{}"})


def test_an_outcome_goes_to_json_and_back_with_every_score_and_no_artifact():
    res = _graded()
    data = res.to_json()
    json.dumps(data)                                      # plain JSON
    assert not {"feedback", "autograded", "executed"} & set(data)   # files stay where grading ran
    back = Result.from_json(json.loads(json.dumps(data)))
    assert back.questions == res.questions and back.auto_score == 2.0 and back.manual_pending == 3.0
    for name in ("student", "assignment", "ok", "flags", "integrity", "verdicts", "phases", "seconds",
                 "confirm_seconds", "sandboxed", "started", "notes"):
        assert getattr(back, name) == getattr(res, name), name
    assert back.feedback == [] and back.executed == {}
    assert Outcome.from_json(data) == res.outcome


@pytest.mark.parametrize("bad, says", [
    ([], "JSON object"),
    ({"student": "ann", "ok": True}, "assignment"),
    ({"student": "ann", "assignment": "a", "ok": True, "questions": [{"grade_id": "g"}]}, "questions"),
])
def test_what_is_not_an_outcome_is_refused_saying_what_is_wrong(bad, says):
    with pytest.raises(ValueError, match=says):
        Outcome.from_json(bad)


def test_a_failure_is_made_by_one_constructor_with_its_reason():
    res = Result.failed("bob", "03_yolo_head", "the submission killed its grading worker 2 times; not retried",
                        flags=["f", "f", "g"])
    assert not res.ok and res.error.startswith("the submission killed") and res.flags == ["f", "g"]
    assert res.questions == [] and isinstance(res, Outcome)


def test_the_service_wire_carries_the_outcome_and_the_executed_notebooks_only():
    res = _graded()
    wire = json.loads(json.dumps(client.result_to_json(res)))
    back = client.result_from_json(wire)
    assert back.questions == res.questions and back.executed == res.executed
    assert back.feedback == [] and back.autograded == []  # the service's own paths mean nothing here
    with pytest.raises(ValueError):
        client.result_from_json({"outcome": {"student": "x"}, "executed": {}})


def test_the_ledger_keeps_the_outcome_and_its_files_and_reads_an_older_ledger(tmp_path):
    nb = tmp_path / "in" / "00_orientation.ipynb"
    nb.parent.mkdir()
    nb.write_text("{}")
    sub = Submission("ann", "00_orientation", [nb])
    ledger = Ledger(tmp_path)
    ledger.record(sub, _graded())
    again = Ledger(tmp_path).unchanged(sub)
    assert again.questions == _graded().questions and again.feedback == _graded().feedback
    assert again.notes == []                             # a note is of one run
    # a ledger written before the outcome had its own type: the files inside the result
    old = json.loads(ledger.path.read_text())
    entry = old[Ledger.key(sub)]
    entry["result"].update(entry.pop("files"), executed={})
    ledger.path.write_text(json.dumps(old))
    older = Ledger(tmp_path).unchanged(sub)
    assert older.questions == _graded().questions and older.autograded == _graded().autograded
