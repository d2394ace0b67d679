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

from instructor.sandbox import isolation
from instructor.sandbox.workspace import Workspace
from instructor import sandbox
from instructor.hidden.probe_driver import sanitize, unwrap

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
    assert out["uid"] == (isolation.sandbox_uid() if sandbox.drops_privileges() else 65534)
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


# ------------------------------------------------------------------------------------------ the host

SECRETS = ["/etc/shadow", "/etc/gshadow", "/proc/1/environ", "/root/.bashrc", "/etc/ssh/ssh_host_ed25519_key"]
_READER = """
import json, os
OUT = {"uid_map": open("/proc/self/uid_map").read().split(), "uid": os.getuid()}
for p in %r:
    try:
        with open(p, "rb") as f:
            OUT[p] = "read %%d bytes" %% len(f.read())
    except OSError as err:
        OUT[p] = type(err).__name__
""" % (SECRETS,)


@needs_bwrap
def test_the_sandbox_is_never_root_outside(tmp_path):
    """Grading as root, the sandbox runs as an unprivileged *host* uid: root's files stay closed."""
    if __import__("os").geteuid() == 0 and not sandbox.drops_privileges():
        pytest.skip("this host does not let root run bubblewrap privileged (no CAP_SYS_ADMIN): the sandbox "
                    "falls back to a user namespace, root outside, and `python -m instructor.sandbox` says so")
    res, out = _run(tmp_path, _READER)
    assert res.returncode == 0 and res.sandboxed, res
    inside, outside = int(out["uid_map"][0]), int(out["uid_map"][1])
    host_uid = outside + (out["uid"] - inside)
    assert host_uid != 0, f"the sandbox user is host uid 0: {out}"
    for p in SECRETS:
        assert not out[p].startswith("read"), f"{p} was readable in the sandbox: {out}"
    if sandbox.drops_privileges():
        assert host_uid == isolation.sandbox_uid() and host_uid >= sandbox.Limits().host_uid


@pytest.mark.skipif(__import__("os").geteuid() != 0, reason="the attack needs a grader running as root")
@needs_bwrap
def test_without_the_drop_root_files_are_readable(tmp_path, monkeypatch):
    """The control: bubblewrap started by root with a user namespace maps the sandbox user to host
    uid 0, and owner checks pass (what the defence above prevents)."""
    monkeypatch.setattr(isolation, "drops_privileges", lambda: False)   # where its callers look it up
    res, out = _run(tmp_path, _READER)
    assert res.returncode == 0 and res.sandboxed, res
    assert out["uid_map"][:2] == ["65534", "0"], out
    assert out["/etc/shadow"].startswith("read"), out


_FILLER = """
import os
OUT = {}
for where in (".", "/tmp", "/dev/shm"):
    n = 0
    try:
        with open(os.path.join(where, "fill.bin"), "wb") as f:
            for _ in range(64):
                f.write(b"x" * (1 << 20)); f.flush(); n += 1
    except OSError as err:
        OUT[where + " error"] = type(err).__name__
    OUT[where] = n
    os.remove(os.path.join(where, "fill.bin"))
"""


_SHARE_MEMORY = """
import torch
x = torch.arange(4.0)
ptr = x.untyped_storage().data_ptr()
x.share_memory_()
OUT = {"shared": x.is_shared(), "moved": x.untyped_storage().data_ptr() != ptr, "version": x._version}
"""


