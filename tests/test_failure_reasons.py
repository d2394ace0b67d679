"""A failed grading says why: the last lines of the failing process's error output reach the grader's
output, the ledger, grades.csv and the feedback's note — never nbgrader's "Please see the above
traceback" alone — and reading them never follows a link a submission left in their place."""
from __future__ import annotations

import csv
import json
import os
import stat
import sys
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from instructor.classroom import cli  # noqa: E402
from instructor.batch import course  # noqa: E402
from instructor.engine import pipeline  # noqa: E402
from instructor.authoring import samples  # noqa: E402
from instructor import sandbox  # noqa: E402
from instructor.engine.confirm import clean_text, error_tail  # noqa: E402

ASSIGNMENT = "00_orientation"
SENTINEL = "SENTINEL-why-the-run-ended-4711"
CANARY = "CANARY-root-only-secret-0815"


# --------------------------------------------------------------------------- reading the error output

def test_error_tail_keeps_the_last_lines_bounded_and_clean(tmp_path):
    f = tmp_path / ".sandbox-stderr"
    f.write_bytes(b"x" * 100_000 + b"\n" + b"".join(b"line %d\n" % i for i in range(50))
                  + b"\x1b[31mred\x1b[0m \x07bell\x00 \xff\xfe\n")
    tail = error_tail(f)
    lines = tail.splitlines()
    assert len(lines) == 20 and lines[0] == "line 31" and lines[-1] == "red bell \ufffd\ufffd"
    assert len(tail.encode()) <= 4096
    assert not any(ord(c) < 32 and c != "\n" for c in tail)
    assert clean_text("a\u202eb\tc\r\nd") == "ab    c\nd"   # bidi override gone, tab as spaces, CRLF as LF


@pytest.mark.parametrize("kind", ["symlink", "fifo", "directory"])
def test_a_forged_error_file_is_never_followed_nor_read(tmp_path, kind):
    secret = tmp_path / "root-only"
    secret.write_text(CANARY + "\n")
    os.chmod(secret, 0o600)
    f = tmp_path / "scratch" / ".sandbox-stderr"
    f.parent.mkdir()
    if kind == "symlink":
        f.symlink_to(secret)
        assert CANARY in f.read_text()   # the control: following the link (as a plain open does) reads the secret
    elif kind == "fifo":
        os.mkfifo(f)                     # a plain open would wait for a writer forever
    else:
        f.mkdir()
    got = error_tail(f)
    assert CANARY not in got and "not read" in got


def _nbgrader_failure(traceback_text: str) -> dict:
    """What nbgrader's API returns when autograde fails (``capture_log``): the traceback it logged, then
    its closing line, and the traceback of its own NbGraderException."""
    log = ("[INFO] Sanitizing /c/submitted/ann/a/a.ipynb\n"
           "[ERROR] There was an error processing assignment: /c/submitted/ann/a\n"
           f"[ERROR] {traceback_text}\n"
           "[ERROR] There was an error processing assignment 'a' for student 'ann'\n"
           "[ERROR] Please see the the above traceback for details on the specific errors on the above failures.\n")
    error = ("Traceback (most recent call last):\n  File \"nbgrader/apps/api.py\", line 1, in autograde\n"
             "nbgrader.converters.base.NbGraderException: Please see the the above traceback for details on the "
             "specific errors on the above failures.\n")
    return {"success": False, "log": log, "error": error}


def test_the_reason_is_the_logged_exception_not_see_the_above_traceback():
    tb = ("Traceback (most recent call last):\n" + "".join(f"  File \"f{i}.py\", line {i}, in g\n    call()\n"
                                                          for i in range(30))
          + "RuntimeError: Kernel died before replying to kernel_info")
    reason = pipeline.failure_reason(_nbgrader_failure(tb))
    first, *rest = reason.splitlines()
    assert first == "RuntimeError: Kernel died before replying to kernel_info"
    assert 1 <= len(rest) <= 19 and rest[-1] == "    call()"
    assert "above traceback" not in reason


def test_without_a_traceback_the_reason_is_what_was_logged_as_an_error():
    out = {"success": False, "log": "[ERROR] Kernel 'python3' is gone\n[ERROR] Please see the the above traceback "
                                    "for details.\n", "error": ""}
    assert pipeline.failure_reason(out) == "Kernel 'python3' is gone"
    alone = {"success": False, "log": "[ERROR] Please see the the above traceback for details.\n", "error": ""}
    reason = pipeline.failure_reason(alone)
    assert "above traceback" not in reason and reason.startswith("nbgrader failed and logged no reason")


# --------------------------------------------------------------------------- through the real pipeline

def _sample(folder: Path, student: str, cell: str) -> samples.Sample:
    path = folder / ASSIGNMENT / f"{student}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"# about: test\n# base: {ASSIGNMENT}/ada\n# expect: auto=8\n\n"
                    f"# %% after: cube_sum_grad_tests\n{cell}\n")
    return samples.parse_sample(path)


def _submissions(tmp_path: Path, cells: dict[str, str]) -> list[course.Submission]:
    subs = []
    for student, cell in cells.items():
        name, nb = samples.build_notebook(_sample(tmp_path / "samples", student, cell))
        dest = tmp_path / "incoming" / student / ASSIGNMENT / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, dest)
        subs.append(course.Submission(student, ASSIGNMENT, [dest]))
    return subs


