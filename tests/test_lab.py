"""`make lab`'s student view: the same panels off as on Binder (read from postBuild)."""
from __future__ import annotations

import json

from autograder.lab import student_env, student_view


def test_student_view_turns_the_instructor_panels_off_and_keeps_validate(tmp_path):
    lab_off, server_off = student_view()
    assert "@jupyter/nbgrader:formgrader" in lab_off
    assert not any("validate" in p or "assignment-list" in p for p in lab_off), "students need Validate"
    assert "nbgrader.server_extensions.formgrader" in server_off
    env = student_env(tmp_path / "cfg")
    page = json.loads((tmp_path / "cfg" / "labconfig" / "page_config.json").read_text())
    assert set(page["disabledExtensions"]) == set(lab_off) == set(page["lockedExtensions"])
    server = json.loads((tmp_path / "cfg" / "jupyter_server_config.d" / "zz-course-student.json").read_text())
    assert server["ServerApp"]["jpserver_extensions"] == {e: False for e in server_off}
    assert env["JUPYTER_CONFIG_PATH"].split(":")[0] == str(tmp_path / "cfg")