@needs_bwrap
@pytest.mark.parametrize("pre_started", [True, False], ids=["pre-started", "fresh"])
def test_a_lesson_can_share_memory_in_the_sandbox(tmp_path, pre_started):
    """``tensor.share_memory_()`` (assignment 2's lesson) works in either sandbox: /dev/shm is a sized tmpfs
    of the sandbox's own. (Bubblewrap's /dev/shm is a folder no run may write: the cell failed with
    "unable to open shared memory object ... Permission denied" in every graded kernel, and every
    student's feedback showed the traceback.)"""
    from instructor.sandbox.box import Sandbox

    with Sandbox(sandbox.Limits(), pre_started=pre_started) as box:
        run = box.folder / "share"
        run.mkdir()
        (run / "probe.py").write_text(_SHARE_MEMORY + "\nimport json\njson.dump(OUT, open('out.json', 'w'))\n")
        res = box.run("probe.py", [], run, wall_seconds=120)
        assert res.returncode == 0, (res, (run / ".sandbox-stderr").read_text()[-2000:]
                                     if (run / ".sandbox-stderr").exists() else "")
        assert res.sandboxed and box.pre_started == (pre_started and __import__(
            "instructor.sandbox.zygote", fromlist=["enabled"]).enabled(sandbox.Limits()))
        assert json.loads((run / "out.json").read_text()) == {"shared": True, "moved": True, "version": 0}


@needs_bwrap
def test_a_submission_cannot_fill_the_disk(tmp_path):
    """The workspace is bounded as a whole: writes past the bound fail inside the sandbox (ENOSPC)
    and the host's free space does not move. The control writes the same into a plain folder."""
    import os

    lim = sandbox.Limits(disk_bytes=16 << 20)
    free = lambda: os.statvfs(tmp_path).f_bavail * os.statvfs(tmp_path).f_frsize  # noqa: E731
    before = free()
    with Workspace(lim) as space:
        (space / "run").mkdir()
        if sandbox.can_bound_disk():
            assert Workspace(lim).bounded is False  # bounded only once entered
        (space / "run" / "probe.py").write_text(_FILLER + "\nimport json\njson.dump(OUT, open('out.json', 'w'))\n")
        res = sandbox.run([sandbox.python(), "probe.py"], space / "run", limits=lim, wall_seconds=60)
        import json

        out = json.loads((space / "run" / "out.json").read_text()) if (space / "run" / "out.json").exists() else {}
        assert res.sandboxed, res
        assert out.get("/tmp", 99) < 17, out  # the sandbox's own /tmp is a sized tmpfs everywhere
        assert out.get("/dev/shm", 99) < 17, out  # and so is its /dev/shm (POSIX shared memory)
        if sandbox.can_bound_disk():
            assert out.get(".", 99) < 17 and ". error" in out, out
            assert before - free() < (16 << 20) + (8 << 20), "the host lost more than the bound"
    # control: a plain folder is the host's disk
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "probe.py").write_text(_FILLER + "\nimport json\njson.dump(OUT, open('out.json', 'w'))\n")
    res = sandbox.run([sandbox.python(), "probe.py"], plain, limits=sandbox.Limits(), wall_seconds=60)
    out = json.loads((plain / "out.json").read_text())
    assert out["."] == 64, "control: without the bound the same writes land on the host's disk"


def _zip_bomb(path: Path, records: int = 1, size: int = 64 << 20) -> None:
    """A result file as torch.save writes it, but with deflate-compressed records: a few KB on disk."""
    import torch

    torch.save([torch.zeros(4)], path)
    with zipfile.ZipFile(path) as z:
        items = [(i, z.read(i.filename)) for i in z.infolist()]
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for info, data in items:
            z.writestr(info.filename, data)
        for k in range(records):
            z.writestr(f"archive/data/x{k}", b"\0" * size)