def _rows(path: Path) -> dict[str, dict]:
    with path.open(newline="") as f:
        return {r["student"]: r for r in csv.DictReader(f)}


@pytest.mark.slow
def test_a_run_that_fails_says_why_in_grades_csv_and_the_feedback_note(tmp_path, capsys):
    """A cell that writes its reason to the process's error output and ends the process: the
    confirmation run's flag carries those last lines (grades.csv, the feedback's note, the summary).
    Another replaces the error file with a link to a root-only file first: it is not read."""
    secret = tmp_path / "root-only"
    secret.write_text(CANARY + "\n")
    os.chmod(secret, 0o600)
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    subs = _submissions(tmp_path, {
        "says_why": f"import os\nos.write(2, b'Traceback (most recent call last):\\nValueError: {SENTINEL}\\n')\n"
                    "os._exit(3)",
        "links_it": "import os\n"
                    "if os.path.lexists('.sandbox-stderr'):\n"
                    "    os.unlink('.sandbox-stderr')\n"
                    f"    os.symlink({str(secret)!r}, '.sandbox-stderr')\n"
                    "os._exit(3)",
    })
    work, out = tmp_path / "course", tmp_path / "out"
    status = cli._grade_and_report(subs, [], work, out, progress=False, jobs=1)
    printed = capsys.readouterr()
    rows = _rows(out / "grades.csv")
    says = rows["says_why"]
    assert says["status"] == "graded", says
    assert f"ValueError: {SENTINEL}" in says["flags"] and "ended the confirmation run" in says["flags"], says["flags"]
    assert f"ValueError: {SENTINEL}" in printed.out      # the grader's own summary names it
    [page] = (work / "feedback" / "says_why" / ASSIGNMENT).glob("*.html")
    note = page.read_text()
    assert "Notes from the grader" in note and SENTINEL in note
    ledger = json.loads((work / "grading-ledger.json").read_text())
    assert any(SENTINEL in f for f in ledger[f"says_why/{ASSIGNMENT}"]["result"]["flags"])

    linked = rows["links_it"]["flags"]
    if sandbox.status()["bwrap"]:   # the link is made inside the run's scratch folder
        assert "replaced by a symbolic link: not read" in linked, linked
    everything = (out / "grades.csv").read_text() + printed.out + printed.err + (work / "grading-ledger.json").read_text()
    everything += "".join(p.read_text() for p in (work / "feedback").rglob("*.html"))
    assert CANARY not in everything
    assert status == 0


@pytest.mark.slow
def test_a_grading_that_fails_says_why_not_see_the_above_traceback(tmp_path, monkeypatch, capsys):
    """The kernel cannot start (its module is made to be missing: the pre-started sandbox's kernel
    command): nbgrader's autograde fails; the reason — the exception nbgrader logged and the kernel's
    own last error lines — is in grades.csv, the ledger and the grader's output."""
    if not (os.geteuid() == 0 and sandbox.status()["bwrap"]):
        pytest.skip("the kernel's command is replaced in the pre-started sandbox (root, bubblewrap)")
    import importlib

    from instructor.sandbox import zygote

    def missing(connection_file):
        return ["no_such_kernel_module_4711", "-f", connection_file]

    modules = [sandbox, zygote]
    try:  # where the kernel's command may live (the sandbox module re-exports it)
        modules.append(importlib.import_module("instructor.sandbox.kernel"))
    except ImportError:
        pass
    for module in modules:
        if hasattr(module, "kernel_argv"):
            monkeypatch.setattr(module, "kernel_argv", missing)
    subs = _submissions(tmp_path, {"no_kernel": "pass"})
    work, out = tmp_path / "course", tmp_path / "out"
    status = cli._grade_and_report(subs, [], work, out, progress=False, jobs=1)
    printed = capsys.readouterr()
    assert status == 1
    row = _rows(out / "grades.csv")["no_kernel"]
    assert row["status"].startswith("error: "), row
    reason = row["status"][len("error: "):]
    first = reason.splitlines()[0]
    assert "above traceback" not in first and "Error" in first, reason
    assert "kernel" in reason.lower()
    assert "no_such_kernel_module_4711" in reason, reason   # the kernel's own error output
    ledger = json.loads((work / "grading-ledger.json").read_text())
    assert ledger[f"no_kernel/{ASSIGNMENT}"]["result"]["error"] == reason
    assert first in printed.err and "no_such_kernel_module_4711" in printed.err


def test_the_probe_driver_s_own_failure_reaches_its_error_output(tmp_path):
    """The driver silences sys.stderr (what a notebook prints does not matter); a failure of the driver
    itself is written to file descriptor 2, the .sandbox-stderr the grader reads, not lost with it."""
    import subprocess
    import sys

    from instructor.hidden import probe_driver

    proc = subprocess.run([sys.executable, probe_driver.__file__, str(tmp_path / "no-such-job.pt"), str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 1
    assert "Traceback" in proc.stderr and "no-such-job.pt" in proc.stderr, proc.stderr[-2000:]
