"""The sandbox and the package split, tested directly (seconds, no nbgrader).

The full proof, hostile notebooks graded by the real pipeline, is ``tests/test_hostile.py``.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from instructor.grading import sandbox
from instructor.grading.probe_driver import sanitize, unwrap

REPO = Path(__file__).resolve().parents[1]

needs_bwrap = pytest.mark.skipif(not sandbox.status()["bwrap"] and not __import__("os").environ.get("CI"),
                                 reason="bubblewrap not installed here (CI installs it)")


def _run(tmp_path, code: str, **limits) -> tuple[sandbox.RunResult, dict]:
    (tmp_path / "probe.py").write_text(code + "\nimport json\njson.dump(OUT, open('out.json', 'w'))\n")
    res = sandbox.run([sandbox.python(), "probe.py"], tmp_path, limits=sandbox.Limits(**limits), wall_seconds=60)
    out = json.loads((tmp_path / "out.json").read_text()) if (tmp_path / "out.json").exists() else {}
    return res, out


@needs_bwrap
def test_the_sandbox_sees_only_the_student_package_and_its_scratch(tmp_path):
    res, out = _run(tmp_path, f"""
import os, socket
REPO = {str(REPO)!r}
OUT = {{"uid": os.getuid(), "repo": sorted(os.listdir(REPO)), "pid1": open('/proc/1/cmdline').read()[:40]}}
for p in ["/root", "/work/main/source", REPO + "/instructor", REPO + "/source", REPO + "/tests"]:
    OUT[p] = os.path.exists(p)
try:
    open(REPO + "/autograder/checks.py", "a")
    OUT["package_writable"] = True
except OSError:
    OUT["package_writable"] = False
try:
    socket.create_connection(("127.0.0.1", 22), timeout=1)
    OUT["net"] = True
except OSError:
    OUT["net"] = False
import autograder.checks, autograder.verdicts
try:
    import instructor
    OUT["instructor"] = True
except ImportError:
    OUT["instructor"] = False
""")
    assert res.returncode == 0 and res.sandboxed, res
    assert out["uid"] == 65534
    assert out["repo"] == [".venv", "autograder"] or set(out["repo"]) <= {".venv", "autograder"}, out["repo"]
    assert not out[str(REPO / "instructor")] and not out[str(REPO / "source")] and not out[str(REPO / "tests")]
    assert out["instructor"] is False and out["package_writable"] is False and out["net"] is False


@needs_bwrap
def test_limits_stop_memory_forks_and_time(tmp_path):
    (tmp_path / "m").mkdir()
    res, out = _run(tmp_path / "m", "OUT = {}\nx = bytearray(3 << 30)\nx[::4096] = b'1' * len(x[::4096])",
                    memory_bytes=1 << 30)
    assert res.returncode != 0 and not out, res
    assert "memory" in res.reason or "SIG" in res.reason or "status" in res.reason, res.reason
    (tmp_path / "f").mkdir()
    res, out = _run(tmp_path / "f", """
import os, time
n = 0
for _ in range(2000):
    try:
        if os.fork() == 0:
            time.sleep(60); os._exit(0)
        n += 1
    except OSError:
        break
OUT = {"forked": n}""", processes=64)
    assert res.returncode == 0 and out["forked"] < 200, (res, out)
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "loop.py").write_text("while True:\n    pass\n")
    res = sandbox.run([sandbox.python(), "loop.py"], tmp_path / "t", limits=sandbox.Limits(), wall_seconds=3)
    assert res.timed_out and "wall-clock" in res.reason and res.seconds < 15


def test_sanitize_keeps_plain_data_and_drops_behaviour():
    import torch

    class Always(str):
        def __eq__(self, other):
            return True

    class Weird(torch.Tensor):
        pass

    value = {"s": Always("x"), "t": torch.ones(2).as_subclass(Weird), "tuple": (1, 2.5), "set": {3},
             "obj": object(), "nested": [{"k": True}]}
    clean = unwrap(sanitize(value))
    assert type(clean["s"]) is str and clean["s"] == "x" and clean["s"] != "y"
    assert type(clean["t"]) is torch.Tensor and clean["tuple"] == (1, 2.5) and clean["set"] == {3}
    assert clean["obj"] == {"__object__": "object"} and clean["nested"] == [{"k": True}]


def test_the_student_install_holds_no_answers_and_no_hidden_checks(tmp_path):
    """Build the wheel a student would install: only autograder/, and no reference answer in it."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(REPO / name, src / name)
    shutil.copytree(REPO / "autograder", src / "autograder", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "instructor", src / "instructor", ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                    str(tmp_path / "wheel"), str(src)], check=True, capture_output=True)
    [wheel] = (tmp_path / "wheel").glob("*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        text = "\n".join(z.read(n).decode("utf-8", "replace") for n in names if n.endswith(".py"))
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"autograder"}, tops
    for answer in ("reference_decode", "ReferenceFixedDetect", "pgd_attack", "vanish_attack", "reference_model",
                   "check_fixed_decode", "check_category", "BEGIN SOLUTION", "FIX_CANDIDATES", "def classify("):
        assert answer not in text, f"the student package still holds {answer!r}"
    assert not re.search(r"^from instructor|^import instructor", text, re.M), "student code imports instructor"