def test_results_outside_the_limits_are_never_unpickled(tmp_path):
    import time

    import torch

    from instructor.engine import results

    honest = tmp_path / "honest.pt"
    torch.save([{"y": torch.randn(3, 4), "msg": "ok"}, (1, 2.5)], honest)
    assert results.load_data(honest)[0]["msg"] == "ok"

    bomb = tmp_path / "bomb.pt"
    _zip_bomb(bomb, records=4)
    assert bomb.stat().st_size < 1 << 20
    t0 = time.monotonic()
    with pytest.raises(results.ResultTooLarge, match="compressed"):
        results.load_data(bomb)
    assert time.monotonic() - t0 < 1

    shared = tmp_path / "shared.pt"  # 2**40 leaves in a few hundred bytes: each level shares the one below
    v = [0]
    for _ in range(40):
        v = [v, v]
    torch.save(v, shared)
    assert shared.stat().st_size < 10_000
    with pytest.raises(results.ResultTooLarge, match="items"):
        results.load_data(shared)

    strided = tmp_path / "strided.pt"  # a stride-0 view claims 2**40 elements over one float
    torch.save(torch.zeros(1).expand(1 << 40), strided)
    with pytest.raises(results.ResultTooLarge, match="MiB"):
        results.load_data(strided)
    # the control: plain torch.load takes the last two as they come
    assert torch.load(strided, weights_only=True).numel() == 1 << 40
    assert len(torch.load(shared, weights_only=True)) == 2

    many = tmp_path / "many.pt"
    torch.save([torch.zeros(1) for _ in range(results.MAX_RECORDS + 1)], many)
    with pytest.raises(results.ResultTooLarge, match="records"):
        results.load_data(many)


@needs_bwrap
def test_the_report_names_the_identity_and_each_protection():
    """``python -m instructor.sandbox``: measured in a sandboxed process, not assumed."""
    rep = sandbox.report(sandbox.Limits())
    proc = rep["sandboxed process"]
    if __import__("os").geteuid() == 0 and not sandbox.drops_privileges():
        assert rep["never root outside"] is False, rep  # the report tells the truth about a weaker host
        return
    assert rep["never root outside"] is True, rep
    assert proc["host uid"] != 0 and proc["capabilities"] == "0000000000000000" and proc["no_new_privs"], proc
    assert proc["/tmp MiB"] <= sandbox.Limits().disk_bytes >> 20
    assert rep["disk bound"].startswith("a tmpfs") == sandbox.can_bound_disk(), rep["disk bound"]


def test_a_function_that_never_returns_is_waited_for_once(tmp_path):
    """The confirmation's driver: after one cell ran into its limit, later cells and cases get the short
    limits; a check whose function hung is not called again by any later check."""
    import time

    import torch

    shutil.copy2(REPO / "instructor" / "hidden" / "probe_driver.py", tmp_path / "probe_driver.py")
    probe = "def probe(ns, case):\n    return student(ns, 'f')()\n"
    job = {"cells": ["def f():\n    while True:\n        pass", "f()", "f()", "f()"], "case_timeout": 5.0,
           "cell_timeout": 5.0,
           "checks": [{"grade_id": g, "function": "f", "source": probe, "cases": [{}, {}, {}]} for g in ("one", "two")]}
    torch.save(job, tmp_path / "job.pt")
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-c", "import sys, probe_driver as d; d.HUNG_CELL_SECONDS = d.HUNG_CASE_SECONDS = 1.0; "
                    "sys.exit(d.main('job.pt', 'out'))"], cwd=tmp_path, check=True, timeout=120)
    took = time.monotonic() - t0
    summary = torch.load(tmp_path / "out" / "summary.pt", weights_only=True)
    assert [e["cell"] for e in summary["cell_errors"] if e["error"] == "CellTimeout"] == [1, 2, 3], summary
    for gid in ("one", "two"):
        results = torch.load(tmp_path / "out" / f"{gid}.pt", weights_only=True)
        assert len(results) == 3 and all(r["__error__"]["type"] == "Timeout" for r in results), results
    # 5 s for the first cell, then 1 s a cell and 1 s for the one case that is tried: without the rule, 5 s each (25 s)
    assert took < 22, f"{took:.1f} s (without the rule at least 25 s)"


