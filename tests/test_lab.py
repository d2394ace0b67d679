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


def _start_lab(args: list[str], env: dict, timeout: float = 90) -> tuple[int, str]:
    """Run ``python -m autograder.lab ARGS`` until its server answers /api/status; (status, log)."""
    import os
    import secrets
    import signal
    import subprocess
    import sys
    import time
    import urllib.request

    from test_browser import _free_port

    port, token = _free_port(), secrets.token_hex(16)
    proc = subprocess.Popen([sys.executable, "-m", "autograder.lab", *args, f"--port={port}", "--no-browser",
                             "--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={token}"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    status, deadline = 0, time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={token}", timeout=2) as r:
                    status = r.status
                    break
            except OSError:
                time.sleep(0.5)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            out, _ = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
    return status, out


def test_make_lab_starts_as_root_and_as_a_user(tmp_path):
    """`make lab` (python -m autograder.lab) answers on the port it was given, with the options a
    container passes (LAB_ARGS: ip, port, no browser). As root, Jupyter refuses to start unless
    --allow-root is given: the lab adds it itself, so a 200 here as root is the proof. As a plain
    user, tests/test_binder.py runs JupyterLab the same way."""
    import os

    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(tmp_path / "cfg"), JUPYTER_RUNTIME_DIR=str(tmp_path / "rt"))
    status, log = _start_lab([], env)
    assert status == 200, log[-3000:]
    status, log = _start_lab(["--instructor"], env)
    assert status == 200, log[-3000:]
