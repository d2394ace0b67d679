"""Validate's dialog names each failing test by its task, so the expected / got / try next lines come first
(issue 38): nbgrader's own dialog opened on each test cell's whole code."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from autograder import validate_view

REPO = Path(__file__).resolve().parents[1]
RELEASE = REPO / "release" / "00_orientation" / "00_orientation.ipynb"


def _test_cells(nb: dict) -> dict[str, str]:
    return {c["metadata"]["nbgrader"]["grade_id"]: "".join(c["source"]) for c in nb["cells"]
            if c.get("metadata", {}).get("nbgrader", {}).get("grade") and c["cell_type"] == "code"}


def test_each_test_cell_is_one_line_naming_its_task_and_the_error_is_kept():
    nb = json.loads(RELEASE.read_text())
    tests = _test_cells(nb)
    result = {"failed": [{"source": src.strip(), "error": f"E{k}", "raw_error": f"R{k}"}
                         for k, src in enumerate(tests.values())],
              "changed": [{"source": "the edited cell's code"}]}
    shown = validate_view.reshape(json.loads(json.dumps(result)), nb)
    for entry, gid, k in zip(shown["failed"], tests, range(len(tests))):
        assert entry["source"] == (f"# the test of {gid.removesuffix('_tests')} (its code is in the notebook, "
                                   "under your answer)")
        assert (entry["error"], entry["raw_error"]) == (f"E{k}", f"R{k}")
    assert shown["changed"] == result["changed"], "an edited cell keeps its code: the student must find it"


def test_the_extension_gives_the_validate_handler_the_course_validator():
    from nbgrader.server_extensions.validate_assignment import handlers

    class Log:
        def info(self, *a):
            pass

    stock = handlers.Validator
    try:
        validate_view._load_jupyter_server_extension(type("App", (), {"log": Log()})())
        assert handlers.Validator is not stock and issubclass(handlers.Validator, stock)
        assert handlers.Validator.__name__ == "TaskFirstValidator"
    finally:
        handlers.Validator = stock


@pytest.mark.slow
def test_validating_a_fresh_copy_leads_with_the_failure_and_the_stock_dialog_does_not(tmp_path):
    from nbgrader.validator import Validator

    nb_path = tmp_path / RELEASE.name
    shutil.copy(RELEASE, nb_path)
    ours = validate_view.TaskFirstValidator().validate(str(nb_path))
    stock = Validator().validate(str(nb_path))
    assert ours["failed"] and len(ours["failed"]) == len(stock["failed"])
    for mine, theirs in zip(ours["failed"], stock["failed"]):
        assert len(mine["source"].splitlines()) == 1 and mine["source"].startswith("# the test of ")
        assert mine["error"] == theirs["error"]
    assert max(len(t["source"].splitlines()) for t in stock["failed"]) >= 3   # the control: code first