def test_the_course_own_cells_get_a_shorter_limit_in_the_confirmation():
    """A released cell of the course's own (unchanged) runs in seconds: past COURSE_CELL_SECONDS it is
    stuck in a student's function; answers and the student's own cells keep the full cell limit."""
    import nbformat

    from instructor.engine import confirm

    [release] = sorted((REPO / "release" / "03_yolo_head").glob("*.ipynb"))
    nb = nbformat.read(release, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("my_own = 1"))
    edited = next(c for c in nb.cells if c.cell_type == "code" and not c.metadata.get("nbgrader"))
    edited.source += "\n# changed by the student"
    limits = confirm.confirmation_cell_limits(nb, 180.0, confirm.course_cell_sources("03_yolo_head"))
    cells = [c for c in nb.cells if c.cell_type == "code" and not confirm.is_test_cell(c)]
    assert len(limits) == len(cells)
    for cell, limit in zip(cells, limits):
        mine = cell.metadata.get("nbgrader", {}).get("solution") or cell is edited or cell.source == "my_own = 1"
        assert limit == (180.0 if mine else confirm.COURSE_CELL_SECONDS), (cell.source[:60], limit)
    assert confirm.COURSE_CELL_SECONDS in limits and 180.0 in limits


def test_a_new_gradebook_needs_no_alembic_subprocess(tmp_path, monkeypatch):
    """The gradebook schema's head revision, read from nbgrader's migration scripts, is what
    `alembic heads` says (the subprocess nbgrader runs for every new gradebook)."""
    import nbgrader.api

    from instructor.engine import pipeline

    # nbgrader's own function (an earlier test in this process may have installed the course's already)
    original = getattr(nbgrader.api.get_alembic_version, "_original", nbgrader.api.get_alembic_version)
    monkeypatch.setattr(nbgrader.api, "get_alembic_version", original)
    pipeline.prepare_environment()
    assert nbgrader.api.get_alembic_version is not original
    assert pipeline.alembic_head() == original()  # one real `alembic heads`
    import subprocess as sp

    def no_subprocess(*a, **k):
        raise AssertionError("a subprocess was started")

    monkeypatch.setattr(sp, "check_output", no_subprocess)
    with nbgrader.api.Gradebook(f"sqlite:///{tmp_path / 'gradebook.db'}") as gb:
        assert gb.db.execute(nbgrader.api.text("SELECT version_num FROM alembic_version")).scalar() == pipeline.alembic_head()


_KILLED_GRADER = """
import os, sys
from instructor import sandbox
space = sandbox.Workspace(sandbox.Limits(), parent=sys.argv[1]).__enter__()
(space / "answer.bin").write_bytes(b"x" * 4096)       # what a submission wrote, held in memory by the tmpfs
group = sandbox.Cgroup(sandbox.Limits(), sandbox.status()["cgroup"])
print(space, *group.dirs, flush=True)
os._exit(137)                                        # killed: no clean-up ran
"""


@pytest.mark.skipif(not sandbox.can_bound_disk(), reason="needs root (a sized tmpfs per submission)")
def test_what_a_killed_grader_left_is_swept_and_a_live_graders_is_kept(tmp_path):
    import os

    out = subprocess.run([sys.executable, "-c", _KILLED_GRADER, str(tmp_path)], cwd=REPO, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 137 and out.stdout.strip(), out.stderr[-2000:]
    left, *groups = out.stdout.split()
    # without the sweep it stays: mounted, the submission's bytes in it, its cgroups made
    assert os.path.ismount(left) and (Path(left) / "answer.bin").exists(), out.stderr[-2000:]
    if sandbox.status()["cgroup"]:   # a root without cgroups (some containers) has none to leave
        assert groups and all(Path(g).is_dir() for g in groups), groups
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("not the grader's")
    os.symlink(victim, tmp_path / "grade-4194303-forged")   # a name that looks like a dead grader's: a link
    with Workspace(sandbox.Limits(), parent=str(tmp_path)) as live:  # this process's: alive
        gone = sandbox.sweep_leftovers(min_age=0, roots=[tmp_path])
        assert os.path.ismount(live) and live.is_dir()
    assert left in gone and not os.path.ismount(left) and not Path(left).exists()
    assert all(g in gone and not Path(g).exists() for g in groups), (groups, gone)
    assert (victim / "keep.txt").read_text() == "not the grader's"
    assert sandbox.sweep_leftovers(min_age=0, roots=[tmp_path]) == []
